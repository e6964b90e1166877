//! The sender's tests: whole ACK sequences against RFC 6675, 8985, 6937 and Linux.

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
    let sacked: Vec<u64> = (4..40).filter(|&q| sf.sb.at(q).sacked).collect();
    let want: Vec<u64> = (4..16).chain(20..25).chain(30..31).collect();
    assert_eq!(sacked, want);
    assert_eq!(sf.sb.sacked_out() as usize, want.len());
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

/// Segment 0 is taken for lost (3 SACKed above it, RACK), retransmitted, and the original
/// then arrives after all: the ACK up to 4, then the retransmission's duplicate.
fn spurious_recovery() -> (SubflowTx, Reno) {
    let (mut sf, mut cc) = sent(10);
    sf.cwnd_validate(true);
    let t = Time(100_000_000);
    sf.on_ack(t, &ack(0, &[(1, 4)]), &mut cc, &[]);
    assert_eq!((sf.ca_state(), sf.cc.ssthresh), (CaState::Recovery, 5));
    sf.transmit_retransmit(t, 0, &mut cc);
    (sf, cc)
}

#[test]
fn a_recovery_whose_every_retransmission_is_dsacked_is_undone() {
    // Linux `tcp_try_undo_dsack`: cwnd back to max(cwnd, prior_cwnd), ssthresh to what it
    // was (here still infinite: slow start), recovery over.
    let (mut sf, mut cc) = spurious_recovery();
    sf.on_ack(Time(101_000_000), &ack(4, &[]), &mut cc, &[]);
    assert_eq!(sf.ca_state(), CaState::Recovery);
    assert!(sf.cwnd() < 10);
    let mut dup = ack(4, &[]);
    dup.dsack = true;
    sf.on_ack(Time(102_000_000), &dup, &mut cc, &[]);
    assert_eq!(sf.ca_state(), CaState::Open);
    assert_eq!((sf.cwnd(), sf.cc.ssthresh), (10, INFINITE_SSTHRESH));
    assert_eq!((sf.stats.dsacks, sf.stats.dsack_undos), (1, 1));
    // Segment 0 had been retransmitted when it was ACKed: its delivery below the SACKed
    // ones says nothing of reordering (Linux skips `TCPCB_RETRANS` segments).
    assert_eq!(sf.rack().reord_seen, 0);
}

#[test]
fn without_a_dsack_the_reduction_stands_unless_the_ack_echoes_the_original() {
    // No D-SACK, the ACK echoing the retransmission's timestamp: the reduction stands.
    let (mut sf, mut cc) = spurious_recovery();
    let mut a = ack(10, &[]);
    a.ts_ecr = Time(100_000_000);
    sf.on_ack(Time(200_000_000), &a, &mut cc, &[]);
    assert_eq!((sf.ca_state(), sf.cc.ssthresh), (CaState::Open, 5));
    assert_eq!(sf.stats.recovery_undos, 0);
    // Echoing the original's (sent at 0 ms, before the retransmission at 100 ms): Eifel's
    // proof the original arrived, `tcp_try_undo_recovery` undoes it.
    let (mut sf, mut cc) = spurious_recovery();
    let mut a = ack(10, &[]);
    a.ts_ecr = Time(1);
    sf.on_ack(Time(200_000_000), &a, &mut cc, &[]);
    assert_eq!(sf.ca_state(), CaState::Open);
    assert_eq!(sf.cc.ssthresh, INFINITE_SSTHRESH);
    assert!(sf.cwnd() >= 10);
    assert_eq!(sf.stats.recovery_undos, 1);
}

#[test]
fn a_never_retransmitted_segment_acked_below_a_sacked_one_is_reordering() {
    let (mut sf, mut cc) = sent(10);
    sf.on_ack(Time(100_000_000), &ack(0, &[(2, 3)]), &mut cc, &[]);
    assert_eq!(sf.rack().reord_seen, 0);
    // Segments 0 and 1 come after 2: delivered below the highest SACKed, never resent.
    sf.on_ack(Time(101_000_000), &ack(3, &[]), &mut cc, &[]);
    assert_eq!(sf.rack().reord_seen, 1);
    // In order from there on: nothing more.
    sf.on_ack(Time(102_000_000), &ack(5, &[]), &mut cc, &[]);
    assert_eq!(sf.rack().reord_seen, 1);
}

