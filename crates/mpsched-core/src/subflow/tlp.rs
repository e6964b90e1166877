//! The tail loss probe (RFC 8985 7, Linux `tcp_schedule_loss_probe`, `tcp_send_loss_probe`):
//! with data outstanding and no loss being repaired, a probe after about two round trips, no
//! later than the RTO, so that a loss at the tail is repaired by RACK rather than by the
//! retransmission timeout. An ACK beyond the probe means it repaired a loss.

use crate::subflow::timer::TIMEOUT_MIN;
use crate::time::{Dur, Time};

/// Linux `TCP_TIMEOUT_INIT`: the probe timeout before any RTT sample.
const TIMEOUT_INIT: Dur = Dur::from_secs(1);
/// Linux `tcp_rto_min_us`: a probe waits this much more for a delayed ACK of a single
/// outstanding segment.
const PROBE_DELACK: Dur = Dur::from_millis(200);

/// A probe episode (Linux `tlp_high_seq`): `snd_nxt` when the probe went, and whether it was
/// a retransmission.
#[derive(Clone, Copy, Debug)]
pub struct Tlp {
    high_seq: Option<u64>,
    retrans: bool,
    /// When the probe timer was last scheduled.
    scheduled: Time,
}

/// What an ACK says of a probe episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeAck {
    /// Not yet beyond the probe: the episode goes on.
    Pending,
    /// The episode ends without a loss.
    Ended,
    /// The probe repaired a loss: reduce the window as on entering recovery.
    Repaired,
}

impl Default for Tlp {
    fn default() -> Tlp {
        Tlp {
            high_seq: None,
            retrans: false,
            scheduled: Time(u64::MAX),
        }
    }
}

impl Tlp {
    /// The probe timeout: 2 srtt, plus a delayed ACK's 200 ms with one segment out, no later
    /// than `rto_left` from now.
    pub fn timeout(srtt: Option<Dur>, packets_out: u32, rto_left: Dur) -> Dur {
        let pto = match srtt {
            Some(srtt) if packets_out == 1 => srtt * 2 + PROBE_DELACK,
            Some(srtt) => srtt * 2 + TIMEOUT_MIN,
            None => TIMEOUT_INIT,
        };
        pto.min(rto_left.max(Dur(1)))
    }

    #[inline]
    pub fn mark_scheduled(&mut self, now: Time) {
        self.scheduled = now;
    }

    /// Whether the timer was last scheduled at `now` (a burst goes out at one instant).
    #[inline]
    pub fn scheduled_at(&self, now: Time) -> bool {
        self.scheduled == now
    }

    /// Whether a probe episode is open.
    #[inline]
    pub fn in_episode(&self) -> bool {
        self.high_seq.is_some()
    }

    /// A retransmitted probe is out: a D-SACK now most likely reports it (Linux
    /// `FLAG_DSACK_TLP`).
    #[inline]
    pub fn retransmitted_probe_out(&self) -> bool {
        self.high_seq.is_some() && self.retrans
    }

    /// A probe went out with `snd_nxt` as it is now.
    pub fn start_episode(&mut self, snd_nxt: u64, retrans: bool) {
        self.high_seq = Some(snd_nxt);
        self.retrans = retrans;
    }

    /// Recovery or a timeout ends any episode (`tcp_init_cwnd_reduction`).
    pub fn end_episode(&mut self) {
        self.high_seq = None;
    }

    /// `tcp_process_tlp_ack`: an ACK beyond the probe's episode means the probe repaired a
    /// loss, unless it reports the probe as a duplicate (D-SACK); a duplicate ACK at its end
    /// also means original and probe both arrived. Without the D-SACK check every probe sent
    /// while the receiver merely held its ACK back would count as a repaired loss.
    pub fn on_ack(
        &mut self,
        cum_ack: u64,
        dsack: bool,
        una_advanced: bool,
        delivered: u32,
    ) -> ProbeAck {
        let Some(high) = self.high_seq else {
            return ProbeAck::Pending;
        };
        if cum_ack < high {
            return ProbeAck::Pending;
        }
        if !self.retrans || dsack {
            self.high_seq = None;
            ProbeAck::Ended
        } else if cum_ack > high {
            self.high_seq = None;
            ProbeAck::Repaired
        } else if !una_advanced && delivered == 0 {
            self.high_seq = None;
            ProbeAck::Ended
        } else {
            ProbeAck::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_is_two_srtt_plus_a_delayed_ack_for_one_segment() {
        let srtt = Some(Dur::from_millis(50));
        let long = Dur::from_secs(10);
        assert_eq!(Tlp::timeout(srtt, 1, long), Dur::from_millis(300));
        assert_eq!(Tlp::timeout(srtt, 5, long), Dur::from_millis(102));
        assert_eq!(Tlp::timeout(None, 5, long), Dur::from_secs(1));
        assert_eq!(
            Tlp::timeout(srtt, 5, Dur::from_millis(40)),
            Dur::from_millis(40)
        );
    }

    #[test]
    fn only_an_ack_beyond_a_retransmitted_probe_without_dsack_is_a_repair() {
        let mut t = Tlp::default();
        t.start_episode(10, true);
        assert_eq!(t.on_ack(9, false, true, 1), ProbeAck::Pending);
        assert_eq!(t.on_ack(11, false, true, 1), ProbeAck::Repaired);
        t.start_episode(10, true);
        assert_eq!(t.on_ack(11, true, true, 1), ProbeAck::Ended);
        t.start_episode(10, false);
        assert_eq!(t.on_ack(10, false, true, 1), ProbeAck::Ended);
        assert!(!t.in_episode());
    }
}
