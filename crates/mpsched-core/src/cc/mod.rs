//! Congestion control, as Linux structures it (`struct tcp_congestion_ops`).
//!
//! One controller object serves a whole connection and keeps whatever per-subflow state its
//! algorithm needs, indexed by subflow: decoupled algorithms (Reno, CUBIC) simply never look at
//! the other subflows, while coupled ones (LIA, RFC 6356; OLIA) read them through `all`, a
//! snapshot of every subflow's `CcState` taken before the call.
//!
//! The window is counted in segments with a fractional counter `cwnd_cnt`, exactly as Linux's
//! `snd_cwnd` / `snd_cwnd_cnt`, so the growth per ACK matches the kernel's integer arithmetic.

mod cubic;
mod lia;
mod olia;
mod reno;

pub use cubic::Cubic;
pub use lia::Lia;
pub use olia::Olia;
pub use reno::Reno;

use crate::time::{Dur, Time};

/// The window state a controller reads and writes, in segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcState {
    pub cwnd: u32,
    pub ssthresh: u32,
    /// Linux's `snd_cwnd_cnt`: ACKed segments accumulated toward the next +1.
    pub cwnd_cnt: u32,
    /// Smoothed RTT (zero before the first sample).
    pub srtt: Dur,
    /// Minimum RTT seen (zero before the first sample).
    pub min_rtt: Dur,
    /// Segments in flight (RFC 6675 pipe).
    pub in_flight: u32,
    /// Whether the subflow is established and may carry data (coupled controls ignore others).
    pub active: bool,
}

/// The "infinite" ssthresh Linux starts with (`TCP_INFINITE_SSTHRESH`).
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// RFC 6928: an initial window of 10 segments (Linux's `TCP_INIT_CWND`).
pub const INITIAL_CWND: u32 = 10;

impl CcState {
    pub fn new() -> CcState {
        CcState {
            cwnd: INITIAL_CWND,
            ssthresh: INFINITE_SSTHRESH,
            cwnd_cnt: 0,
            srtt: Dur::ZERO,
            min_rtt: Dur::ZERO,
            in_flight: 0,
            active: true,
        }
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// RFC 5681 3.1 slow start, as Linux's `tcp_slow_start`: grow by one segment per
    /// segment ACKed, up to ssthresh; return the ACKed segments left over.
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = (self.cwnd + acked).min(self.ssthresh);
        let left = acked - (cwnd - self.cwnd).min(acked);
        self.cwnd = cwnd;
        left
    }

    /// Linux's `tcp_cong_avoid_ai`: +1 segment once `w` segments have been ACKed.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
    }
}

impl Default for CcState {
    fn default() -> Self {
        CcState::new()
    }
}

/// The loss-recovery state of a subflow (Linux's `tcp_ca_state`, reduced to what the model
/// distinguishes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CaState {
    #[default]
    Open,
    /// Fast recovery after a loss detected by SACK (RFC 6675).
    Recovery,
    /// After a retransmission timeout (RFC 6298 5.5).
    Loss,
}

/// An RTT sample handed to `pkts_acked` (Linux's `struct ack_sample`).
#[derive(Clone, Copy, Debug)]
pub struct AckSample {
    pub acked: u32,
    pub rtt: Option<Dur>,
    pub in_flight: u32,
}

pub trait CongestionControl {
    fn name(&self) -> &'static str;

    /// Whether the window of one subflow depends on the others' (LIA, OLIA): only then do
    /// `cong_avoid` and `ssthresh` get every subflow's state in `all` (otherwise it is empty).
    fn coupled(&self) -> bool {
        false
    }

    /// The hosts run the out-of-tree MPTCP's Linux 3.x-4.x rather than 6.18: where the
    /// kernels' algorithms differ, the control follows the older one. Called once, first.
    fn set_linux4(&mut self, _linux4: bool) {}

    /// Called when subflow `sf` is created, before anything is sent.
    fn init(&mut self, _sf: usize, _st: &mut CcState, _now: Time) {}

    /// Window growth on an ACK that delivered `acked` segments while the subflow was
    /// cwnd-limited and not reducing its window (Linux's `cong_avoid`).
    fn cong_avoid(&mut self, sf: usize, st: &mut CcState, acked: u32, now: Time, all: &[CcState]);

    /// The new ssthresh on a loss (entering fast recovery or after an RTO).
    fn ssthresh(&mut self, sf: usize, st: &CcState, now: Time, all: &[CcState]) -> u32;

    /// Every ACK, with its RTT sample (Linux's `pkts_acked`).
    fn pkts_acked(&mut self, _sf: usize, _st: &CcState, _sample: &AckSample, _now: Time) {}

    /// The subflow changed loss-recovery state (Linux's `set_state`).
    fn set_state(&mut self, _sf: usize, _st: &mut CcState, _state: CaState, _now: Time) {}

    /// The window after a reduction proved spurious is undone (Linux's `undo_cwnd`): Reno,
    /// CUBIC and the MPTCP couplings all use `tcp_reno_undo_cwnd`, the larger of the window
    /// now and the one before the reduction (`prior_cwnd`).
    fn undo_cwnd(&mut self, _sf: usize, st: &CcState, prior_cwnd: u32) -> u32 {
        st.cwnd.max(prior_cwnd)
    }

    /// Transmission starts again after the subflow was idle (Linux's CA_EVENT_TX_START).
    fn on_tx_start(&mut self, _sf: usize, _st: &mut CcState, _now: Time) {}
}

/// A congestion control a scenario can name: its description and constructor.
#[derive(Debug)]
pub struct CcInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub source: &'static str,
    /// Couples its subflows' windows (RFC 6356's goals); such a control is `single_path` on
    /// one path (the aggregation benefit's single-path baselines run that).
    pub coupled: bool,
    pub single_path: &'static str,
    pub build: fn() -> Box<dyn CongestionControl>,
}

/// Every congestion control, in the order `mpsched` lists them. A new one adds its file (with
/// its `INFO`) and one line here.
pub const CONGESTION_CONTROLS: &[&CcInfo] = &[&reno::INFO, &cubic::INFO, &lia::INFO, &olia::INFO];

/// A congestion control by name, as a scenario names it.
#[derive(Clone, Copy, Debug)]
pub struct CcKind(&'static CcInfo);

impl PartialEq for CcKind {
    fn eq(&self, other: &CcKind) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}
impl Eq for CcKind {}

impl CcKind {
    pub fn name(self) -> &'static str {
        self.0.name
    }

    pub fn info(self) -> &'static CcInfo {
        self.0
    }

    pub fn parse(name: &str) -> Option<CcKind> {
        CONGESTION_CONTROLS
            .iter()
            .find(|c| c.name == name)
            .map(|c| CcKind(c))
    }

    pub fn build(self) -> Box<dyn CongestionControl> {
        (self.0.build)()
    }

    /// The names, for error messages: "reno, cubic, lia, olia".
    pub fn known() -> String {
        CONGESTION_CONTROLS
            .iter()
            .map(|c| c.name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_stops_at_ssthresh() {
        let mut st = CcState::new();
        st.ssthresh = 12;
        assert_eq!(st.slow_start(5), 3);
        assert_eq!(st.cwnd, 12);
    }

    #[test]
    fn additive_increase_is_one_segment_per_window() {
        let mut st = CcState::new();
        st.cwnd = 20;
        for _ in 0..20 {
            st.cong_avoid_ai(20, 1);
        }
        assert_eq!(st.cwnd, 21);
    }
}
