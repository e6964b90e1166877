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
//! - RFC 6298 retransmission timer with exponential backoff; after an RTO every outstanding
//!   segment not SACKed is marked lost and cwnd = 1 (RFC 5681 3.1, Linux `tcp_enter_loss`).
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
use crate::packet::{Ack, DataSeg, SackBlock, MAX_SACK_BLOCKS};
use crate::rtt::RttEstimator;
use crate::time::{Dur, Time};
use crate::units::wire;
use std::collections::VecDeque;

/// Linux `tcp_update_pacing_rate`: 200% of cwnd/srtt while cwnd is below half of ssthresh
/// (early slow start), 120% from there on, "approaching the end of slow start" (bits per
/// second; 0 before the first RTT sample).
pub fn pacing_rate_bps(cwnd: u32, ssthresh: u32, packets_out: u32, srtt: Dur) -> u64 {
    let srtt = srtt.as_nanos();
    if srtt == 0 {
        return 0;
    }
    let ratio = if cwnd < ssthresh / 2 { 200 } else { 120 };
    let bits = cwnd.max(packets_out) as u128 * wire::MSS as u128 * 8;
    (bits * ratio * 1_000_000_000 / 100 / srtt as u128) as u64
}

/// The latest delivery-rate sample (Linux `tcp_rate.c`): packets delivered over an interval.
/// Kept as the pair and divided only when a scheduler asks, since most never do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    pub packets: u64,
    pub interval_ns: u64,
}

impl RateSample {
    /// Bits per second, counting `wire::MSS` per packet as Linux does (`mss_cache`).
    pub fn bps(self) -> u64 {
        if self.interval_ns == 0 {
            return 0;
        }
        let bits = self.packets as u128 * wire::MSS as u128 * 8;
        (bits * 1_000_000_000 / self.interval_ns as u128) as u64
    }
}

/// Linux `tcp_reordering` (RFC 6675 DupThresh): with this many segments SACKed, RACK needs
/// no reordering window.
pub const DUP_THRESH: u32 = 3;
/// Linux `TCP_TIMEOUT_MIN` (2 jiffies at HZ = 1000): added to the reordering timer and, with
/// more than one segment out, to the probe timeout.
const TIMEOUT_MIN: Dur = Dur::from_millis(2);
/// Linux `TCP_TIMEOUT_INIT`: the probe timeout before any RTT sample.
const TIMEOUT_INIT: Dur = Dur::from_secs(1);
/// Linux `tcp_rto_min_us`: a probe waits this much more for a delayed ACK of a single
/// outstanding segment.
const PROBE_DELACK: Dur = Dur::from_millis(200);

/// RACK's state (RFC 8985 6.1): the most recently sent segment known to be delivered.
#[derive(Clone, Copy, Debug, Default)]
struct Rack {
    xmit: Time,
    end_seq: u64,
    rtt: Dur,
    /// A delivery moved it since the last loss detection.
    advanced: bool,
}

/// Send-buffer memory per segment of cwnd in `tcp_sndbuf_expand` (`per_mss`: the MSS and
/// header room rounded up to a power of two, plus the `sk_buff`). `ss -tm` on this machine's
/// kernel shows `tb` = 2 x 2,304 x the largest cwnd of each subflow.
pub const SNDBUF_PER_SEGMENT: u64 = 2304;

/// `tcp_sndbuf_expand`: room for twice the window (CUBIC and Reno: `sndbuf_expand` = 2), at
/// least the initial window's worth, at most `tcp_wmem[2]`.
pub fn sndbuf_for(cwnd: u32, wmem_max: u64) -> u64 {
    (2 * cwnd.max(INITIAL_CWND) as u64 * SNDBUF_PER_SEGMENT).min(wmem_max)
}

/// The out-of-tree MPTCP's `tcp_sndbuf_expand` for a subflow: twice the segments it sends in
/// the largest subflow RTT (`mptcp_check_snd_buf`: cwnd x RTT_max / sRTT, at least
/// `tcp_reordering` + 1), at most `tcp_wmem[2]`.
pub fn mptcp_v0_sndbuf_for(cwnd: u32, srtt: Dur, rtt_max: Dur, wmem_max: u64) -> u64 {
    let segs = if srtt == Dur::ZERO {
        0
    } else {
        cwnd as u64 * rtt_max.0.max(srtt.0) / srtt.0
    };
    (2 * segs.max(DUP_THRESH as u64 + 1) * SNDBUF_PER_SEGMENT).min(wmem_max)
}

#[derive(Clone, Copy, Debug)]
pub struct TxSeg {
    pub dseq: u64,
    pub len: u32,
    /// Last transmission time.
    pub sent_at: Time,
    pub sacked: bool,
    pub lost: bool,
    /// A retransmission of this segment is in flight (counted in `retrans_out`).
    pub retrans: bool,
    pub ever_retrans: bool,
    /// Delivery-rate bookkeeping (Linux `tcp_rate.c`): what was delivered when it was sent.
    delivered: u64,
    delivered_time: Time,
}

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
}

pub struct SubflowTx {
    pub id: u8,
    recovery: LossRecovery,
    snd_una: u64,
    snd_nxt: u64,
    segs: VecDeque<TxSeg>,
    pub cc: CcState,
    ca_state: CaState,
    /// RFC 6675 RecoveryPoint (Linux `high_seq`).
    recover: u64,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    rack: Rack,
    /// Segments below this are delivered, lost, or retransmitted (the first original
    /// transmission RACK has not judged).
    rack_scan: u64,
    /// The previous ACK's SACK blocks as tagged (clipped to what was outstanding). Tags are
    /// never taken back, so a block seen again is skipped, as Linux skips what its
    /// `recv_sack_cache` says was processed: a long block repeated in every ACK costs nothing.
    sack_cache: [SackBlock; MAX_SACK_BLOCKS],
    sack_cache_len: usize,
    /// Retransmitted segments in the order of their retransmission (RACK judges them too).
    retrans_q: VecDeque<u64>,
    /// RACK's reordering timer (Linux `ICSK_TIME_REO_TIMEOUT`).
    reo_at: Option<Time>,
    /// The tail loss probe timer, and the episode of a probe sent (Linux `tlp_high_seq`:
    /// `snd_nxt` when it went; whether it was a retransmission).
    tlp_at: Option<Time>,
    tlp_high_seq: Option<u64>,
    tlp_retrans: bool,
    /// When the probe timer was last scheduled.
    tlp_scheduled: Time,
    /// No lost, unretransmitted segment lies below this.
    retransmit_hint: u64,
    rtt: RttEstimator,
    rto_at: Option<Time>,
    // RFC 6937 state.
    prr_delivered: u32,
    prr_out: u32,
    prior_cwnd: u32,
    // Linux cwnd validation (`tcp_cwnd_validate`).
    is_cwnd_limited: bool,
    max_packets_out: u32,
    cwnd_usage_seq: u64,
    last_send: Time,
    // Delivery rate (Linux `tcp_rate.c`, simplified to the ACK-side interval).
    delivered: u64,
    delivered_time: Time,
    delivery_rate: RateSample,
    /// When the out-of-tree MPTCP scheduler last halved this subflow's window.
    pub last_penalized: Option<Time>,
    /// RFC 7323 TS.Recent: the latest TSval of the peer's ACKs, echoed in data segments.
    peer_ts: Time,
    /// `sk_sndbuf` (bytes of memory): grows with the window, never shrinks.
    sndbuf: u64,
    pub stats: SubflowTxStats,
}

