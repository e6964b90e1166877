//! Registry entries of otias, stms-c, stms-a, mptcp-sf and linux.

use super::SchedInfo;

pub const SCHEDULERS: &[SchedInfo] = &[];
