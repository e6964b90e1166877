//! The sending half of one TCP subflow: sequence state, the SACK scoreboard, loss recovery,
//! the retransmission timer and the congestion window.
//!
//! Implements, as Linux does them:
//! - RFC 8985 RACK loss detection (Linux `tcp_rack_detect_loss`, the default since 4.x): a
//!   segment is lost once a segment sent after it has been delivered (ACKed or SACKed) and
//!   the latest such delivery's RTT plus a reordering window has passed since it was sent. The
//!   window is zero in recovery or once 3 segments are SACKed, else min RTT / 4, waited for
//!   by a reordering timer; a lost retransmission is found the same way, without a timeout.
//! - RFC 8985 Tail Loss Probe (Linux `tcp_schedule_loss_probe`, `tcp_send_loss_probe`): with
//!   data outstanding and no loss being repaired, a probe timer of 2 srtt (plus 200 ms with a
//!   single segment out, else 2 ms), no later than the RTO; it sends new data if the caller
//!   has some (a TCP connection), else retransmits the last segment, so that a tail loss is
//!   repaired by RACK rather than by the retransmission timeout. An ACK beyond the probe
//!   means a loss was repaired: the window is reduced as on entering recovery.
//! - RFC 6675 SACK scoreboard: the pipe is `packets_out - (sacked_out + lost_out) +
//!   retrans_out` (Linux's `tcp_packets_in_flight`), and lost segments go out before new data
//!   (NextSeg).
//! - RFC 6937 Proportional Rate Reduction during recovery (Linux's `tcp_cwnd_reduction`).
//! - RACK's reordering window adapts (RFC 8985 6.2 step 4, `tcp_rack_update_reo_wnd`) once
//!   a delivery has revealed reordering (`tcp_check_sack_reordering`): each D-SACK widens it.
//! - Undo of a spurious window reduction (`tcp_try_undo_dsack`, `tcp_try_undo_recovery`,
//!   `tcp_try_undo_loss`): when every retransmission of the episode was reported duplicate
//!   (D-SACK), or the ACK echoes a timestamp older than the first retransmission (Eifel,
//!   `tcp_packet_delayed`; with no retransmission recorded, Linux 6.16+ takes the delivery
//!   for a delayed original), cwnd and ssthresh return to their values before it (not with
//!   classic recovery). The first retransmission's time (`retrans_stamp`) is forgotten as
//!   Linux forgets it (`tcp_try_to_open`, `tcp_retrans_stamp_cleanup`). Not modelled: the
//!   partial undo (`tcp_try_undo_partial`).
//! - RFC 6298 retransmission timer with exponential backoff. At a timeout (`tcp_enter_loss`,
//!   `tcp_timeout_mark_lost`) the head and every segment out for longer than RACK's RTT are
//!   marked lost, not those sent more recently; cwnd = what is still in flight + 1; ssthresh
//!   falls unless a reduction of this window is under way (a timeout in fast recovery keeps
//!   it).
//! - F-RTO, RFC 5682 with SACK (`tcp_process_loss` with `tp->frto`), armed by a timeout that
//!   does not interrupt a recovery (or repeats one): an ACK or SACK of a segment never
//!   retransmitted and sent before the timeout proves it spurious, and it is undone
//!   (`tcp_try_undo_loss(sk, true)`, `TCPSpuriousRTOs`); the first ACK that advances
//!   `snd_una` sends new data instead of retransmissions (step 2b, `REXMIT_NEW`: the caller
//!   asks [`SubflowTx::frto_wants_new_data`] and reports with [`SubflowTx::frto_after_push`]),
//!   and a duplicate ACK after that proves the loss real (step 3a).
//! - Classic recovery keeps RFC 6298 / RFC 5681's letter: after an RTO every outstanding
//!   segment not SACKed is lost, cwnd = 1, no F-RTO.
//! - RFC 7661-style cwnd validation as Linux's `tcp_is_cwnd_limited`: the window only grows
//!   while the subflow is actually limited by it.
//! - RFC 2861 / Linux `tcp_cwnd_restart`: after an idle period longer than the RTO the window
//!   restarts from at most the initial window.
//!
//! Sequence numbers count segments (one per packet).
//!
//! `LossRecovery::Classic` replaces RACK and the probes with what stacks without them do
//! (RFC 6675's IsLost with DupThresh = 3, no RFC 5827 early retransmit, and RFC 6298's RTO of
//! at least 1 s; ns-3's TCP until 3.3x): a loss with fewer than three segments after it, as in
//! a small window, is repaired only by the retransmission timeout.

use crate::cc::{AckSample, CaState, CcState, CongestionControl, INFINITE_SSTHRESH, INITIAL_CWND};
use crate::jiffies::Jiffies;
use crate::packet::{Ack, DataSeg};
use crate::rtt::RttEstimator;
use crate::subflow::prr::Prr;
use crate::subflow::rack::Rack;
use crate::subflow::rate::{DeliveryRate, Stamp};
use crate::subflow::scoreboard::Scoreboard;
use crate::subflow::sndbuf::SendBuffer;
use crate::subflow::timer::TimerTable;
use crate::subflow::tlp::{ProbeAck, Tlp};
use crate::time::{Dur, Time};

pub use crate::subflow::rate::{pacing_rate_bps, RateSample};
pub use crate::subflow::scoreboard::{TxSeg, DUP_THRESH};
pub use crate::subflow::sndbuf::{mptcp_v0_sndbuf_for, sndbuf_for, SNDBUF_PER_SEGMENT};
pub use crate::subflow::timer::Timer;

/// `tcp_retries2`'s default, 15, as a time (`tcp_model_timeout` with `TCP_RTO_MIN` as the
/// base): 200 ms doubled to 120 s, then 120 s, over 15 timeouts: (2^10 - 1) x 200 ms +
/// 6 x 120 s = 924.6 s.
pub const WRITE_TIMEOUT: Dur = Dur::from_millis(1023 * 200 + 6 * 120_000);

#[derive(Clone, Copy, Debug, Default)]
pub struct SubflowTxStats {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub retransmits: u64,
    pub rtos: u64,
    pub fast_recoveries: u64,
    /// Tail loss probes sent, and those that repaired a loss (Linux `TCPLossProbes`,
    /// `TCPLossProbeRecovery`).
    pub tlp_probes: u64,
    pub tlp_recoveries: u64,
    pub penalizations: u64,
    /// ACKs reporting a duplicate (Linux `TCPDSACKRecv`).
    pub dsacks: u64,
    /// Reductions undone because every retransmission was reported duplicate in recovery or
    /// after it (`TCPDSACKUndo`), and those undone at the end of recovery or in loss
    /// recovery (`TCPFullUndo`, `TCPLossUndo`).
    pub dsack_undos: u64,
    pub recovery_undos: u64,
    /// Timeouts F-RTO proved spurious (`TCPSpuriousRTOs`; also counted in `recovery_undos`).
    pub spurious_rtos: u64,
}