impl SubflowTx {
    pub fn new(id: u8, now: Time) -> SubflowTx {
        SubflowTx {
            id,
            recovery: LossRecovery::Linux,
            snd_una: 0,
            snd_nxt: 0,
            segs: VecDeque::new(),
            cc: CcState::new(),
            ca_state: CaState::Open,
            recover: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            rack: Rack::default(),
            rack_scan: 0,
            sack_cache: [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS],
            sack_cache_len: 0,
            retrans_q: VecDeque::new(),
            reo_at: None,
            tlp_at: None,
            tlp_high_seq: None,
            tlp_retrans: false,
            tlp_scheduled: Time(u64::MAX),
            retransmit_hint: 0,
            rtt: RttEstimator::new(),
            rto_at: None,
            prr_delivered: 0,
            prr_out: 0,
            prior_cwnd: INITIAL_CWND,
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            last_send: now,
            delivered: 0,
            delivered_time: now,
            delivery_rate: RateSample::default(),
            last_penalized: None,
            peer_ts: Time::ZERO,
            sndbuf: 0,
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

    /// The handshake's RTT measurement (the kernel seeds srtt from the SYN exchange).
    pub fn seed_rtt(&mut self, r: Dur) {
        if r > Dur::ZERO {
            self.rtt.on_sample(r);
        }
    }

    // ----- getters -----

    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    /// `sk_sndbuf` now (bytes of memory).
    pub fn sndbuf(&self) -> u64 {
        self.sndbuf
    }

    /// `tcp_new_space` after an ACK freed queue memory (and `tcp_init_buffer_space`): the
    /// buffer grows to twice the window unless the window is full (`tcp_should_expand_sndbuf`).
    pub fn expand_sndbuf(&mut self, wmem_max: u64) {
        let want = sndbuf_for(self.cc.cwnd, wmem_max);
        self.expand_sndbuf_to(want);
    }

    /// `tcp_new_space` with the out-of-tree MPTCP's sizing (`mptcp_v0_sndbuf_for`).
    pub fn expand_sndbuf_v0(&mut self, rtt_max: Dur, wmem_max: u64) {
        let want = mptcp_v0_sndbuf_for(self.cc.cwnd, self.srtt(), rtt_max, wmem_max);
        self.expand_sndbuf_to(want);
    }

    fn expand_sndbuf_to(&mut self, want: u64) {
        if self.in_flight() < self.cc.cwnd || self.sndbuf == 0 {
            self.sndbuf = self.sndbuf.max(want);
        }
    }

    /// The TSval a data segment sent now echoes.
    pub fn peer_ts(&self) -> Time {
        self.peer_ts
    }
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }
    pub fn packets_out(&self) -> u32 {
        (self.snd_nxt - self.snd_una) as u32
    }
    /// RFC 6675 pipe / Linux `tcp_packets_in_flight`.
    pub fn in_flight(&self) -> u32 {
        self.packets_out() - (self.sacked_out + self.lost_out) + self.retrans_out
    }
    pub fn cwnd(&self) -> u32 {
        self.cc.cwnd
    }
    /// Free congestion-window space in segments.
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
    pub fn srtt(&self) -> Dur {
        self.rtt.srtt().unwrap_or(Dur::ZERO)
    }
    pub fn rto_at(&self) -> Option<Time> {
        self.rto_at
    }
    /// The next timer of this subflow: RACK's reordering timer, the probe timer, the RTO.
    pub fn timer_at(&self) -> Option<Time> {
        let first = |a: Option<Time>, b: Option<Time>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, None) => x,
            (None, y) => y,
        };
        first(first(self.reo_at, self.tlp_at), self.rto_at)
    }
    pub fn reo_at(&self) -> Option<Time> {
        self.reo_at
    }
    pub fn tlp_at(&self) -> Option<Time> {
        self.tlp_at
    }
    pub fn delivery_rate(&self) -> RateSample {
        self.delivery_rate
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
        (self.snd_una..).zip(self.segs.iter())
    }
    pub fn seg(&self, seq: u64) -> Option<&TxSeg> {
        seq.checked_sub(self.snd_una)
            .and_then(|i| self.segs.get(i as usize))
    }
    /// Whether `dseq` is outstanding here and not yet delivered to the peer.
    pub fn holds_unacked(&self, dseq: u64) -> bool {
        self.segs.iter().any(|s| s.dseq == dseq && !s.sacked)
    }

    /// A snapshot of the window state for the congestion controller.
    pub fn cc_snapshot(&self) -> CcState {
        CcState {
            srtt: self.srtt(),
            min_rtt: self.rtt.min_rtt().unwrap_or(Dur::ZERO),
            in_flight: self.in_flight(),
            ..self.cc
        }
    }

    // ----- sending -----

    /// The next lost segment to retransmit (RFC 6675 NextSeg (1)), if the window allows.
    pub fn next_retransmit(&mut self) -> Option<u64> {
        if self.lost_out <= self.retrans_out_of_lost() {
            return None;
        }
        let start = self.retransmit_hint.max(self.snd_una);
        for seq in start..self.snd_nxt {
            let s = &self.segs[(seq - self.snd_una) as usize];
            if s.lost && !s.retrans && !s.sacked {
                self.retransmit_hint = seq;
                return Some(seq);
            }
        }
        self.retransmit_hint = self.snd_nxt;
        None
    }

    fn retrans_out_of_lost(&self) -> u32 {
        // Lost segments whose retransmission is in flight stay `lost` until ACKed.
        self.retrans_out
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
        if self.rto_at.is_none() {
            // RFC 6298 (5.1)
            self.rto_at = Some(self.rtt.rto_deadline(now));
        }
        if self.ca_state == CaState::Recovery {
            self.prr_out += 1;
        }
    }

    /// Linux `tcp_cwnd_restart`: halve per RTO of idleness, down to the restart window.
    fn cwnd_restart(&mut self, idle: Dur) {
        let restart = INITIAL_CWND.min(self.cc.cwnd);
        let rto = self.rtt.rto().as_nanos().max(1);
        let mut left = idle.as_nanos() as i128 - rto as i128;
        self.cc.ssthresh = self.cc.ssthresh.max((3 * self.cc.cwnd) / 4);
        while left > 0 && self.cc.cwnd > restart {
            self.cc.cwnd >>= 1;
            left -= rto as i128;
        }
        self.cc.cwnd = self.cc.cwnd.max(restart);
        self.cc.cwnd_cnt = 0;
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
        let seq = self.snd_nxt;
        self.segs.push_back(TxSeg {
            dseq,
            len,
            sent_at: now,
            sacked: false,
            lost: false,
            retrans: false,
            ever_retrans: false,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
        });
        self.snd_nxt += 1;
        self.count_sent(len);
        // Linux `tcp_write_xmit`: after new data, a loss probe is due (RTO as it stands). A
        // burst goes out at one instant; its timeout only changes past the first segment.
        if self.tlp_scheduled != now || self.packets_out() == 2 {
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
            let s = &self.segs[(seq - self.snd_una) as usize];
            s.lost && !s.retrans && !s.sacked
        });
        self.resend(now, seq, cc)
    }

    /// Sends segment `seq` again: it counts as a retransmission in flight (once, however
    /// often it is resent) and its transmission time and delivery state are renewed.
    fn resend(&mut self, now: Time, seq: u64, cc: &mut dyn CongestionControl) -> DataSeg {
        self.on_transmit(now, cc);
        let delivered = self.delivered;
        let delivered_time = self.delivered_time;
        let s = &mut self.segs[(seq - self.snd_una) as usize];
        let newly_retrans = !s.retrans;
        s.retrans = true;
        s.ever_retrans = true;
        s.sent_at = now;
        s.delivered = delivered;
        s.delivered_time = delivered_time;
        let (dseq, len) = (s.dseq, s.len);
        if newly_retrans {
            self.retrans_out += 1;
            self.retrans_q.push_back(seq);
        }
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
        if self.snd_una >= self.cwnd_usage_seq
            || limited
            || (!self.is_cwnd_limited && self.packets_out() > self.max_packets_out)
        {
            self.is_cwnd_limited = limited;
            self.max_packets_out = self.packets_out();
            self.cwnd_usage_seq = self.snd_nxt;
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

    /// Splits `from..end` at the previous ACK's tagged blocks: `(skip_to, stop)` where
    /// `skip_to > from` when `from` lies in one (skip to its end), otherwise `from..stop` is
    /// untagged by the previous ACK.
    fn sack_cache_split(&self, from: u64, end: u64) -> (u64, u64) {
        let mut stop = end;
        for c in &self.sack_cache[..self.sack_cache_len] {
            if c.start <= from && from < c.end {
                return (c.end, c.end);
            }
            if c.start > from {
                stop = stop.min(c.start);
            }
        }
        (from, stop)
    }

    pub fn on_ack(
        &mut self,
        now: Time,
        ack: &Ack,
        cc: &mut dyn CongestionControl,
        all: &[CcState],
    ) -> AckOutcome {
        let mut out = AckOutcome::default();
        self.peer_ts = self.peer_ts.max(ack.ts_val);
        let mut seq_rtt: Option<Dur> = None;
        let mut sack_rtt: Option<Dur> = None;
        let mut rate_ref: Option<(u64, Time)> = None;

        // Cumulative ACK (RFC 5681 / RFC 6675 (3)).
        if ack.ack > self.snd_una && ack.ack <= self.snd_nxt {
            while self.snd_una < ack.ack {
                let s = self.segs.pop_front().expect("outstanding segment");
                let seq = self.snd_una;
                self.snd_una += 1;
                if s.sacked {
                    self.sacked_out -= 1;
                } else {
                    self.rack_advance(now, &s, seq);
                    out.delivered += 1;
                    if s.lost {
                        self.lost_out -= 1;
                    }
                    if s.retrans {
                        self.retrans_out -= 1;
                    }
                    if !s.ever_retrans && seq_rtt.is_none() {
                        // Linux takes the oldest newly ACKed, never retransmitted segment
                        // (Karn's rule without timestamps; `tcp_clean_rtx_queue`).
                        seq_rtt = Some(now - s.sent_at);
                    }
                    rate_ref = Some((s.delivered, s.delivered_time));
                }
            }
            out.una_advanced = true;
        }

        // SACK blocks (RFC 2018, RFC 6675 (2)).
        let mut newly_sacked = false;
        let mut tagged = [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS];
        let mut n_tagged = 0;
        for b in ack.sack_blocks() {
            let start = b.start.max(self.snd_una);
            let end = b.end.min(self.snd_nxt);
            if start >= end {
                continue;
            }
            tagged[n_tagged] = SackBlock { start, end };
            n_tagged += 1;
            let mut from = start;
            while from < end {
                let (skip_to, stop) = self.sack_cache_split(from, end);
                if skip_to > from {
                    from = skip_to;
                    continue;
                }
                for seq in from..stop {
                    let s = self.segs[(seq - self.snd_una) as usize];
                    if s.sacked {
                        continue;
                    }
                    self.rack_advance(now, &s, seq);
                    let s = &mut self.segs[(seq - self.snd_una) as usize];
                    s.sacked = true;
                    self.sacked_out += 1;
                    out.delivered += 1;
                    newly_sacked = true;
                    if s.lost {
                        s.lost = false;
                        self.lost_out -= 1;
                    }
                    if s.retrans {
                        s.retrans = false;
                        self.retrans_out -= 1;
                    }
                    if !s.ever_retrans && sack_rtt.is_none() {
                        sack_rtt = Some(now - s.sent_at);
                    }
                    if rate_ref.is_none_or(|(d, _)| s.delivered > d) {
                        rate_ref = Some((s.delivered, s.delivered_time));
                    }
                }
                from = stop;
            }
        }
        self.sack_cache = tagged;
        self.sack_cache_len = n_tagged;
        self.rack_scan = self.rack_scan.max(self.snd_una);

        // Delivery rate sample.
        self.delivered += out.delivered as u64;
        if out.delivered > 0 {
            if let Some((d0, t0)) = rate_ref {
                let interval = now.saturating_since(t0).as_nanos();
                if interval > 0 {
                    self.delivery_rate = RateSample {
                        packets: self.delivered - d0,
                        interval_ns: interval,
                    };
                }
            }
            self.delivered_time = now;
        }

        // RTT (RFC 6298 (2); timestamps per RFC 7323 4 when no clean sample exists).
        let rtt = seq_rtt.or(sack_rtt).or_else(|| {
            (out.una_advanced && ack.ts_ecr > Time::ZERO && ack.ts_ecr <= now)
                .then(|| now - ack.ts_ecr)
        });
        if let Some(r) = rtt {
            self.rtt.on_sample(r);
        }
        out.rtt_sample = rtt;
        let snap = self.cc_snapshot();
        cc.pkts_acked(
            self.id as usize,
            &snap,
            &AckSample {
                acked: out.delivered,
                rtt,
                in_flight: self.in_flight(),
            },
            now,
        );

        if out.una_advanced {
            // RFC 6298 (5.3) and (5.7): restart the timer; the backoff ends.
            self.rtt.reset_backoff();
            self.rto_at = (self.packets_out() > 0).then(|| self.rtt.rto_deadline(now));
            if self.retransmit_hint < self.snd_una {
                self.retransmit_hint = self.snd_una;
            }
        }
        if self.tlp_high_seq.is_some() {
            self.process_tlp_ack(now, ack, &out, cc, all);
        }
        // Linux `tcp_ack_is_dubious` -> `tcp_identify_packet_loss`.
        if newly_sacked || self.ca_state != CaState::Open || self.lost_out > 0 {
            self.rack_mark_lost(now);
        }

        self.update_ca_state(now, out.delivered, out.una_advanced, cc, all);
        if out.una_advanced {
            // Linux `tcp_set_xmit_timer`: a loss probe if one is due, else the RTO.
            self.schedule_tlp(now, true);
        }
        out
    }

    // ----- RACK (RFC 8985 6, Linux tcp_recovery.c) -----

    /// `tcp_rack_advance`: segment `seq` was just delivered.
    fn rack_advance(&mut self, now: Time, s: &TxSeg, seq: u64) {
        let rtt = now.saturating_since(s.sent_at);
        // A retransmitted segment ACKed sooner than any RTT: the original's ACK, ambiguous.
        if s.ever_retrans && rtt < self.rtt.min_rtt().unwrap_or(Dur::ZERO) {
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt = rtt;
        if (s.sent_at, seq + 1) > (self.rack.xmit, self.rack.end_seq) {
            self.rack.xmit = s.sent_at;
            self.rack.end_seq = seq + 1;
        }
    }

    /// `tcp_rack_reo_wnd`: no reordering allowance during recovery or once DupThresh
    /// segments are SACKed (the links never reorder, so it never grows), else min RTT / 4.
    fn rack_reo_wnd(&self) -> Dur {
        if self.ca_state != CaState::Open || self.sacked_out >= DUP_THRESH {
            return Dur::ZERO;
        }
        (self.rtt.min_rtt().unwrap_or(Dur::ZERO) / 4).min(self.srtt())
    }

    /// `tcp_rack_mark_lost`: marks what RACK deems lost; arms the reordering timer for what
    /// it will deem lost if nothing comes meanwhile.
    fn rack_mark_lost(&mut self, now: Time) {
        if self.recovery == LossRecovery::Classic {
            self.dupthresh_mark_lost();
            return;
        }
        if !self.rack.advanced {
            return;
        }
        self.rack.advanced = false;
        let wait = self.rack_detect_loss(now);
        self.reo_at = wait.map(|w| now + w + TIMEOUT_MIN);
    }

    /// `tcp_rack_detect_loss`: every segment sent before RACK's segment, not delivered, and
    /// out for longer than RACK's RTT plus the reordering window, is lost. Returns the longest
    /// wait of those not yet deemed lost.
    fn rack_detect_loss(&mut self, now: Time) -> Option<Dur> {
        let reo_wnd = self.rack_reo_wnd();
        let limit = self.rack.rtt + reo_wnd;
        let rack = (self.rack.xmit, self.rack.end_seq);
        let mut wait: Option<Dur> = None;
        // Original transmissions, in sequence (= sending) order from the first unjudged one.
        let mut all_judged = true;
        let mut seq = self.rack_scan.max(self.snd_una);
        while seq < self.snd_nxt {
            let s = self.segs[(seq - self.snd_una) as usize];
            if s.sacked || s.lost || s.retrans {
                if all_judged {
                    self.rack_scan = seq + 1;
                }
                seq += 1;
                continue;
            }
            if (s.sent_at, seq + 1) >= rack {
                break; // sent after RACK's segment: nothing to say yet
            }
            let out_for = now.saturating_since(s.sent_at);
            if out_for >= limit {
                self.mark_seg_lost(seq);
                if all_judged {
                    self.rack_scan = seq + 1;
                }
            } else {
                all_judged = false;
                let w = limit - out_for;
                wait = Some(wait.map_or(w, |x| x.max(w)));
            }
            seq += 1;
        }
        // Retransmissions, in the order they were sent.
        let mut i = 0;
        while i < self.retrans_q.len() {
            let seq = self.retrans_q[i];
            let live = seq >= self.snd_una && {
                let s = &self.segs[(seq - self.snd_una) as usize];
                s.retrans && !s.sacked
            };
            if !live {
                self.retrans_q.remove(i);
                continue;
            }
            let s = self.segs[(seq - self.snd_una) as usize];
            if (s.sent_at, seq + 1) >= rack {
                break;
            }
            let out_for = now.saturating_since(s.sent_at);
            if out_for >= limit {
                self.mark_seg_lost(seq);
                self.retrans_q.remove(i);
                continue;
            }
            let w = limit - out_for;
            wait = Some(wait.map_or(w, |x| x.max(w)));
            i += 1;
        }
        wait
    }

    /// RFC 6675 IsLost: a segment not SACKed with at least DupThresh SACKed segments above it
    /// is lost (a retransmission is not judged again: if it is lost, the RTO finds it).
    fn dupthresh_mark_lost(&mut self) {
        let mut sacked_above = self.sacked_out;
        let mut seq = self.snd_una;
        while seq < self.snd_nxt && sacked_above >= DUP_THRESH {
            let s = self.segs[(seq - self.snd_una) as usize];
            if s.sacked {
                sacked_above -= 1;
            } else if !s.lost && !s.ever_retrans {
                self.mark_seg_lost(seq);
            }
            seq += 1;
        }
    }

    /// `tcp_mark_skb_lost`: a retransmission deemed lost no longer counts as in flight.
    fn mark_seg_lost(&mut self, seq: u64) {
        let s = &mut self.segs[(seq - self.snd_una) as usize];
        if s.retrans {
            s.retrans = false;
            self.retrans_out -= 1;
        }
        if !s.lost {
            s.lost = true;
            self.lost_out += 1;
        }
        self.retransmit_hint = self.retransmit_hint.min(seq);
    }

    /// RACK's reordering timer fired (`tcp_rack_reo_timeout`): judge again, and if anything
    /// was deemed lost, start recovery.
    pub fn on_reo_timeout(&mut self, now: Time, cc: &mut dyn CongestionControl, all: &[CcState]) {
        self.reo_at = None;
        let lost_before = self.lost_out;
        let wait = self.rack_detect_loss(now);
        self.reo_at = wait.map(|w| now + w + TIMEOUT_MIN);
        if self.lost_out > lost_before {
            // Linux: `tcp_enter_recovery`, then `tcp_cwnd_reduction(sk, 1, 0)`.
            self.update_ca_state(now, 1, false, cc, all);
        }
    }

    // ----- Tail loss probe (RFC 8985 7, Linux tcp_output.c) -----

    /// `tcp_schedule_loss_probe`: with data out and no loss being repaired, probe after
    /// 2 srtt (plus a delayed ACK's 200 ms with one segment out), no later than the RTO.
    fn schedule_tlp(&mut self, now: Time, advancing_rto: bool) {
        self.tlp_scheduled = now;
        if self.packets_out() == 0
            || self.ca_state != CaState::Open
            || self.recovery == LossRecovery::Classic
        {
            self.tlp_at = None;
            return;
        }
        let pto = match self.rtt.srtt() {
            Some(srtt) if self.packets_out() == 1 => srtt * 2 + PROBE_DELACK,
            Some(srtt) => srtt * 2 + TIMEOUT_MIN,
            None => TIMEOUT_INIT,
        };
        let rto_left = if advancing_rto {
            self.rtt.rto()
        } else {
            self.rto_at
                .map_or(self.rtt.rto(), |t| t.saturating_since(now))
        };
        self.tlp_at = Some(now + pto.min(rto_left.max(Dur(1))));
    }

    /// Whether the probe timer has fired with a probe due (one per episode, `tcp_send_loss_probe`);
    /// if not, it is disarmed.
    pub fn tlp_due(&mut self, now: Time) -> bool {
        if self.tlp_at.is_none_or(|t| t > now) {
            return false;
        }
        self.tlp_at = None;
        self.tlp_high_seq.is_none() && self.packets_out() > 0 && self.ca_state == CaState::Open
    }

    /// The probe went out as a new segment (sent by the caller with `transmit_new`).
    pub fn tlp_sent_new(&mut self, now: Time) {
        self.tlp_after_probe(now, false);
    }

    /// The probe as a retransmission of the last segment sent.
    pub fn tlp_retransmit_tail(&mut self, now: Time, cc: &mut dyn CongestionControl) -> DataSeg {
        let seg = self.resend(now, self.snd_nxt - 1, cc);
        self.tlp_after_probe(now, true);
        seg
    }

    fn tlp_after_probe(&mut self, now: Time, retrans: bool) {
        self.tlp_high_seq = Some(self.snd_nxt);
        self.tlp_retrans = retrans;
        self.tlp_at = None;
        self.stats.tlp_probes += 1;
        // `tcp_rearm_rto` with nothing pending: a whole RTO from now.
        self.rto_at = Some(now + self.rtt.rto());
    }

    /// `tcp_process_tlp_ack`: an ACK beyond the probe's episode means the probe repaired a
    /// loss (reduce the window, as `tcp_init_cwnd_reduction` + `tcp_end_cwnd_reduction`),
    /// unless it reports the probe as a duplicate (D-SACK); a duplicate ACK at its end also
    /// means original and probe both arrived. Without the D-SACK check every probe sent while
    /// the receiver merely held its ACK back would count as a repaired loss.
    fn process_tlp_ack(
        &mut self,
        now: Time,
        ack: &Ack,
        out: &AckOutcome,
        cc: &mut dyn CongestionControl,
        all: &[CcState],
    ) {
        let Some(high) = self.tlp_high_seq else {
            return;
        };
        let cum = ack.ack;
        if cum < high {
            return;
        }
        if !self.tlp_retrans || ack.dsack {
            self.tlp_high_seq = None;
        } else if cum > high {
            self.tlp_high_seq = None;
            let snap = self.cc_snapshot();
            self.cc.ssthresh = cc.ssthresh(self.id as usize, &snap, now, all);
            if self.cc.ssthresh < INFINITE_SSTHRESH {
                self.cc.cwnd = self.cc.ssthresh.max(1);
            }
            self.cc.cwnd_cnt = 0;
            self.stats.tlp_recoveries += 1;
        } else if !out.una_advanced && out.delivered == 0 {
            self.tlp_high_seq = None;
        }
    }

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
            CaState::Recovery if self.snd_una >= self.recover => {
                // Linux `tcp_end_cwnd_reduction`.
                if self.cc.ssthresh < INFINITE_SSTHRESH {
                    self.cc.cwnd = self.cc.ssthresh;
                }
                self.cc.cwnd_cnt = 0;
                self.set_ca_state(CaState::Open, now, cc);
            }
            CaState::Loss if self.snd_una >= self.recover => {
                self.set_ca_state(CaState::Open, now, cc);
            }
            _ => {}
        }

        if self.ca_state == CaState::Open && self.lost_out > 0 {
            // RFC 6675 (4): enter fast recovery; RFC 5681 (4) via the CC's ssthresh.
            self.recover = self.snd_nxt;
            let snap = self.cc_snapshot();
            self.cc.ssthresh = cc.ssthresh(self.id as usize, &snap, now, all);
            self.prior_cwnd = self.cc.cwnd;
            self.prr_delivered = 0;
            self.prr_out = 0;
            self.stats.fast_recoveries += 1;
            // `tcp_init_cwnd_reduction` ends any probe episode.
            self.tlp_high_seq = None;
            self.tlp_at = None;
            self.set_ca_state(CaState::Recovery, now, cc);
        }

        match self.ca_state {
            CaState::Recovery => self.prr(delivered),
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

    /// RFC 6937 3 (PRR-SSRB), as Linux's `tcp_cwnd_reduction`.
    fn prr(&mut self, delivered: u32) {
        if delivered == 0 && self.prr_out > 0 {
            return;
        }
        self.prr_delivered += delivered;
        let pipe = self.in_flight() as i64;
        let ssthresh = self.cc.ssthresh as i64;
        let delta = ssthresh - pipe;
        let sndcnt = if delta < 0 {
            let want = (self.prr_delivered as u64 * ssthresh as u64)
                .div_ceil(self.prior_cwnd.max(1) as u64) as i64;
            want - self.prr_out as i64
        } else {
            delta.min((self.prr_delivered as i64 - self.prr_out as i64).max(delivered as i64) + 1)
        };
        // Linux: the fast retransmit itself always goes out.
        let sndcnt = sndcnt.max(if self.prr_out == 0 { 1 } else { 0 });
        self.cc.cwnd = (pipe + sndcnt).max(1) as u32;
    }

    // ----- timers -----

    /// The retransmission timer fired (RFC 6298 (5.4)-(5.6), RFC 5681 (4), Linux
    /// `tcp_enter_loss`). Returns nothing; the caller reinjects from `outstanding()`.
    pub fn on_rto(&mut self, now: Time, cc: &mut dyn CongestionControl, all: &[CcState]) {
        self.stats.rtos += 1;
        if self.ca_state == CaState::Open {
            let snap = self.cc_snapshot();
            self.cc.ssthresh = cc.ssthresh(self.id as usize, &snap, now, all);
        }
        self.cc.cwnd = 1;
        self.cc.cwnd_cnt = 0;
        self.lost_out = 0;
        self.retrans_out = 0;
        for s in self.segs.iter_mut() {
            s.retrans = false;
            s.lost = !s.sacked;
            if s.lost {
                self.lost_out += 1;
            }
        }
        self.retransmit_hint = self.snd_una;
        self.rack_scan = self.snd_nxt;
        self.retrans_q.clear();
        self.reo_at = None;
        self.tlp_at = None;
        self.tlp_high_seq = None;
        self.recover = self.snd_nxt;
        self.rtt.on_rto();
        self.rto_at = (self.packets_out() > 0).then(|| self.rtt.rto_deadline(now));
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
mod tests {

    #[test]
    fn out_of_tree_send_buffer_is_sized_for_the_largest_rtt() {
        let ms = Dur::from_millis;
        // cwnd 40 at 20 ms beside a 200 ms subflow: 400 segments' worth, twice.
        assert_eq!(
            mptcp_v0_sndbuf_for(40, ms(20), ms(200), 64 << 20),
            2 * 400 * SNDBUF_PER_SEGMENT
        );
        // The slowest subflow sizes for its own window; tcp_wmem[2] caps; no RTT yet: 4.
        assert_eq!(
            mptcp_v0_sndbuf_for(40, ms(200), ms(200), 64 << 20),
            80 * 2304
        );
        assert_eq!(mptcp_v0_sndbuf_for(40, ms(20), ms(200), 1 << 20), 1 << 20);
        assert_eq!(
            mptcp_v0_sndbuf_for(40, Dur::ZERO, ms(200), 1 << 20),
            8 * 2304
        );
    }
    use super::*;
    use crate::cc::Reno;
    use crate::packet::{SackBlock, MAX_SACK_BLOCKS};

    fn ack(cum: u64, sacks: &[(u64, u64)]) -> Ack {
        let mut a = Ack {
            ack: cum,
            sack: [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS],
            sack_len: sacks.len() as u8,
            data_ack: 0,
            rwnd: u64::MAX,
            ts_val: Time::ZERO,
            ts_ecr: Time::ZERO,
            dsack: false,
        };
        for (i, &(s, e)) in sacks.iter().enumerate() {
            a.sack[i] = SackBlock { start: s, end: e };
        }
        a
    }

    fn sent(n: u64) -> (SubflowTx, Reno) {
        sent_with(n, LossRecovery::Linux)
    }

    /// `n` segments sent at time zero, losses found as `recovery` says.
    fn sent_with(n: u64, recovery: LossRecovery) -> (SubflowTx, Reno) {
        let mut cc = Reno;
        let mut sf = SubflowTx::new(0, Time::ZERO);
        sf.set_loss_recovery(recovery);
        for i in 0..n {
            sf.transmit_new(Time::ZERO, i, 1448, &mut cc);
        }
        (sf, cc)
    }

    #[test]
    fn cumulative_ack_samples_rtt_and_grows_window_in_slow_start() {
        let (mut sf, mut cc) = sent(10);
        sf.cwnd_validate(true);
        let t = Time(100_000_000);
        let o = sf.on_ack(t, &ack(2, &[]), &mut cc, &[]);
        assert_eq!(o.delivered, 2);
        assert_eq!(sf.srtt(), Dur::from_millis(100));
        assert_eq!(sf.cwnd(), 12);
        assert_eq!(sf.in_flight(), 8);
        assert_eq!(sf.rto_at(), Some(t + Dur::from_millis(300)));
    }

    #[test]
    fn three_sacked_segments_above_a_hole_trigger_fast_retransmit() {
        let (mut sf, mut cc) = sent(10);
        sf.cwnd_validate(true);
        let t = Time(100_000_000);
        sf.on_ack(t, &ack(0, &[(1, 3)]), &mut cc, &[]);
        assert_eq!(sf.ca_state(), CaState::Open);
        assert_eq!(sf.next_retransmit(), None);
        sf.on_ack(t, &ack(0, &[(1, 4)]), &mut cc, &[]);
        assert_eq!(sf.ca_state(), CaState::Recovery);
        // ssthresh = cwnd / 2 (Reno), segment 0 is lost and goes first.
        assert_eq!(sf.cc.ssthresh, 5);
        assert_eq!(sf.next_retransmit(), Some(0));
        // pipe = 10 - 3 sacked - 1 lost = 6 > ssthresh: PRR still lets the retransmit out.
        assert!(sf.cwnd_space() >= 1);
        let seg = sf.transmit_retransmit(t, 0, &mut cc);
        assert_eq!(seg.dseq, 0);
        assert_eq!(sf.in_flight(), 7);
        // The retransmission is ACKed with everything up to 4: recovery point is 10.
        sf.on_ack(Time(200_000_000), &ack(4, &[]), &mut cc, &[]);
        assert_eq!(sf.ca_state(), CaState::Recovery);
        sf.on_ack(Time(200_000_000), &ack(10, &[]), &mut cc, &[]);
        assert_eq!(sf.ca_state(), CaState::Open);
        // cwnd = ssthresh on leaving recovery, then (as Linux's `tcp_cong_control` does on the
        // same ACK) congestion avoidance counts the 6 delivered segments: 5 -> 6.
        assert_eq!(sf.cc.ssthresh, 5);
        assert_eq!(sf.cwnd(), 6);
        assert_eq!(sf.stats.retransmits, 1);
    }

    #[test]
    fn repeated_and_overlapping_sack_blocks_count_each_segment_once() {
        // Blocks repeated from the previous ACK are skipped; the parts of a block the previous
        // ACK did not cover (either side, and between two old blocks) are still tagged.
        let (mut sf, mut cc) = sent(40);
        let t = Time(100_000_000);
        let mut delivered = 0;
        for (cum, sacks) in [
            (0, vec![(5, 10)]),
            (0, vec![(5, 10)]),
            (0, vec![(12, 14), (5, 10)]),
            (0, vec![(3, 16), (20, 22)]),
            (0, vec![(20, 25), (3, 16)]),
            (2, vec![(30, 31), (20, 25), (3, 16)]),
            (4, vec![(30, 31), (20, 25), (4, 16)]),
        ] {
            delivered += sf.on_ack(t, &ack(cum, &sacks), &mut cc, &[]).delivered;
        }
        // SACKed 3..16, 20..25, 30; cumulatively ACKed 0, 1 (2 and 3 became ACKed too).
        let sacked: Vec<u64> = (4..40)
            .filter(|&q| sf.segs[(q - 4) as usize].sacked)
            .collect();
        let want: Vec<u64> = (4..16).chain(20..25).chain(30..31).collect();
        assert_eq!(sacked, want);
        assert_eq!(sf.sacked_out as usize, want.len());
        assert_eq!(delivered as usize, 2 + 1 + want.len() + 1);
    }

    #[test]
    fn prr_sends_about_half_as_many_as_were_delivered() {
        let (mut sf, mut cc) = sent(100);
        sf.cwnd_validate(true);
        sf.cc.cwnd = 100;
        let t = Time(100_000_000);
        // Segment 0 lost; SACKs for 1..=3 enter recovery.
        sf.on_ack(t, &ack(0, &[(1, 4)]), &mut cc, &[]);
        assert_eq!(sf.cc.ssthresh, 50);
        let mut sent_in_recovery = 0;
        for s in 4..100 {
            sf.on_ack(t, &ack(0, &[(1, s + 1)]), &mut cc, &[]);
            while sf.cwnd_space() > 0 {
                if let Some(seq) = sf.next_retransmit() {
                    sf.transmit_retransmit(t, seq, &mut cc);
                } else {
                    let d = sf.snd_nxt();
                    sf.transmit_new(t, d, 1448, &mut cc);
                }
                sent_in_recovery += 1;
            }
        }
        // 99 segments delivered during recovery at ratio ssthresh / prior_cwnd = 1/2.
        assert!((48..=52).contains(&sent_in_recovery), "{sent_in_recovery}");
    }

    #[test]
    fn rto_marks_everything_lost_and_backs_off() {
        let (mut sf, mut cc) = sent(10);
        let fire = sf.rto_at().unwrap();
        assert_eq!(fire, Time(1_000_000_000));
        sf.on_rto(fire, &mut cc, &[]);
        assert_eq!(sf.cwnd(), 1);
        assert_eq!(sf.cc.ssthresh, 5);
        assert_eq!(sf.ca_state(), CaState::Loss);
        assert_eq!(sf.in_flight(), 0);
        assert_eq!(sf.next_retransmit(), Some(0));
        sf.transmit_retransmit(fire, 0, &mut cc);
        assert_eq!(sf.cwnd_space(), 0);
        // Backed off: 2 s after the first RTO.
        assert_eq!(sf.rto_at(), Some(fire + Dur::from_secs(2)));
        // Slow start after the retransmission is ACKed.
        sf.cwnd_validate(true);
        sf.on_ack(fire + Dur::from_millis(50), &ack(1, &[]), &mut cc, &[]);
        assert_eq!(sf.cwnd(), 2);
        assert_eq!(sf.next_retransmit(), Some(1));
    }

    #[test]
    fn window_does_not_grow_when_not_cwnd_limited() {
        let (mut sf, mut cc) = sent(2);
        sf.cwnd_validate(false);
        sf.cc.ssthresh = 10; // congestion avoidance
        sf.on_ack(Time(1_000_000), &ack(2, &[]), &mut cc, &[]);
        assert_eq!(sf.cwnd(), 10);
    }

    #[test]
    fn penalization_halves_cwnd_and_ssthresh_outside_slow_start() {
        let mut sf = SubflowTx::new(0, Time::ZERO);
        sf.cc.cwnd = 40;
        sf.cc.ssthresh = 30;
        sf.penalize(Time(5));
        assert_eq!((sf.cwnd(), sf.cc.ssthresh), (20, 15));
        sf.cc.ssthresh = 100;
        sf.penalize(Time(6));
        assert_eq!((sf.cwnd(), sf.cc.ssthresh), (10, 100));
    }

    fn ms(t: u64) -> Time {
        Time(t * 1_000_000)
    }

    #[test]
    fn one_sack_above_a_hole_waits_a_quarter_of_the_min_rtt_then_the_hole_is_lost() {
        // RFC 8985 6.2: one segment SACKed (fewer than DupThresh) allows min_rtt / 4 of
        // reordering, so the reordering timer finds the loss; DupThresh alone would wait for
        // two more segments, and with none coming, for the RTO.
        let (mut sf, mut cc) = sent(3);
        sf.cwnd_validate(true);
        sf.on_ack(ms(100), &ack(0, &[(1, 2)]), &mut cc, &[]);
        assert_eq!(sf.ca_state(), CaState::Open);
        assert_eq!(sf.next_retransmit(), None);
        // RACK's RTT (100 ms) + min_rtt / 4 (25 ms) after segment 0 went, plus 2 ms.
        assert_eq!(sf.reo_at(), Some(ms(127)));
        sf.on_reo_timeout(ms(127), &mut cc, &[]);
        assert_eq!(sf.ca_state(), CaState::Recovery);
        assert_eq!(sf.next_retransmit(), Some(0));
        assert_eq!(sf.reo_at(), None);
        assert_eq!(sf.stats.rtos, 0);
    }

    #[test]
    fn a_lost_retransmission_is_found_by_a_later_delivery_not_by_the_rto() {
        let (mut sf, mut cc) = sent(10);
        sf.cwnd_validate(true);
        // 0 lost: three SACKs at 100 ms start recovery, 0 is retransmitted at 100 ms.
        sf.on_ack(ms(100), &ack(0, &[(1, 4)]), &mut cc, &[]);
        assert_eq!(sf.next_retransmit(), Some(0));
        sf.transmit_retransmit(ms(100), 0, &mut cc);
        // New data sent after the retransmission, at 110 ms, is SACKed at 210 ms while the
        // retransmission, 110 ms out, is not: it was lost too.
        sf.transmit_new(ms(110), 10, 1448, &mut cc);
        let before = sf.stats.retransmits;
        sf.on_ack(ms(210), &ack(0, &[(1, 11)]), &mut cc, &[]);
        assert_eq!(sf.next_retransmit(), Some(0));
        sf.transmit_retransmit(ms(210), 0, &mut cc);
        assert_eq!(sf.stats.retransmits, before + 1);
        assert_eq!(sf.stats.rtos, 0);
        sf.on_ack(ms(310), &ack(11, &[]), &mut cc, &[]);
        assert_eq!(sf.ca_state(), CaState::Open);
    }

    #[test]
    fn a_tail_loss_is_probed_after_two_rtts_and_repaired_without_a_timeout() {
        let (mut sf, mut cc) = sent(10);
        sf.cwnd_validate(true);
        // 8 and 9 are lost: the ACK of 0..7 at 100 ms leaves them out and nothing comes.
        sf.on_ack(ms(100), &ack(8, &[]), &mut cc, &[]);
        // PTO = 2 x srtt (100 ms) + 2 ms, before the RTO (100 + 200 ms after the ACK).
        assert_eq!(sf.tlp_at(), Some(ms(302)));
        assert!(sf.rto_at().unwrap() > ms(302));
        assert!(!sf.tlp_due(ms(301)));
        assert!(sf.tlp_due(ms(302)));
        let probe = sf.tlp_retransmit_tail(ms(302), &mut cc);
        assert_eq!(probe.seq, 9);
        assert_eq!(sf.stats.tlp_probes, 1);
        // Its SACK at 402 ms: 8, sent long before the probe, is lost.
        sf.on_ack(ms(402), &ack(8, &[(9, 10)]), &mut cc, &[]);
        assert_eq!(sf.ca_state(), CaState::Recovery);
        assert_eq!(sf.next_retransmit(), Some(8));
        sf.transmit_retransmit(ms(402), 8, &mut cc);
        sf.on_ack(ms(502), &ack(10, &[]), &mut cc, &[]);
        assert_eq!(sf.ca_state(), CaState::Open);
        assert_eq!(sf.stats.rtos, 0);
    }

    #[test]
    fn classic_recovery_needs_three_sacks_above_a_hole() {
        // RFC 6675 IsLost: one or two SACKed segments above a hole are reordering for all
        // DupThresh knows (no RACK timer); the third makes it a loss.
        let (mut sf, mut cc) = sent_with(5, LossRecovery::Classic);
        sf.cwnd_validate(true);
        sf.on_ack(ms(100), &ack(0, &[(1, 3)]), &mut cc, &[]);
        assert_eq!(sf.ca_state(), CaState::Open);
        assert_eq!(
            (sf.next_retransmit(), sf.reo_at(), sf.tlp_at()),
            (None, None, None)
        );
        sf.on_ack(ms(101), &ack(0, &[(1, 4)]), &mut cc, &[]);
        assert_eq!(sf.ca_state(), CaState::Recovery);
        assert_eq!(sf.next_retransmit(), Some(0));
    }

    #[test]
    fn classic_recovery_repairs_a_tail_loss_only_with_a_one_second_timeout() {
        // The same tail loss the probe repairs in 2 RTTs under Linux's recovery: here no
        // probe is armed, and the RTO is max(SRTT + 4 RTTVAR, 1 s) = 1 s after the ACK
        // (SRTT 100 ms, RTTVAR 50 ms), not SRTT + max(4 RTTVAR, 200 ms) = 300 ms.
        let (mut sf, mut cc) = sent_with(10, LossRecovery::Classic);
        sf.cwnd_validate(true);
        sf.on_ack(ms(100), &ack(8, &[]), &mut cc, &[]);
        assert_eq!(sf.tlp_at(), None);
        assert_eq!(sf.rto_at(), Some(ms(1100)));
        sf.on_rto(ms(1100), &mut cc, &[]);
        assert_eq!(sf.stats.rtos, 1);
        assert_eq!(sf.cwnd(), 1);
        assert_eq!(sf.next_retransmit(), Some(8));
    }

    #[test]
    fn a_single_segment_out_waits_for_a_delayed_ack_before_probing() {
        let (mut sf, mut cc) = sent(2);
        sf.cwnd_validate(true);
        sf.on_ack(ms(100), &ack(1, &[]), &mut cc, &[]);
        // One segment out: 2 x 100 ms + 200 ms, but no later than the RTO (300 ms).
        let rto = sf.rto_at().unwrap();
        assert_eq!(rto, ms(400));
        assert_eq!(sf.tlp_at(), Some(ms(400)));
    }

    /// Four segments out, the first `cum` ACKed at 100 ms, then the tail probe at 302 ms
    /// (the last segment again). Returns the window before the probe too.
    fn probed_after(cum: u64) -> (SubflowTx, Reno, u32) {
        let (mut sf, mut cc) = sent(4);
        sf.cwnd_validate(true);
        sf.on_ack(ms(100), &ack(cum, &[]), &mut cc, &[]);
        let cwnd = sf.cwnd();
        assert!(sf.tlp_due(sf.tlp_at().unwrap()));
        sf.tlp_retransmit_tail(ms(302), &mut cc);
        (sf, cc, cwnd)
    }

    #[test]
    fn a_probe_that_only_duplicated_changes_nothing_one_that_repaired_reduces_the_window() {
        // The probe's segment arrives twice: the receiver's duplicate ACK ends the episode.
        let (mut sf, mut cc, cwnd) = probed_after(2);
        sf.on_ack(ms(310), &ack(4, &[]), &mut cc, &[]); // the originals' ACK
        sf.on_ack(ms(402), &ack(4, &[]), &mut cc, &[]); // the probe's: a duplicate
        assert_eq!(sf.stats.tlp_recoveries, 0);
        assert!(sf.cwnd() >= cwnd);
        // Here the last segment was lost and the probe repaired it: the next ACK that moves
        // past the probe's episode reduces the window (Reno: to half).
        let (mut sf, mut cc, cwnd) = probed_after(3);
        sf.on_ack(ms(402), &ack(4, &[]), &mut cc, &[]);
        sf.transmit_new(ms(402), 4, 1448, &mut cc);
        sf.on_ack(ms(502), &ack(5, &[]), &mut cc, &[]);
        assert_eq!(sf.stats.tlp_recoveries, 1);
        assert_eq!(sf.cwnd(), cwnd / 2);
    }

    #[test]
    fn a_probe_reported_as_a_duplicate_is_no_loss_even_when_the_ack_moves_on() {
        // The receiver had all four segments but held its ACK (the out-of-tree MPTCP's
        // window rule): the probe is a duplicate there, and the ACK it triggers, cumulative
        // up to 4, carries a D-SACK. Without it, that ACK would read as a repaired loss.
        for (dsack, recoveries) in [(true, 0), (false, 1)] {
            let (mut sf, mut cc, cwnd) = probed_after(2);
            let mut a = ack(4, &[]);
            a.dsack = dsack;
            sf.on_ack(ms(402), &a, &mut cc, &[]);
            sf.transmit_new(ms(402), 4, 1448, &mut cc);
            sf.on_ack(ms(502), &ack(5, &[]), &mut cc, &[]);
            assert_eq!(sf.stats.tlp_recoveries, recoveries, "dsack {dsack}");
            assert_eq!(sf.cwnd() >= cwnd, dsack, "dsack {dsack}");
        }
    }
}
