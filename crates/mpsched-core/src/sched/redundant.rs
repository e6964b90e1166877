//! redundant: being written.
