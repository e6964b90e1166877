//! The out-of-tree kernel's retransmission timer on the meta socket (multipath-tcp.org v0.9x,
//! `mptcp_meta_retransmit_timer` and `mptcp_retransmit_skb` in `mptcp_output.c`,
//! `mptcp_set_rto` in `mptcp.h`): the connection's last resort when data stays un-Data-ACKed.
//!
//! A subflow's own timeout reinjects what it holds once (`mptcp_reinject_data` skips an skb
//! already marked `MPTCP_REINJECT`, and the copies it sends on other subflows carry the mark),
//! so a reinjected segment stuck on a subflow that then died as well is left to this timer.
//!
//! - Its RTO is twice the largest RTO (backoff included) of the subflows that may send,
//!   recomputed at each subflow RTT sample and timeout, unless the meta socket is itself
//!   retransmitting (`icsk_retransmits` > 0: recomputing would undo its backoff).
//! - It is armed when data goes out with none outstanding (`tcp_event_new_data_sent`), and
//!   re-armed whenever the Data ACK advances (`mptcp_clean_rtx_queue`: `tcp_rearm_rto`, then
//!   `icsk_retransmits = 0`).
//! - When it fires, the segment at the Data ACK goes out again on the subflow the scheduler's
//!   `get_subflow` picks for it (one that has not carried it if any can, else any: the path
//!   mask is cleared), and the RTO doubles up to `TCP_RTO_MAX` whether or not a subflow could
//!   take it.
//!
//! Left out: `tcp_write_timeout` on the meta socket (it gives up after `tcp_retries2`, 15
//! backoffs, some 15 minutes in) and the thin-stream linear timeouts (off by default).

use crate::jiffies::Jiffies;
use crate::rtt::{INITIAL_RTO, RTO_MAX};
use crate::time::{Dur, Time};

#[derive(Clone, Debug)]
pub struct MetaRto {
    /// The meta socket's `icsk_rto`, backoff included.
    rto: Dur,
    /// Firings since the Data ACK last advanced (`icsk_retransmits`).
    retransmits: u32,
    timer_at: Option<Time>,
    jiffies: Jiffies,
}

impl MetaRto {
    pub fn new(jiffies: Jiffies) -> MetaRto {
        MetaRto {
            rto: INITIAL_RTO,
            retransmits: 0,
            timer_at: None,
            jiffies,
        }
    }

    pub fn timer_at(&self) -> Option<Time> {
        self.timer_at
    }

    pub fn rto(&self) -> Dur {
        self.rto
    }

    /// `mptcp_set_rto`: a subflow's RTO changed; `max_subflow_rto` is the largest of those
    /// that may send.
    pub fn set_rto(&mut self, max_subflow_rto: Dur) {
        if self.retransmits == 0 && max_subflow_rto > Dur::ZERO {
            self.rto = max_subflow_rto * 2;
        }
    }

    /// `tcp_rearm_rto`: armed for the RTO from now while data is outstanding, else stopped.
    /// The timer never waits longer than `TCP_RTO_MAX` (`inet_csk_reset_xmit_timer`).
    fn rearm(&mut self, now: Time, outstanding: bool) {
        self.timer_at = outstanding.then(|| self.jiffies.expiry(now, self.rto.min(RTO_MAX)));
    }

    /// New data went out; `was_outstanding`: some was already.
    pub fn on_new_data(&mut self, now: Time, was_outstanding: bool) {
        if !was_outstanding || self.timer_at.is_none() {
            self.rearm(now, true);
        }
    }

    /// The Data ACK advanced.
    pub fn on_data_ack(&mut self, now: Time, outstanding: bool) {
        self.rearm(now, outstanding);
        self.retransmits = 0;
    }

    /// The timer fired; the caller has sent the head again if a subflow could take it.
    pub fn on_fire(&mut self, now: Time, outstanding: bool) {
        if !outstanding {
            self.timer_at = None;
            return;
        }
        self.retransmits += 1;
        self.rto = (self.rto * 2).min(RTO_MAX);
        self.rearm(now, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twice_the_largest_subflow_rto_backed_off_while_firing_and_reset_by_a_data_ack() {
        let mut m = MetaRto::new(Jiffies::EXACT);
        m.set_rto(Dur::from_millis(300));
        assert_eq!(m.rto(), Dur::from_millis(600));
        m.on_new_data(Time::ZERO, false);
        assert_eq!(m.timer_at(), Some(Time::ZERO + Dur::from_millis(600)));
        // More data while armed: the timer keeps its deadline.
        m.on_new_data(Time::ZERO + Dur::from_millis(100), true);
        assert_eq!(m.timer_at(), Some(Time::ZERO + Dur::from_millis(600)));
        let t = Time::ZERO + Dur::from_millis(600);
        m.on_fire(t, true);
        assert_eq!(m.rto(), Dur::from_millis(1200));
        assert_eq!(m.timer_at(), Some(t + Dur::from_millis(1200)));
        // While retransmitting, subflow samples do not undo the backoff.
        m.set_rto(Dur::from_millis(300));
        assert_eq!(m.rto(), Dur::from_millis(1200));
        // The Data ACK advances: re-armed with the backed-off RTO, then samples count again.
        let t2 = t + Dur::from_millis(50);
        m.on_data_ack(t2, true);
        assert_eq!(m.timer_at(), Some(t2 + Dur::from_millis(1200)));
        m.set_rto(Dur::from_millis(300));
        assert_eq!(m.rto(), Dur::from_millis(600));
        m.on_data_ack(t2, false);
        assert_eq!(m.timer_at(), None);
    }

    #[test]
    fn the_timer_waits_at_most_two_minutes() {
        let mut m = MetaRto::new(Jiffies::EXACT);
        m.set_rto(Dur::from_secs(120));
        assert_eq!(m.rto(), Dur::from_secs(240));
        m.on_new_data(Time::ZERO, false);
        assert_eq!(m.timer_at(), Some(Time::ZERO + RTO_MAX));
        for _ in 0..5 {
            m.on_fire(Time::ZERO, true);
        }
        assert_eq!(m.rto(), RTO_MAX);
    }
}
