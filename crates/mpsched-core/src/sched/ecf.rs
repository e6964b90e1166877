//! ECF: being written.
