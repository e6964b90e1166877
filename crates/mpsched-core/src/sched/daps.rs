//! DAPS: being written.
