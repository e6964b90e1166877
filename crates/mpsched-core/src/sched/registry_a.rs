//! Registry entries of redundant, bm, blest, ecf and daps.

use super::SchedInfo;

pub const SCHEDULERS: &[SchedInfo] = &[];
