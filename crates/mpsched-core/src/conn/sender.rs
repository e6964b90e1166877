//! The sending host's MPTCP connection: the application's byte stream split into data
//! segments, the connection-level send window, the subflows and the scheduler.
//!
//! - RFC 8684 3.3: every data segment has a data sequence number; a Data ACK acknowledges the
//!   stream cumulatively; the receive window is relative to the Data ACK (3.3.4) and shared by
//!   all subflows; the window's right edge never moves left (RFC 7323 2.4 / RFC 9293 3.8.6).
//! - The send buffer: the application keeps at most `sndbuf` bytes written and not yet
//!   Data-ACKed, and writes again once no more than two thirds of it are in use
//!   (`sk_stream_is_writeable`). With autotuning (Linux's default) each subflow's buffer grows
//!   to twice its window (`tcp_sndbuf_expand`) and an MPTCP connection's buffer is
//!   `tcp_wmem[0]` plus its subflows' (`__mptcp_sync_sndbuf`); the configured `sndbuf` is then
//!   `tcp_wmem[2]`, the most one socket's buffer may grow to.
//! - RFC 8684 3.3.6 reinjection: data outstanding on a subflow that timed out is queued to be
//!   sent again on another one (the out-of-tree kernel's `mptcp_reinject_data`); upstream
//!   Linux instead has a connection-level retransmit timer and stale subflows (`msk_rtx.rs`).
//! - A subflow only joins once its handshake is done (RFC 8684 3.2: MP_JOIN after the first
//!   subflow is up); the handshake RTT is the subflow's first RTT sample, as in the kernel.
//! - A persist timer (RFC 9293 3.8.6.1) probes a closed window when nothing is in flight.
//!
//! Sans-IO: `handle_ack` and `handle_timeout` take input, `poll_transmit` yields packets,
//! `poll_timeout` says when to call again.

use crate::batch::Batch;
use crate::cc::{CcState, CongestionControl};
use crate::conn::data::DataQueue;
use crate::conn::dfrag::Frags;
use crate::conn::meta_rto::MetaRto;
use crate::conn::msk_rtx::{MskRtx, SubflowNow};
use crate::conn::stats::Histogram;
use crate::conn::Stack;
use crate::jiffies::Jiffies;
use crate::packet::{Ack, DataSeg, Packet, Payload};
use crate::sched::{
    Decision, Reason, SchedCtx, SchedSample, Scheduler, Shared, SubflowSet, SubflowView,
};
use crate::subflow::tx::{LossRecovery, SubflowTx};
use crate::time::{Dur, Time};
use crate::trace::{AckTrace, BurstTrace, SentTrace};
use crate::units::{wire, Bytes};

/// `tcp_wmem[0]`, the base of an MPTCP connection's send buffer.
const WMEM_MIN: u64 = 4096;

/// The largest skb a subflow's queue holds (`GSO_LEGACY_MAX_SIZE`, 64 KiB).
const GSO_MAX_BYTES: u64 = 65_536;

/// What a bulk application writes each time its socket is writable unless a scenario says
/// otherwise: the testbed's load generator's write (a `select` loop), so the model's
/// connection-level backlog is the kernel runs' (measured: 70% of the buffer, not 100%).
pub const DEFAULT_WRITE_CHUNK: Bytes = Bytes(256 * 1024);

#[derive(Clone, Debug)]
pub struct SubflowConfig {
    /// When the server may first send on this subflow.
    pub established_at: Time,
    /// The RTT the handshake measured.
    pub handshake_rtt: Dur,
    pub backup: bool,
}

#[derive(Clone, Debug)]
pub struct SenderConfig {
    pub mptcp: bool,
    /// The send buffer; with `sndbuf_autotune`, `tcp_wmem[2]`.
    pub sndbuf: Bytes,
    /// Linux send-buffer autotuning.
    pub sndbuf_autotune: bool,
    /// Which Linux MPTCP sends (how the send buffer grows).
    pub stack: Stack,
    /// The peer's receive buffer, the window before the first ACK.
    pub initial_rwnd: Bytes,
    /// Bytes to send in all; `None` is an endless bulk transfer.
    pub total: Option<Bytes>,
    /// The application writes only what `Sender::app_write` gives it (a rate-limited source)
    /// instead of keeping the send buffer full.
    pub app_limited: bool,
    /// A bulk application's write size: it writes this much each time the socket is writable
    /// (iperf3: 128 KiB; the testbed's load generator: [`DEFAULT_WRITE_CHUNK`]); `None`: it
    /// fills the buffer.
    pub write_chunk: Option<Bytes>,
    pub subflows: Vec<SubflowConfig>,
    /// How every subflow finds its losses.
    pub loss_recovery: LossRecovery,
    /// The server kernel's ticks, on which its timers run.
    pub jiffies: Jiffies,
    pub trace: bool,
}

/// Burstiness of one subflow.
#[derive(Clone, Debug, Default)]
pub struct SubflowAckStats {
    /// The free congestion-window space each ACK leaves (STMS Figs. 6 and 11): large values
    /// mean the subflow is about to send a burst.
    pub free_cwnd: Histogram,
    /// Packets sent back to back in one round of sending.
    pub burst_packets: Histogram,
    pub reinjections: u64,
    pub opportunistic_retransmits: u64,
}

#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    /// Data segments acknowledged by each Data ACK that advanced.
    pub data_ack_steps: Histogram,
    pub opportunistic_retransmits: u64,
    pub reinjections: u64,
    /// Segments the out-of-tree meta socket's timer sent again (counted in `reinjections`
    /// too).
    pub meta_retransmits: u64,
    /// Subflows reset after retransmitting in vain for `tcp_retries2` (`WRITE_TIMEOUT`).
    pub write_timeouts: u64,
    pub redundant: u64,
    pub window_probes: u64,
    /// Decisions the connection refused (a scheduler bug, e.g. a subflow without space).
    pub sched_rejects: u64,
    pub per_subflow: Vec<SubflowAckStats>,
}

