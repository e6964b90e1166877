//! Traces leave the simulator in chunks of columns, so that a run's memory does not grow
//! with its length: every `chunk_rows` rows a table is handed to a sink (which, from Python,
//! appends a row group to a Parquet file).
//!
//! Tables (units in the column names):
//! - `acks`: one row per ACK the server processes.
//! - `segments`: one row per data segment, in data order (sent, first received, delivered).
//! - `bursts`: packets each subflow sent back to back in one round.
//! - `subflows`: every subflow's state, sampled every `sample_interval`.
//! - `connection`: the connection's buffers, sampled every `sample_interval`.
//! - `scheduler`: values a scheduler records (e.g. the STMS gap).

use mpsched_core::conn::{Receiver, Sender};
use mpsched_core::link::{HasWireLen, Link};
use mpsched_core::sched::SchedSample;
use mpsched_core::trace::{AckTrace, BurstTrace, DeliveryTrace, SentTrace};
use mpsched_core::Time;

pub enum Column {
    U64(Vec<u64>),
    U32(Vec<u32>),
    U16(Vec<u16>),
    U8(Vec<u8>),
    F64(Vec<f64>),
    Str(Vec<&'static str>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::U64(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::U16(v) => v.len(),
            Column::U8(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

pub struct Chunk {
    pub table: &'static str,
    pub columns: Vec<(&'static str, Column)>,
}

impl Chunk {
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }
}

/// Receives the chunks of a run.
pub type Sink<'a> = dyn FnMut(Chunk) + 'a;

#[derive(Default)]
struct SubflowSamples {
    t_ns: Vec<u64>,
    subflow: Vec<u8>,
    cwnd_segments: Vec<u32>,
    ssthresh_segments: Vec<u32>,
    srtt_ns: Vec<u64>,
    in_flight_segments: Vec<u32>,
    bytes_sent: Vec<u64>,
    bytes_delivered: Vec<u64>,
    queue_bytes: Vec<u64>,
}

#[derive(Default)]
struct ConnSamples {
    t_ns: Vec<u64>,
    reorder_bytes: Vec<u64>,
    rcvbuf_used_bytes: Vec<u64>,
    rcvbuf_bytes: Vec<u64>,
    rwnd_bytes: Vec<u64>,
    sndbuf_used_bytes: Vec<u64>,
    sndbuf_bytes: Vec<u64>,
    data_ack_bytes: Vec<u64>,
    bytes_delivered: Vec<u64>,
}

/// Collects what the model records and what the sampler reads, and cuts it into chunks.
pub struct Tracer {
    chunk_rows: usize,
    sent: SentTrace,
    delivery: DeliveryTrace,
    /// Data segments already emitted in `segments`.
    segments_out: u64,
    subflows: SubflowSamples,
    conn: ConnSamples,
}

impl Tracer {
    pub fn new(chunk_rows: usize) -> Tracer {
        Tracer {
            chunk_rows: chunk_rows.max(1),
            sent: SentTrace::default(),
            delivery: DeliveryTrace::default(),
            segments_out: 0,
            subflows: SubflowSamples::default(),
            conn: ConnSamples::default(),
        }
    }

    /// Reads the state of every subflow and of the connection.
    pub fn sample<P: HasWireLen>(
        &mut self,
        now: Time,
        server: &Sender,
        client: &Receiver,
        links: &[Link<P>],
    ) {
        let s = &mut self.subflows;
        for (i, sf) in server.subflows().iter().enumerate() {
            s.t_ns.push(now.as_nanos());
            s.subflow.push(i as u8);
            s.cwnd_segments.push(sf.cwnd());
            s.ssthresh_segments.push(sf.cc.ssthresh);
            s.srtt_ns.push(sf.srtt().as_nanos());
            s.in_flight_segments.push(sf.in_flight());
            s.bytes_sent.push(sf.stats.bytes_sent);
            s.bytes_delivered.push(client.stats.delivered_by_subflow[i]);
            s.queue_bytes.push(links[2 * i].backlog_bytes());
        }
        let c = &mut self.conn;
        c.t_ns.push(now.as_nanos());
        c.reorder_bytes.push(client.reorder_bytes());
        c.rcvbuf_used_bytes.push(client.held_bytes());
        c.rcvbuf_bytes.push(client.rcvbuf());
        c.rwnd_bytes.push(client.rwnd());
        c.sndbuf_used_bytes.push(server.sndbuf_used_bytes());
        c.sndbuf_bytes.push(server.data().sndbuf_bytes());
        c.data_ack_bytes
            .push(server.data().offset(server.data().una()));
        c.bytes_delivered.push(client.stats.delivered_bytes);
    }

    /// Moves what the model recorded into chunks; with `all`, everything, else only tables
    /// that reached `chunk_rows`.
    pub fn flush(
        &mut self,
        server: &mut Sender,
        client: &mut Receiver,
        all: bool,
        sink: &mut Sink,
    ) {
        let rows = self.chunk_rows;
        let full = |n: usize| all || n >= rows;
        if let Some(t) = server.ack_trace.as_mut() {
            if full(t.t_ns.len()) && !t.t_ns.is_empty() {
                sink(acks_chunk(std::mem::take(t)));
            }
        }
        if let Some(t) = server.burst_trace.as_mut() {
            if full(t.t_ns.len()) && !t.t_ns.is_empty() {
                sink(bursts_chunk(std::mem::take(t)));
            }
        }
        if full(server.sched_trace_len()) && server.sched_trace_len() > 0 {
            sink(sched_chunk(server.take_sched_samples()));
        }
        // Both per-segment streams run in data order: join what both have.
        if let Some(t) = server.sent_trace.as_mut() {
            append_sent(&mut self.sent, t);
        }
        if let Some(t) = client.trace.as_mut() {
            append_delivery(&mut self.delivery, t);
        }
        let joinable = self
            .sent
            .first_sent_ns
            .len()
            .min(self.delivery.delivered_ns.len());
        if joinable > 0 && full(joinable) {
            sink(self.segments_chunk(joinable));
        }
        if full(self.subflows.t_ns.len()) && !self.subflows.t_ns.is_empty() {
            let s = std::mem::take(&mut self.subflows);
            sink(Chunk {
                table: "subflows",
                columns: vec![
                    ("t_ns", Column::U64(s.t_ns)),
                    ("subflow", Column::U8(s.subflow)),
                    ("cwnd_segments", Column::U32(s.cwnd_segments)),
                    ("ssthresh_segments", Column::U32(s.ssthresh_segments)),
                    ("srtt_ns", Column::U64(s.srtt_ns)),
                    ("in_flight_segments", Column::U32(s.in_flight_segments)),
                    ("bytes_sent", Column::U64(s.bytes_sent)),
                    ("bytes_delivered", Column::U64(s.bytes_delivered)),
                    ("queue_bytes", Column::U64(s.queue_bytes)),
                ],
            });
        }
        if full(self.conn.t_ns.len()) && !self.conn.t_ns.is_empty() {
            let c = std::mem::take(&mut self.conn);
            sink(Chunk {
                table: "connection",
                columns: vec![
                    ("t_ns", Column::U64(c.t_ns)),
                    ("reorder_bytes", Column::U64(c.reorder_bytes)),
                    ("rcvbuf_used_bytes", Column::U64(c.rcvbuf_used_bytes)),
                    ("rcvbuf_bytes", Column::U64(c.rcvbuf_bytes)),
                    ("rwnd_bytes", Column::U64(c.rwnd_bytes)),
                    ("sndbuf_used_bytes", Column::U64(c.sndbuf_used_bytes)),
                    ("sndbuf_bytes", Column::U64(c.sndbuf_bytes)),
                    ("data_ack_bytes", Column::U64(c.data_ack_bytes)),
                    ("bytes_delivered", Column::U64(c.bytes_delivered)),
                ],
            });
        }
    }

    fn segments_chunk(&mut self, n: usize) -> Chunk {
        let dseq: Vec<u64> = (self.segments_out..self.segments_out + n as u64).collect();
        self.segments_out += n as u64;
        let s = &mut self.sent;
        let d = &mut self.delivery;
        let first_sent: Vec<u64> = s.first_sent_ns.drain(..n).collect();
        let first_rcv: Vec<u64> = d.first_received_ns.drain(..n).collect();
        let delivered: Vec<u64> = d.delivered_ns.drain(..n).collect();
        let ooo: Vec<u64> = delivered
            .iter()
            .zip(&first_rcv)
            .map(|(a, b)| a - b)
            .collect();
        let e2e: Vec<u64> = delivered
            .iter()
            .zip(&first_sent)
            .map(|(a, b)| a.saturating_sub(*b))
            .collect();
        Chunk {
            table: "segments",
            columns: vec![
                ("dseq", Column::U64(dseq)),
                ("len_bytes", Column::U32(d.len_bytes.drain(..n).collect())),
                ("subflow", Column::U8(d.subflow.drain(..n).collect())),
                (
                    "transmissions",
                    Column::U16(s.transmissions.drain(..n).collect()),
                ),
                (
                    "retransmissions",
                    Column::U16(s.retransmissions.drain(..n).collect()),
                ),
                ("t_first_sent_ns", Column::U64(first_sent)),
                ("t_first_received_ns", Column::U64(first_rcv)),
                ("t_delivered_ns", Column::U64(delivered)),
                ("ooo_delay_ns", Column::U64(ooo)),
                ("e2e_delay_ns", Column::U64(e2e)),
            ],
        }
    }
}

fn append_sent(into: &mut SentTrace, from: &mut SentTrace) {
    into.first_sent_ns.append(&mut from.first_sent_ns);
    into.transmissions.append(&mut from.transmissions);
    into.retransmissions.append(&mut from.retransmissions);
}

fn append_delivery(into: &mut DeliveryTrace, from: &mut DeliveryTrace) {
    into.subflow.append(&mut from.subflow);
    into.len_bytes.append(&mut from.len_bytes);
    into.first_received_ns.append(&mut from.first_received_ns);
    into.delivered_ns.append(&mut from.delivered_ns);
}

fn acks_chunk(a: AckTrace) -> Chunk {
    Chunk {
        table: "acks",
        columns: vec![
            ("t_ns", Column::U64(a.t_ns)),
            ("subflow", Column::U8(a.subflow)),
            ("data_ack_bytes", Column::U64(a.data_ack_bytes)),
            ("data_ack_step_bytes", Column::U64(a.data_ack_step_bytes)),
            ("cwnd_segments", Column::U32(a.cwnd_segments)),
            ("ssthresh_segments", Column::U32(a.ssthresh_segments)),
            ("in_flight_segments", Column::U32(a.in_flight_segments)),
            ("free_cwnd_segments", Column::U32(a.free_cwnd_segments)),
            ("srtt_ns", Column::U64(a.srtt_ns)),
        ],
    }
}

fn bursts_chunk(b: BurstTrace) -> Chunk {
    Chunk {
        table: "bursts",
        columns: vec![
            ("t_ns", Column::U64(b.t_ns)),
            ("subflow", Column::U8(b.subflow)),
            ("packets", Column::U32(b.packets)),
        ],
    }
}

fn sched_chunk(v: Vec<SchedSample>) -> Chunk {
    Chunk {
        table: "scheduler",
        columns: vec![
            (
                "t_ns",
                Column::U64(v.iter().map(|s| s.t.as_nanos()).collect()),
            ),
            ("key", Column::Str(v.iter().map(|s| s.key).collect())),
            ("value", Column::F64(v.iter().map(|s| s.value).collect())),
        ],
    }
}