/// What one ACK did to the subflow.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckOutcome {
    /// Segments newly delivered (cumulatively ACKed or SACKed).
    pub delivered: u32,
    /// The cumulative ACK advanced.
    pub una_advanced: bool,
    pub rtt_sample: Option<Dur>,
}

/// How lost segments are found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LossRecovery {
    /// Linux's: RACK, tail loss probes, RTO = SRTT + max(4 RTTVAR, 200 ms).
    #[default]
    Linux,
    /// RFC 6675 DupThresh (3 segments SACKed above a hole), no probes, RTO >= 1 s.
    Classic,
    /// Linux's with `net.ipv4.tcp_recovery = 3` (`TCP_RACK_STATIC_REO_WND`): the reordering
    /// window never widens on D-SACKs.
    LinuxStaticReoWnd,
}

/// What the scoreboard learnt from one ACK, for the RTT, the delivery rate and recovery.
#[derive(Default)]
struct Deliveries {
    delivered: u32,
    una_advanced: bool,
    newly_sacked: bool,
    /// The oldest newly ACKed / SACKed segment never retransmitted: an unambiguous RTT.
    acked_rtt: Option<Dur>,
    sacked_rtt: Option<Dur>,
    /// The delivery-rate stamp of the segment delivered that was sent last.
    rate_ref: Option<Stamp>,
    /// A segment never retransmitted and below the recovery point was newly ACKed or SACKed
    /// (`FLAG_ORIG_SACK_ACKED`).
    orig_sacked: bool,
}

pub struct SubflowTx {
    pub id: u8,
    recovery: LossRecovery,
    sb: Scoreboard,
    pub cc: CcState,
    ca_state: CaState,
    /// RFC 6675 RecoveryPoint (Linux `high_seq`).
    recover: u64,
    rack: Rack,
    tlp: Tlp,
    timers: TimerTable,
    rtt: RttEstimator,
    prr: Prr,
    // Linux cwnd validation (`tcp_cwnd_validate`).
    is_cwnd_limited: bool,
    max_packets_out: u32,
    cwnd_usage_seq: u64,
    last_send: Time,
    /// Skbs queued for the next transmission (`cwnd_restart`); 1 unless the sender says.
    entails: u32,
    rate: DeliveryRate,
    /// When the out-of-tree MPTCP scheduler last halved this subflow's window.
    pub last_penalized: Option<Time>,
    /// RFC 7323 TS.Recent: the latest TSval of the peer's ACKs, echoed in data segments.
    peer_ts: Time,
    sndbuf: SendBuffer,
    /// The highest SACKed segment's end (Linux `tcp_highest_sack_seq` while any is SACKed).
    high_sacked: u64,
    // Linux's undo state (`tcp_init_undo`): `snd_una` when the reduction began, and the
    // retransmissions since not yet reported duplicate (negative: none sent yet).
    undo_marker: Option<u64>,
    undo_retrans: i64,
    prior_cwnd: u32,
    /// Zero: the reduction may not be undone (`tp->prior_ssthresh`).
    prior_ssthresh: u32,
    /// When the first retransmission of the episode went (`tp->retrans_stamp`).
    retrans_stamp: Option<Time>,
    /// The latest ACK's TSecr.
    rcv_tsecr: Time,
    /// RFC 5682 F-RTO is under way (`tp->frto`).
    frto: bool,
    /// F-RTO step 2b asked for new data rather than retransmissions (`REXMIT_NEW`) on the
    /// next transmission.
    rexmit_new: bool,
    /// Timeouts since `snd_una` last advanced (`icsk_retransmits`).
    rto_retransmits: u32,
    /// Duplicates reported (`tp->dsack_dups`): more than retransmissions means a D-SACK
    /// cannot be trusted (a middlebox's duplicate).
    dsack_dups: u64,
    /// The kernel's ticks, on which every timer here runs.
    jiffies: Jiffies,
    pub stats: SubflowTxStats,
}

impl SubflowTx {
    pub fn new(id: u8, now: Time) -> SubflowTx {
        SubflowTx {
            id,
            recovery: LossRecovery::Linux,
            sb: Scoreboard::default(),
            cc: CcState::new(),
            ca_state: CaState::Open,
            recover: 0,
            rack: Rack::default(),
            tlp: Tlp::default(),
            timers: TimerTable::default(),
            rtt: RttEstimator::new(),
            prr: Prr::new(INITIAL_CWND),
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            last_send: now,
            entails: 1,
            rate: DeliveryRate::new(now),
            last_penalized: None,
            peer_ts: Time::ZERO,
            sndbuf: SendBuffer::default(),
            high_sacked: 0,
            undo_marker: None,
            undo_retrans: -1,
            prior_cwnd: 0,
            prior_ssthresh: 0,
            retrans_stamp: None,
            rcv_tsecr: Time::ZERO,
            frto: false,
            rexmit_new: false,
            rto_retransmits: 0,
            dsack_dups: 0,
            jiffies: Jiffies::EXACT,
            stats: SubflowTxStats::default(),
        }
    }

    /// Chooses how losses are found (before anything is sent).
    pub fn set_loss_recovery(&mut self, recovery: LossRecovery) {
        self.recovery = recovery;
        if recovery == LossRecovery::Classic {
            self.rtt.use_rfc_floor();
        }
    }

    /// Runs the timers on a kernel's ticks (before anything is sent).
    pub fn set_jiffies(&mut self, jiffies: Jiffies) {
        self.jiffies = jiffies;
        self.rtt.set_jiffies(jiffies);
    }

    /// The handshake's RTT measurement (the kernel seeds srtt from the SYN exchange).
    pub fn seed_rtt(&mut self, r: Dur) {
        if r > Dur::ZERO {
            self.rtt.on_sample(r);
        }
    }

    // ----- getters -----

