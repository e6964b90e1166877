//! STMS-C and STMS-A: being written.
