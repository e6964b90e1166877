//! The summary of a run, the JSON object `mpsched run --json` prints.

use crate::app::App;
use crate::config::{Config, Protocol, Workload};
use crate::conn::Conn;
use crate::schema::{described_struct, Kind};
use mpsched_core::conn::stats::Histogram;
use mpsched_core::Time;
use serde::Serialize;

described_struct! {
    /// A distribution's summary, in the unit of the field that holds it.
    #[derive(Clone, Debug, Serialize)]
    pub struct Quantiles {
        mean: f64 = ["", "mean"],
        p50: f64 = ["", "median"],
        p99: f64 = ["", "99th percentile"],
        max: f64 = ["", "largest value"],
    }
}

described_struct! {
    /// One subflow of the main connection.
    #[derive(Clone, Debug, Serialize)]
    pub struct SubflowSummary {
        name: String = ["", "the path the subflow runs on"],
        bytes_sent: u64 = ["byte", "payload sent, retransmissions included"],
        packets_sent: u64 = ["packet", "data packets sent, retransmissions included"],
        goodput_mbps: f64 = ["Mbit/s",
            "application bytes whose delivered copy came on this subflow, per second of the run"],
        bytes_delivered: u64 = ["byte",
            "application bytes whose delivered copy came on this subflow"],
        share: f64 = ["fraction", "of the application's bytes, delivered by this subflow"],
        retransmits: u64 = ["", "subflow-level TCP retransmissions (fast recovery, RTO, TLP)"],
        reinjections: u64 = ["",
            "data segments sent here again after another subflow timed out"],
        opportunistic_retransmits: u64 = ["",
            "data segments sent here again because they blocked the window"],
        rtos: u64 = ["", "retransmission timeouts"],
        fast_recoveries: u64 = ["", "entries into fast recovery"],
        tlp_probes: u64 = ["", "tail loss probes sent"],
        penalizations: u64 = ["", "times the subflow's window was halved for blocking it"],
        queue_drops: u64 = ["packet", "data packets dropped at the data-direction queue"],
        random_drops: u64 = ["packet", "data packets dropped by random loss"],
        ack_queue_drops: u64 = ["packet", "ACKs dropped at the ACK-direction queue"],
        ack_random_drops: u64 = ["packet", "ACKs dropped by random loss"],
        outage_drops: u64 = ["packet",
            "data packets lost to a path outage (`state = \"down\"`: in the link or offered)"],
        ack_outage_drops: u64 = ["packet", "ACKs lost to a path outage"],
        handshake_drops: u64 = ["packet",
            "handshake packets (SYN, SYN-ACK, ACK) of this subflow lost, either way, sent again \
             at Linux's SYN timeouts"],
        loss_rate: f64 = ["fraction", "data packets dropped over data packets sent"],
        srtt_ms: f64 = ["ms", "smoothed RTT at the end of the run"],
        min_rtt_ms: f64 = ["ms", "smallest RTT sample (0: none)"],
        cwnd_segments: u32 = ["segment", "congestion window at the end of the run"],
        mean_free_cwnd_at_ack: f64 = ["segment",
            "mean free window (cwnd - in flight) when an ACK arrives (STMS Fig. 6)"],
        p99_free_cwnd_at_ack: u64 = ["segment", "99th percentile of the free window at an ACK"],
        peak_free_cwnd_at_ack: u64 = ["segment", "largest free window at an ACK"],
        /// Packets sent back to back in one round of sending.
        mean_burst_packets: f64 = ["packet",
            "mean data packets sent back to back in one round of sending"],
        p99_burst_packets: u64 = ["packet", "99th percentile of a burst"],
        max_burst_packets: u64 = ["packet", "largest burst"],
        held_acks: u64 = ["",
            "ACKs the receiver held back because its window would have shrunk (out-of-tree \
             stack only)"],
    }
}

