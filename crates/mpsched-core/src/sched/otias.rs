//! OTIAS: being written.
