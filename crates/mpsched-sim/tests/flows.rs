//! Competing flows: several connections sharing the paths (the `flows` of a scenario).

use mpsched_sim::build::*;
use mpsched_sim::config::{Config, FlowConfig, Protocol, QueueSpec, Workload};
use mpsched_sim::{Simulation, Summary};
use std::collections::BTreeMap;

fn run(cfg: Config) -> Summary {
    Simulation::new(cfg, false).unwrap().run().summary
}

fn tcp_flow(start_ns: u64, size_bytes: Option<u64>, path: usize) -> FlowConfig {
    FlowConfig {
        start_ns,
        protocol: Protocol::Tcp,
        scheduler: "minrtt".into(),
        scheduler_params: BTreeMap::new(),
        congestion: "reno".into(),
        size_bytes,
        paths: vec![path],
    }
}

fn tcp(paths: Vec<mpsched_sim::config::PathConfig>, secs: u64) -> Config {
    let mut c = scenario(paths, "minrtt", secs * S);
    c.protocol = Protocol::Tcp;
    c.congestion = "reno".into();
    c
}

#[test]
fn tcp_flows_on_one_bottleneck_fill_it_and_share_it_fairly() {
    // Four Reno flows with the same RTT over 20 Mbit/s with a one-BDP buffer (100 kB): they
    // converge to equal shares (Chiu and Jain's AIMD result) and keep the link busy.
    let mut c = tcp(
        vec![path(
            "p",
            20 * MBPS,
            40 * MS,
            QueueSpec::Bytes(100_000),
            0.0,
        )],
        60,
    );
    c.flows = (0..3).map(|_| tcp_flow(0, None, 0)).collect();
    let s = run(c);
    assert_eq!(s.flows.len(), 4);
    let rates: Vec<f64> = s.flows.iter().map(|f| f.goodput_mbps).collect();
    let sum: f64 = rates.iter().sum();
    let payload = 20.0 * 1448.0 / 1500.0;
    assert!(
        sum > 0.95 * payload && sum <= payload,
        "sum {sum} of {payload}: {rates:?}"
    );
    let jain = sum * sum / (rates.len() as f64 * rates.iter().map(|r| r * r).sum::<f64>());
    assert!(jain > 0.97, "Jain's index {jain}: {rates:?}");
    // The main connection's own numbers are its share, not the link's.
    assert!((s.goodput_mbps - rates[0]).abs() < 1e-9);
    let drops: u64 = s.flows.iter().map(|f| f.queue_drops).sum();
    assert!(
        s.subflows[0].queue_drops < drops,
        "{} of {drops}",
        s.subflows[0].queue_drops
    );
}

#[test]
fn a_file_within_the_initial_window_takes_two_round_trips() {
    // On an idle 10 Mbit/s path of RTT 50 ms, ten full segments (Linux's initial window):
    // SYN, SYN-ACK, request, then the ten segments back to back. Completion from the SYN =
    // 2 x RTT + the three handshake packets (SYN and SYN-ACK of 60 bytes with their options,
    // the ACK of 52) + ten 1,500-byte packets serialized.
    let mut c = tcp(
        vec![
            path("a", 30 * MBPS, 20 * MS, QueueSpec::TimeNs(50 * MS), 0.0),
            path("b", 10 * MBPS, 50 * MS, QueueSpec::TimeNs(50 * MS), 0.0),
        ],
        10,
    );
    c.main_paths = Some(1);
    let alone = run(c.clone());
    c.flows = vec![tcp_flow(2 * S, Some(10 * 1448), 1)];
    let s = run(c);
    let tx = |bytes: f64| bytes * 8.0 / 10e6;
    let expected = 2.0 * 0.050 + tx(60.0 + 60.0 + 52.0) + 10.0 * tx(1500.0);
    let f = &s.flows[1];
    assert_eq!(f.paths, vec!["b".to_string()]);
    assert_eq!(f.start_s, 2.0);
    let got = f.completion_s.expect("finished");
    assert!(
        (got - expected).abs() < 1e-6,
        "{got} s, expected {expected} s"
    );
    assert_eq!(s.mean_flow_completion_s, Some(got));
    assert_eq!(s.unfinished_flows, Some(0));
    // A flow on another path leaves the main connection exactly as it was.
    assert_eq!(s.goodput_mbps, alone.goodput_mbps);
    assert_eq!(s.subflows[0].packets_sent, alone.subflows[0].packets_sent);
}

