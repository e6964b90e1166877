//! The packet scheduler interface, shaped like Linux's `struct mptcp_sched_ops`.
//!
//! The connection consults its scheduler whenever some subflow may send (an ACK freed window,
//! the application wrote, a timer fired, a subflow joined). One call makes one decision: a
//! data segment and the set of subflows to send it on (several subflows = redundant sending),
//! or `None` to send nothing now (a scheduler may wait for a faster subflow). The scheduler
//! chooses any unsent segment, not only the next in order, and may send a segment again on
//! another subflow (reinjection, opportunistic retransmission).
//!
//! Subflow-level retransmissions (SACK recovery, RTO) are the subflow's own business, as in
//! the kernel: they go out before the scheduler is asked.
//!
//! Each scheduler is one file in this folder that describes itself (`INFO`: name, source,
//! parameters, constructor); `registry.rs` lists them.

pub mod params;
mod pick;
mod registry;
mod view;

pub use crate::subflow::SubflowSet;
pub use params::{ParamError, ParamInfo, ParamValue, SchedParams};
pub use pick::{
    backups_in_use, fastest_in_use, lowest_rtt_available, next_reinjection, reinjection_subflow,
};
pub use registry::{aliases, build, lookup, registry, BuildError};
pub use view::{ViewField, ViewValue};

use crate::cc::CaState;
use crate::conn::data::DataQueue;
use crate::subflow::tx::RateSample;
use crate::subflow::SubflowTx;
use crate::time::{Dur, Time};
use std::collections::VecDeque;
use view::subflow_view;

/// Why a segment is sent; the connection counts each kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// New data, or data scheduled out of order but never sent before.
    New,
    /// Data sent before, sent again: what a subflow that timed out or went stale held, or a
    /// segment a subflow's own send queue still holds after another copy went (upstream's
    /// queues are TCP write queues, which never look at the Data ACK: such a segment may lie
    /// below it and is sent all the same, as a duplicate).
    Reinjection,
    /// The left edge of the window sent again on a faster subflow (Raiciu et al., NSDI 2012).
    Opportunistic,
    /// A copy for redundancy.
    Redundant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub dseq: u64,
    pub subflows: SubflowSet,
    pub reason: Reason,
}

subflow_view! {
    /// A read-only view of one subflow, what a scheduler may base its choice on. `Default` is
    /// a subflow not yet established, for tests to fill in what they need
    /// (`SubflowView { cwnd: 10, ..Default::default() }`).
    ///
    /// Its fields are declared here once, each as `field: Type = [python_name, "unit",
    /// "meaning"]`: Python schedulers see them too (as `python_name`: durations and times in
    /// nanoseconds, rates in bits per second) after a rebuild of the extension, and
    /// `python -m mpsched.docgen` writes them into the stub and the docs (`sched/view.rs`).
    /// A field must be set in `SubflowView::of`, and kept fresh where its subflow changes
    /// (the sender's tests compare every cached view with a fresh one).
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    pub struct SubflowView {
        id: usize = [id, "",
            "the subflow's index in the connection's subflows, as decisions name it"],
        established: bool = [established, "",
            "the subflow has joined and may carry data (upstream: and is not stale)"],
        backup: bool = [backup, "", "the subflow's path is a backup path"],
        cwnd: u32 = [cwnd, "segment", "congestion window"],
        ssthresh: u32 = [ssthresh, "segment", "slow-start threshold"],
        in_flight: u32 = [in_flight, "segment", "segments in flight (RFC 6675 pipe)"],
        cwnd_space: u32 = [cwnd_space, "segment",
            "free congestion-window space (0 while not established)"],
        srtt: Dur = [srtt_ns, "ns", "smoothed RTT, zero before the first sample"],
        rttvar: Dur = [rttvar_ns, "ns", "RTT variation (RFC 6298 RTTVAR)"],
        min_rtt: Dur = [min_rtt_ns, "ns", "smallest RTT sample, zero before the first"],
        delivery_rate: RateSample = [delivery_rate_bps, "bit/s",
            "latest delivery-rate sample (Linux `tcp_rate.c`)"],
        packets_out: u32 = [packets_out, "segment",
            "segments sent and not yet cumulatively ACKed (the subflow's queued data)"],
        sacked_out: u32 = [sacked_out, "segment",
            "of those, the segments the peer has SACKed (Linux `sacked_out`)"],
        sndbuf: u64 = [sndbuf_bytes, "byte",
            "the subflow socket's send buffer (`sk_sndbuf`), autotuned with its window"],
        ca_state: CaState = [ca_state, "",
            "congestion state: open, recovery (fast recovery after a loss SACKs revealed) or \
             loss (after a retransmission timeout)"],
        last_penalized: Option<Time> = [last_penalized_ns, "ns",
            "when (virtual time) the subflow's window was last halved for blocking the \
             connection, or none"],
    }
    derived {
        available: bool = [available, "",
            "may carry a new segment now: established, window space, not recovering from a \
             timeout (the out-of-tree `mptcp_is_available`)"],
        pacing_rate_bps: u64 = [pacing_rate_bps, "bit/s",
            "Linux's pacing rate: cwnd x MSS / srtt, times 2 while cwnd is below half of \
             ssthresh and 1.2 after (0 before an RTT sample)"],
    }
}

