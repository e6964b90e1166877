//! upstream Linux default: being written.
