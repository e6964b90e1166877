//! Traces leave the simulator in chunks of columns, so that a run's memory does not grow
//! with its length: every `chunk_rows` rows a table is handed to a sink (which, from Python,
//! appends a row group to a Parquet file).
//!
//! What each table and column holds is declared once, in `trace_schema`.

use mpsched_core::conn::{Receiver, Sender};
use mpsched_core::link::{HasWireLen, Link};
use mpsched_core::sched::SchedSample;
use mpsched_core::trace::{AckTrace, BurstTrace, DeliveryTrace, SentTrace};
use mpsched_core::Time;

use crate::schema::Table;
use crate::trace_schema;

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

    /// The type name the native module sends with the column.
    pub fn dtype(&self) -> &'static str {
        match self {
            Column::U64(_) => "u64",
            Column::U32(_) => "u32",
            Column::U16(_) => "u16",
            Column::U8(_) => "u8",
            Column::F64(_) => "f64",
            Column::Str(_) => "str",
        }
    }
}

pub struct Chunk {
    pub table: &'static str,
    pub columns: Vec<(&'static str, Column)>,
}

impl Chunk {
    /// A chunk of `table` whose columns come in the schema's order.
    pub fn new(table: &'static Table, columns: Vec<Column>) -> Chunk {
        debug_assert_eq!(table.columns.len(), columns.len(), "{}", table.name);
        let columns: Vec<(&'static str, Column)> = table
            .columns
            .iter()
            .zip(columns)
            .map(|(f, c)| {
                debug_assert_eq!(f.kind, c.dtype(), "{}.{}", table.name, f.name);
                (f.name, c)
            })
            .collect();
        Chunk {
            table: table.name,
            columns,
        }
    }

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
    queue_drops: Vec<u64>,
    aqm_drops: Vec<u64>,
    rcvbuf_bytes: Vec<u64>,
    rcv_rtt_ns: Vec<u64>,
    notsent_segments: Vec<u32>,
    sndbuf_bytes: Vec<u64>,
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
            let link = &links[2 * i];
            s.queue_bytes.push(link.backlog_bytes());
            let stats = link.stats();
            s.queue_drops.push(stats.queue_drops + stats.aqm_drops);
            s.aqm_drops.push(stats.aqm_drops);
            s.rcvbuf_bytes.push(client.subflow_rcvbuf(i));
            s.rcv_rtt_ns.push(client.rcv_rtt(i).as_nanos());
            s.notsent_segments.push(server.queued_segments(i));
            s.sndbuf_bytes.push(sf.sndbuf());
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
            sink(Chunk::new(
                &trace_schema::SUBFLOWS,
                vec![
                    Column::U64(s.t_ns),
                    Column::U8(s.subflow),
                    Column::U32(s.cwnd_segments),
                    Column::U32(s.ssthresh_segments),
                    Column::U64(s.srtt_ns),
                    Column::U32(s.in_flight_segments),
                    Column::U64(s.bytes_sent),
                    Column::U64(s.bytes_delivered),
                    Column::U64(s.queue_bytes),
                    Column::U64(s.queue_drops),
                    Column::U64(s.aqm_drops),
                    Column::U64(s.rcvbuf_bytes),
                    Column::U64(s.rcv_rtt_ns),
                    Column::U32(s.notsent_segments),
                    Column::U64(s.sndbuf_bytes),
                ],
            ));
        }
        if full(self.conn.t_ns.len()) && !self.conn.t_ns.is_empty() {
            let c = std::mem::take(&mut self.conn);
            sink(Chunk::new(
                &trace_schema::CONNECTION,
                vec![
                    Column::U64(c.t_ns),
                    Column::U64(c.reorder_bytes),
                    Column::U64(c.rcvbuf_used_bytes),
                    Column::U64(c.rcvbuf_bytes),
                    Column::U64(c.rwnd_bytes),
                    Column::U64(c.sndbuf_used_bytes),
                    Column::U64(c.sndbuf_bytes),
                    Column::U64(c.data_ack_bytes),
                    Column::U64(c.bytes_delivered),
                ],
            ));
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
        Chunk::new(
            &trace_schema::SEGMENTS,
            vec![
                Column::U64(dseq),
                Column::U32(d.len_bytes.drain(..n).collect()),
                Column::U8(d.subflow.drain(..n).collect()),
                Column::U16(s.transmissions.drain(..n).collect()),
                Column::U16(s.retransmissions.drain(..n).collect()),
                Column::U64(first_sent),
                Column::U64(first_rcv),
                Column::U64(delivered),
                Column::U64(ooo),
                Column::U64(e2e),
            ],
        )
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
    Chunk::new(
        &trace_schema::ACKS,
        vec![
            Column::U64(a.t_ns),
            Column::U8(a.subflow),
            Column::U64(a.data_ack_bytes),
            Column::U64(a.data_ack_step_bytes),
            Column::U64(a.right_edge_bytes),
            Column::U32(a.cwnd_segments),
            Column::U32(a.ssthresh_segments),
            Column::U32(a.in_flight_segments),
            Column::U32(a.free_cwnd_segments),
            Column::U64(a.srtt_ns),
        ],
    )
}

fn bursts_chunk(b: BurstTrace) -> Chunk {
    Chunk::new(
        &trace_schema::BURSTS,
        vec![
            Column::U64(b.t_ns),
            Column::U8(b.subflow),
            Column::U32(b.packets),
        ],
    )
}

fn sched_chunk(v: Vec<SchedSample>) -> Chunk {
    Chunk::new(
        &trace_schema::SCHEDULER,
        vec![
            Column::U64(v.iter().map(|s| s.t.as_nanos()).collect()),
            Column::Str(v.iter().map(|s| s.key).collect()),
            Column::F64(v.iter().map(|s| s.value).collect()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use crate::build::{stms_lab, MS, S};
    use crate::Simulation;
    use std::collections::BTreeMap;

    /// Every table the schema declares comes out of a run, with exactly the declared columns
    /// and types, and the columns of a chunk are equally long.
    #[test]
    fn a_run_emits_every_declared_table_as_declared() {
        let mut cfg = stms_lab(100 * MS, 2 * S);
        cfg.scheduler = "stms-a".into();
        let sim = Simulation::new(cfg, true).unwrap();
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        sim.run_streaming(mpsched_core::Dur(10 * MS), 1000, &mut |c| {
            let table = super::trace_schema::TABLES
                .iter()
                .find(|t| t.name == c.table)
                .unwrap_or_else(|| panic!("undeclared table {}", c.table));
            let got: Vec<(&str, &str)> =
                c.columns.iter().map(|(n, col)| (*n, col.dtype())).collect();
            let want: Vec<(&str, &str)> = table.columns.iter().map(|f| (f.name, f.kind)).collect();
            assert_eq!(got, want, "{}", c.table);
            assert!(c.columns.iter().all(|(_, col)| col.len() == c.rows()));
            *seen.entry(c.table).or_default() += c.rows();
        });
        for t in super::trace_schema::TABLES {
            assert!(
                seen.get(t.name).copied().unwrap_or(0) > 0,
                "no rows in {}",
                t.name
            );
        }
    }
}
