//! The summary of a run, the JSON object `mpsched run --json` prints.

use crate::config::{Config, Protocol, Workload};
use mpsched_core::conn::{Receiver, Sender};
use mpsched_core::link::Link;
use mpsched_core::Time;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct Quantiles {
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SubflowSummary {
    pub name: String,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    pub packets_sent: u64,
    /// Application bytes whose delivered copy came on this subflow, per second.
    pub goodput_mbps: f64,
    pub bytes_delivered: u64,
    /// Fraction of the application's bytes this subflow delivered.
    pub share: f64,
    pub retransmits: u64,
    /// Data segments sent here again after another subflow timed out / opportunistically.
    pub reinjections: u64,
    pub opportunistic_retransmits: u64,
    pub rtos: u64,
    pub fast_recoveries: u64,
    pub tlp_probes: u64,
    pub penalizations: u64,
    /// Data packets dropped at the data-direction queue / by random loss.
    pub queue_drops: u64,
    pub random_drops: u64,
    pub ack_queue_drops: u64,
    pub ack_random_drops: u64,
    /// Drops over data packets sent.
    pub loss_rate: f64,
    pub srtt_ms: f64,
    pub min_rtt_ms: f64,
    pub cwnd_segments: u32,
    pub mean_free_cwnd_at_ack: f64,
    pub p99_free_cwnd_at_ack: u64,
    pub peak_free_cwnd_at_ack: u64,
    /// Packets sent back to back in one round of sending.
    pub mean_burst_packets: f64,
    pub p99_burst_packets: u64,
    pub max_burst_packets: u64,
    /// ACKs the receiver held back on this subflow because its window would have shrunk
    /// (out-of-tree MPTCP).
    pub held_acks: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub protocol: &'static str,
    pub scheduler: String,
    pub congestion: String,
    pub seed: u64,
    pub goodput_mbps: f64,
    pub bytes_delivered: u64,
    pub duration_s: f64,
    pub completion_s: Option<f64>,
    pub ooo_delay_ms: Quantiles,
    pub data_ack_step_segments: Quantiles,
    pub opportunistic_retransmits: u64,
    pub reinjections: u64,
    pub penalizations: u64,
    pub window_probes: u64,
    pub peak_reorder_bytes: u64,
    /// Time-weighted mean of the connection-level reorder queue (OTIAS Fig. 5).
    pub mean_reorder_bytes: f64,
    pub data_packets: u64,
    pub acks_sent: u64,
    pub events: u64,
    pub wall_s: f64,
    pub subflows: Vec<SubflowSummary>,
}

pub fn build(
    cfg: &Config,
    server: &Sender,
    client: &Receiver,
    links: &[Link],
    end: Time,
    events: u64,
    wall_s: f64,
) -> Summary {
    let duration_s = end.as_secs_f64();
    let mbps = |bytes: u64| bytes as f64 * 8.0 / duration_s / 1e6;
    let ooo = &client.stats.ooo_delay_ns;
    let steps = &server.stats.data_ack_steps;
    let subflows: Vec<SubflowSummary> = server
        .subflows()
        .iter()
        .enumerate()
        .map(|(i, sf)| {
            let (d, u) = (links[2 * i].stats(), links[2 * i + 1].stats());
            let acks = &server.stats.per_subflow[i];
            let delivered = client.stats.delivered_by_subflow[i];
            SubflowSummary {
                name: cfg.paths[i].name.clone(),
                bytes_sent: sf.stats.bytes_sent,
                packets_sent: sf.stats.packets_sent,
                goodput_mbps: mbps(delivered),
                bytes_delivered: delivered,
                share: if client.stats.delivered_bytes == 0 {
                    0.0
                } else {
                    delivered as f64 / client.stats.delivered_bytes as f64
                },
                retransmits: sf.stats.retransmits,
                reinjections: acks.reinjections,
                opportunistic_retransmits: acks.opportunistic_retransmits,
                rtos: sf.stats.rtos,
                fast_recoveries: sf.stats.fast_recoveries,
                tlp_probes: sf.stats.tlp_probes,
                penalizations: sf.stats.penalizations,
                queue_drops: d.queue_drops,
                random_drops: d.random_drops,
                ack_queue_drops: u.queue_drops,
                ack_random_drops: u.random_drops,
                loss_rate: if sf.stats.packets_sent == 0 {
                    0.0
                } else {
                    (d.queue_drops + d.random_drops) as f64 / sf.stats.packets_sent as f64
                },
                srtt_ms: sf.srtt().as_millis_f64(),
                min_rtt_ms: sf.rtt().min_rtt().map_or(0.0, |d| d.as_millis_f64()),
                cwnd_segments: sf.cwnd(),
                mean_free_cwnd_at_ack: acks.free_cwnd.mean(),
                p99_free_cwnd_at_ack: acks.free_cwnd.quantile(0.99),
                peak_free_cwnd_at_ack: acks.free_cwnd.max(),
                mean_burst_packets: acks.burst_packets.mean(),
                p99_burst_packets: acks.burst_packets.quantile(0.99),
                max_burst_packets: acks.burst_packets.max(),
                held_acks: client.stats.held_acks.get(i).copied().unwrap_or(0),
            }
        })
        .collect();
    Summary {
        protocol: match cfg.protocol {
            Protocol::Mptcp => "mptcp",
            Protocol::Tcp => "tcp",
        },
        scheduler: if cfg.protocol == Protocol::Mptcp {
            cfg.scheduler.clone()
        } else {
            "none".into()
        },
        congestion: cfg.congestion.clone(),
        seed: cfg.seed,
        goodput_mbps: mbps(client.stats.delivered_bytes),
        bytes_delivered: client.stats.delivered_bytes,
        duration_s,
        completion_s: match cfg.workload {
            Workload::Bulk => None,
            Workload::File { .. } => client.complete_at().map(|t| t.as_secs_f64()),
        },
        ooo_delay_ms: Quantiles {
            mean: ooo.mean() / 1e6,
            p50: ooo.quantile(0.5) as f64 / 1e6,
            p99: ooo.quantile(0.99) as f64 / 1e6,
            max: ooo.max() as f64 / 1e6,
        },
        data_ack_step_segments: Quantiles {
            mean: steps.mean(),
            p50: steps.quantile(0.5) as f64,
            p99: steps.quantile(0.99) as f64,
            max: steps.max() as f64,
        },
        opportunistic_retransmits: server.stats.opportunistic_retransmits,
        reinjections: server.stats.reinjections,
        penalizations: subflows.iter().map(|s| s.penalizations).sum(),
        window_probes: server.stats.window_probes,
        peak_reorder_bytes: client.stats.peak_held_bytes,
        mean_reorder_bytes: client.stats.mean_reorder_bytes(end),
        data_packets: subflows.iter().map(|s| s.packets_sent).sum(),
        acks_sent: client.stats.acks_sent,
        events,
        wall_s,
        subflows,
    }
}