#[test]
fn a_restart_after_idle_halves_once_per_skb_queued_before_the_first_send() {
    // Linux checks for idleness in `tcp_skb_entail`, once per skb queued while nothing is in
    // flight: an upstream subflow handed a rewind's megabytes restarts from the initial
    // window, where one check halves once (the kernel's LTE in wifi-outage.toml: 74 -> 10).
    let restart = |entails: u32| {
        let (mut sf, mut cc) = sent(1);
        sf.on_ack(
            Time::ZERO + Dur::from_millis(100),
            &ack(1, &[]),
            &mut cc,
            &[],
        );
        assert_eq!(sf.packets_out(), 0);
        sf.cc.cwnd = 80;
        let rto = sf.rtt.rto();
        sf.set_entails(entails);
        let later = Time::ZERO + Dur::from_millis(100) + rto + rto / 2;
        sf.transmit_new(later, 1, 1448, &mut cc);
        sf.cc.cwnd
    };
    assert_eq!(restart(1), 40);
    assert_eq!(restart(2), 20);
    assert_eq!(restart(5), INITIAL_CWND);
}

// ----- the retransmission timeout: `tcp_enter_loss`, F-RTO (RFC 5682) and undo -----

/// Ten segments sent at 0, the first two ACKed at 100 ms (srtt 100 ms, RACK's RTT 100 ms),
/// the timeout at 400 ms (srtt + 200 ms) from Open: F-RTO is armed, everything out for
/// longer than RACK's RTT is lost, and the head goes again.
fn timed_out() -> (SubflowTx, Reno) {
    let (mut sf, mut cc) = sent(10);
    sf.cwnd_validate(true);
    sf.on_ack(ms(100), &ack(2, &[]), &mut cc, &[]);
    let fire = sf.rto_at().unwrap();
    assert_eq!(fire, ms(400));
    sf.on_rto(fire, &mut cc, &[]);
    assert_eq!((sf.ca_state(), sf.frto), (CaState::Loss, true));
    assert_eq!(sf.next_retransmit(), Some(2));
    sf.transmit_retransmit(fire, 2, &mut cc);
    assert_eq!((sf.cwnd(), sf.cwnd_space()), (1, 0));
    (sf, cc)
}

#[test]
fn rfc5682_a_timeout_whose_originals_are_acked_after_it_is_undone() {
    // RFC 5682 3.1 with SACK (Linux `tcp_process_loss`, step 3b): the first ACK after the
    // timeout acknowledges segment 3, never retransmitted and sent before it: the timeout
    // was spurious. Linux undoes it at once (`tcp_try_undo_loss(sk, true)`,
    // `TCPSpuriousRTOs`): window and ssthresh back, nothing deemed lost any more.
    let (mut sf, mut cc) = timed_out();
    let (cwnd, ssthresh) = (sf.prior_cwnd, sf.prior_ssthresh);
    sf.on_ack(ms(450), &ack(4, &[]), &mut cc, &[]);
    assert_eq!(sf.ca_state(), CaState::Open);
    assert_eq!((sf.stats.spurious_rtos, sf.stats.recovery_undos), (1, 1));
    assert_eq!(sf.sb.lost_out(), 0);
    assert_eq!(sf.next_retransmit(), None);
    assert!(
        sf.cwnd() >= cwnd && sf.cc.ssthresh >= ssthresh,
        "{}",
        sf.cwnd()
    );
    // A SACK of such a segment proves it as well.
    let (mut sf, mut cc) = timed_out();
    sf.on_ack(ms(450), &ack(2, &[(5, 6)]), &mut cc, &[]);
    assert_eq!((sf.ca_state(), sf.stats.spurious_rtos), (CaState::Open, 1));
}

#[test]
fn rfc5682_step_2b_sends_new_data_and_step_3b_then_finds_the_timeout_spurious() {
    // The first ACK acknowledges only the retransmitted head: F-RTO sends new data instead
    // of retransmitting (step 2b, `REXMIT_NEW`), and the next ACK, acknowledging originals
    // sent before the timeout, proves it spurious (step 3b).
    let (mut sf, mut cc) = timed_out();
    sf.on_ack(ms(450), &ack(3, &[]), &mut cc, &[]);
    assert_eq!(sf.ca_state(), CaState::Loss);
    assert!(sf.frto_wants_new_data(true));
    let mut next = sf.snd_nxt();
    while sf.cwnd_space() > 0 {
        sf.transmit_new(ms(450), next, 1448, &mut cc);
        next += 1;
    }
    assert_eq!(next, 12, "two new segments (cwnd 1 + 1 in slow start)");
    assert!(!sf.frto_after_push(), "new data went: no retransmission");
    assert_eq!(sf.stats.retransmits, 1);
    sf.on_ack(ms(460), &ack(5, &[]), &mut cc, &[]);
    assert_eq!((sf.ca_state(), sf.stats.spurious_rtos), (CaState::Open, 1));
}

