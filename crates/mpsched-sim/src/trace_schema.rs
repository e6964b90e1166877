//! The trace tables' schema: every table and column, its type as the native module sends it,
//! its unit and meaning. The tracer builds its chunks from these (`Chunk::new`), the Python
//! layer's Parquet schema and `docs/traces.md` are derived from them.

use crate::schema::{col, Table};

pub const SEGMENTS: Table = Table {
    name: "segments",
    meaning: "One row per data segment that reached the application, in data order.",
    columns: &[
        col("dseq", "u64", "segment", "data sequence number, counted in segments from 0"),
        col("len_bytes", "u32", "byte", "payload length"),
        col("subflow", "u8", "index", "subflow whose copy was delivered"),
        col("transmissions", "u16", "count", "times the scheduler sent this segment: 1 + reinjections, opportunistic retransmissions and redundant copies (a subflow's own TCP retransmissions are counted in retransmissions)"),
        col("retransmissions", "u16", "count", "subflow-level TCP retransmissions of this segment (fast recovery, RTO, TLP) until its Data ACK (a subflow may still retransmit it later for its own sequence space)"),
        col("t_first_sent_ns", "u64", "ns", "first transmission by the server"),
        col("t_first_received_ns", "u64", "ns", "the delivered copy reaches the client (before any reordering wait)"),
        col("t_delivered_ns", "u64", "ns", "delivered in order to the application"),
        col("ooo_delay_ns", "u64", "ns", "out-of-order delay: t_delivered_ns - t_first_received_ns"),
        col("e2e_delay_ns", "u64", "ns", "end-to-end delay: t_delivered_ns - t_first_sent_ns"),
    ],
};

pub const ACKS: Table = Table {
    name: "acks",
    meaning: "One row per ACK the server processes (on any subflow).",
    columns: &[
        col("t_ns", "u64", "ns", "time the server processes the ACK"),
        col("subflow", "u8", "index", "subflow the ACK arrived on"),
        col("data_ack_bytes", "u64", "byte", "Data ACK this ACK carries (ACKs of a slower subflow may carry an older one; the server's cumulative Data ACK is the running maximum)"),
        col("data_ack_step_bytes", "u64", "byte", "how far this ACK moved the server's cumulative Data ACK (0: not at all)"),
        col("right_edge_bytes", "u64", "byte", "right edge of the window this ACK advertises: its Data ACK plus its window (the server's is the running maximum)"),
        col("cwnd_segments", "u32", "segment", "congestion window after the ACK"),
        col("ssthresh_segments", "u32", "segment", "slow-start threshold after the ACK (2147483647: infinite)"),
        col("in_flight_segments", "u32", "segment", "segments in flight after the ACK"),
        col("free_cwnd_segments", "u32", "segment", "free window at the ACK: max(cwnd - in flight, 0) (STMS Fig. 6)"),
        col("srtt_ns", "u64", "ns", "smoothed RTT after the ACK"),
    ],
};

pub const BURSTS: Table = Table {
    name: "bursts",
    meaning: "One row per burst: the data packets a subflow sent in one round of sending (in response to one ACK or timer), which leave back to back.",
    columns: &[
        col("t_ns", "u64", "ns", "time of the round"),
        col("subflow", "u8", "index", "subflow that sent it"),
        col("packets", "u32", "packet", "data packets in the burst"),
    ],
};

pub const SUBFLOWS: Table = Table {
    name: "subflows",
    meaning: "Every subflow's state, sampled every sample interval (one row per subflow per sample).",
    columns: &[
        col("t_ns", "u64", "ns", "sample time (a multiple of the sample interval)"),
        col("subflow", "u8", "index", "subflow"),
        col("cwnd_segments", "u32", "segment", "congestion window"),
        col("ssthresh_segments", "u32", "segment", "slow-start threshold (2147483647: infinite)"),
        col("srtt_ns", "u64", "ns", "smoothed RTT (0 before the first RTT sample)"),
        col("in_flight_segments", "u32", "segment", "segments in flight"),
        col("bytes_sent", "u64", "byte", "cumulative payload sent, retransmissions included"),
        col("bytes_delivered", "u64", "byte", "cumulative application bytes whose delivered copy came on this subflow"),
        col("queue_bytes", "u64", "byte", "backlog of the path's data-direction bottleneck queue (packet in service included, wire bytes)"),
        col("queue_drops", "u64", "packet", "packets that queue has dropped so far, every flow's: at its tail (full) or by its AQM"),
        col("aqm_drops", "u64", "packet", "of those, the AQM's (CoDel, FQ-CoDel: dropped at the head after waiting too long)"),
        col("rcvbuf_bytes", "u64", "byte", "the client's receive buffer this subflow's window is capped by: upstream MPTCP, the subflow socket's own (ssk->sk_rcvbuf); otherwise the connection's"),
        col("rcv_rtt_ns", "u64", "ns", "the client's receiver RTT estimate on this subflow (Linux rcv_rtt_est, ss's rcv_rtt), which paces the receive buffer's growth; 0 before its first sample"),
        col("notsent_segments", "u32", "segment", "segments the scheduler has placed on this subflow and it has not sent yet (Linux tcpi_notsent_bytes / MSS)"),
        col("sndbuf_bytes", "u64", "byte", "the server's send buffer of this subflow (sk_sndbuf, bytes of memory: twice its largest window, tcp_sndbuf_expand)"),
    ],
};

pub const CONNECTION: Table = Table {
    name: "connection",
    meaning: "The connection's buffers, sampled every sample interval.",
    columns: &[
        col("t_ns", "u64", "ns", "sample time"),
        col(
            "reorder_bytes",
            "u64",
            "byte",
            "connection-level out-of-order queue at the client (OTIAS Fig. 5)",
        ),
        col(
            "rcvbuf_used_bytes",
            "u64",
            "byte",
            "receive buffer in use: received, not yet delivered (STMS sec. 3.2)",
        ),
        col(
            "rcvbuf_bytes",
            "u64",
            "byte",
            "receive buffer size (memory; Linux autotuning grows it up to rcvbuf)",
        ),
        col(
            "rwnd_bytes",
            "u64",
            "byte",
            "receive window the client advertises",
        ),
        col(
            "sndbuf_used_bytes",
            "u64",
            "byte",
            "send buffer in use: written, not yet Data-ACKed",
        ),
        col(
            "sndbuf_bytes",
            "u64",
            "byte",
            "send buffer size (Linux autotuning: twice each subflow's window)",
        ),
        col(
            "data_ack_bytes",
            "u64",
            "byte",
            "cumulative Data ACK at the server",
        ),
        col(
            "bytes_delivered",
            "u64",
            "byte",
            "cumulative bytes delivered to the app",
        ),
    ],
};

pub const SCHEDULER: Table = Table {
    name: "scheduler",
    meaning: "Values a scheduler records over time (e.g. the STMS gap); empty for most schedulers.",
    columns: &[
        col("t_ns", "u64", "ns", "time of the record"),
        col(
            "key",
            "str",
            "-",
            "name of the value (scheduler-specific, e.g. gap)",
        ),
        col("value", "f64", "key-specific", "the value"),
    ],
};

/// Every trace table, in the order the docs list them.
pub const TABLES: &[Table] = &[SEGMENTS, ACKS, BURSTS, SUBFLOWS, CONNECTION, SCHEDULER];
