//! LowRTT with bufferbloat mitigation: being written.