impl SubflowView {
    pub(crate) fn of(sf: &SubflowTx, established: bool, backup: bool) -> SubflowView {
        SubflowView {
            id: sf.id as usize,
            established,
            backup,
            cwnd: sf.cwnd(),
            ssthresh: sf.cc.ssthresh,
            in_flight: sf.in_flight(),
            cwnd_space: if established { sf.cwnd_space() } else { 0 },
            srtt: sf.srtt(),
            rttvar: sf.rtt().rttvar(),
            min_rtt: sf.rtt().min_rtt().unwrap_or(Dur::ZERO),
            delivery_rate: sf.delivery_rate(),
            packets_out: sf.packets_out(),
            sacked_out: sf.sacked_out(),
            sndbuf: sf.sndbuf(),
            ca_state: sf.ca_state(),
            last_penalized: sf.last_penalized,
        }
    }

    /// After the subflow sent new data: only the window's use changed (and, after idleness,
    /// the window itself).
    pub(crate) fn after_send(&mut self, sf: &SubflowTx) {
        self.cwnd = sf.cwnd();
        self.ssthresh = sf.cc.ssthresh;
        self.in_flight = sf.in_flight();
        self.cwnd_space = if self.established { sf.cwnd_space() } else { 0 };
        self.packets_out = sf.packets_out();
        self.sacked_out = sf.sacked_out();
    }

    /// The latest delivery-rate sample in bits per second (Linux `tcp_rate.c`).
    pub fn delivery_rate_bps(&self) -> u64 {
        self.delivery_rate.bps()
    }

    /// Linux's pacing rate (`tcp_update_pacing_rate`): cwnd x MSS / srtt, times 2 while cwnd
    /// is below half of ssthresh and 1.2 after (bits per second; 0 before an RTT sample).
    pub fn pacing_rate_bps(&self) -> u64 {
        crate::subflow::tx::pacing_rate_bps(self.cwnd, self.ssthresh, self.packets_out, self.srtt)
    }

    /// May carry a new segment now: established, window space, not recovering from a
    /// timeout (the out-of-tree `mptcp_is_available`).
    pub fn available(&self) -> bool {
        self.established && self.cwnd_space > 0 && self.ca_state != CaState::Loss
    }
}

/// What a scheduler sees and may do during one decision.
pub struct SchedCtx<'a> {
    pub now: Time,
    views: &'a [SubflowView],
    data: &'a DataQueue,
    shared: &'a mut Shared,
}

/// One value a scheduler reported over time (e.g. the STMS gap), for the traces.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SchedSample {
    pub t: Time,
    pub key: &'static str,
    pub value: f64,
}

/// What passes between the sender and its scheduler besides decisions: the sender queues
/// reinjections, the scheduler asks for penalties and records samples. It lives here, beside
/// the context that lends it out, so that the schedulers need nothing from the sender.
#[derive(Default)]
pub struct Shared {
    pub reinject: VecDeque<u64>,
    /// Upstream Linux re-sends everything un-Data-ACKed (a subflow went stale,
    /// `__mptcp_retransmit_pending_data`): the reinjections go out as pending data does, not
    /// only on idle subflows. Cleared once the queue is empty.
    pub rewound: bool,
    /// Rewinds so far: a second stale mark or close during a rewind starts another.
    pub rewinds: u32,
    pub penalize: Vec<usize>,
    pub sched_trace: Option<Vec<SchedSample>>,
}

impl<'a> SchedCtx<'a> {
    pub(crate) fn new(
        now: Time,
        views: &'a [SubflowView],
        data: &'a DataQueue,
        shared: &'a mut Shared,
    ) -> Self {
        SchedCtx {
            now,
            views,
            data,
            shared,
        }
    }

