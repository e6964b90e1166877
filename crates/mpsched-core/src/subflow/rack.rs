//! RACK loss detection (RFC 8985 6, Linux `tcp_recovery.c`): a segment is lost once a
//! segment sent after it has been delivered and the latest such delivery's RTT plus a
//! reordering window has passed since it was sent. A lost retransmission is found the same
//! way, without a timeout.
//!
//! The reordering window adapts as Linux's does (RFC 8985 6.2 step 4, `tcp_rack_update_reo_wnd`):
//! none until reordering has been seen on the connection, then min RTT / 4 times a step count
//! that each D-SACK (one per round trip) raises and sixteen recoveries without one reset.

use crate::subflow::scoreboard::{Scoreboard, TxSeg, DUP_THRESH};
use crate::time::{Dur, Time};
use std::collections::VecDeque;

/// Linux `TCP_RACK_RECOVERY_THRESH`: recoveries a widened reordering window outlives.
pub const RECOVERY_THRESH: u8 = 16;

/// RACK's state (RFC 8985 6.1): the most recently sent segment known to be delivered, and
/// how far the judging has got.
#[derive(Clone, Debug)]
pub struct Rack {
    xmit: Time,
    end_seq: u64,
    rtt: Dur,
    /// A delivery moved it since the last loss detection.
    advanced: bool,
    /// Segments below this are delivered, lost, or retransmitted (the first original
    /// transmission RACK has not judged).
    scan: u64,
    /// Retransmitted segments in the order of their retransmission (RACK judges them too).
    retrans_q: VecDeque<u64>,
    /// Linux `tp->reord_seen`: times a delivery revealed reordering.
    pub reord_seen: u32,
    /// `rack.reo_wnd_steps`: the window in units of min RTT / 4.
    reo_wnd_steps: u8,
    /// `rack.reo_wnd_persist`: recoveries left before the steps fall back to one.
    reo_wnd_persist: u8,
    /// `rack.dsack_seen`: a D-SACK waits to widen the window.
    dsack_seen: bool,
    /// `rack.last_delivered`: the delivered count when the window last widened.
    last_delivered: u64,
}

impl Default for Rack {
    fn default() -> Rack {
        Rack {
            xmit: Time::ZERO,
            end_seq: 0,
            rtt: Dur::ZERO,
            advanced: false,
            scan: 0,
            retrans_q: VecDeque::new(),
            reord_seen: 0,
            reo_wnd_steps: 1,
            reo_wnd_persist: 0,
            dsack_seen: false,
            last_delivered: 0,
        }
    }
}

impl Rack {
    /// `tcp_rack_advance`: segment `seq` was just delivered.
    #[inline]
    pub fn advance(&mut self, now: Time, s: &TxSeg, seq: u64, min_rtt: Dur) {
        let rtt = now.saturating_since(s.sent_at);
        // A retransmitted segment ACKed sooner than any RTT: the original's ACK, ambiguous.
        if s.ever_retrans && rtt < min_rtt {
            return;
        }
        self.advanced = true;
        self.rtt = rtt;
        if (s.sent_at, seq + 1) > (self.xmit, self.end_seq) {
            self.xmit = s.sent_at;
            self.end_seq = seq + 1;
        }
    }

    /// Whether a delivery moved RACK's segment since the last detection (and forget it).
    pub fn take_advanced(&mut self) -> bool {
        std::mem::take(&mut self.advanced)
    }

    /// `tcp_undo_cwnd_reduction` asks for a new judgement at the next ACK.
    pub fn set_advanced(&mut self) {
        self.advanced = true;
    }

    /// `tcp_dsack_seen`: a D-SACK widens the window only once reordering is known, and not
    /// when it reports a loss probe (that duplicate says nothing of reordering).
    pub fn on_dsack(&mut self, of_probe: bool) {
        if self.reord_seen > 0 && !of_probe {
            self.dsack_seen = true;
        }
    }

    /// `tcp_check_sack_reordering`: a segment never retransmitted was delivered below the
    /// highest SACKed one.
    pub fn on_reordering(&mut self) {
        self.reord_seen = self.reord_seen.saturating_add(1);
    }

