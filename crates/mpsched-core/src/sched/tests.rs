//! The foundation's schedulers, driven through the sans-IO sender: packets out, ACKs in.

use crate::sched::testkit::{ack, drain, sender_with};
use crate::sched::SchedParams;
use crate::time::Time;

/// A sender over two subflows with handshake RTTs of 10 ms and 100 ms, both up at time 0.
fn sender(scheduler: &str, rwnd_segments: u64) -> crate::conn::Sender {
    sender_with(
        scheduler,
        &SchedParams::new(),
        &[10, 100],
        rwnd_segments,
        None,
    )
}

#[test]
fn minrtt_fills_the_fast_subflow_first() {
    let mut s = sender("minrtt", 1000);
    s.start(Time::ZERO);
    let out = drain(&mut s);
    // Initial windows of 10 segments: the 10 ms subflow takes data 0..10, then the 100 ms one.
    assert_eq!(out.len(), 20);
    assert!(out[..10].iter().all(|&(sf, _, _)| sf == 0));
    assert!(out[10..].iter().all(|&(sf, _, _)| sf == 1));
    assert_eq!(
        out.iter().map(|x| x.2).collect::<Vec<_>>(),
        (0..20).collect::<Vec<_>>()
    );
    // An ACK on the fast subflow frees space there, and the next data goes there.
    s.handle_ack(Time(10_000_000), &ack(0, 2, 2, 1000));
    let out = drain(&mut s);
    assert!(!out.is_empty() && out.iter().all(|&(sf, _, _)| sf == 0));
}

#[test]
fn rr_alternates_between_subflows() {
    let mut s = sender("rr", 1000);
    s.start(Time::ZERO);
    let out = drain(&mut s);
    let sfs: Vec<u8> = out.iter().map(|x| x.0).collect();
    assert_eq!(&sfs[..6], &[0, 1, 0, 1, 0, 1]);
    assert_eq!(sfs.len(), 20);
}

/// Fills a 15-segment window: 10 on the fast subflow, 5 on the slow one. The fast ones are
/// ACKed (Data ACK 10) and the fast subflow, its window now 20, sends 15..25; then the window
/// is blocked, the left edge (data segment 10) being on the slow subflow. Returns what the
/// sender sent after that ACK.
fn blocked_behind_the_slow_subflow(scheduler: &str) -> (crate::conn::Sender, Vec<(u8, u64, u64)>) {
    let mut s = sender(scheduler, 15);
    s.start(Time::ZERO);
    let out = drain(&mut s);
    assert_eq!(out.len(), 15);
    s.handle_ack(Time(10_000_000), &ack(0, 10, 10, 15));
    let out = drain(&mut s);
    let new: Vec<(u8, u64, u64)> = (15..25).map(|d| (0, d - 5, d)).collect();
    assert_eq!(&out[..10], &new[..]);
    (s, out[10..].to_vec())
}

#[test]
fn minrtt_waits_when_the_window_is_blocked() {
    let (mut s, extra) = blocked_behind_the_slow_subflow("minrtt");
    assert!(extra.is_empty());
    s.handle_ack(Time(20_000_000), &ack(0, 20, 10, 15));
    assert!(drain(&mut s).is_empty());
    assert_eq!(s.subflows()[1].cwnd(), 10);
}

#[test]
fn default_retransmits_the_left_edge_on_the_fast_subflow_and_penalizes_the_slow_one() {
    let (mut s, extra) = blocked_behind_the_slow_subflow("default");
    // Data segment 10, the left edge, went out on the 100 ms subflow: it is sent again on the
    // 10 ms one (4 x 10 ms < 100 ms), once.
    assert_eq!(extra, vec![(0, 20, 10)]);
    assert_eq!(s.stats.opportunistic_retransmits, 1);
    // The slow subflow's window is halved (it is in slow start: ssthresh stays).
    assert_eq!(s.subflows()[1].cwnd(), 5);
    assert_eq!(s.subflows()[1].stats.penalizations, 1);
    // Not again within the fast subflow's RTT, and segment 10 is not sent a third time.
    s.handle_ack(Time(15_000_000), &ack(0, 21, 10, 15));
    assert!(drain(&mut s).is_empty());
    assert_eq!(s.subflows()[1].cwnd(), 5);
}