    pub fn subflows(&self) -> &[SubflowView] {
        self.views
    }
    /// The left edge of the send window (oldest data segment not yet Data-ACKed).
    pub fn data_una(&self) -> u64 {
        self.data.una()
    }
    /// One past the last data segment the application has written.
    pub fn written_end(&self) -> u64 {
        self.data.written_end()
    }
    /// Data segments never sent on any subflow, in order.
    pub fn unsent(&self) -> impl Iterator<Item = u64> + '_ {
        self.data.unsent()
    }
    pub fn first_unsent(&self) -> Option<u64> {
        self.data.unsent().next()
    }
    /// Whether the peer's receive window admits data segment `dseq`.
    pub fn in_window(&self, dseq: u64) -> bool {
        self.data.in_window(dseq)
    }
    /// The subflows `dseq` has been sent on.
    pub fn sent_on(&self, dseq: u64) -> SubflowSet {
        self.data.get(dseq).map_or(SubflowSet::EMPTY, |s| s.sent_on)
    }
    /// Whether the send buffer is full (the application cannot write more until Data ACKs).
    pub fn sndbuf_full(&self) -> bool {
        self.data.sndbuf_full()
    }
    /// See `Shared::rewound`.
    pub fn rewound(&self) -> bool {
        self.shared.rewound
    }
    /// How many rewinds the connection has started (`Shared::rewinds`).
    pub fn rewinds(&self) -> u32 {
        self.shared.rewinds
    }

    /// Data segments queued for reinjection after a subflow timed out, oldest first.
    pub fn reinject_queue(&self) -> impl Iterator<Item = u64> + '_ {
        let una = self.data.una();
        // Asked at every decision and mostly empty: an empty queue skips the deque's iterator
        // (the set-up of its two halves).
        let queue = (!self.shared.reinject.is_empty()).then(|| self.shared.reinject.iter());
        queue
            .into_iter()
            .flatten()
            .copied()
            .filter(move |&d| d >= una)
    }
    /// Halve a slower subflow's window (the out-of-tree MPTCP penalisation).
    pub fn penalize(&mut self, sf: usize) {
        self.shared.penalize.push(sf);
    }
    /// Records a value of the scheduler's state (kept when the run is traced).
    pub fn record(&mut self, key: &'static str, value: f64) {
        if let Some(t) = self.shared.sched_trace.as_mut() {
            t.push(SchedSample {
                t: self.now,
                key,
                value,
            });
        }
    }
    /// Payload bytes of a full data segment (1,424 for MPTCP, `wire::mss`).
    pub fn mss(&self) -> u32 {
        self.data.mss()
    }
    /// The end, in bytes of the stream, of the data fragment holding stream byte `byte`
    /// (upstream's `mptcp_data_frag`, `crate::conn::dfrag`).
    pub fn frag_end(&self, byte: u64) -> u64 {
        self.data.frag_end(byte)
    }
    /// Bytes of one data segment (the MSS, or less for the last one of a file).
    pub fn seg_len(&self, dseq: u64) -> u32 {
        self.data.seg_len(dseq)
    }
    /// Whether the application has no more data for now (all written data is sent).
    pub fn all_sent(&self) -> bool {
        self.data.unsent().next().is_none()
    }
    /// Bytes the application has written and not yet been sent on any subflow.
    pub fn unsent_bytes(&self) -> u64 {
        self.data.unsent().map(|d| self.seg_len(d) as u64).sum()
    }
    /// The peer's receive window: bytes from the Data ACK to the window's right edge.
    pub fn window_bytes(&self) -> u64 {
        self.data
            .right_edge()
            .saturating_sub(self.data.offset(self.data.una()))
    }
    /// The send buffer (bytes the application may have written and not yet Data-ACKed).
    pub fn sndbuf_bytes(&self) -> u64 {
        self.data.sndbuf_bytes()
    }
    /// Whether the application's data is finite and all of it written already.
    pub fn app_done(&self) -> bool {
        self.data.all_written()
    }
    /// Bytes of the stream sent so far (the next never-sent segment's offset).
    pub fn bytes_sent(&self) -> u64 {
        self.data.first_unsent_offset()
    }
}

/// `Debug` shows a scheduler's configuration and state: the registry's test compares a
/// scheduler built with each documented default written out against one built without it.
pub trait Scheduler: std::fmt::Debug {
    fn name(&self) -> &'static str;

    /// The next segment to send and where, or `None` to send nothing now.
    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision>;

    /// A Data ACK advanced the left edge by `acked` segments; `left_edge_subflows` is where
    /// the segment at the old left edge had been sent. (STMS-A adjusts its gap here.)
    fn on_data_ack(&mut self, _now: Time, _acked: u64, _left_edge_subflows: SubflowSet) {}

    /// Every data segment below this has been handed to some subflow's own send queue (upstream
    /// Linux pushes data into subflows ahead of their windows; `msk->first_pending` is the
    /// rest). Schedulers that hand a segment over only as it is sent leave it at 0.
    fn pushed_end(&self) -> u64 {
        0
    }

    /// Segments handed to subflow `sf`'s send queue and not yet sent.
    fn queued(&self, _sf: usize) -> u32 {
        0
    }
}

/// What a scheduler says about itself: each scheduler's file exports one as `INFO`, and
/// `registry.rs` lists them.
pub struct SchedInfo {
    pub name: &'static str,
    /// One line, for `mpsched schedulers`.
    pub description: &'static str,
    /// The paper or the code it follows.
    pub source: &'static str,
    /// What it takes in `[connection.scheduler_params]`.
    pub params: &'static [ParamInfo],
    /// Parses its parameters and builds it; the keys are among `params`.
    pub build: fn(&SchedParams) -> Result<Box<dyn Scheduler>, ParamError>,
}

#[cfg(test)]
pub(crate) mod testkit;
#[cfg(test)]
mod tests;
