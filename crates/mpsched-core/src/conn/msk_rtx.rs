//! Upstream Linux's connection-level retransmission (`net/mptcp/protocol.c`, `pm.c`): how an
//! MPTCP connection gets data past a subflow that stopped working. The out-of-tree kernel
//! instead reinjects what a subflow holds at each of its timeouts (`Sender::handle_timeout`).
//!
//! - The MPTCP retransmit timer (`mptcp_reset_rtx_timer`): armed while data is un-Data-ACKed,
//!   re-armed whenever the Data ACK advances or it fires, for `timer_ival`: the longest time
//!   any active subflow not yet suspected had left on its own pending timer when the connection
//!   last sent data (`mptcp_set_timeout` from `mptcp_subflow_get_send`), or `TCP_RTO_MIN`
//!   (`mptcp_timeout_from_subflow`). The time left is read from the deadline the subflow's
//!   timer records (`icsk_timeout - jiffies`), not from when the timer wheel will run it.
//! - When it fires (`__mptcp_retrans`, `mptcp_subflow_get_retrans`): a subflow with data
//!   outstanding at TCP level is not used; instead its stale count goes up if it has received
//!   nothing since the last firing, or back to 0 if it has (`mptcp_pm_subflow_chk_stale`). An
//!   idle subflow (nothing outstanding; a backup one only if no subflow made progress) sends
//!   the first un-Data-ACKed data fragment again: what of it the Data ACK has not covered
//!   (`__mptcp_clean_una` trims the head fragment), up to a page fragment's 32,728 bytes.
//! - A subflow whose stale count passes `stale_loss_cnt` (4) while another active subflow's is
//!   below 3 becomes stale (`mptcp_pm_nl_subflow_chk_stale`): the scheduler no longer uses it
//!   and everything un-Data-ACKed is sent again on the others (`__mptcp_retransmit_pending_data`).
//!   It is active again once it receives something (`mptcp_subflow_active`).

use crate::jiffies::Jiffies;
use crate::time::{Dur, Time};

/// `net.mptcp.stale_loss_cnt`'s default.
pub const STALE_LOSS_CNT: u8 = 4;

#[derive(Clone, Debug, Default)]
struct SubflowState {
    /// When the subflow last received a segment (`tcp_sock.rcv_tstamp`).
    rcv_tstamp: Time,
    /// Timer firings in a row that found it busy and without news.
    stale_count: u8,
    stale_rcv_tstamp: Time,
    stale: bool,
}

/// What a firing of the timer asks of the connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Firing {
    /// Send the first un-Data-ACKed fragment again (an idle subflow can take it).
    pub retransmit_head: bool,
    /// A subflow went stale: send everything un-Data-ACKed again.
    pub retransmit_all: bool,
}

/// What the timer needs to know of a subflow when it fires.
#[derive(Clone, Copy, Debug)]
pub struct SubflowNow {
    pub joined: bool,
    pub backup: bool,
    /// Segments outstanding at TCP level or waiting in its send queue (the kernel's
    /// `tcp_rtx_and_write_queues_empty` is false).
    pub packets_out: u32,
    /// When its own retransmission or probe timer fires, if armed.
    pub timer_at: Option<Time>,
}

#[derive(Clone, Debug, Default)]
pub struct MskRtx {
    at: Option<Time>,
    /// `timer_ival`, computed when data is sent (`mptcp_set_timeout`) and used whenever the
    /// timer is re-armed.
    ival: Dur,
    subflows: Vec<SubflowState>,
    /// The kernel's ticks: the timer waits whole ticks in the timer wheel.
    jiffies: Jiffies,
    pub stale_marks: u64,
}

impl MskRtx {
    pub fn new(subflows: usize, jiffies: Jiffies) -> MskRtx {
        MskRtx {
            at: None,
            ival: crate::rtt::RTO_MIN,
            subflows: vec![SubflowState::default(); subflows],
            jiffies,
            stale_marks: 0,
        }
    }

    #[inline]
    pub fn timer_at(&self) -> Option<Time> {
        self.at
    }

    /// Whether subflow `i` may carry data (`mptcp_subflow_active`).
    pub fn is_stale(&self, i: usize) -> bool {
        self.subflows[i].stale
    }

    /// Subflow `i` was closed: a subflow opened again in its place starts with a clean record.
    pub fn forget(&mut self, i: usize) {
        self.subflows[i] = SubflowState::default();
    }

    /// Subflow `i` received a segment at `now`; a stale subflow that hears from its peer is
    /// active again.
    pub fn on_receive(&mut self, now: Time, i: usize) {
        let s = &mut self.subflows[i];
        s.rcv_tstamp = now;
        if s.stale && s.stale_rcv_tstamp != now {
            s.stale = false;
        }
    }

    /// The timer's period now: the longest wait left on a pending timer of a subflow not
    /// suspected of being stale, or `TCP_RTO_MIN`. `timers` gives each subflow's
    /// (joined, pending timer).
    fn ival(&self, now: Time, timers: impl Iterator<Item = (bool, Option<Time>)>) -> Dur {
        timers
            .zip(&self.subflows)
            .filter(|((joined, _), s)| *joined && !s.stale && s.stale_count == 0)
            .filter_map(|((_, at), _)| at)
            .map(|t| t.saturating_since(now))
            .max()
            .filter(|d| *d > Dur::ZERO)
            .unwrap_or(crate::rtt::RTO_MIN)
    }

    /// Re-arms the timer (the Data ACK advanced) or stops it (nothing outstanding).
    pub fn reset(&mut self, now: Time, outstanding: bool) {
        self.at = outstanding.then(|| self.jiffies.expiry(now, self.ival));
    }