described_struct! {
    /// The summary of a run: the main connection, and with competing flows every connection.
    #[derive(Clone, Debug, Serialize)]
    pub struct Summary {
        protocol: &'static str = ["", "\"mptcp\" or \"tcp\""],
        scheduler: String = ["", "the packet scheduler (\"none\" for TCP)"],
        congestion: String = ["", "the congestion control"],
        seed: u64 = ["", "the random seed"],
        goodput_mbps: f64 = ["Mbit/s",
            "application bytes delivered in order, per second of duration_s"],
        bytes_delivered: u64 = ["byte", "application bytes delivered in order"],
        duration_s: f64 = ["s",
            "the main connection's time: to its file's last byte, or the whole run; its \
             goodput is over this"],
        simulated_s: f64 = ["s",
            "the whole run's simulated time: to the last file's last byte of every connection, \
             or the scenario's duration"],
        completion_s: Option<f64> = ["s",
            "when the file's last byte was delivered (null: bulk, rate-limited or unfinished)"],
        ooo_delay_ms: Quantiles = ["ms",
            "out-of-order delay of the delivered segments: delivery - arrival"],
        data_ack_step_segments: Quantiles = ["segment",
            "how far each advancing Data ACK moved (STMS Fig. 5)"],
        opportunistic_retransmits: u64 = ["", "opportunistic retransmissions, all subflows"],
        reinjections: u64 = ["", "reinjections after a subflow's timeout, all subflows"],
        penalizations: u64 = ["", "penalizations, all subflows"],
        window_probes: u64 = ["", "zero-window probes sent"],
        longest_stall_ms: f64 = ["ms",
            "longest time the application received nothing in order, between its first byte \
             and its last (or the run's end while still transferring): a handover's or an \
             outage's stall (a rate-limited application's own pauses count too)"],
        longest_stall_at_s: f64 = ["s", "when the longest stall began"],
        peak_reorder_bytes: u64 = ["byte",
            "largest connection-level out-of-order queue at the client"],
        /// Time-weighted mean of the connection-level reorder queue (OTIAS Fig. 5).
        mean_reorder_bytes: f64 = ["byte",
            "time-weighted mean of the connection-level out-of-order queue (OTIAS Fig. 5)"],
        data_packets: u64 = ["packet", "data packets sent, all subflows"],
        acks_sent: u64 = ["packet", "ACKs the client sent"],
        events: u64 = ["", "events the simulator processed"],
        wall_s: f64 = ["s", "wall time of the run, validation included"],
        subflows: Vec<SubflowSummary> = ["", "one record per subflow of the main connection"],
        /// With competing flows: every connection, the main one first.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        flows: Vec<FlowSummary> = ["",
            "with competing flows: one record per connection, the main one first"],
        /// The mean completion time (from SYN to last byte) of the connections (the main one
        /// and any competing flows) that transfer a file and finished it (paper 004's "AFT").
        mean_flow_completion_s: Option<f64> = ["s",
            "mean SYN-to-last-byte time of the connections that finished a file (paper 004's \
             AFT; null: none)"],
        /// The mean of the connections' goodputs (each over its SYN to its completion or the end).
        mean_flow_goodput_mbps: Option<f64> = ["Mbit/s",
            "mean of the connections' goodputs, each over its SYN to its completion or the end"],
        /// Connections with a file that did not finish within the run.
        unfinished_flows: Option<u64> = ["", "connections whose file did not finish"],
        /// A rate-limited application (`Workload::Rate`): from each block's write to its last
        /// byte delivered in order.
        #[serde(skip_serializing_if = "Option::is_none")]
        block_delay_ms: Option<Quantiles> = ["ms",
            "rate-limited application: each block's write to its last byte delivered in order"],
        /// Its worst block against the least a block can take (the best path's propagation
        /// delay plus the block's serialization): max / ideal - 1, paper 001's "relative delay
        /// increase" of the worst block.
        #[serde(skip_serializing_if = "Option::is_none")]
        block_delay_increase: Option<f64> = ["fraction",
            "the worst block's delay over the least a block can take, minus 1 (paper 001)"],
        #[serde(skip_serializing_if = "Option::is_none")]
        blocks_delivered: Option<u64> = ["", "blocks delivered after the warm-up"],
        /// When the worst block was written.
        #[serde(skip_serializing_if = "Option::is_none")]
        block_worst_at_s: Option<f64> = ["s", "when the worst block was written"],
        #[serde(skip_serializing_if = "Option::is_none")]
        interrupted_at_s: Option<f64> = ["s",
            "the run was stopped (Ctrl-C, a limit) at this simulated time: every figure is of \
             the run so far (absent: it ran to its end)"],
    }
}

described_struct! {
    /// One connection of a run with competing flows.
    #[derive(Clone, Debug, Serialize)]
    pub struct FlowSummary {
        flow: u32 = ["", "0 for the main connection, k for the k-th [[flow]]"],
        protocol: &'static str = ["", "\"mptcp\" or \"tcp\""],
        paths: Vec<String> = ["", "the paths of its subflows"],
        start_s: f64 = ["s", "when its SYN left"],
        size_bytes: Option<u64> = ["byte", "its file's size (null: bulk)"],
        completion_s: Option<f64> = ["s",
            "from its SYN to its last byte delivered (null: bulk or unfinished)"],
        bytes_delivered: u64 = ["byte", "application bytes delivered in order"],
        goodput_mbps: f64 = ["Mbit/s",
            "bytes delivered over the time from its SYN to its completion or the end"],
        packets_sent: u64 = ["packet", "data packets sent, retransmissions included"],
        retransmits: u64 = ["", "subflow-level TCP retransmissions"],
        rtos: u64 = ["", "retransmission timeouts"],
        queue_drops: u64 = ["packet", "its data packets dropped at a queue"],
        random_drops: u64 = ["packet", "its data packets dropped by random loss"],
    }
}

impl Kind for Quantiles {
    const KIND: &'static str = "quantiles";
}
impl Kind for Vec<SubflowSummary> {
    const KIND: &'static str = "list[subflow]";
}
impl Kind for Vec<FlowSummary> {
    const KIND: &'static str = "list[flow]";
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
/// When a run's figures end: the main connection's, the whole run's, and where it was
/// stopped if it was.
pub struct Ends {
    pub main: Time,
    pub run: Time,
    pub interrupted: Option<Time>,
}

pub fn build(
    cfg: &Config,
    conns: &[Conn],
    app: Option<&App>,
    ends: Ends,
    events: u64,
    wall_s: f64,
) -> Summary {
    let Ends {
        main: end,
        run: run_end,
        interrupted: interrupted_at,
    } = ends;
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
    let (stall, stall_from) = client
        .stats
        .longest_stall(end, client.complete_at().is_none());
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
                outage_drops: d.outage,
                ack_outage_drops: d.ack_outage,
                handshake_drops: d.handshake,
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
        simulated_s: run_end.as_secs_f64(),
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
        longest_stall_ms: stall.as_secs_f64() * 1e3,
        longest_stall_at_s: stall_from.as_secs_f64(),
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
        interrupted_at_s: interrupted_at.map(|t| t.as_secs_f64()),
    }
}