pub struct Sender {
    cfg: SenderConfig,
    subflows: Vec<SubflowTx>,
    cc: Box<dyn CongestionControl>,
    sched: Box<dyn Scheduler>,
    data: DataQueue,
    shared: Shared,
    out: Batch<Packet>,
    probe_at: Option<Time>,
    last_push: Time,
    /// The push under way was made by an ACK (upstream: gated by the window).
    ack_push: bool,
    /// When the last subflow joins.
    last_join: Time,
    views: Vec<SubflowView>,
    /// Subflows whose view is out of date (an ACK, a timeout or a retransmission since).
    stale: SubflowSet,
    /// Every subflow had joined when the views were last refreshed.
    views_joined: bool,
    cc_scratch: Vec<CcState>,
    pub stats: SenderStats,
    pub ack_trace: Option<AckTrace>,
    pub sent_trace: Option<SentTrace>,
    pub burst_trace: Option<BurstTrace>,
    /// Packets each subflow sent in the current round of sending (`push`), counted as they
    /// are queued, and the subflows that sent any.
    round: Vec<u32>,
    round_subflows: SubflowSet,
    /// Upstream Linux's connection-level retransmission (MPTCP with several subflows).
    msk_rtx: Option<MskRtx>,
    /// The out-of-tree kernel's meta-socket retransmission timer (MPTCP with several
    /// subflows).
    meta_rto: Option<MetaRto>,
    /// One past the highest data segment sent (the meta socket's `snd_nxt`).
    snd_nxt: u64,
    /// Scratch for `msk_rtx`.
    now_views: Vec<SubflowNow>,
    /// Each subflow's incarnation (`Packet::gen`), and those closed (`close_subflow`).
    gens: Vec<u8>,
    closed: SubflowSet,
}

impl Sender {
    pub fn new(
        cfg: SenderConfig,
        mut cc: Box<dyn CongestionControl>,
        sched: Box<dyn Scheduler>,
        now: Time,
    ) -> Sender {
        assert!(!cfg.subflows.is_empty() && cfg.subflows.len() <= 32);
        cc.set_linux4(cfg.stack == Stack::OutOfTree);
        let subflows = cfg
            .subflows
            .iter()
            .enumerate()
            .map(|(i, sc)| {
                let mut sf = SubflowTx::new(i as u8, sc.established_at);
                sf.set_loss_recovery(cfg.loss_recovery);
                sf.set_jiffies(cfg.jiffies);
                sf.seed_rtt(sc.handshake_rtt);
                cc.init(i, &mut sf.cc, now);
                sf.expand_sndbuf(cfg.sndbuf.0);
                sf
            })
            .collect::<Vec<_>>();
        let mss = wire::mss(cfg.mptcp);
        let mut data = DataQueue::new(mss, cfg.sndbuf, cfg.total, cfg.initial_rwnd);
        if cfg.app_limited {
            data.app_segs = Some(0);
        }
        data.write_chunk_segs = cfg.write_chunk.map(|b| (b.0 / u64::from(mss)).max(1));
        data.write_chunk_bytes = cfg.write_chunk.map(|b| b.0.max(1));
        if cfg.mptcp && cfg.stack == Stack::Upstream {
            data.frags = Some(Frags::default());
        }
        if cfg.sndbuf_autotune {
            // Before the first ACK only the first subflow is up.
            data.sndbuf_segs = 1;
            data.set_sndbuf(Self::autotuned_sndbuf(cfg.mptcp, subflows.iter().take(1)));
        }
        data.write(0);
        let n = subflows.len();
        let cfg_trace = cfg.trace;
        // A subflow not yet established (`Time::MAX`: its handshake will tell) joins later.
        let last_join = cfg
            .subflows
            .iter()
            .map(|s| s.established_at)
            .filter(|&t| t != Time::MAX)
            .max()
            .unwrap_or(Time::ZERO);
        Sender {
            stats: SenderStats {
                per_subflow: vec![SubflowAckStats::default(); n],
                ..Default::default()
            },
            ack_trace: cfg.trace.then(AckTrace::default),
            sent_trace: cfg.trace.then(SentTrace::default),
            burst_trace: cfg.trace.then(BurstTrace::default),
            round: vec![0; n],
            round_subflows: SubflowSet::EMPTY,
            cfg,
            subflows,
            cc,
            sched,
            data,
            shared: Shared {
                sched_trace: cfg_trace.then(Vec::new),
                ..Shared::default()
            },
            out: Batch::default(),
            probe_at: None,
            last_push: Time::ZERO,
            ack_push: false,
            last_join,
            views: Vec::with_capacity(n),
            stale: SubflowSet::EMPTY,
            views_joined: false,
            cc_scratch: Vec::with_capacity(n),
            msk_rtx: None,
            meta_rto: None,
            snd_nxt: 0,
            now_views: Vec::with_capacity(n),
            gens: vec![0; n],
            closed: SubflowSet::EMPTY,
        }
        .with_msk_rtx()
    }

    fn with_msk_rtx(mut self) -> Sender {
        if self.cfg.mptcp && self.subflows.len() > 1 {
            match self.cfg.stack {
                Stack::Upstream => {
                    self.msk_rtx = Some(MskRtx::new(self.subflows.len(), self.cfg.jiffies));
                }
                Stack::OutOfTree => self.meta_rto = Some(MetaRto::new(self.cfg.jiffies)),
            }
        }
        self
    }

    /// `mptcp_set_rto` after subflow RTOs changed: the largest of those that may send.
    fn update_meta_rto(&mut self, now: Time) {
        if self.meta_rto.is_none() {
            return;
        }
        let max = (0..self.subflows.len())
            .filter(|&i| self.established(i, now) && !self.closed.contains(i))
            .map(|i| self.subflows[i].rtt().rto())
            .max()
            .unwrap_or(Dur::ZERO);
        if let Some(m) = self.meta_rto.as_mut() {
            m.set_rto(max);
        }
    }

    /// Subflows whose stale-subflow logic marked them (upstream Linux), so far.
    pub fn stale_marks(&self) -> u64 {
        self.msk_rtx.as_ref().map_or(0, |m| m.stale_marks)
    }

    /// What the connection-level retransmit timer needs of each subflow now.
    fn fill_now_views(&mut self, now: Time) {
        self.now_views.clear();
        for (i, sf) in self.subflows.iter().enumerate() {
            self.now_views.push(SubflowNow {
                joined: now >= self.cfg.subflows[i].established_at,
                backup: self.cfg.subflows[i].backup,
                packets_out: sf.packets_out() + self.sched.queued(i),
                timer_at: sf.timer_at(),
            });
        }
    }

    // ----- getters -----