#[test]
fn rfc5682_step_3a_a_duplicate_ack_after_new_data_proves_the_loss_real() {
    // After step 2b, an ACK that SACKs only the new data (the originals were lost): F-RTO
    // ends and the conventional recovery retransmits what was marked lost.
    let (mut sf, mut cc) = timed_out();
    sf.on_ack(ms(450), &ack(3, &[]), &mut cc, &[]);
    assert!(sf.frto_wants_new_data(true));
    sf.transmit_new(ms(450), 10, 1448, &mut cc);
    sf.transmit_new(ms(450), 11, 1448, &mut cc);
    assert!(!sf.frto_after_push());
    sf.on_ack(ms(560), &ack(3, &[(10, 11)]), &mut cc, &[]);
    assert!(!sf.frto);
    assert_eq!((sf.ca_state(), sf.stats.spurious_rtos), (CaState::Loss, 0));
    assert_eq!(sf.next_retransmit(), Some(3));
}

#[test]
fn rfc5682_step_2b_without_new_data_falls_back_to_retransmitting() {
    // Nothing waiting in the write queue (or the window closed): `tp->frto = 0` at once and
    // the lost segments go, as without F-RTO.
    let (mut sf, mut cc) = timed_out();
    sf.on_ack(ms(450), &ack(3, &[]), &mut cc, &[]);
    assert!(!sf.frto_wants_new_data(false));
    assert!(!sf.frto);
    assert_eq!(sf.next_retransmit(), Some(3));
    // New data was wanted but none went out (the scheduler sent nothing here): the same.
    let (mut sf, mut cc) = timed_out();
    sf.on_ack(ms(450), &ack(3, &[]), &mut cc, &[]);
    assert!(sf.frto_wants_new_data(true));
    assert!(sf.frto_after_push());
    assert!(!sf.frto);
    assert_eq!(sf.next_retransmit(), Some(3));
}

#[test]
fn a_timeout_echoing_the_originals_timestamp_is_undone_by_eifel_without_frto() {
    // The ACK echoes a timestamp from before the head's retransmission (400 ms): an original
    // arrived (`tcp_packet_delayed`). Linux undoes it in `tcp_try_undo_loss(sk, false)`
    // before F-RTO looks (`TCPLossUndo`, not `TCPSpuriousRTOs`): a delay spike on this
    // kernel (one RTO, TCPLossUndo 1, TCPSpuriousRTOs 0) does the same.
    let (mut sf, mut cc) = timed_out();
    let mut a = ack(3, &[]);
    a.ts_ecr = ms(10);
    sf.on_ack(ms(450), &a, &mut cc, &[]);
    assert_eq!(sf.ca_state(), CaState::Open);
    assert_eq!((sf.stats.recovery_undos, sf.stats.spurious_rtos), (1, 0));
}

#[test]
fn a_timeout_in_fast_recovery_keeps_ssthresh_arms_no_frto_and_spares_recent_segments() {
    // `tcp_enter_loss` in Recovery: no new reduction of this window, F-RTO not armed
    // (`new_recovery` false, no earlier timeout), and segments sent within RACK's RTT of the
    // timeout stay in flight (`tcp_timeout_mark_lost`); cwnd = in flight + 1.
    let (mut sf, mut cc) = sent(10);
    sf.cwnd_validate(true);
    sf.on_ack(ms(100), &ack(0, &[(1, 4)]), &mut cc, &[]);
    assert_eq!(sf.ca_state(), CaState::Recovery);
    let ssthresh = sf.cc.ssthresh;
    sf.transmit_retransmit(ms(100), 0, &mut cc);
    // New data sent late in the recovery.
    sf.transmit_new(ms(380), 10, 1448, &mut cc);
    sf.transmit_new(ms(380), 11, 1448, &mut cc);
    let fire = ms(400);
    sf.on_rto(fire, &mut cc, &[]);
    assert_eq!(sf.ca_state(), CaState::Loss);
    assert!(!sf.frto);
    assert_eq!(sf.cc.ssthresh, ssthresh);
    // RACK's RTT is 100 ms (segments 1-3, sent at 0, SACKed at 100 ms): 10 and 11 (out
    // for 20 ms) are spared, 0 and 4-9 (out for 300-400 ms) are lost.
    let lost: Vec<u64> = (0..12).filter(|&q| sf.sb.at(q).lost).collect();
    assert_eq!(lost, vec![0, 4, 5, 6, 7, 8, 9]);
    assert_eq!(sf.in_flight(), 2);
    assert_eq!(sf.cwnd(), 3);
}

