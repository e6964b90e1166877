//! MPTCP-SF: being written.
