//! Handshakes in the links: a SYN, SYN-ACK or third ACK is a packet that queues and can be
//! lost, and the client sends its SYN again after Linux's 1 s (`TCP_TIMEOUT_INIT`), doubling,
//! each wait rounded as the kernel's timer wheel rounds it at 250 Hz (the default
//! `timer_hz`): 1 s from jiffy 0 runs at tick 256 (1.024 s, an 8-tick bucket), the next 2 s
//! at tick 760 (3.04 s).

use mpsched_sim::build::*;
use mpsched_sim::config::{Config, Protocol, QueueSpec, Workload};
use mpsched_sim::{RunOutput, Simulation};

/// TCP over one idle 10 Mbit/s path of 50 ms: a file of ten full segments (the initial
/// window). Completion from the SYN: 2 x RTT, the handshake packets (SYN and SYN-ACK of 60
/// bytes, the ACK of 52) and ten 1,500-byte packets serialized.
fn ten_segments() -> (Config, f64) {
    let mut c = scenario(
        vec![path(
            "p",
            10 * MBPS,
            50 * MS,
            QueueSpec::TimeNs(50 * MS),
            0.0,
        )],
        "minrtt",
        20 * S,
    );
    c.protocol = Protocol::Tcp;
    c.workload = Workload::File {
        size_bytes: 10 * 1448,
    };
    let tx = |bytes: f64| bytes * 8.0 / 10e6;
    let completion = 2.0 * 0.050 + tx(60.0 + 60.0 + 52.0) + 10.0 * tx(1500.0);
    (c, completion)
}

#[test]
fn a_lost_syn_costs_the_initial_timeout() {
    let (c, lossless) = ten_segments();
    let s = Simulation::new(c.clone(), false).unwrap().run().summary;
    assert!((s.completion_s.unwrap() - lossless).abs() < 1e-6);
    // The path is down when the SYN leaves (and back at 0.5 s): it goes again at 1.024 s.
    let mut lost = c.clone();
    lost.paths[0].schedule = vec![state(0, false), state(500 * MS, true)];
    let s = Simulation::new(lost, false).unwrap().run().summary;
    let got = s.completion_s.unwrap();
    assert!((got - (1.024 + lossless)).abs() < 1e-6, "{got}");
    assert_eq!(
        s.subflows[0].outage_drops, 0,
        "the SYN is not a data packet"
    );
    assert_eq!(s.subflows[0].handshake_drops, 1);
    // Down until 2.5 s: the SYNs at 0 and 1.024 s are lost, the one at 3.04 s gets through.
    let mut lost = c.clone();
    lost.paths[0].schedule = vec![state(0, false), state(2500 * MS, true)];
    let got = Simulation::new(lost, false)
        .unwrap()
        .run()
        .summary
        .completion_s
        .unwrap();
    assert!((got - (3.04 + lossless)).abs() < 1e-6, "{got}");
    // With exact timers (`timer_hz = 0`), RFC 6298's 1 s and 3 s to the nanosecond.
    let mut exact = c.clone();
    exact.timer_hz = 0;
    exact.paths[0].schedule = vec![state(0, false), state(2500 * MS, true)];
    let got = Simulation::new(exact, false)
        .unwrap()
        .run()
        .summary
        .completion_s
        .unwrap();
    assert!((got - (3.0 + lossless)).abs() < 1e-6, "{got}");
}

#[test]
fn a_lost_syn_ack_is_sent_again_and_the_handshake_completes() {
    let (c, lossless) = ten_segments();
    // Down while the SYN-ACK is on its way back (25-60 ms), up again long before 1 s: the
    // client's SYN goes again at 1.024 s and the server answers it at once.
    let mut lost = c;
    lost.paths[0].schedule = vec![state(30 * MS, false), state(60 * MS, true)];
    let got = Simulation::new(lost, false)
        .unwrap()
        .run()
        .summary
        .completion_s
        .unwrap();
    assert!((got - (1.024 + lossless)).abs() < 1e-3, "{got}");
}

/// The MP_JOIN of the second path is lost: that subflow joins a second later, the first one
/// carries the transfer meanwhile.
#[test]
fn a_lost_mp_join_delays_only_its_subflow() {
    let mut c = stms_lab(100 * MS, 5 * S);
    // LTE is down when its MP_JOIN SYN leaves (once the first subflow is up, at 20 ms).
    c.paths[1].schedule = vec![state(0, false), state(500 * MS, true)];
    let out: RunOutput = Simulation::new(c, true).unwrap().run();
    let d = &out.traces.as_ref().unwrap().delivery;
    let first_lte = (0..d.subflow.len())
        .filter(|&i| d.subflow[i] == 1)
        .map(|i| d.first_received_ns[i])
        .min()
        .unwrap();
    // SYN again at 1.02 s, joined after LTE's 100 ms round trip and the third ACK's 50 ms,
    // data a one-way delay later.
    assert!(
        (1_170 * MS..1_400 * MS).contains(&first_lte),
        "LTE first delivers at {first_lte}"
    );
    let first_wifi = (0..d.subflow.len())
        .filter(|&i| d.subflow[i] == 0)
        .map(|i| d.first_received_ns[i])
        .min()
        .unwrap();
    assert!(first_wifi < 60 * MS, "{first_wifi}");
}