    #[inline]
    pub fn snd_una(&self) -> u64 {
        self.sb.snd_una()
    }
    #[inline]
    pub fn snd_nxt(&self) -> u64 {
        self.sb.snd_nxt()
    }
    #[inline]
    pub fn packets_out(&self) -> u32 {
        self.sb.packets_out()
    }
    /// Segments out that the peer has SACKed (Linux `sacked_out`).
    #[inline]
    pub fn sacked_out(&self) -> u32 {
        self.sb.sacked_out()
    }
    /// RFC 6675 pipe / Linux `tcp_packets_in_flight`.
    #[inline]
    pub fn in_flight(&self) -> u32 {
        self.sb.in_flight()
    }
    /// `sk_sndbuf` now (bytes of memory).
    pub fn sndbuf(&self) -> u64 {
        self.sndbuf.bytes()
    }
    /// The TSval a data segment sent now echoes.
    pub fn peer_ts(&self) -> Time {
        self.peer_ts
    }
    #[inline]
    pub fn cwnd(&self) -> u32 {
        self.cc.cwnd
    }
    /// Free congestion-window space in segments.
    #[inline]
    pub fn cwnd_space(&self) -> u32 {
        self.cc.cwnd.saturating_sub(self.in_flight())
    }
    pub fn ca_state(&self) -> CaState {
        self.ca_state
    }
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }
    /// The smoothed RTT, or zero before the first sample.
    #[inline]
    pub fn srtt(&self) -> Dur {
        self.rtt.srtt().unwrap_or(Dur::ZERO)
    }
    fn min_rtt(&self) -> Dur {
        self.rtt.min_rtt().unwrap_or(Dur::ZERO)
    }
    /// RACK's state (its reordering window's adaptation).
    pub fn rack(&self) -> &Rack {
        &self.rack
    }
    /// When `timer` fires, if armed.
    #[inline]
    pub fn timer(&self, timer: Timer) -> Option<Time> {
        self.timers.get(timer)
    }
    pub fn rto_at(&self) -> Option<Time> {
        self.timers.get(Timer::Rto)
    }
    pub fn reo_at(&self) -> Option<Time> {
        self.timers.get(Timer::Reorder)
    }
    pub fn tlp_at(&self) -> Option<Time> {
        self.timers.get(Timer::Tlp)
    }
    /// The next timer of this subflow.
    #[inline]
    pub fn timer_at(&self) -> Option<Time> {
        self.timers.next()
    }
    /// The deadline the kernel records for that timer (`icsk_timeout`), which upstream MPTCP
    /// reads for its own timer's period (`mptcp_timeout_from_subflow`): before it runs by up
    /// to the timer wheel's granularity (32 ms for a 0.5 s timeout at 250 Hz).
    pub fn timer_due(&self) -> Option<Time> {
        self.timers.next_due()
    }
    pub fn delivery_rate(&self) -> RateSample {
        self.rate.sample()
    }
    pub fn pacing_rate_bps(&self) -> u64 {
        pacing_rate_bps(
            self.cc.cwnd,
            self.cc.ssthresh,
            self.packets_out(),
            self.srtt(),
        )
    }
    /// Outstanding segments, oldest first, with their subflow sequence numbers.
    pub fn outstanding(&self) -> impl Iterator<Item = (u64, &TxSeg)> {
        self.sb.outstanding()
    }
    pub fn seg(&self, seq: u64) -> Option<&TxSeg> {
        self.sb.seg(seq)
    }
    /// Whether `dseq` is outstanding here and not yet delivered to the peer.
    pub fn holds_unacked(&self, dseq: u64) -> bool {
        self.sb.holds_unacked(dseq)
    }

    /// A snapshot of the window state for the congestion controller.
    pub fn cc_snapshot(&self) -> CcState {
        CcState {
            srtt: self.srtt(),
            min_rtt: self.min_rtt(),
            in_flight: self.in_flight(),
            ..self.cc
        }
    }

    // ----- the send buffer -----

    /// `tcp_new_space` after an ACK freed queue memory (and `tcp_init_buffer_space`): the
    /// buffer grows to twice the window unless the window is full (`tcp_should_expand_sndbuf`).
    pub fn expand_sndbuf(&mut self, wmem_max: u64) {
        let want = sndbuf_for(self.cc.cwnd, wmem_max);
        self.sndbuf
            .expand_to(want, self.in_flight() >= self.cc.cwnd);
    }

    /// `tcp_new_space` with the out-of-tree MPTCP's sizing (`mptcp_v0_sndbuf_for`).
    pub fn expand_sndbuf_v0(&mut self, rtt_max: Dur, wmem_max: u64) {
        let want = mptcp_v0_sndbuf_for(self.cc.cwnd, self.srtt(), rtt_max, wmem_max);
        self.sndbuf
            .expand_to(want, self.in_flight() >= self.cc.cwnd);
    }

    // ----- sending -----

    /// The next lost segment to retransmit (RFC 6675 NextSeg (1)), if the window allows.
    pub fn next_retransmit(&mut self) -> Option<u64> {
        self.sb.next_retransmit()
    }

    /// Whether `next_retransmit` may find a segment: more are deemed lost than are being
    /// retransmitted (its own first test, for a caller's inline fast path).
    #[inline]
    pub fn may_retransmit(&self) -> bool {
        self.sb.lost_out() > self.sb.retrans_out()
    }

    fn on_transmit(&mut self, now: Time, cc: &mut dyn CongestionControl) {
        if self.packets_out() == 0 {
            // Linux `tcp_event_data_sent`: restart after idle (RFC 2861), then tell the CC.
            let idle = now.saturating_since(self.last_send);
            if idle > self.rtt.rto() && self.stats.packets_sent > 0 {
                self.cwnd_restart(idle);
            }
            cc.on_tx_start(self.id as usize, &mut self.cc, now);
        }
        self.last_send = now;
        if self.timers.get(Timer::Rto).is_none() {
            // RFC 6298 (5.1)
            self.timers
                .put_due(Timer::Rto, Some(self.rtt.rto_timer(now)));
        }
        if self.ca_state == CaState::Recovery {
            self.prr.on_send();
        }
    }

    /// Linux `tcp_cwnd_restart`: halve per RTO of idleness, down to the restart window.
    /// The kernel checks once per skb queued while nothing is in flight
    /// (`tcp_slow_start_after_idle_check` from `tcp_skb_entail`), so `entails` skbs queued
    /// before the first transmission repeat it.
    fn cwnd_restart(&mut self, idle: Dur) {
        let restart = INITIAL_CWND.min(self.cc.cwnd);
        let rto = self.rtt.rto().as_nanos().max(1);
        self.cc.ssthresh = self.cc.ssthresh.max((3 * self.cc.cwnd) / 4);
        for _ in 0..self.entails.max(1) {
            let mut left = idle.as_nanos() as i128 - rto as i128;
            while left > 0 && self.cc.cwnd > restart {
                self.cc.cwnd >>= 1;
                left -= rto as i128;
            }
        }
        self.cc.cwnd = self.cc.cwnd.max(restart);
        self.cc.cwnd_cnt = 0;
    }

    /// How many skbs the next transmission's data was queued in (see `cwnd_restart`).
    pub fn set_entails(&mut self, skbs: u32) {
        self.entails = skbs;
    }

    /// Sends a new segment carrying data segment `dseq`.
    pub fn transmit_new(
        &mut self,
        now: Time,
        dseq: u64,
        len: u32,
        cc: &mut dyn CongestionControl,
    ) -> DataSeg {
        self.on_transmit(now, cc);
        let seq = self.sb.push(TxSeg {
            dseq,
            len,
            sent_at: now,
            sacked: false,
            lost: false,
            retrans: false,
            ever_retrans: false,
            stamp: self.rate.stamp(),
        });
        self.count_sent(len);
        // Linux `tcp_write_xmit`: after new data, a loss probe is due (RTO as it stands). A
        // burst goes out at one instant; its timeout only changes past the first segment.
        if !self.tlp.scheduled_at(now) || self.packets_out() == 2 {
            self.schedule_tlp(now, false);
        }
        DataSeg {
            seq,
            dseq,
            len,
            ts_val: now,
            ts_ecr: self.peer_ts,
            probe: false,
        }
    }

    /// Retransmits subflow segment `seq` (which `next_retransmit` returned).
    pub fn transmit_retransmit(
        &mut self,
        now: Time,
        seq: u64,
        cc: &mut dyn CongestionControl,
    ) -> DataSeg {
        debug_assert!({
            let s = self.sb.at(seq);
            s.lost && !s.retrans && !s.sacked
        });
        // `tcp_retransmit_skb` (a loss probe, `__tcp_retransmit_skb`, counts in neither).
        self.retrans_stamp.get_or_insert(now);
        self.undo_retrans = self.undo_retrans.max(0) + 1;
        let head = seq == self.sb.snd_una();
        let seg = self.resend(now, seq, cc);
        if head
            && self.recovery != LossRecovery::Classic
            && self.timers.get(Timer::Reorder).is_none()
        {
            // `tcp_xmit_retransmit_queue`: the head's retransmission restarts the RTO, unless
            // RACK's reordering timer holds the one retransmission timer.
            self.timers
                .put_due(Timer::Rto, Some(self.rtt.rto_timer(now)));
        }
        seg
    }

    /// Sends segment `seq` again.
    fn resend(&mut self, now: Time, seq: u64, cc: &mut dyn CongestionControl) -> DataSeg {
        self.on_transmit(now, cc);
        if self.sb.resend(seq, now, self.rate.stamp()) {
            self.rack.on_retransmit(seq);
        }
        let s = self.sb.at(seq);
        let (dseq, len) = (s.dseq, s.len);
        self.stats.retransmits += 1;
        self.count_sent(len);
        DataSeg {
            seq,
            dseq,
            len,
            ts_val: now,
            ts_ecr: self.peer_ts,
            probe: false,
        }
    }

    fn count_sent(&mut self, len: u32) {
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += len as u64;
    }

    /// Linux `tcp_cwnd_validate`, called after a round of sending: remember whether the
    /// window, rather than the application or the peer, is what stopped us.
    pub fn cwnd_validate(&mut self, had_data: bool) {
        let limited = had_data && self.in_flight() >= self.cc.cwnd;
        if self.snd_una() >= self.cwnd_usage_seq
            || limited
            || (!self.is_cwnd_limited && self.packets_out() > self.max_packets_out)
        {
            self.is_cwnd_limited = limited;
            self.max_packets_out = self.packets_out();
            self.cwnd_usage_seq = self.snd_nxt();
        }
    }

    /// Linux `tcp_is_cwnd_limited`.
    fn cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        if self.cc.in_slow_start() {
            return self.cc.cwnd < 2 * self.max_packets_out;
        }
        false
    }

    // ----- ACK processing -----

    /// An ACK arrives (Linux `tcp_ack`): the scoreboard, the delivery rate, the RTT, any
    /// probe episode, loss detection, the congestion state, and the timers, in that order.
    pub fn on_ack(
        &mut self,
        now: Time,
        ack: &Ack,
        cc: &mut dyn CongestionControl,
        all: &[CcState],
    ) -> AckOutcome {
        self.peer_ts = self.peer_ts.max(ack.ts_val);
        self.rcv_tsecr = ack.ts_ecr;
        let prior_state = self.ca_state;
        if ack.dsack {
            self.on_dsack();
        }
        let d = self.take_deliveries(now, ack);
        self.rate.on_ack(now, d.delivered, d.rate_ref);
        if self.recovery == LossRecovery::Linux {
            self.rack
                .update_reo_wnd(d.rate_ref.map(|r| r.delivered), self.rate.delivered());
        }
        let out = AckOutcome {
            delivered: d.delivered,
            una_advanced: d.una_advanced,
            rtt_sample: self.sample_rtt(now, ack, &d, cc),
        };
        if out.una_advanced {
            // RFC 6298 (5.3) and (5.7): restart the timer; the backoff ends.
            self.rtt.reset_backoff();
            self.rto_retransmits = 0;
            let rto = (self.packets_out() > 0).then(|| self.rtt.rto_timer(now));
            self.timers.put_due(Timer::Rto, rto);
        }
        // `tcp_clean_rtx_queue`: nothing newly ACKed, but a SACK timed a segment sent before
        // the head was last (re)transmitted, so the head has waited longer than that RTT:
        // the retransmission timer restarts (`FLAG_SET_XMIT_TIMER`) unless RACK arms its
        // reordering timer on this ACK. (Timed from a later send it does not, lest recovery
        // keep pushing the timeout back.)
        let sack_rearm = !out.una_advanced
            && self.recovery != LossRecovery::Classic
            && d.sacked_rtt.is_some_and(|rtt| {
                self.sb
                    .seg(self.sb.snd_una())
                    .is_some_and(|head| rtt > now.saturating_since(head.sent_at))
            });
        if self.tlp.in_episode() {
            self.process_tlp_ack(now, ack, &out, cc, all);
        }
        // Linux `tcp_ack_is_dubious` -> `tcp_fastretrans_alert`'s undo checks.
        let dubious =
            !out.una_advanced || d.newly_sacked || ack.dsack || self.ca_state != CaState::Open;
        if dubious && self.recovery != LossRecovery::Classic {
            if self.ca_state == CaState::Loss {
                // `tcp_ack`'s `num_dupack`: neither advancing nor a D-SACK (the model has no
                // window updates or data on ACKs).
                let dupack = !out.una_advanced && !ack.dsack;
                self.process_loss(now, out.una_advanced, &d, dupack, cc);
            } else {
                self.try_undo(now, cc);
            }
        }
        let mut reo_armed = false;
        // Linux `tcp_ack_is_dubious` -> `tcp_identify_packet_loss` (in loss recovery on every
        // ACK, an undo included: it makes RACK judge again what the undo unmarked).
        if d.newly_sacked
            || prior_state != CaState::Open
            || self.ca_state != CaState::Open
            || self.sb.lost_out() > 0
        {
            reo_armed = self.mark_lost(now);
        }
        self.update_ca_state(now, out.delivered, out.una_advanced, cc, all);
        if prior_state != CaState::Open
            && self.ca_state == CaState::Open
            && self.recovery != LossRecovery::Classic
        {
            // `tcp_fastretrans_alert` leaving recovery or loss (or undoing it) without
            // entering another: `tcp_try_to_open`.
            self.retrans_stamp_cleanup();
        }
        if out.una_advanced {
            // Linux `tcp_set_xmit_timer`: a loss probe if one is due, else the RTO.
            self.schedule_tlp(now, true);
        } else if sack_rearm && !reo_armed {
            self.rearm_rto(now);
            self.schedule_tlp(now, true);
        }
        out
    }

    /// The cumulative ACK and the SACK blocks on the scoreboard; RACK hears of every
    /// segment they deliver.
    #[inline]
    fn take_deliveries(&mut self, now: Time, ack: &Ack) -> Deliveries {
        let mut d = Deliveries::default();
        let min_rtt = self.min_rtt();
        // `tcp_check_sack_reordering`: a segment never retransmitted, delivered below the
        // highest one SACKed before this ACK, was overtaken (or its SACK was lost).
        let prior_fack = if self.sb.sacked_out() == 0 {
            self.sb.snd_una()
        } else {
            self.high_sacked
        };
        let (mut reord_acked, mut reord_sacked) = (false, false);
        let mut high_sacked = self.high_sacked;
        let recover = self.recover;
        // `tcp_skb_spurious_retrans`: the ACK echoes a timestamp (ms) from before a segment's
        // retransmission, so its original was delivered: RACK does not take the
        // retransmission's time (it would deem lost all sent before it that waits in a queue).
        let echoed =
            (self.retrans_stamp.is_some() && ack.ts_ecr > Time::ZERO).then_some(ack.ts_ecr);
        let (sb, rack) = (&mut self.sb, &mut self.rack);
        let (una_advanced, retrans_acked) = sb.ack_cumulative(ack.ack, |seq, s| {
            reord_acked |= !s.ever_retrans && seq < prior_fack;
            d.orig_sacked |= !s.ever_retrans && seq < recover;
            let spurious = s.ever_retrans && echoed.is_some_and(|e| e.ts_ms() < s.sent_at.ts_ms());
            if !spurious {
                rack.advance(now, s, seq, min_rtt);
            }
            d.delivered += 1;
            if !s.ever_retrans && d.acked_rtt.is_none() {
                // Linux takes the oldest newly ACKed, never retransmitted segment
                // (`tcp_clean_rtx_queue`), unless the ACK also covers a retransmitted one.
                d.acked_rtt = Some(now - s.sent_at);
            }
            d.rate_ref = Some(s.stamp);
        });
        d.una_advanced = una_advanced;
        if retrans_acked {
            // Karn's rule (`FLAG_RETRANS_DATA_ACKED`): the ACK may be for a retransmission,
            // so its timing says nothing; the SACKs' or the timestamp's sample stands.
            d.acked_rtt = None;
        }
        sb.sack(ack.sack_blocks(), |seq, s| {
            reord_sacked |= !s.ever_retrans && seq < prior_fack;
            d.orig_sacked |= !s.ever_retrans && seq < recover;
            high_sacked = high_sacked.max(seq + 1);
            rack.advance(now, s, seq, min_rtt);
            d.delivered += 1;
            d.newly_sacked = true;
            if !s.ever_retrans && d.sacked_rtt.is_none() {
                d.sacked_rtt = Some(now - s.sent_at);
            }
            if d.rate_ref.is_none_or(|r| s.stamp.delivered > r.delivered) {
                d.rate_ref = Some(s.stamp);
            }
        });
        self.rack.on_cumulative_ack(self.sb.snd_una());
        self.high_sacked = high_sacked;
        // The SACK's test is skipped in loss recovery with nothing to undo
        // (`tcp_sacktag_write_queue`).
        let sack_counts = self.ca_state != CaState::Loss || self.undo_marker.is_some();
        if reord_acked || (reord_sacked && sack_counts) {
            self.rack.on_reordering();
        }
        d
    }

    /// `tcp_check_dsack` / `tcp_dsack_seen`: a duplicate arrived. The D-SACK block is not
    /// modelled, so every duplicate counts against the episode's retransmissions (Linux checks
    /// the block lies above `undo_marker`, which the episode's retransmissions all do).
    fn on_dsack(&mut self) {
        self.stats.dsacks += 1;
        self.dsack_dups += 1;
        if self.dsack_dups > self.stats.retransmits {
            return;
        }
        if self.recovery == LossRecovery::Linux {
            self.rack.on_dsack(self.tlp.retransmitted_probe_out());
        }
        if self.undo_marker.is_some() && self.undo_retrans > 0 {
            self.undo_retrans -= 1;
        }
    }

    // ----- undo -----

    /// `tcp_init_undo`, as a reduction begins: it may be undone while `undo_marker` holds.
    fn init_undo(&mut self) {
        self.undo_marker = Some(self.snd_una());
        let r = self.sb.retrans_out();
        self.undo_retrans = if r > 0 { i64::from(r) } else { -1 };
    }

    /// Linux `tcp_current_ssthresh` outside a reduction: what to restore on an undo.
    fn current_ssthresh(&self) -> u32 {
        let cwnd = self.cc.cwnd;
        self.cc.ssthresh.max((cwnd >> 1) + (cwnd >> 2))
    }

    /// `tcp_packet_delayed`: the ACK echoes a timestamp (ms, Linux's TCP clock) from before
    /// the first retransmission: an original, not a retransmission, was delivered (Eifel).
    /// With no retransmission recorded, Linux 6.16+ says yes: nothing was retransmitted, so
    /// what arrived was an original (a SACK connection past its handshake).
    fn packet_delayed(&self) -> bool {
        match self.retrans_stamp {
            Some(rs) => self.rcv_tsecr > Time::ZERO && self.rcv_tsecr.ts_ms() < rs.ts_ms(),
            None => true,
        }
    }

    /// `tcp_any_retrans_done`: a retransmission is in flight, or the head was ever resent.
    fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out() > 0 || self.sb.seg(self.snd_una()).is_some_and(|s| s.ever_retrans)
    }

    /// `tcp_retrans_stamp_cleanup` (`tcp_try_to_open`, and 6.11+ `tcp_enter_recovery`): with
    /// no retransmission left in the network, the next episode's first retransmission starts
    /// the clock for undo and `tcp_write_timeout`.
    fn retrans_stamp_cleanup(&mut self) {
        if !self.any_retrans_done() {
            self.retrans_stamp = None;
        }
    }

    /// `tcp_write_timeout`: retransmitting for `tcp_retries2`'s worth of backed-off timeouts
    /// since the episode's first retransmission, the subflow gives up.
    pub fn write_timed_out(&self, now: Time) -> bool {
        self.retrans_stamp
            .is_some_and(|rs| now.saturating_since(rs) >= WRITE_TIMEOUT)
    }

    /// `tcp_may_undo`.
    fn may_undo(&self) -> bool {
        self.undo_marker.is_some() && (self.undo_retrans == 0 || self.packet_delayed())
    }

    /// `tcp_undo_cwnd_reduction`: the window and ssthresh of before the reduction.
    fn undo_cwnd_reduction(&mut self, unmark_loss: bool, cc: &mut dyn CongestionControl) {
        if unmark_loss {
            self.sb.unmark_lost();
            self.rack.rescan(self.snd_una());
        }
        if self.prior_ssthresh > 0 {
            let snap = self.cc_snapshot();
            self.cc.cwnd = cc
                .undo_cwnd(self.id as usize, &snap, self.prior_cwnd)
                .max(1);
            if self.prior_ssthresh > self.cc.ssthresh {
                self.cc.ssthresh = self.prior_ssthresh;
            }
        }
        self.undo_marker = None;
        self.rack.set_advanced();
    }

    /// `tcp_fastretrans_alert`'s undo on a dubious ACK outside loss recovery: every
    /// retransmission of the episode reported duplicate (`tcp_try_undo_dsack`, in recovery or
    /// after it).
    fn try_undo(&mut self, now: Time, cc: &mut dyn CongestionControl) {
        match self.ca_state {
            CaState::Open | CaState::Recovery => {
                if self.ca_state == CaState::Open {
                    self.retrans_stamp = None;
                }
                if self.undo_marker.is_some() && self.undo_retrans == 0 {
                    if self.recovery == LossRecovery::Linux {
                        self.rack.on_dsack_undo();
                    }
                    self.undo_cwnd_reduction(false, cc);
                    self.stats.dsack_undos += 1;
                    if self.ca_state == CaState::Recovery {
                        self.set_ca_state(CaState::Open, now, cc);
                    }
                }
            }
            CaState::Loss => unreachable!("an ACK in loss recovery goes to process_loss"),
        }
    }

    /// `tcp_process_loss`: an ACK in loss recovery. The timeout is undone when the ACK
    /// proves an original delivered (Eifel, `tcp_try_undo_loss(sk, false)`) or, with F-RTO,
    /// when it (S)ACKs a segment never retransmitted (RFC 5682 3.1 step 3b,
    /// `tcp_try_undo_loss(sk, true)`). F-RTO's first ACK that advances `snd_una` asks for new
    /// data rather than retransmissions (step 2b: `frto_wants_new_data`); a duplicate ACK
    /// after new data went proves the loss real (step 3a).
    fn process_loss(
        &mut self,
        now: Time,
        una_advanced: bool,
        d: &Deliveries,
        dupack: bool,
        cc: &mut dyn CongestionControl,
    ) {
        let recovered = self.snd_una() >= self.recover;
        if una_advanced && self.may_undo() {
            self.undo_loss(now, false, cc);
            return;
        }
        if self.frto {
            if d.orig_sacked {
                self.undo_loss(now, true, cc);
                return;
            }
            if self.snd_nxt() > self.recover {
                if d.newly_sacked || dupack {
                    self.frto = false; // step 3a: the loss was real
                }
            } else if una_advanced && !recovered {
                self.recover = self.snd_nxt();
                // Step 2b, if the write queue and the window allow (the caller knows).
                self.rexmit_new = true;
            }
        }
        // `recovered`: `tcp_try_undo_recovery` (the undo was tried above; the state changes in
        // `update_ca_state`).
    }

    /// `tcp_try_undo_loss`: the timeout's reduction and loss marks are undone
    /// (`TCPLossUndo`; `TCPSpuriousRTOs` when F-RTO proved it).
    fn undo_loss(&mut self, now: Time, frto_undo: bool, cc: &mut dyn CongestionControl) {
        self.undo_cwnd_reduction(true, cc);
        self.stats.recovery_undos += 1;
        if frto_undo {
            self.stats.spurious_rtos += 1;
        }
        self.rto_retransmits = 0;
        self.rexmit_new = false;
        self.set_ca_state(CaState::Open, now, cc);
    }

    /// F-RTO step 2b is pending: the next transmission should be new data if this subflow has
    /// some waiting within the window (`tcp_write_queue_empty`, `tcp_wnd_end`). The caller
    /// says whether it has: if not, F-RTO gives way to the conventional recovery at once
    /// (`tp->frto = 0`, `REXMIT_LOST`) and `false` comes back.
    /// F-RTO step 2b reserved the next round for new data: only then does
    /// `frto_wants_new_data` have a say (and anything to change).
    #[inline]
    pub fn frto_rexmit_new(&self) -> bool {
        self.rexmit_new
    }

    pub fn frto_wants_new_data(&mut self, has_new_data: bool) -> bool {
        if !self.rexmit_new {
            return false;
        }
        if !has_new_data {
            self.rexmit_new = false;
            self.frto = false;
        }
        has_new_data
    }

    /// After a round of sending that F-RTO step 2b reserved for new data (`tcp_xmit_recovery`
    /// with `REXMIT_NEW`): if none went out, F-RTO ends and lost segments are retransmitted as
    /// usual (the caller retransmits when this returns true).
    pub fn frto_after_push(&mut self) -> bool {
        if !std::mem::take(&mut self.rexmit_new) {
            return false;
        }
        if self.snd_nxt() > self.recover {
            return false;
        }
        self.frto = false;
        true
    }

    /// RFC 6298 (2), with timestamps (RFC 7323 4) when no clean sample exists; the
    /// congestion control hears of every ACK (`pkts_acked`).
    fn sample_rtt(
        &mut self,
        now: Time,
        ack: &Ack,
        d: &Deliveries,
        cc: &mut dyn CongestionControl,
    ) -> Option<Dur> {
        let rtt = d.acked_rtt.or(d.sacked_rtt).or_else(|| {
            (d.una_advanced && ack.ts_ecr > Time::ZERO && ack.ts_ecr <= now)
                .then(|| now - ack.ts_ecr)
        });
        if let Some(r) = rtt {
            self.rtt.on_sample(r);
        }
        let snap = self.cc_snapshot();
        cc.pkts_acked(
            self.id as usize,
            &snap,
            &AckSample {
                acked: d.delivered,
                rtt,
                in_flight: self.in_flight(),
            },
            now,
        );
        rtt
    }

    // ----- loss detection -----

    /// `tcp_rack_mark_lost` (or, with classic recovery, RFC 6675's IsLost): marks what is
    /// deemed lost, and arms the reordering timer for what will be if nothing comes meanwhile.
    /// Returns whether it armed the reordering timer.
    fn mark_lost(&mut self, now: Time) -> bool {
        if self.recovery == LossRecovery::Classic {
            self.sb.mark_lost_by_dupthresh();
            return false;
        }
        if !self.rack.take_advanced() {
            return false;
        }
        let wait = self.rack_detect_loss(now);
        self.timers
            .put_due(Timer::Reorder, wait.map(|w| self.reo_timer(now, w)));
        wait.is_some()
    }

    /// `tcp_rearm_rto`: the one retransmission timer becomes the RTO again, a whole RTO from
    /// now, or from the head's last transmission over a pending reordering or probe timer
    /// (`tcp_rto_delta_us`), which it replaces.
    fn rearm_rto(&mut self, now: Time) {
        if self.packets_out() == 0 {
            return;
        }
        let pending =
            self.timers.get(Timer::Reorder).is_some() || self.timers.get(Timer::Tlp).is_some();
        let wait = match self.sb.seg(self.sb.snd_una()) {
            Some(head) if pending => (head.sent_at + self.rtt.rto())
                .saturating_since(now)
                .max(Dur::from_micros(1)),
            _ => self.rtt.rto(),
        };
        self.timers.stop(Timer::Reorder);
        self.timers
            .put_due(Timer::Rto, Some(self.jiffies.arm(now, wait)));
    }

    /// `tcp_rack_mark_lost`: the wait in whole ticks plus `TCP_TIMEOUT_MIN` (2 ticks); when
    /// the timer runs and when it is due.
    fn reo_timer(&self, now: Time, wait: Dur) -> (Time, Time) {
        let j = self.jiffies;
        let after = j.round_up(wait) + j.ticks(2);
        j.arm(now, after)
    }

    fn rack_detect_loss(&mut self, now: Time) -> Option<Dur> {
        let reo_wnd = self.rack.reo_wnd(
            self.ca_state == CaState::Open,
            self.sb.sacked_out(),
            self.min_rtt(),
            self.srtt(),
        );
        self.rack.detect_loss(&mut self.sb, now, reo_wnd)
    }

    /// RACK's reordering timer fired (`tcp_rack_reo_timeout`): judge again, and if anything
    /// was deemed lost, start recovery.
    pub fn on_reo_timeout(&mut self, now: Time, cc: &mut dyn CongestionControl, all: &[CcState]) {
        self.timers.stop(Timer::Reorder);
        let lost_before = self.sb.lost_out();
        let wait = self.rack_detect_loss(now);
        self.timers
            .put_due(Timer::Reorder, wait.map(|w| self.reo_timer(now, w)));
        if self.sb.lost_out() > lost_before {
            // Linux: `tcp_enter_recovery`, then `tcp_cwnd_reduction(sk, 1, 0)`.
            self.update_ca_state(now, 1, false, cc, all);
        }
    }

    // ----- tail loss probe -----

    /// `tcp_schedule_loss_probe`: with data out and no loss being repaired, a probe timer, no
    /// later than the RTO.
    fn schedule_tlp(&mut self, now: Time, advancing_rto: bool) {
        self.tlp.mark_scheduled(now);
        if self.packets_out() == 0
            || self.ca_state != CaState::Open
            || self.recovery == LossRecovery::Classic
        {
            self.timers.stop(Timer::Tlp);
            return;
        }
        let rto_left = if advancing_rto {
            self.rtt.rto()
        } else {
            self.timers
                .get(Timer::Rto)
                .map_or(self.rtt.rto(), |t| t.saturating_since(now))
        };
        let pto = Tlp::timeout(self.rtt.srtt(), self.packets_out(), rto_left);
        self.timers
            .put_due(Timer::Tlp, Some(self.jiffies.arm(now, pto)));
    }

    /// Whether the probe timer has fired with a probe due (one per episode, `tcp_send_loss_probe`);
    /// if not, it is disarmed.
    pub fn tlp_due(&mut self, now: Time) -> bool {
        if !self.timers.is_due(Timer::Tlp, now) {
            return false;
        }
        self.timers.stop(Timer::Tlp);
        !self.tlp.in_episode() && self.packets_out() > 0 && self.ca_state == CaState::Open
    }

    /// The probe went out as a new segment (sent by the caller with `transmit_new`).
    pub fn tlp_sent_new(&mut self, now: Time) {
        self.tlp_after_probe(now, false);
    }

    /// The probe as a retransmission of the last segment sent.
    pub fn tlp_retransmit_tail(&mut self, now: Time, cc: &mut dyn CongestionControl) -> DataSeg {
        let seg = self.resend(now, self.snd_nxt() - 1, cc);
        self.tlp_after_probe(now, true);
        seg
    }

    fn tlp_after_probe(&mut self, now: Time, retrans: bool) {
        self.tlp.start_episode(self.snd_nxt(), retrans);
        self.timers.stop(Timer::Tlp);
        self.stats.tlp_probes += 1;
        // `tcp_rearm_rto` with nothing pending: a whole RTO from now.
        self.timers
            .put_due(Timer::Rto, Some(self.rtt.rto_timer(now)));
    }

    /// A probe that repaired a loss reduces the window as entering recovery would
    /// (`tcp_init_cwnd_reduction` + `tcp_end_cwnd_reduction`).
    fn process_tlp_ack(
        &mut self,
        now: Time,
        ack: &Ack,
        out: &AckOutcome,
        cc: &mut dyn CongestionControl,
        all: &[CcState],
    ) {
        let verdict = self
            .tlp
            .on_ack(ack.ack, ack.dsack, out.una_advanced, out.delivered);
        if verdict == ProbeAck::Repaired {
            let snap = self.cc_snapshot();
            self.cc.ssthresh = cc.ssthresh(self.id as usize, &snap, now, all);
            if self.cc.ssthresh < INFINITE_SSTHRESH {
                self.cc.cwnd = self.cc.ssthresh.max(1);
            }
            self.cc.cwnd_cnt = 0;
            self.stats.tlp_recoveries += 1;
        }
    }

    // ----- congestion state -----

    fn set_ca_state(&mut self, state: CaState, now: Time, cc: &mut dyn CongestionControl) {
        self.ca_state = state;
        cc.set_state(self.id as usize, &mut self.cc, state, now);
    }

    fn update_ca_state(
        &mut self,
        now: Time,
        delivered: u32,
        una_advanced: bool,
        cc: &mut dyn CongestionControl,
        all: &[CcState],
    ) {
        // Leaving recovery or loss once the RecoveryPoint is ACKed (RFC 6675 (4.1) / 5.1).
        match self.ca_state {
            CaState::Recovery if self.snd_una() >= self.recover => {
                if self.recovery != LossRecovery::Classic && self.may_undo() {
                    // `tcp_try_undo_recovery`: the reduction was spurious.
                    self.undo_cwnd_reduction(false, cc);
                    self.stats.recovery_undos += 1;
                } else {
                    self.rack.on_recovery_end();
                    // Linux `tcp_end_cwnd_reduction`.
                    if self.cc.ssthresh < INFINITE_SSTHRESH {
                        self.cc.cwnd = self.cc.ssthresh;
                    }
                    self.cc.cwnd_cnt = 0;
                }
                self.set_ca_state(CaState::Open, now, cc);
            }
            CaState::Loss if self.snd_una() >= self.recover => {
                // `tcp_try_undo_recovery` (the undo itself was tried in `process_loss`).
                self.rack.on_recovery_end();
                self.set_ca_state(CaState::Open, now, cc);
            }
            _ => {}
        }

        if self.ca_state == CaState::Open && self.sb.lost_out() > 0 {
            // RFC 6675 (4): enter fast recovery; RFC 5681 (4) via the CC's ssthresh.
            // `tcp_enter_recovery` starts the clock with this episode's first retransmission.
            if self.recovery != LossRecovery::Classic {
                self.retrans_stamp_cleanup();
            }
            self.recover = self.snd_nxt();
            // `tcp_enter_recovery`: what an undo would restore.
            self.init_undo();
            self.prior_ssthresh = self.current_ssthresh();
            self.prior_cwnd = self.cc.cwnd;
            let snap = self.cc_snapshot();
            self.cc.ssthresh = cc.ssthresh(self.id as usize, &snap, now, all);
            self.prr.start(self.cc.cwnd);
            self.stats.fast_recoveries += 1;
            // `tcp_init_cwnd_reduction` ends any probe episode.
            self.tlp.end_episode();
            self.timers.stop(Timer::Tlp);
            self.set_ca_state(CaState::Recovery, now, cc);
        }

        match self.ca_state {
            CaState::Recovery => {
                if let Some(cwnd) = self.prr.cwnd(delivered, self.in_flight(), self.cc.ssthresh) {
                    self.cc.cwnd = cwnd;
                }
            }
            CaState::Open | CaState::Loss => {
                // Linux `tcp_may_raise_cwnd`: grow only when the cumulative ACK advances
                // (RFC 5681 3.1), by everything newly delivered (ACKed or SACKed).
                if delivered > 0 && una_advanced && self.cwnd_limited() {
                    let mut st = self.cc_snapshot();
                    cc.cong_avoid(self.id as usize, &mut st, delivered, now, all);
                    self.cc.cwnd = st.cwnd.max(1);
                    self.cc.ssthresh = st.ssthresh;
                    self.cc.cwnd_cnt = st.cwnd_cnt;
                }
            }
        }
    }

    // ----- the retransmission timer -----

    /// The retransmission timer fired (RFC 6298 (5.4)-(5.6), RFC 5681 (4), Linux
    /// `tcp_retransmit_timer` -> `tcp_enter_loss`). Returns nothing; the caller retransmits
    /// the head (cwnd leaves room for one) and, out-of-tree, reinjects from `outstanding()`.
    pub fn on_rto(&mut self, now: Time, cc: &mut dyn CongestionControl, all: &[CcState]) {
        self.stats.rtos += 1;
        if self.recovery == LossRecovery::Classic {
            self.enter_loss_classic(now, cc, all);
        } else {
            self.enter_loss(now, cc, all);
        }
        self.rto_retransmits += 1;
        self.timers.stop(Timer::Reorder);
        self.timers.stop(Timer::Tlp);
        self.tlp.end_episode();
        self.rtt.on_rto();
        let rto = (self.packets_out() > 0).then(|| self.rtt.rto_timer(now));
        self.timers.put_due(Timer::Rto, rto);
    }

    /// Linux `tcp_enter_loss` (6.18). `tcp_timeout_mark_lost`: the head is lost, and every
    /// segment not SACKed whose RACK timeout has passed (out for RACK's RTT or longer); those
    /// sent since stay in flight. ssthresh falls only if no reduction of this window is under
    /// way: from Open, once the recovery point is passed, or at a timeout in loss recovery
    /// after an ACK advanced. cwnd = in flight + 1. F-RTO is armed unless the timeout cuts a
    /// recovery short (`new_recovery`) and is not a repeated one (`icsk_retransmits`).
    fn enter_loss(&mut self, now: Time, cc: &mut dyn CongestionControl, all: &[CcState]) {
        let new_recovery = self.ca_state == CaState::Open;
        self.sb.timeout_mark_lost(now, self.rack.rtt());
        let reduce = self.ca_state == CaState::Open
            || self.recover <= self.snd_una()
            || (self.ca_state == CaState::Loss && self.rto_retransmits == 0);
        if reduce {
            self.prior_ssthresh = self.current_ssthresh();
            self.prior_cwnd = self.cc.cwnd;
            let snap = self.cc_snapshot();
            self.cc.ssthresh = cc.ssthresh(self.id as usize, &snap, now, all);
            self.init_undo();
        }
        self.cc.cwnd = self.in_flight() + 1;
        self.cc.cwnd_cnt = 0;
        // RACK judges what was not marked (the marked retransmissions leave its queue).
        self.rack.rescan(self.snd_una());
        self.set_ca_state(CaState::Loss, now, cc);
        self.recover = self.snd_nxt();
        self.frto = new_recovery || self.rto_retransmits > 0;
        self.rexmit_new = false;
    }

    /// A timeout with classic recovery (RFC 6298 (5.4)-(5.6), RFC 5681 (4)): every segment
    /// not SACKed is lost, cwnd = 1.
    fn enter_loss_classic(&mut self, now: Time, cc: &mut dyn CongestionControl, all: &[CcState]) {
        if self.ca_state == CaState::Open {
            self.prior_ssthresh = self.current_ssthresh();
            self.prior_cwnd = self.cc.cwnd;
            self.init_undo();
            let snap = self.cc_snapshot();
            self.cc.ssthresh = cc.ssthresh(self.id as usize, &snap, now, all);
        }
        self.cc.cwnd = 1;
        self.cc.cwnd_cnt = 0;
        self.sb.mark_all_lost();
        self.rack.reset(self.snd_nxt());
        self.recover = self.snd_nxt();
        self.set_ca_state(CaState::Loss, now, cc);
    }

    /// The out-of-tree MPTCP's penalisation (`mptcp_rcv_buf_optimization`): halve the window
    /// and, unless in slow start, ssthresh.
    pub fn penalize(&mut self, now: Time) {
        let prior = self.cc.cwnd;
        self.cc.cwnd = (self.cc.cwnd / 2).max(1);
        if prior >= self.cc.ssthresh {
            self.cc.ssthresh = (self.cc.ssthresh / 2).max(2);
        }
        self.last_penalized = Some(now);
        self.stats.penalizations += 1;
    }
}

#[cfg(test)]
#[path = "tx_tests.rs"]
mod tests;
