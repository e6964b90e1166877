//! Placeholder, being written.
use super::{CcState, CongestionControl};
use crate::time::Time;

pub struct Lia;
impl Lia {
    pub fn new() -> Lia {
        Lia
    }
}
impl CongestionControl for Lia {
    fn name(&self) -> &'static str {
        "lia"
    }
    fn cong_avoid(&mut self, s: usize, st: &mut CcState, a: u32, n: Time, all: &[CcState]) {
        super::Reno.cong_avoid(s, st, a, n, all)
    }
    fn ssthresh(&mut self, _s: usize, st: &CcState, _n: Time, _a: &[CcState]) -> u32 {
        (st.cwnd / 2).max(2)
    }
}