    pub fn subflows(&self) -> &[SubflowTx] {
        &self.subflows
    }
    pub fn data(&self) -> &DataQueue {
        &self.data
    }
    pub fn scheduler_name(&self) -> &'static str {
        self.sched.name()
    }
    /// Segments the scheduler has put in subflow `i`'s send queue that it has not sent yet
    /// (upstream Linux; zero for schedulers that keep no queue).
    pub fn queued_segments(&self, i: usize) -> u32 {
        self.sched.queued(i)
    }
    fn established(&self, i: usize, now: Time) -> bool {
        now >= self.cfg.subflows[i].established_at
    }
    /// Established and, upstream, not stale: the scheduler may use it.
    fn usable(&self, i: usize, now: Time) -> bool {
        self.established(i, now) && !self.msk_rtx.as_ref().is_some_and(|m| m.is_stale(i))
    }
    /// The autotuned send buffer: a TCP socket's own, or for MPTCP `tcp_wmem[0]` (4 KiB) plus
    /// the buffers of the subflows that joined (`__mptcp_sync_sndbuf`).
    fn autotuned_sndbuf<'a>(mptcp: bool, joined: impl Iterator<Item = &'a SubflowTx>) -> u64 {
        let sum: u64 = joined.map(|s| s.sndbuf()).sum();
        if mptcp {
            WMEM_MIN + sum
        } else {
            sum
        }
    }

    /// The subflows whose handshake is done.
    fn joined(&self, now: Time) -> impl Iterator<Item = &SubflowTx> {
        self.subflows
            .iter()
            .enumerate()
            .filter(move |(j, _)| self.established(*j, now))
            .map(|(_, sf)| sf)
    }

    /// `tcp_new_space` on subflow `i` after an ACK freed memory: its buffer grows, and the
    /// connection's follows.
    fn autotune_sndbuf(&mut self, now: Time, i: usize) -> bool {
        let wmem_max = self.cfg.sndbuf.0;
        let out_of_tree = self.cfg.mptcp && self.cfg.stack == Stack::OutOfTree;
        if out_of_tree {
            let rtt_max = self.joined(now).map(|sf| sf.srtt()).max();
            self.subflows[i].expand_sndbuf_v0(rtt_max.unwrap_or(Dur::ZERO), wmem_max);
        } else {
            self.subflows[i].expand_sndbuf(wmem_max);
        }
        let bytes = if out_of_tree {
            // mptcp_update_sndbuf: the sum, at most tcp_wmem[2].
            self.joined(now)
                .map(|sf| sf.sndbuf())
                .sum::<u64>()
                .min(wmem_max)
        } else {
            Self::autotuned_sndbuf(self.cfg.mptcp, self.joined(now))
        };
        self.data.set_sndbuf(bytes)
    }

    // ----- input -----

    /// Starts the transfer (the request reached the server).
    pub fn start(&mut self, now: Time) {
        self.push(now);
    }

    /// A rate-limited application writes `segs` more segments (`SenderConfig::app_limited`).
    /// What the send buffer cannot take yet waits in the application.
    pub fn app_write(&mut self, now: Time, segs: u64) {
        if let Some(a) = self.data.app_segs.as_mut() {
            *a += segs;
            self.data.write(self.msk_sent_end());
            self.push(now);
        }
    }

    pub fn handle_ack(&mut self, now: Time, pkt: &Packet) {
        let Payload::Ack(ack) = pkt.payload else {
            return;
        };
        let i = pkt.subflow as usize;
        // An ACK of a closed subflow, or of its earlier incarnation, finds no socket.
        if i >= self.subflows.len() || self.closed.contains(i) || pkt.gen != self.gens[i] {
            return;
        }
        self.snapshot_cc();
        let out = self.subflows[i].on_ack(now, &ack, self.cc.as_mut(), &self.cc_scratch);
        self.stale.insert(i);
        if let Some(m) = self.msk_rtx.as_mut() {
            let was_stale = m.is_stale(i);
            m.on_receive(now, i);
            if was_stale != m.is_stale(i) {
                self.views_joined = false; // its view changes: refresh them all
            }
        }
        let grew = out.una_advanced && self.cfg.sndbuf_autotune && self.autotune_sndbuf(now, i);
        let step = self.on_data_ack(now, &ack);
        if grew && self.data.frags.is_some() {
            // `subflow_write_space`: a subflow's grown buffer grows the connection's and wakes
            // its writer (`mptcp_write_space`), Data ACK or not.
            self.data.write(self.msk_sent_end());
        }
        // After the Data ACK ended the meta socket's recovery, the subflow's new RTO counts.
        self.update_meta_rto(now);

        let sf = &self.subflows[i];
        let free = sf.cwnd_space();
        self.stats.per_subflow[i].free_cwnd.record(free as u64);
        if let Some(t) = self.ack_trace.as_mut() {
            t.t_ns.push(now.as_nanos());
            t.subflow.push(i as u8);
            let data_ack = self.data.offset(ack.data_ack);
            t.data_ack_bytes.push(data_ack);
            t.data_ack_step_bytes.push(self.data.offset(step));
            t.right_edge_bytes.push(data_ack + ack.rwnd);
            t.cwnd_segments.push(sf.cwnd());
            t.ssthresh_segments.push(sf.cc.ssthresh);
            t.in_flight_segments.push(sf.in_flight());
            t.free_cwnd_segments.push(free);
            t.srtt_ns.push(sf.srtt().as_nanos());
        }
        self.ack_push = true;
        self.push(now);
        self.ack_push = false;
        if step > 0 {
            if let Some(m) = self.msk_rtx.as_mut() {
                // The Data ACK advanced: the timer restarts (`__mptcp_clean_una`) with the
                // period the push just set. `ack_update_msk` pushes (`__mptcp_check_push`,
                // whose `mptcp_subflow_get_send` sets the period) before it cleans the
                // acknowledged data, so an ACK that starts a subflow's RACK reordering timer
                // arms the connection's with that timer's few ticks.
                m.reset(now, self.data.una < self.data.written_end());
            }
        }
    }

    /// RFC 8684 3.3.2: a Data ACK frees the send buffer and moves the window.
    fn on_data_ack(&mut self, now: Time, ack: &Ack) -> u64 {
        // The right edge never moves left, and ACKs from different subflows arrive out of
        // order: keep the largest.
        let edge = self.data.offset(ack.data_ack) + ack.rwnd;
        self.data.right_edge = self.data.right_edge.max(edge);
        let target = ack.data_ack.min(self.data.written_end());
        if target <= self.data.una {
            return 0;
        }
        let step = target - self.data.una;
        let left_edge = self
            .data
            .segs
            .front()
            .map_or(SubflowSet::EMPTY, |s| s.sent_on);
        for _ in 0..step {
            let s = self.data.segs.pop_front().expect("written segment");
            if let Some(t) = self.sent_trace.as_mut() {
                t.first_sent_ns.push(s.first_sent.as_nanos());
                t.transmissions.push(s.transmissions);
                t.retransmissions.push(s.retransmissions);
            }
        }
        self.data.una = target;
        let una_byte = self.data.offset(target);
        if let Some(f) = self.data.frags.as_mut() {
            f.forget_below(una_byte);
        }
        if let Some(m) = self.meta_rto.as_mut() {
            m.on_data_ack(now, self.data.una < self.snd_nxt);
        }
        self.stats.data_ack_steps.record(step);
        self.sched.on_data_ack(now, step, left_edge);
        self.data.write(self.msk_sent_end());
        step
    }

    pub fn handle_timeout(&mut self, now: Time) {
        for i in 0..self.subflows.len() {
            if self.subflows[i].reo_at().is_some_and(|t| t <= now) {
                self.snapshot_cc();
                self.subflows[i].on_reo_timeout(now, self.cc.as_mut(), &self.cc_scratch);
                self.stale.insert(i);
            }
            if self.subflows[i].tlp_due(now) {
                self.send_loss_probe(now, i);
                self.stale.insert(i);
            }
            if self.subflows[i].rto_at().is_some_and(|t| t <= now) {
                let others_open =
                    (0..self.subflows.len()).any(|j| j != i && !self.closed.contains(j));
                if self.cfg.mptcp && others_open && self.subflows[i].write_timed_out(now) {
                    // `tcp_write_timeout`: the subflow is reset and its data goes to the
                    // others. (A connection's last subflow would abort the connection; the
                    // model keeps retrying it.)
                    self.stats.write_timeouts += 1;
                    self.close_subflow(now, i);
                    continue;
                }
                self.snapshot_cc();
                self.subflows[i].on_rto(now, self.cc.as_mut(), &self.cc_scratch);
                self.stale.insert(i);
                if self.meta_rto.is_some() {
                    self.queue_reinjection(i);
                    self.update_meta_rto(now);
                }
            }
        }
        if self.probe_at.is_some_and(|t| t <= now) {
            self.probe_at = None;
            self.send_probe(now);
        }
        if self
            .msk_rtx
            .as_ref()
            .and_then(MskRtx::timer_at)
            .is_some_and(|t| t <= now)
        {
            self.msk_retransmit(now);
        }
        if self
            .meta_rto
            .as_ref()
            .and_then(MetaRto::timer_at)
            .is_some_and(|t| t <= now)
        {
            self.meta_retransmit(now);
        }
        self.push(now);
    }

    /// Subflow `i` is closed (its address was removed: REMOVE_ADDR, or the interface went
    /// away): it carries nothing more, and what the Data ACK has not covered is sent again
    /// on the other subflows. Out-of-tree reinjects what the closed subflow held
    /// (`mptcp_reinject_data`), SACKed segments included since the receiver drops the closed
    /// subflow's out-of-order queue with it; upstream pushes its whole retransmission queue
    /// again (`__mptcp_retransmit_pending_data` from `__mptcp_close_ssk`), as at a stale mark.
    pub fn close_subflow(&mut self, now: Time, i: usize) {
        if i >= self.subflows.len() || self.closed.contains(i) || self.subflows.len() < 2 {
            return;
        }
        let una = self.data.una;
        let held: Vec<u64> = if self.msk_rtx.is_some() {
            self.shared.rewound = true;
            self.shared.rewinds = self.shared.rewinds.wrapping_add(1);
            let pushed_end = self.sched.pushed_end();
            (una..self.msk_sent_end())
                .filter(|&d| {
                    d < pushed_end || self.data.get(d).is_some_and(|s| s.transmissions > 0)
                })
                .collect()
        } else {
            self.subflows[i]
                .outstanding()
                .map(|(_, s)| s.dseq)
                .filter(|&d| d >= una)
                .collect()
        };
        for d in held {
            if self.msk_rtx.is_some() {
                self.enqueue_reinjection(d);
            } else {
                self.reinject_once(d);
            }
        }
        self.closed.insert(i);
        // A socket that is no more: no timers, nothing in flight, never established.
        let stats = std::mem::take(&mut self.subflows[i].stats);
        self.subflows[i] = SubflowTx::new(i as u8, Time::MAX);
        self.subflows[i].stats = stats;
        self.cfg.subflows[i].established_at = Time::MAX;
        if let Some(m) = self.msk_rtx.as_mut() {
            m.forget(i);
        }
        if self.msk_rtx.is_some() && self.cfg.sndbuf_autotune {
            // `__mptcp_sync_sndbuf`: the connection's buffer is the sum of its subflows' now
            // (measured: 3.23 MB on LTE alone after Wi-Fi's removal, 4.07 MB with both).
            let bytes = Self::autotuned_sndbuf(self.cfg.mptcp, self.joined(now));
            self.data.resize_sndbuf(bytes);
        }
        self.views_joined = false;
        self.push(now);
    }

    /// A closed subflow `i` may open again on its path (its address came back): a new TCP
    /// connection, whose handshake `establish` completes. Its counters carry on.
    pub fn reopen_subflow(&mut self, i: usize) {
        if i >= self.subflows.len() || !self.closed.contains(i) {
            return;
        }
        self.closed.remove(i);
        self.gens[i] = self.gens[i].wrapping_add(1);
    }

    /// Subflow `i`'s handshake completed at `now` (the third ACK reached the server), having
    /// measured `handshake_rtt`: the server may send on it.
    pub fn establish(&mut self, now: Time, i: usize, handshake_rtt: Dur) {
        if i >= self.subflows.len() || self.closed.contains(i) || self.established(i, now) {
            return;
        }
        let stats = std::mem::take(&mut self.subflows[i].stats);
        let mut sf = SubflowTx::new(i as u8, now);
        sf.set_loss_recovery(self.cfg.loss_recovery);
        sf.set_jiffies(self.cfg.jiffies);
        sf.seed_rtt(handshake_rtt);
        self.cc.init(i, &mut sf.cc, now);
        sf.expand_sndbuf(self.cfg.sndbuf.0);
        sf.stats = stats;
        self.subflows[i] = sf;
        self.cfg.subflows[i].established_at = now;
        self.last_join = self.last_join.max(now);
        self.views_joined = false;
    }

    /// Whether subflow `i` is closed.
    pub fn is_closed(&self, i: usize) -> bool {
        self.closed.contains(i)
    }

    /// Upstream's connection-level retransmit timer fired (`__mptcp_retrans`).
    fn msk_retransmit(&mut self, now: Time) {
        let una = self.data.una;
        let sent_end = self.msk_sent_end();
        let pushed_end = self.sched.pushed_end();
        self.fill_now_views(now);
        let m = self.msk_rtx.as_mut().expect("upstream");
        // Written and not yet sent counts too (`__mptcp_clean_una` stops the timer only once
        // `snd_una` reaches `write_seq`): a firing with nothing to resend still runs the stale
        // check on subflows holding data (`__mptcp_retrans` asks `mptcp_sched_get_retrans`
        // first), so pending data gets past a regular subflow that died with a full queue.
        if una >= self.data.written_end() {
            m.reset(now, false);
            return;
        }
        let firing = m.fire(now, &self.now_views);
        if firing.retransmit_all {
            // The stale subflow leaves the scheduler's choices.
            self.views_joined = false;
        }
        if una >= sent_end {
            return;
        }
        let end = if firing.retransmit_all {
            self.shared.rewound = true;
            self.shared.rewinds = self.shared.rewinds.wrapping_add(1);
            sent_end
        } else if firing.retransmit_head {
            // The head fragment as `__mptcp_clean_una` left it: from the Data ACK to the end
            // of the fragment it falls in.
            let mss = u64::from(self.data.mss());
            let frag_end = self.data.frag_end(self.data.offset(una));
            frag_end.div_ceil(mss).min(sent_end)
        } else {
            return;
        };
        for d in una..end {
            // What a subflow's queue holds counts as sent (`already_sent`).
            if self
                .data
                .get(d)
                .is_some_and(|s| s.transmissions > 0 || d < pushed_end)
            {
                self.enqueue_reinjection(d);
            }
        }
    }

    /// RFC 8985 7.3 (`tcp_send_loss_probe`): new data if the subflow has some, else the last
    /// segment again. Only plain TCP has new data of its own here: an MPTCP subflow's data is
    /// the scheduler's to place (the out-of-tree kernel's subflows keep none queued), so it
    /// probes with a retransmission.
    fn send_loss_probe(&mut self, now: Time, i: usize) {
        let new = (!self.cfg.mptcp)
            .then(|| self.data.unsent().next())
            .flatten()
            .filter(|&d| self.data.in_window(d));
        if let Some(dseq) = new {
            self.send(
                now,
                Decision {
                    dseq,
                    subflows: SubflowSet::one(i),
                    reason: Reason::New,
                },
            );
            self.subflows[i].tlp_sent_new(now);
            return;
        }
        let seg = self.subflows[i].tlp_retransmit_tail(now, self.cc.as_mut());
        self.emit_retransmission(i, seg);
    }

    /// Puts a subflow-level retransmission on the wire and counts it on its data segment.
    fn emit_retransmission(&mut self, i: usize, seg: DataSeg) {
        if let Some(d) = self.data.get_mut(seg.dseq) {
            d.retransmissions = d.retransmissions.saturating_add(1);
        }
        self.out
            .push(Packet::data(i as u8, seg, self.cfg.mptcp).of_gen(self.gens[i]));
        self.count_in_round(i);
    }

    /// RFC 8684 3.3.6: what the timed-out subflow still holds may go on another subflow.
    /// `mptcp_reinject_data` walks the whole write queue, SACKed segments included: the
    /// receiver holds those in the subflow's out-of-order queue, out of the connection's
    /// reach until the subflow fills its hole, which a dead path never does.
    fn queue_reinjection(&mut self, i: usize) {
        let una = self.data.una;
        let dseqs: Vec<u64> = self.subflows[i]
            .outstanding()
            .filter(|(_, s)| s.dseq >= una)
            .map(|(_, s)| s.dseq)
            .collect();
        for d in dseqs {
            self.reinject_once(d);
        }
    }

    /// Queues data segment `d` to be sent again on another subflow, unless it waits already.
    fn enqueue_reinjection(&mut self, d: u64) {
        if let Some(s) = self.data.get_mut(d) {
            if !s.in_reinject_queue {
                s.in_reinject_queue = true;
                // In data order, as both kernels send it again: out-of-tree inserts into its
                // reinject queue by sequence number (`__mptcp_reinject_data`), upstream moves
                // its send head back to the Data ACK. Appended, a hole queued in a second
                // rewind would wait behind everything the first one queued.
                let q = &mut self.shared.reinject;
                if q.back().is_none_or(|&b| b < d) {
                    q.push_back(d);
                } else {
                    let at = q.partition_point(|&x| x < d);
                    q.insert(at, d);
                }
            }
        }
    }

    /// The out-of-tree `mptcp_reinject_data`: a segment is reinjected once; a copy it sent
    /// carries the mark, and only the meta socket's timer sends it again.
    fn reinject_once(&mut self, d: u64) {
        if let Some(s) = self.data.get_mut(d) {
            if !s.reinjected {
                s.reinjected = true;
                self.enqueue_reinjection(d);
            }
        }
    }

    /// The out-of-tree meta socket's timer fired (`mptcp_meta_retransmit_timer`): the segment
    /// at the Data ACK goes out again on the subflow the kernel's `get_subflow` would pick.
    fn meta_retransmit(&mut self, now: Time) {
        let una = self.data.una;
        let outstanding = una < self.snd_nxt;
        if outstanding && self.data.in_window(una) {
            self.refresh_views(now);
            let sent_on = self.data.get(una).map_or(SubflowSet::EMPTY, |s| s.sent_on);
            if let Some(sf) =
                crate::sched::reinjection_subflow(&self.views, sent_on, SubflowSet::EMPTY)
            {
                self.send(
                    now,
                    Decision {
                        dseq: una,
                        subflows: SubflowSet::one(sf),
                        reason: Reason::Reinjection,
                    },
                );
                self.views[sf].after_send(&self.subflows[sf]);
                self.stats.meta_retransmits += 1;
            }
        }
        if let Some(m) = self.meta_rto.as_mut() {
            m.on_fire(now, outstanding);
        }
    }

    fn send_probe(&mut self, now: Time) {
        let Some(i) = (0..self.subflows.len())
            .filter(|&i| self.established(i, now))
            .min_by_key(|&i| (self.subflows[i].srtt(), i))
        else {
            return;
        };
        let sf = &self.subflows[i];
        let seg = DataSeg {
            seq: sf.snd_nxt(),
            dseq: self.data.written_end(),
            len: 0,
            ts_val: now,
            ts_ecr: sf.peer_ts(),
            probe: true,
        };
        self.stats.window_probes += 1;
        self.out
            .push(Packet::data(i as u8, seg, self.cfg.mptcp).of_gen(self.gens[i]));
    }

    /// The scheduler's values recorded so far (when traced); recording goes on.
    pub fn take_sched_samples(&mut self) -> Vec<SchedSample> {
        self.shared
            .sched_trace
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }
    pub fn sched_trace_len(&self) -> usize {
        self.shared.sched_trace.as_ref().map_or(0, |v| v.len())
    }

    /// Ends the traces: segments sent but not yet Data-ACKed are recorded as they stand.
    pub fn finish_trace(&mut self) {
        if let Some(t) = self.sent_trace.as_mut() {
            for s in self.data.segs.iter().take_while(|s| s.transmissions > 0) {
                t.first_sent_ns.push(s.first_sent.as_nanos());
                t.transmissions.push(s.transmissions);
                t.retransmissions.push(s.retransmissions);
            }
        }
    }

    // ----- output -----

    pub fn poll_transmit(&mut self) -> Option<Packet> {
        self.out.pop()
    }

    #[inline]
    pub fn poll_timeout(&self) -> Option<Time> {
        let rto = self.subflows.iter().filter_map(|s| s.timer_at()).min();
        let join = if self.last_push >= self.last_join {
            None
        } else {
            self.cfg
                .subflows
                .iter()
                .map(|s| s.established_at)
                .filter(|&t| t > self.last_push && t != Time::MAX && !self.data.finished())
                .min()
        };
        let earliest = |a: Option<Time>, b: Option<Time>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) => x,
            (None, y) => y,
        };
        let msk = self.msk_rtx.as_ref().and_then(MskRtx::timer_at);
        let meta = self.meta_rto.as_ref().and_then(MetaRto::timer_at);
        earliest(
            earliest(earliest(rto, join), earliest(self.probe_at, msk)),
            meta,
        )
    }

    /// When upstream's connection-level retransmit timer runs next (none on the out-of-tree
    /// stack, or while nothing is outstanding).
    pub fn msk_timer_at(&self) -> Option<Time> {
        self.msk_rtx.as_ref().and_then(MskRtx::timer_at)
    }

    // ----- sending -----

    fn snapshot_cc(&mut self) {
        self.cc_scratch.clear();
        if !self.cc.coupled() {
            return;
        }
        self.cc_scratch
            .extend(self.subflows.iter().map(|s| s.cc_snapshot()));
    }

    fn refresh_views(&mut self, now: Time) {
        self.views.clear();
        for (i, sf) in self.subflows.iter().enumerate() {
            let est = self.usable(i, now);
            self.views
                .push(SubflowView::of(sf, est, self.cfg.subflows[i].backup));
        }
    }

    /// Refreshes the views of the subflows in `set` (the others did not change).
    fn refresh_views_of(&mut self, now: Time, set: SubflowSet) {
        for i in set.iter() {
            let est = self.usable(i, now);
            self.views[i] = SubflowView::of(&self.subflows[i], est, self.cfg.subflows[i].backup);
        }
    }

    /// Sends what the windows allow: subflow-level retransmissions first, then whatever the
    /// scheduler decides, until it declines or no subflow has room; then the connection's
    /// timers follow what went out.
    fn push(&mut self, now: Time) {
        self.last_push = now;
        self.start_round();
        let sent_before: usize = self.out.len();
        let frto_new = self.push_retransmissions(now);
        // Data not yet handed to any subflow, or all of it again after a subflow went stale
        // (`mptcp_send_head`). (`first_unsent` is never sent; what lies above it may be, out
        // of order.)
        let send_head = self.msk_rtx.is_some()
            && (self.shared.rewound
                || self
                    .data
                    .first_unsent
                    .max(self.data.una)
                    .max(self.sched.pushed_end())
                    < self.data.written_end())
            // An ACK pushes (`ack_update_msk` calls `__mptcp_check_push`) only if the window
            // reaches past what the subflows were handed (`wnd_end` after `snd_nxt`); an
            // application's write pushes whatever the window.
            && (!self.ack_push || self.data.right_edge() > self.data.offset(self.msk_sent_end()));
        self.refresh_stale_views(now);
        self.schedule(now);
        for i in frto_new.iter() {
            // `tcp_xmit_recovery` with `REXMIT_NEW`: nothing new went out, so F-RTO gives way
            // to the conventional retransmissions.
            if self.subflows[i].frto_after_push() {
                self.retransmit_lost(now, i);
            }
        }
        let sent = self.out.len() > sent_before;
        if sent {
            self.end_round(now);
        }
        self.after_push(now, send_head, sent);
    }

    /// Each subflow's own retransmissions (SACK recovery, RTO) go before the scheduler's
    /// choices, as in the kernel; returns the subflows whose F-RTO (step 2b) sends new data
    /// this round instead.
    fn push_retransmissions(&mut self, now: Time) -> SubflowSet {
        let mut frto_new = SubflowSet::EMPTY;
        for i in 0..self.subflows.len() {
            if !self.established(i, now) {
                continue;
            }
            // Whether new data waits is asked only when F-RTO has a say.
            if self.subflows[i].frto_rexmit_new() {
                let has_new = self.has_new_data_for(i);
                if self.subflows[i].frto_wants_new_data(has_new) {
                    frto_new.insert(i);
                    continue;
                }
            }
            self.retransmit_lost(now, i);
        }
        frto_new
    }

    /// Between events only the subflows an event touched change; until every subflow has
    /// joined, time itself changes the views.
    fn refresh_stale_views(&mut self, now: Time) {
        if self.views_joined && self.views.len() == self.subflows.len() {
            self.refresh_views_of(now, self.stale);
        } else {
            self.refresh_views(now);
            self.views_joined = now >= self.last_join;
        }
        self.stale = SubflowSet::EMPTY;
    }

    /// Asks the scheduler for decisions and carries them out, until it declines or no subflow
    /// has window space.
    fn schedule(&mut self, now: Time) {
        let mut guard = 0u32;
        while self.views.iter().any(|v| v.cwnd_space > 0) {
            // The views are cached between events; in tests every decision checks them
            // against fresh ones, so a view field that some event changes without marking
            // its subflow stale fails at once instead of misleading a scheduler.
            debug_assert!(
                (0..self.subflows.len()).all(|i| self.views[i]
                    == SubflowView::of(
                        &self.subflows[i],
                        self.usable(i, now),
                        self.cfg.subflows[i].backup
                    )),
                "a cached subflow view is stale at {now:?}"
            );
            let decision = {
                let mut ctx = SchedCtx::new(now, &self.views, &self.data, &mut self.shared);
                self.sched.next(&mut ctx)
            };
            self.apply_penalties(now);
            let Some(d) = decision else { break };
            if !self.valid(&d) {
                self.stats.sched_rejects += 1;
                debug_assert!(
                    false,
                    "scheduler {} made an invalid decision {d:?}",
                    self.sched.name()
                );
                break;
            }
            self.send(now, d);
            for i in d.subflows.iter() {
                self.views[i].after_send(&self.subflows[i]);
            }
            guard += 1;
            if guard > 1_000_000 {
                break;
            }
        }
    }

    /// The penalties the scheduler asked for during its decision (out-of-tree MPTCP's
    /// penalisation of a slower subflow).
    fn apply_penalties(&mut self, now: Time) {
        if self.shared.penalize.is_empty() {
            return;
        }
        let mut changed = SubflowSet::EMPTY;
        for sf in std::mem::take(&mut self.shared.penalize) {
            if sf < self.subflows.len() {
                self.subflows[sf].penalize(now);
                changed.insert(sf);
            }
        }
        self.refresh_views_of(now, changed);
    }

    /// Upstream's connection timer, window validation and the persist timer after a push.
    fn after_push(&mut self, now: Time, send_head: bool, sent: bool) {
        if let Some(m) = self.msk_rtx.as_mut() {
            // Only a push with data pending consults `mptcp_subflow_get_send`, which sets the
            // period; the connection timer's own resends of the head do not.
            if send_head {
                let timers =
                    self.subflows.iter().enumerate().map(|(i, sf)| {
                        (now >= self.cfg.subflows[i].established_at, sf.timer_due())
                    });
                m.refresh(now, timers);
            }
            if sent {
                m.arm(now);
            }
        }
        let pending = self.data.unsent().next();
        let has_data = pending.is_some_and(|d| self.data.in_window(d));
        for sf in self.subflows.iter_mut() {
            sf.cwnd_validate(has_data);
        }
        // Persist timer: data waits for the window and nothing in flight will bring an ACK.
        let idle = self.subflows.iter().all(|s| s.packets_out() == 0);
        if pending.is_some() && !has_data && idle {
            if self.probe_at.is_none() {
                let rto = self.subflows[0].rtt().rto();
                self.probe_at = Some(self.cfg.jiffies.expiry(now, rto));
            }
        } else {
            self.probe_at = None;
        }
    }

    /// Subflow `i`'s lost segments, as many as its window allows (`tcp_xmit_retransmit_queue`).
    /// Most pushes find none: that test is inline, the loop out of line.
    #[inline]
    fn retransmit_lost(&mut self, now: Time, i: usize) {
        if self.subflows[i].may_retransmit() {
            self.retransmit_lost_segments(now, i);
        }
    }

    #[inline(never)]
    fn retransmit_lost_segments(&mut self, now: Time, i: usize) {
        while self.subflows[i].cwnd_space() > 0 {
            let Some(seq) = self.subflows[i].next_retransmit() else {
                break;
            };
            let seg = self.subflows[i].transmit_retransmit(now, seq, self.cc.as_mut());
            self.stale.insert(i);
            self.emit_retransmission(i, seg);
        }
    }

    /// Whether subflow `i` has new data waiting to be sent (`!tcp_write_queue_empty`): for
    /// MPTCP, what the scheduler has put in that subflow's own queue (upstream's pushes ahead
    /// of the window; schedulers that hand data over only as it is sent leave it empty); for
    /// TCP, written data not yet sent that the peer's window admits.
    fn has_new_data_for(&self, i: usize) -> bool {
        if self.cfg.mptcp {
            self.sched.queued(i) > 0
        } else {
            self.data
                .unsent()
                .next()
                .is_some_and(|d| self.data.in_window(d))
        }
    }

    /// A round of sending begins: what went out before (a loss probe, a timer's
    /// retransmission) is no part of it.
    fn start_round(&mut self) {
        for i in self.round_subflows.iter() {
            self.round[i] = 0;
        }
        self.round_subflows = SubflowSet::EMPTY;
    }

    /// A data segment (not a window probe) is queued on subflow `i`.
    fn count_in_round(&mut self, i: usize) {
        self.round[i] += 1;
        self.round_subflows.insert(i);
    }

    /// Books the packets this round put on each subflow as one burst per subflow.
    fn end_round(&mut self, now: Time) {
        for i in self.round_subflows.iter() {
            let n = std::mem::take(&mut self.round[i]);
            self.stats.per_subflow[i].burst_packets.record(n as u64);
            if let Some(t) = self.burst_trace.as_mut() {
                t.t_ns.push(now.as_nanos());
                t.subflow.push(i as u8);
                t.packets.push(n);
            }
        }
        self.round_subflows = SubflowSet::EMPTY;
    }

    /// Every segment below this has gone to a subflow (`msk->snd_nxt`): sent, or, with
    /// upstream's scheduler, handed to a subflow's queue.
    fn msk_sent_end(&self) -> u64 {
        self.data
            .first_unsent
            .max(self.sched.pushed_end())
            .max(self.data.una)
    }

    /// Bytes written by the application and not yet Data-ACKed (send-buffer occupancy).
    pub fn sndbuf_used_bytes(&self) -> u64 {
        self.data.segs.iter().map(|s| s.len as u64).sum()
    }

    fn valid(&self, d: &Decision) -> bool {
        // Below the Data ACK only as a duplicate out of a subflow's queue (`Reason::Reinjection`).
        if d.subflows.is_empty()
            || (d.dseq < self.data.una && d.reason != Reason::Reinjection)
            || d.dseq >= self.data.written_end()
        {
            return false;
        }
        if !self.data.in_window(d.dseq) {
            return false;
        }
        d.subflows.iter().all(|i| {
            i < self.views.len() && self.views[i].established && self.views[i].cwnd_space > 0
        })
    }

    fn send(&mut self, now: Time, d: Decision) {
        let len = self.data.seg_len(d.dseq);
        for i in d.subflows.iter() {
            if self.subflows[i].packets_out() == 0 {
                // A restart after idleness counts the skbs its queue (upstream) went in as.
                let queued = u64::from(self.sched.queued(i)) + 1;
                let skbs = (queued * u64::from(wire::mss(true))).div_ceil(GSO_MAX_BYTES);
                self.subflows[i].set_entails(skbs.min(u64::from(u32::MAX)) as u32);
            }
            let seg = self.subflows[i].transmit_new(now, d.dseq, len, self.cc.as_mut());
            self.out
                .push(Packet::data(i as u8, seg, self.cfg.mptcp).of_gen(self.gens[i]));
            self.count_in_round(i);
            // A Data-ACKed duplicate leaves no record at the data level.
            if let Some(s) = self.data.get_mut(d.dseq) {
                if s.transmissions == 0 {
                    s.first_sent = now;
                }
                s.transmissions = s.transmissions.saturating_add(1);
                s.sent_on.insert(i);
            }
        }
        match d.reason {
            Reason::New => {}
            Reason::Reinjection => {
                self.stats.reinjections += 1;
                for i in d.subflows.iter() {
                    self.stats.per_subflow[i].reinjections += 1;
                }
            }
            Reason::Opportunistic => {
                self.stats.opportunistic_retransmits += 1;
                for i in d.subflows.iter() {
                    self.stats.per_subflow[i].opportunistic_retransmits += 1;
                }
            }
            Reason::Redundant => self.stats.redundant += 1,
        }
        if d.reason == Reason::Reinjection {
            self.shared.reinject.retain(|&x| x != d.dseq);
            if let Some(s) = self.data.get_mut(d.dseq) {
                s.in_reinject_queue = false;
            }
        }
        if d.dseq >= self.snd_nxt {
            // New at the data level (`tcp_event_new_data_sent` on the meta socket).
            if let Some(m) = self.meta_rto.as_mut() {
                m.on_new_data(now, self.data.una < self.snd_nxt);
            }
            self.snd_nxt = d.dseq + 1;
        }
        // Drop what has been Data-ACKed from the reinjection queue.
        let una = self.data.una;
        while self.shared.reinject.front().is_some_and(|&x| x < una) {
            self.shared.reinject.pop_front();
        }
        if self.shared.reinject.is_empty() {
            self.shared.rewound = false;
        }
        if d.dseq == self.data.first_unsent.max(una) {
            // The next segment no subflow has sent, or the written end: walked by index into
            // the queue (`d.dseq >= una` here), one lookup per segment.
            let mut i = (d.dseq + 1 - una) as usize;
            while self.data.segs.get(i).is_some_and(|s| !s.sent_on.is_empty()) {
                i += 1;
            }
            self.data.first_unsent = una + i as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::conn::Stack;
    use crate::packet::{Payload, SackBlock};
    use crate::sched::testkit::{ack, drain, ms, on, sender, Setup};

    #[test]
    fn a_data_ack_restarts_the_connection_timer_with_the_period_its_own_push_set() {
        // Upstream's `ack_update_msk` pushes (`__mptcp_check_push`, whose
        // `mptcp_subflow_get_send` sets the period from the subflows' pending timers) before
        // it cleans what the Data ACK covers (`__mptcp_clean_una`, which restarts the timer).
        // So the restart takes the period of the timers as this ACK left them: on the kernel
        // (a traced outage run) an ACK that started Wi-Fi's RACK reordering timer, 2 ticks
        // out, restarted the connection's with 2 ticks, and it fired 10 ms later. Only the
        // 10-ms subflow is up (the other joins at 10 s), so its timers alone set the period.
        let mut s = sender(
            "linux",
            Setup {
                rtts_ms: vec![10, 100],
                established_ms: vec![0, 10_000],
                stack: Stack::Upstream,
                ..Setup::default()
            },
        );
        s.start(ms(0));
        assert_eq!(drain(&mut s).len(), 10);
        // The start's push set the period from the subflow's loss-probe timer.
        let probe = s.subflows()[0].timer_due().expect("data in flight");
        assert_eq!(s.msk_timer_at(), Some(probe));
        // Segments 0-1 and 3 arrive, 2 does not: the Data ACK moves by two, and RACK waits a
        // quarter of the min RTT (no reordering seen, one segment SACKed) before it deems 2
        // lost: 12.5 ms after it was sent, and its timer adds `TCP_TIMEOUT_MIN` (2 ms).
        let mut a = ack(0, 2, 2, 1000);
        if let Payload::Ack(x) = &mut a.payload {
            x.sack[0] = SackBlock { start: 3, end: 4 };
            x.sack_len = 1;
        }
        s.handle_ack(ms(10), &a);
        drain(&mut s);
        let reo = s.subflows()[0].timer_due().expect("reordering timer");
        assert!(ms(12) < reo && reo < ms(16), "{reo:?}");
        // The connection's timer runs with that period from this ACK, not with the loss
        // probe's 22 ms that the start set (to 32 ms), as it would if it restarted first.
        assert_eq!(s.msk_timer_at(), Some(reo));
    }

    #[test]
    fn an_ack_whose_window_reaches_no_further_keeps_the_period() {
        // `ack_update_msk` pushes (and `mptcp_subflow_get_send` sets the period) only if the
        // window reaches past what the subflows were handed (`wnd_end` after `snd_nxt`); the
        // Data ACK then restarts the timer with the period set before. A 10-segment window:
        // the start hands out 0-9 and sets the period from the subflow's loss-probe timer (22
        // ms). Segments 0-1 and 3 arrive: RACK's reordering timer would set a few ms.
        let run = |rwnd: u64| {
            let mut s = sender(
                "linux",
                Setup {
                    rtts_ms: vec![10, 100],
                    established_ms: vec![0, 10_000],
                    rwnd_segments: 10,
                    total_bytes: Some(40 * 1424),
                    stack: Stack::Upstream,
                    ..Setup::default()
                },
            );
            s.start(ms(0));
            assert_eq!(on(&drain(&mut s), 0), (0..10).collect::<Vec<_>>());
            let period = s.msk_timer_at().unwrap().saturating_since(ms(0));
            let mut a = ack(0, 2, 2, rwnd);
            if let Payload::Ack(x) = &mut a.payload {
                x.sack[0] = SackBlock { start: 3, end: 4 };
                x.sack_len = 1;
            }
            s.handle_ack(ms(10), &a);
            let sent = on(&drain(&mut s), 0);
            let reo = s.subflows()[0].timer_due().expect("reordering timer");
            (period, sent, reo, s.msk_timer_at().unwrap())
        };
        // The window still ends at 10: nothing handed out, the start's period kept.
        let (period, sent, reo, at) = run(8);
        assert!(sent.iter().all(|&d| d < 10), "{sent:?}");
        assert!(reo < ms(10) + period);
        assert_eq!(at, ms(10) + period);
        // The window reaches 11: the push sets the period from the reordering timer.
        let (_, sent, reo, at) = run(9);
        assert!(sent.contains(&10), "{sent:?}");
        assert_eq!(at, reo);
    }

    #[test]
    fn a_subflow_s_grown_buffer_wakes_the_writer_without_a_data_ack() {
        // `subflow_write_space`: an ACK that grows a subflow's buffer grows the connection's
        // and wakes its writer (`mptcp_write_space`), whether or not the Data ACK moved. On
        // Linux 6.18 the lab's application wrote 163,640 bytes at 0.295 s with the Data ACK
        // where it had been since 0.25 s (docs/experiments/dfrag-kernel.json, `klab3`).
        let mut s = sender(
            "linux",
            Setup {
                stack: Stack::Upstream,
                sndbuf_autotune: true,
                ..Setup::default()
            },
        );
        s.start(ms(0));
        drain(&mut s);
        let written = s.sndbuf_used_bytes();
        for cum in [2, 4, 6, 8, 10] {
            s.handle_ack(ms(10 + cum), &ack(0, cum, 0, 1000));
        }
        assert!(
            s.sndbuf_used_bytes() > written,
            "{written} bytes written, no more"
        );
    }

    #[test]
    fn a_firing_sends_again_what_the_data_ack_left_of_the_head_fragment() {
        // `__mptcp_retrans` sends the head fragment from the Data ACK on (`__mptcp_clean_una`
        // trimmed it), not a whole fragment: with the Data ACK at segment 15 (byte 21,360 of
        // the first 32,728-byte fragment), segments 15-22 and not 15 on. The 10-ms subflow
        // holds 15-39 unacknowledged; the idle 100-ms one takes the head.
        let mut s = sender(
            "linux",
            Setup {
                rtts_ms: vec![10, 100],
                total_bytes: Some(40 * 1424),
                stack: Stack::Upstream,
                ..Setup::default()
            },
        );
        s.start(ms(0));
        assert_eq!(on(&drain(&mut s), 0), (0..10).collect::<Vec<_>>());
        s.handle_ack(ms(10), &ack(0, 10, 10, 1000));
        assert_eq!(on(&drain(&mut s), 0), (10..30).collect::<Vec<_>>());
        s.handle_ack(ms(11), &ack(0, 15, 15, 1000));
        assert_eq!(on(&drain(&mut s), 0), (30..40).collect::<Vec<_>>());
        let fire = s.msk_timer_at().expect("data un-Data-ACKed");
        s.handle_timeout(fire);
        let again = drain(&mut s);
        assert_eq!(on(&again, 1), (15..23).collect::<Vec<_>>(), "{again:?}");
    }
}
