//! RACK loss detection (RFC 8985 6, Linux `tcp_recovery.c`): a segment is lost once a
//! segment sent after it has been delivered and the latest such delivery's RTT plus a
//! reordering window has passed since it was sent. A lost retransmission is found the same
//! way, without a timeout.

use crate::subflow::scoreboard::{Scoreboard, TxSeg, DUP_THRESH};
use crate::time::{Dur, Time};
use std::collections::VecDeque;

/// RACK's state (RFC 8985 6.1): the most recently sent segment known to be delivered, and
/// how far the judging has got.
#[derive(Clone, Debug, Default)]
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

    /// Segment `seq` was retransmitted: judge it in that order.
    pub fn on_retransmit(&mut self, seq: u64) {
        self.retrans_q.push_back(seq);
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

    /// `tcp_rack_reo_wnd`: no reordering allowance during recovery or once DupThresh
    /// segments are SACKed (the links never reorder, so it never grows), else min RTT / 4.
    pub fn reo_wnd(in_open_state: bool, sacked_out: u32, min_rtt: Dur, srtt: Dur) -> Dur {
        if !in_open_state || sacked_out >= DUP_THRESH {
            return Dur::ZERO;
        }
        (min_rtt / 4).min(srtt)
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
