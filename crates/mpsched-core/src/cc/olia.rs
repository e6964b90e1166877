//! Placeholder, being written.
use super::{CcState, CongestionControl};
use crate::time::Time;

pub struct Olia;
impl Olia {
    pub fn new() -> Olia {
        Olia
    }
}
impl CongestionControl for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }
    fn cong_avoid(&mut self, s: usize, st: &mut CcState, a: u32, n: Time, all: &[CcState]) {
        super::Reno.cong_avoid(s, st, a, n, all)
    }
    fn ssthresh(&mut self, _s: usize, st: &CcState, _n: Time, _a: &[CcState]) -> u32 {
        (st.cwnd / 2).max(2)
    }
}