#[test]
fn the_run_ends_with_the_last_file() {
    // A 200 kB main file over 10 Mbit/s, and a 2 MB flow that starts later: the run goes on
    // until the flow has its file; the main connection's numbers end with its own file.
    let mut c = tcp(
        vec![path(
            "p",
            10 * MBPS,
            40 * MS,
            QueueSpec::TimeNs(40 * MS),
            0.0,
        )],
        60,
    );
    c.workload = Workload::File {
        size_bytes: 200_000,
    };
    c.flows = vec![tcp_flow(S, Some(2_000_000), 0)];
    let s = run(c);
    let main = s.completion_s.expect("main finished");
    let flow = s.flows[1].completion_s.expect("flow finished");
    assert!(main < 1.0, "main {main} s");
    // 2 MB at a 9.65 Mbit/s payload rate is 1.66 s; slow start adds a few round trips.
    assert!(flow > 1.66 && flow < 3.0, "flow {flow} s");
    assert_eq!(s.duration_s, main);
    assert_eq!(s.unfinished_flows, Some(0));
    let aft = s.mean_flow_completion_s.unwrap();
    assert!((aft - (main + flow) / 2.0).abs() < 1e-12);
}

#[test]
fn bad_flows_are_refused_naming_the_field() {
    let base = tcp(
        vec![path(
            "p",
            10 * MBPS,
            40 * MS,
            QueueSpec::TimeNs(40 * MS),
            0.0,
        )],
        10,
    );
    let refused = |f: FlowConfig| {
        let mut c = base.clone();
        c.flows = vec![f];
        Simulation::new(c, false)
            .err()
            .expect("refused")
            .to_string()
    };
    assert!(refused(tcp_flow(0, None, 3)).starts_with("flows[0].paths[0]"));
    assert!(refused(tcp_flow(0, Some(0), 0)).starts_with("flows[0].size_bytes"));
    let mut two = tcp_flow(0, None, 0);
    two.paths = vec![0, 0];
    assert!(refused(two).starts_with("flows[0].paths"));
    let mut bad = tcp_flow(0, None, 0);
    bad.protocol = Protocol::Mptcp;
    bad.scheduler = "nope".into();
    assert!(refused(bad).starts_with("flows[0].scheduler"));
}

#[test]
fn synchronized_initial_windows_cost_classic_tcp_one_second_timeouts() {
    // 30 flows of 30 kB start together on one 100 Mbit/s path with a 100-packet queue: 300
    // segments of initial window meet 100 packets of buffer. Linux's recovery (RACK, tail
    // loss probes) repairs the lost tails within round trips; the classic one (DupThresh,
    // RTO >= 1 s) has no three segments after a lost tail to count and waits for timeouts,
    // as paper 004 saw short flows do in ns-3.
    let base = || {
        let mut c = tcp(
            vec![path("p", 100 * MBPS, 20 * MS, QueueSpec::Packets(100), 0.0)],
            30,
        );
        c.workload = Workload::File { size_bytes: 30_000 };
        c.flows = (0..29).map(|_| tcp_flow(0, Some(30_000), 0)).collect();
        c
    };
    let linux = run(base());
    let mut c = base();
    c.loss_recovery = mpsched_sim::config::RecoveryName::Classic;
    let classic = run(c);
    let rtos = |s: &Summary| s.flows.iter().map(|f| f.rtos).sum::<u64>();
    let drops = |s: &Summary| s.flows.iter().map(|f| f.queue_drops).sum::<u64>();
    assert!(drops(&linux) > 100 && drops(&classic) > 100);
    assert_eq!(rtos(&linux), 0);
    assert!(rtos(&classic) >= 10, "{} RTOs", rtos(&classic));
    let (l, c) = (
        linux.mean_flow_completion_s.unwrap(),
        classic.mean_flow_completion_s.unwrap(),
    );
    assert!(l < 0.25 && c > 0.5, "AFT linux {l} s, classic {c} s");
}

#[test]
fn a_flow_opening_behind_a_standing_queue_waits_for_it_in_its_handshake_too() {
    // The main connection keeps a window of 150 kB over 10 Mbit/s and 40 ms (a 50 kB BDP):
    // 100 kB stand in the queue, 80 ms. A ten-segment file opened on that path at 5 s meets
    // the queue twice, with its SYN-ACK and with its data: 2 RTT + 2 x 80 ms, not 2 RTT +
    // 80 ms, as it would if the handshake saw an idle path.
    let mut c = tcp(
        vec![path("p", 10 * MBPS, 40 * MS, QueueSpec::Packets(1000), 0.0)],
        8,
    );
    c.rcvbuf_bytes = 150_000;
    c.rcvbuf_initial_bytes = 150_000;
    c.rcvbuf_autotune = false;
    c.window_ratio = Some(1.0);
    c.flows = vec![tcp_flow(5 * S, Some(10 * 1448), 0)];
    let s = run(c);
    let fct = s.flows[1].completion_s.unwrap();
    let queue = (150_000.0 - 50_000.0) * 8.0 / 10e6 * 1500.0 / 1448.0;
    let expected = 2.0 * 0.040 + 2.0 * queue;
    assert!(
        (fct - expected).abs() < 0.15 * expected,
        "{fct} s, expected ~{expected} s"
    );
}