#[test]
fn a_recovery_that_ends_clean_forgets_its_first_retransmission() {
    // `tcp_try_to_open` clears `retrans_stamp` when a recovery ends with nothing
    // retransmitted left in the network, so that a later timeout's Eifel check compares with
    // its own retransmission, not with one from seconds before (which the model did, and so
    // retransmitted a whole window after a delay spike the kernel undid).
    let (mut sf, mut cc) = spurious_recovery();
    assert_eq!(sf.retrans_stamp, Some(Time(100_000_000)));
    sf.on_ack(ms(200), &ack(10, &[]), &mut cc, &[]);
    assert_eq!(sf.ca_state(), CaState::Open);
    assert_eq!(sf.retrans_stamp, None);
    for i in 10..20 {
        sf.transmit_new(ms(1000), i, 1448, &mut cc);
    }
    let fire = sf.rto_at().unwrap();
    sf.on_rto(fire, &mut cc, &[]);
    sf.transmit_retransmit(fire, 10, &mut cc);
    let mut a = ack(12, &[]);
    a.ts_ecr = ms(1000);
    sf.on_ack(fire + Dur::from_millis(50), &a, &mut cc, &[]);
    assert_eq!(sf.ca_state(), CaState::Open, "undone");
}

#[test]
fn a_probe_of_a_sacked_tail_is_not_a_retransmission_in_flight() {
    // `tcp_send_loss_probe` resends the last segment even if a SACK covered it meanwhile;
    // delivered, it must not count in the pipe (before, `retrans_out` kept it for good and a
    // later timeout, which no longer clears every mark, could find nothing to retransmit).
    let (mut sf, mut cc) = sent(4);
    sf.on_ack(ms(100), &ack(0, &[(3, 4)]), &mut cc, &[]);
    let before = sf.sb.retrans_out();
    sf.tlp_retransmit_tail(ms(300), &mut cc);
    assert_eq!(sf.sb.retrans_out(), before);
    sf.on_ack(ms(400), &ack(4, &[]), &mut cc, &[]);
    assert_eq!((sf.sb.retrans_out(), sf.in_flight()), (0, 0));
}

#[test]
fn in_recovery_a_sack_of_a_segment_older_than_the_head_s_retransmission_restarts_the_rto() {
    // Linux `tcp_clean_rtx_queue`: nothing cumulatively ACKed, but the SACKed segment was
    // sent before the head last left, so the head has been out longer than that RTT: the
    // RTO restarts from now (a kernel trace shows it re-armed on every such ACK while LTE
    // repairs a loss). A SACK of a segment sent after it does not restart it.
    let ms = |m: u64| Time::ZERO + Dur::from_millis(m);
    let (mut sf, mut cc) = sent(10);
    sf.cwnd_validate(true);
    sf.on_ack(ms(100), &ack(0, &[(1, 4)]), &mut cc, &[]);
    assert_eq!(sf.ca_state(), CaState::Recovery);
    sf.transmit_retransmit(ms(100), 0, &mut cc);
    let before = sf.rto_at().expect("armed");
    // Segments 4 and 5 left at 0 ms, before the head's retransmission at 100 ms.
    sf.on_ack(ms(150), &ack(0, &[(1, 6)]), &mut cc, &[]);
    let rto = sf.rtt.rto();
    assert_eq!(sf.rto_at(), Some(ms(150) + rto));
    assert_ne!(
        sf.rto_at(),
        Some(before),
        "re-armed, not left as the retransmission set it"
    );
    // Segment 10 leaves after the head's retransmission: its SACK leaves the timer alone.
    sf.transmit_new(ms(160), 10, 1448, &mut cc);
    let armed = sf.rto_at();
    sf.on_ack(ms(270), &ack(0, &[(1, 6), (10, 11)]), &mut cc, &[]);
    assert_eq!(sf.rto_at(), armed);
}

#[test]
fn the_head_s_retransmission_in_recovery_restarts_the_rto() {
    // Linux `tcp_xmit_retransmit_queue`: retransmitting the head re-arms the RTO a whole RTO
    // from now (here it would otherwise stay where the first flight left it, at 1 s).
    let ms = |m: u64| Time::ZERO + Dur::from_millis(m);
    let (mut sf, mut cc) = sent(10);
    sf.cwnd_validate(true);
    assert_eq!(sf.rto_at(), Some(ms(1000)));
    sf.on_ack(ms(100), &ack(0, &[(1, 4)]), &mut cc, &[]);
    assert_eq!(sf.next_retransmit(), Some(0));
    sf.transmit_retransmit(ms(100), 0, &mut cc);
    assert_eq!(sf.rto_at(), Some(ms(100) + sf.rtt.rto()));
}