    /// `tcp_rack_update_reo_wnd`, at each ACK: `prior_delivered` is the delivered count when
    /// the latest segment this ACK delivers was sent (zero or none: no sample), `delivered`
    /// the count now. A D-SACK for a segment sent before the last widening is one round trip
    /// too old to say the wider window was still too narrow.
    pub fn update_reo_wnd(&mut self, prior_delivered: Option<u64>, delivered: u64) {
        let Some(prior) = prior_delivered.filter(|&p| p > 0) else {
            return;
        };
        if prior < self.last_delivered {
            self.dsack_seen = false;
        }
        if self.dsack_seen {
            self.reo_wnd_steps = self.reo_wnd_steps.saturating_add(1);
            self.dsack_seen = false;
            self.last_delivered = delivered;
            self.reo_wnd_persist = RECOVERY_THRESH;
        } else if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = 1;
        }
    }

    /// A recovery ended without an undo (`tcp_try_undo_recovery`): one fewer before the
    /// window narrows again.
    pub fn on_recovery_end(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
    }

    /// `tcp_try_undo_dsack`: a spurious recovery lets the wide window live one more.
    pub fn on_dsack_undo(&mut self) {
        self.reo_wnd_persist = (self.reo_wnd_persist + 1).min(RECOVERY_THRESH);
    }

    /// The step count (tests).
    pub fn reo_wnd_steps(&self) -> u8 {
        self.reo_wnd_steps
    }

    /// Segment `seq` was retransmitted: judge it in that order.
    pub fn on_retransmit(&mut self, seq: u64) {
        self.retrans_q.push_back(seq);
    }

    /// The latest delivery's RTT (`rack.rtt_us`): what a segment must have been out for to be
    /// marked lost at a timeout (`tcp_rack_skb_timeout` with no reordering window).
    pub fn rtt(&self) -> Dur {
        self.rtt
    }

    /// Segments from `snd_una` on are to be judged again (their loss marks were undone).
    pub fn rescan(&mut self, snd_una: u64) {
        self.scan = snd_una;
    }

    /// Nothing below `snd_una` needs judging.
    pub fn on_cumulative_ack(&mut self, snd_una: u64) {
        self.scan = self.scan.max(snd_una);
    }

    /// After a retransmission timeout everything outstanding is lost: nothing to judge.
    pub fn reset(&mut self, snd_nxt: u64) {
        self.scan = snd_nxt;
        self.retrans_q.clear();
    }

    /// `tcp_rack_reo_wnd`: until reordering has been seen, no allowance during recovery or
    /// once DupThresh segments are SACKed (be quick when nothing suggests reordering); else
    /// min RTT / 4 per step, at most srtt (reordering is a path property, not queueing).
    pub fn reo_wnd(&self, in_open_state: bool, sacked_out: u32, min_rtt: Dur, srtt: Dur) -> Dur {
        if self.reord_seen == 0 && (!in_open_state || sacked_out >= DUP_THRESH) {
            return Dur::ZERO;
        }
        ((min_rtt / 4) * u64::from(self.reo_wnd_steps)).min(srtt)
    }

    /// `tcp_rack_detect_loss`: every segment sent before RACK's segment, not delivered, and
    /// out for longer than RACK's RTT plus `reo_wnd`, is lost. Returns the longest wait of
    /// those not yet deemed lost.
    pub fn detect_loss(&mut self, sb: &mut Scoreboard, now: Time, reo_wnd: Dur) -> Option<Dur> {
        let limit = self.rtt + reo_wnd;
        let rack = (self.xmit, self.end_seq);
        let mut wait: Option<Dur> = None;
        // Original transmissions, in sequence (= sending) order from the first unjudged one.
        let mut all_judged = true;
        let mut seq = self.scan.max(sb.snd_una());
        while seq < sb.snd_nxt() {
            let s = *sb.at(seq);
            if s.sacked || s.lost || s.retrans {
                if all_judged {
                    self.scan = seq + 1;
                }
                seq += 1;
                continue;
            }
            if (s.sent_at, seq + 1) >= rack {
                break; // sent after RACK's segment: nothing to say yet
            }
            let out_for = now.saturating_since(s.sent_at);
            if out_for >= limit {
                sb.mark_lost(seq);
                if all_judged {
                    self.scan = seq + 1;
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
            let live = seq >= sb.snd_una() && {
                let s = sb.at(seq);
                s.retrans && !s.sacked
            };
            if !live {
                self.retrans_q.remove(i);
                continue;
            }
            let s = *sb.at(seq);
            if (s.sent_at, seq + 1) >= rack {
                break;
            }
            let out_for = now.saturating_since(s.sent_at);
            if out_for >= limit {
                sb.mark_lost(seq);
                self.retrans_q.remove(i);
                continue;
            }
            let w = limit - out_for;
            wait = Some(wait.map_or(w, |x| x.max(w)));
            i += 1;
        }
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Dur = Dur::from_millis(1);

    #[test]
    fn no_window_in_recovery_until_reordering_is_seen_then_min_rtt_over_four() {
        let mut r = Rack::default();
        let (min_rtt, srtt) = (MS * 40, MS * 50);
        assert_eq!(r.reo_wnd(true, 0, min_rtt, srtt), MS * 10);
        assert_eq!(r.reo_wnd(false, 0, min_rtt, srtt), Dur::ZERO);
        assert_eq!(r.reo_wnd(true, DUP_THRESH, min_rtt, srtt), Dur::ZERO);
        r.on_reordering();
        assert_eq!(r.reo_wnd(false, 0, min_rtt, srtt), MS * 10);
        assert_eq!(r.reo_wnd(true, DUP_THRESH, min_rtt, srtt), MS * 10);
    }

    #[test]
    fn a_dsack_widens_the_window_once_per_round_trip_up_to_srtt() {
        let mut r = Rack::default();
        let (min_rtt, srtt) = (MS * 40, MS * 50);
        // A D-SACK before any reordering was seen says nothing.
        r.on_dsack(false);
        r.update_reo_wnd(Some(100), 110);
        assert_eq!(r.reo_wnd_steps(), 1);
        r.on_reordering();
        // Nor does a D-SACK of a loss probe.
        r.on_dsack(true);
        r.update_reo_wnd(Some(100), 110);
        assert_eq!(r.reo_wnd_steps(), 1);
        r.on_dsack(false);
        r.update_reo_wnd(Some(100), 110);
        assert_eq!(r.reo_wnd_steps(), 2);
        assert_eq!(r.reo_wnd(false, 5, min_rtt, srtt), MS * 20);
        // A D-SACK of a segment sent before the widening (delivered count 105 < 110) is
        // forgotten; one sent after it counts.
        r.on_dsack(false);
        r.update_reo_wnd(Some(105), 120);
        assert_eq!(r.reo_wnd_steps(), 2);
        for (i, d) in [(3, 130), (4, 140), (5, 150), (6, 160)] {
            r.on_dsack(false);
            r.update_reo_wnd(Some(d - 5), d);
            assert_eq!(r.reo_wnd_steps(), i);
        }
        // Six steps of 10 ms, capped at srtt.
        assert_eq!(r.reo_wnd(false, 5, min_rtt, srtt), srtt);
        // No sample (nothing delivered): nothing happens.
        r.on_dsack(false);
        r.update_reo_wnd(None, 160);
        assert_eq!(r.reo_wnd_steps(), 6);
    }

    #[test]
    fn sixteen_recoveries_without_a_dsack_reset_the_window() {
        let mut r = Rack::default();
        r.on_reordering();
        r.on_dsack(false);
        r.update_reo_wnd(Some(10), 20);
        assert_eq!(r.reo_wnd_steps(), 2);
        for _ in 0..RECOVERY_THRESH - 1 {
            r.on_recovery_end();
            r.update_reo_wnd(Some(30), 40);
            assert_eq!(r.reo_wnd_steps(), 2);
        }
        // A spurious recovery undone by D-SACK buys one more.
        r.on_dsack_undo();
        r.on_recovery_end();
        r.update_reo_wnd(Some(30), 40);
        assert_eq!(r.reo_wnd_steps(), 2);
        r.on_recovery_end();
        r.update_reo_wnd(Some(30), 40);
        assert_eq!(r.reo_wnd_steps(), 1);
    }
}
