//! BLEST: being written.