    /// The connection consulted its scheduler (`mptcp_subflow_get_send` calls
    /// `mptcp_set_timeout`): the period follows the subflows' timers.
    pub fn refresh(&mut self, now: Time, timers: impl Iterator<Item = (bool, Option<Time>)>) {
        self.ival = self.ival(now, timers);
    }

    /// Data was sent: the timer is armed if it is not pending.
    pub fn arm(&mut self, now: Time) {
        if self.at.is_none() {
            self.at = Some(self.jiffies.expiry(now, self.ival));
        }
    }

    /// The timer fired at `now` with data outstanding (`__mptcp_retrans`).
    pub fn fire(&mut self, now: Time, subflows: &[SubflowNow]) -> Firing {
        let mut out = Firing::default();
        let (mut pick, mut backup) = (false, false);
        let mut min_stale = u8::MAX;
        for i in 0..subflows.len() {
            let v = subflows[i];
            if !v.joined || self.subflows[i].stale {
                continue;
            }
            if v.packets_out > 0 {
                out.retransmit_all |= self.check_stale(i, subflows);
                min_stale = min_stale.min(self.subflows[i].stale_count);
                continue;
            }
            if v.backup {
                backup = true;
            } else {
                pick = true;
            }
        }
        // A backup subflow only if no subflow made progress (`min_stale_count > 1`).
        out.retransmit_head = pick || (backup && min_stale > 1);
        self.at = Some(self.jiffies.expiry(now, self.ival));
        out
    }

    /// `mptcp_pm_subflow_chk_stale`; true when subflow `i` became stale.
    fn check_stale(&mut self, i: usize, subflows: &[SubflowNow]) -> bool {
        let s = &mut self.subflows[i];
        if s.stale_count == 0 {
            s.stale_rcv_tstamp = s.rcv_tstamp;
            s.stale_count = 1;
            return false;
        }
        if s.stale_rcv_tstamp != s.rcv_tstamp {
            s.stale_count = 0;
            s.stale = false;
            return false;
        }
        s.stale_count = s.stale_count.saturating_add(1);
        if s.stale || s.stale_count <= STALE_LOSS_CNT {
            return false;
        }
        // Only with an alternative: another active subflow making progress.
        let active_max = STALE_LOSS_CNT.saturating_sub(1).max(1);
        let alternative = (0..subflows.len()).any(|j| {
            j != i
                && subflows[j].joined
                && !self.subflows[j].stale
                && self.subflows[j].stale_count < active_max
        });
        if alternative && subflows[i].packets_out > 0 {
            self.subflows[i].stale = true;
            self.stale_marks += 1;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sf(packets_out: u32, timer_at: Option<Time>) -> SubflowNow {
        SubflowNow {
            joined: true,
            backup: false,
            packets_out,
            timer_at,
        }
    }

    #[test]
    fn a_silent_busy_subflow_goes_stale_at_the_fifth_firing_if_another_progresses() {
        let mut m = MskRtx::new(2, Jiffies::EXACT);
        let t = |ms| Time::ZERO + Dur::from_millis(ms);
        m.on_receive(t(0), 0);
        m.on_receive(t(0), 1);
        let mut firings = vec![];
        for k in 1..=6u64 {
            // Subflow 1 keeps receiving ACKs; subflow 0 hears nothing.
            m.on_receive(t(k * 300 - 10), 1);
            let f = m.fire(
                t(k * 300),
                &[sf(5, Some(t(9_000))), sf(3, Some(t(k * 300 + 250)))],
            );
            firings.push(f.retransmit_all);
            assert!(!f.retransmit_head, "both busy: nothing to send it on");
        }
        // Count 1 at the first firing, 5 at the fifth: stale once it passes 4.
        assert_eq!(firings, [false, false, false, false, true, false]);
        assert!(m.is_stale(0) && !m.is_stale(1));
        // Its peer speaks again: active.
        m.on_receive(t(2_000), 0);
        assert!(!m.is_stale(0));
    }

    #[test]
    fn an_idle_subflow_takes_the_head_and_the_period_follows_the_subflow_timers() {
        let mut m = MskRtx::new(2, Jiffies::EXACT);
        let now = Time::ZERO + Dur::from_secs(1);
        let subflows = [sf(4, Some(now + Dur::from_millis(700))), sf(0, None)];
        m.refresh(now, subflows.iter().map(|v| (v.joined, v.timer_at)));
        m.arm(now);
        assert_eq!(m.timer_at(), Some(now + Dur::from_millis(700)));
        let f = m.fire(now + Dur::from_millis(700), &subflows);
        assert!(f.retransmit_head && !f.retransmit_all);
        // Re-armed with the period of the last send.
        assert_eq!(m.timer_at(), Some(now + Dur::from_millis(1400)));
        // Subflow 0 is now suspected (count 1): its timer no longer sets the period.
        m.refresh(
            now + Dur::from_millis(1000),
            subflows.iter().map(|v| (v.joined, v.timer_at)),
        );
        m.reset(now + Dur::from_millis(1000), true);
        assert_eq!(
            m.timer_at(),
            Some(now + Dur::from_millis(1000) + crate::rtt::RTO_MIN)
        );
        m.reset(now, false);
        assert_eq!(m.timer_at(), None);
    }

    #[test]
    fn no_subflow_goes_stale_without_an_alternative() {
        let mut m = MskRtx::new(2, Jiffies::EXACT);
        let t = |ms| Time::ZERO + Dur::from_millis(ms);
        for k in 1..=10u64 {
            // Both silent and busy.
            let f = m.fire(t(k * 300), &[sf(5, None), sf(5, None)]);
            assert!(!f.retransmit_all);
        }
        assert!(!m.is_stale(0) && !m.is_stale(1));
    }
}
