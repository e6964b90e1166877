//! The summary of a run, the JSON object `mpsched run --json` prints.

use crate::config::{Config, Protocol, Workload};
use crate::sim::{App, Conn};
use mpsched_core::conn::stats::Histogram;
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
    /// With competing flows: every connection, the main one first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowSummary>,
    /// The mean completion time (from SYN to last byte) of the connections (the main one
    /// and any competing flows) that transfer a file and finished it (paper 004's "AFT").
    pub mean_flow_completion_s: Option<f64>,
    /// The mean of the connections' goodputs (each over its SYN to its completion or the end).
    pub mean_flow_goodput_mbps: Option<f64>,
    /// Connections with a file that did not finish within the run.
    pub unfinished_flows: Option<u64>,
    /// A rate-limited application (`Workload::Rate`): from each block's write to its last
    /// byte delivered in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_delay_ms: Option<Quantiles>,
    /// Its worst block against the least a block can take (the best path's propagation
    /// delay plus the block's serialization): max / ideal - 1, paper 001's "relative delay
    /// increase" of the worst block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_delay_increase: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocks_delivered: Option<u64>,
    /// When the worst block was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_worst_at_s: Option<f64>,
}

/// One connection of a run with competing flows.
#[derive(Clone, Debug, Serialize)]
pub struct FlowSummary {
    /// 0 for the main connection, k for `flows[k - 1]`.
    pub flow: u32,
    pub protocol: &'static str,
    /// The paths of its subflows.
    pub paths: Vec<String>,
    pub start_s: f64,
    pub size_bytes: Option<u64>,
    /// From its SYN to its last byte delivered; `None`: bulk, or not finished.
    pub completion_s: Option<f64>,
    pub bytes_delivered: u64,
    /// Bytes delivered over the time from its SYN to its completion (or the end of the run).
    pub goodput_mbps: f64,
    /// Data packets sent, retransmissions included.
    pub packets_sent: u64,
    pub retransmits: u64,
    pub rtos: u64,
    pub queue_drops: u64,
    pub random_drops: u64,
}

/// A histogram of nanoseconds in milliseconds.
fn quantiles_ms(h: &Histogram) -> Quantiles {
    Quantiles {
        mean: h.mean() / 1e6,
        p50: h.quantile(0.5) as f64 / 1e6,
        p99: h.quantile(0.99) as f64 / 1e6,
        max: h.max() as f64 / 1e6,
    }
}

fn protocol_name(p: Protocol) -> &'static str {
    match p {
        Protocol::Mptcp => "mptcp",
        Protocol::Tcp => "tcp",
    }
}

fn flow_summary(cfg: &Config, k: usize, conn: &Conn, run_end: Time) -> FlowSummary {
    let protocol = if k == 0 {
        cfg.protocol
    } else {
        cfg.flows[k - 1].protocol
    };
    let done = conn.client.complete_at().filter(|_| conn.file);
    let span = (done.unwrap_or(run_end).max(conn.syn_at) - conn.syn_at).as_secs_f64();
    let sfs = conn.server.subflows();
    FlowSummary {
        flow: k as u32,
        protocol: protocol_name(protocol),
        paths: conn
            .paths
            .iter()
            .map(|&p| cfg.paths[p].name.clone())
            .collect(),
        start_s: conn.syn_at.as_secs_f64(),
        size_bytes: conn.total.map(|b| b.0),
        completion_s: done.map(|t| (t - conn.syn_at).as_secs_f64()),
        bytes_delivered: conn.client.stats.delivered_bytes,
        goodput_mbps: if span > 0.0 {
            conn.client.stats.delivered_bytes as f64 * 8.0 / span / 1e6
        } else {
            0.0
        },
        packets_sent: sfs.iter().map(|s| s.stats.packets_sent).sum(),
        retransmits: sfs.iter().map(|s| s.stats.retransmits).sum(),
        rtos: sfs.iter().map(|s| s.stats.rtos).sum(),
        queue_drops: conn.drops.iter().map(|d| d.queue).sum(),
        random_drops: conn.drops.iter().map(|d| d.random).sum(),
    }
}

/// The summary of the main connection (`conns[0]`), which ended at `end`, and, with
/// competing flows, of every connection by the end of the run.
pub fn build(
    cfg: &Config,
    conns: &[Conn],
    app: Option<&App>,
    end: Time,
    run_end: Time,
    events: u64,
    wall_s: f64,
) -> Summary {
    let Conn {
        server,
        client,
        drops,
        ..
    } = &conns[0];
    let duration_s = end.as_secs_f64();
    let mbps = |bytes: u64| bytes as f64 * 8.0 / duration_s / 1e6;
    let ooo = &client.stats.ooo_delay_ns;
    let steps = &server.stats.data_ack_steps;
    let subflows: Vec<SubflowSummary> = server
        .subflows()
        .iter()
        .enumerate()
        .map(|(i, sf)| {
            let d = drops[i];
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
                queue_drops: d.queue,
                random_drops: d.random,
                ack_queue_drops: d.ack_queue,
                ack_random_drops: d.ack_random,
                loss_rate: if sf.stats.packets_sent == 0 {
                    0.0
                } else {
                    (d.queue + d.random) as f64 / sf.stats.packets_sent as f64
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
    // Every connection, the main one first; listed in the summary only with competing flows.
    let all: Vec<FlowSummary> = conns
        .iter()
        .enumerate()
        .map(|(k, c)| flow_summary(cfg, k, c, run_end))
        .collect();
    let done: Vec<f64> = all.iter().filter_map(|f| f.completion_s).collect();
    let files = all.iter().filter(|f| f.size_bytes.is_some()).count();
    let mean_flow_completion_s =
        (!done.is_empty()).then(|| done.iter().sum::<f64>() / done.len() as f64);
    let mean_flow_goodput_mbps =
        Some(all.iter().map(|f| f.goodput_mbps).sum::<f64>() / all.len() as f64);
    let unfinished_flows = Some((files - done.len()) as u64);
    let flows = if cfg.flows.is_empty() {
        Vec::new()
    } else {
        all
    };
    Summary {
        protocol: protocol_name(cfg.protocol),
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
            Workload::Bulk | Workload::Rate { .. } => None,
            Workload::File { .. } => client.complete_at().map(|t| t.as_secs_f64()),
        },
        ooo_delay_ms: quantiles_ms(ooo),
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
        flows,
        mean_flow_completion_s,
        mean_flow_goodput_mbps,
        unfinished_flows,
        block_delay_ms: app.map(|a| quantiles_ms(&a.delays)),
        block_delay_increase: app.and_then(|a| {
            let ideal = a.ideal.as_nanos() as f64;
            (a.delays.count() > 0 && ideal > 0.0).then(|| a.delays.max() as f64 / ideal - 1.0)
        }),
        blocks_delivered: app.map(|a| a.delays.count()),
        block_worst_at_s: app.and_then(|a| a.worst).map(|(_, t)| t.as_secs_f64()),
    }
}
