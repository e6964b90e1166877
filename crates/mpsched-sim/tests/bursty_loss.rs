//! Bursty (Gilbert-Elliott) loss against independent loss of the same mean, on one Reno flow.
//!
//! TCP halves its window once per loss *event* (a window with losses), not per lost packet,
//! so Mathis et al.'s throughput `MSS / RTT x sqrt(3/2) / sqrt(q)` depends on the event rate
//! `q`. With bursts of 10 consecutive losses q falls to about a tenth of the packet loss rate
//! and throughput rises about sqrt(10)-fold; independent losses make each loss its own event.
//! The window must be well above the burst for this: a burst that takes a whole window ends
//! in a timeout instead (at 0.1% loss and 40 ms the windows are 40 packets and more).

use mpsched_sim::build::*;
use mpsched_sim::config::{Config, Protocol, QueueSpec};
use mpsched_sim::summary::SubflowSummary;
use mpsched_sim::Simulation;

const RTT_S: f64 = 0.040;
const LOSS: f64 = 0.001;

fn reno(burst: Option<f64>, seed: u64) -> (f64, SubflowSummary) {
    let mut c: Config = scenario(
        vec![path(
            "p",
            100 * MBPS,
            40 * MS,
            QueueSpec::Bytes(500_000),
            LOSS,
        )],
        "minrtt",
        120 * S,
    );
    c.protocol = Protocol::Tcp;
    c.congestion = "reno".into();
    c.seed = seed;
    c.paths[0].down.loss_burst = burst;
    let s = Simulation::new(c, false).unwrap().run().summary;
    (s.goodput_mbps, s.subflows[0].clone())
}

/// Mathis et al.'s Reno throughput (Mbit/s of payload) at loss-event rate `q`.
fn mathis_mbps(q: f64) -> f64 {
    1448.0 * 8.0 / RTT_S * (1.5f64).sqrt() / q.sqrt() / 1e6
}

#[test]
fn bursts_of_ten_are_fewer_loss_events_and_more_goodput_as_mathis_predicts() {
    let (mut independent, mut bursty) = (0.0, 0.0);
    let (mut drops10, mut sent10) = (0, 0);
    for seed in 1..=3 {
        let (g1, s1) = reno(None, seed);
        let (g10, s10) = reno(Some(10.0), seed);
        independent += g1;
        bursty += g10;
        drops10 += s10.random_drops;
        sent10 += s10.packets_sent;
        let rate1 = s1.random_drops as f64 / s1.packets_sent as f64;
        assert!(
            (rate1 / LOSS - 1.0).abs() < 0.3,
            "seed {seed}: loss {rate1}"
        );
        // Independent: nearly every loss its own event. Bursts: about one event per burst.
        let events1 = (s1.fast_recoveries + s1.rtos) as f64;
        assert!(
            events1 > 0.8 * s1.random_drops as f64,
            "seed {seed}: {s1:?}"
        );
        let events10 = (s10.fast_recoveries + s10.rtos) as f64;
        let bursts = s10.random_drops as f64 / 10.0;
        assert!(
            events10 > 0.7 * bursts && events10 < 1.6 * bursts,
            "seed {seed}: {events10} events for {bursts} bursts"
        );
        // Each goodput is Mathis's at its own measured event rate.
        for (g, events, s) in [(g1, events1, &s1), (g10, events10, &s10)] {
            let predicted = mathis_mbps(events / s.packets_sent as f64);
            assert!(
                (0.8..1.3).contains(&(g / predicted)),
                "seed {seed}: {g} Mbit/s against Mathis {predicted}"
            );
        }
    }
    // The bursty runs lose the same share of packets (about 100 bursts in all, hence the
    // wide bound; the loss process's own accuracy is checked over 10^6 packets in core).
    let rate10 = drops10 as f64 / sent10 as f64;
    assert!((rate10 / LOSS - 1.0).abs() < 0.35, "bursty loss {rate10}");
    assert!(
        bursty > 2.5 * independent,
        "bursty {bursty} vs independent {independent} (sum of 3 seeds, Mbit/s)"
    );
}
