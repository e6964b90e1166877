//! A packet capture of a run (`mpsched run --pcap`): every packet of every connection as
//! tcpdump would have seen it at one vantage point, written as pcapng with real IPv4, TCP and
//! MPTCP headers so that Wireshark's TCP and MPTCP analysis reads it.
//!
//! The model counts sequence space in segments; the capture turns it into bytes. Every
//! segment is full-sized except a file's last one, so a subflow's byte offset of segment `s`
//! is `s x MSS`, less the short segment's shortfall once `s` lies beyond it. Handshakes are
//! not packets in the model (their timing is computed when a connection opens); the capture
//! writes them at the times the model gives them: MP_CAPABLE on the first subflow, MP_JOIN on
//! the others (RFC 8684 3.1, 3.2). Addresses and ports are the testbed's, so a simulated and
//! an emulated capture of one scenario line up.

use crate::conn::Conn;
use crate::handshake::{HsPacket, Stage};
use mpsched_core::packet::{Packet, Payload};
use mpsched_core::Time;
use mpsched_pcap::mptcp::{self, Mapping, MptcpOption};
use mpsched_pcap::tcpip::{Segment, TcpOption, ACK, SYN};
use mpsched_pcap::{Writer, LINKTYPE_IPV4};
use std::fmt;
use std::io::{self, Write};
use std::net::Ipv4Addr;

/// Where the capture is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vantage {
    /// At the server: data as it leaves (dropped copies included), ACKs as they arrive.
    Sender,
    /// At the client: data as it arrives, ACKs as they leave.
    Receiver,
    /// At each link's output: one interface per link and direction.
    Links,
}

impl Vantage {
    pub fn parse(s: &str) -> Result<Vantage, VantageError> {
        match s {
            "sender" => Ok(Vantage::Sender),
            "receiver" => Ok(Vantage::Receiver),
            "links" => Ok(Vantage::Links),
            _ => Err(VantageError {
                given: s.to_owned(),
            }),
        }
    }
}

/// A capture point that is none of sender, receiver or links: what was given. Displayed as
/// the message always was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VantageError {
    pub given: String,
}

impl fmt::Display for VantageError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "capture point {:?}: expected sender, receiver or links",
            self.given
        )
    }
}

impl std::error::Error for VantageError {}

/// For the callers whose own errors are still messages (the Python binding's).
impl From<VantageError> for String {
    fn from(e: VantageError) -> String {
        e.to_string()
    }
}

/// The testbed's server address and port (`mpsched.testbed.netns`).
const SERVER: Ipv4Addr = Ipv4Addr::new(10, 20, 0, 1);
const SERVER_PORT: u16 = 5201;
/// Connection k's client port.
const CLIENT_PORT: u16 = 40_000;
/// The client's address on path p, as in the testbed.
fn client_addr(path: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 10, path as u8, 2)
}
/// Both sides scale their windows by 2^7 (Linux with buffers of megabytes).
const WSCALE: u8 = 7;
/// The server's own receive window (it receives nothing but ACKs): Linux's initial 64,240 B.
const SERVER_WINDOW: u16 = (64_240u32 >> WSCALE) as u16;
/// Captured bytes per packet: the largest IPv4 and TCP headers.
const SNAPLEN: u32 = 20 + 60;

/// Which host sent a packet.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Host {
    Server,
    Client,
}

/// One subflow's numbering on the wire (of its current incarnation: a subflow opened again
/// after its address came back is a new TCP connection, with its own port and numbers).
struct SubflowWire {
    path: usize,
    gen: u8,
    client_port: u16,
    client_isn: u32,
    server_isn: u32,
    client_nonce: u32,
    server_nonce: u32,
    /// The short last segment of a file, once sent on this subflow: (subflow seq, length).
    short: Option<(u64, u32)>,
    ip_id: [u16; 2],
}

/// One connection's numbering on the wire.
struct ConnWire {
    mptcp: bool,
    /// The connection's index, and the seed of its subflows' numbers.
    k: usize,
    seed: u64,
    client_key: u64,
    server_key: u64,
    /// The initial data sequence numbers of each side's data (RFC 8684 3.1).
    server_idsn: u64,
    client_idsn: u64,
    mss: u64,
    /// A file's size and last data segment.
    total: Option<(u64, u64)>,
    subflows: Vec<SubflowWire>,
}

impl SubflowWire {
    fn new(seed: u64, k: usize, sf: usize, gen: u8, path: usize) -> SubflowWire {
        let mut rng = seed
            ^ ((k as u64) << 20 | (sf as u64) << 8 | u64::from(gen))
                .wrapping_mul(0xD6E8_FEB8_6659_FD93);
        let mut next = || splitmix(&mut rng) as u32;
        SubflowWire {
            path,
            gen,
            client_port: client_port(k, gen),
            client_isn: next(),
            server_isn: next(),
            client_nonce: next(),
            server_nonce: next(),
            short: None,
            ip_id: [0, 0],
        }
    }
}

/// Connection `k`'s client port for incarnation `gen` of a subflow: 40000 + k at first, then
/// from 1024 up, distinct for every connection up to the third return of an address.
fn client_port(k: usize, gen: u8) -> u16 {
    if gen == 0 {
        CLIENT_PORT + k as u16
    } else {
        (1024 + (k + 10_001 * (usize::from(gen) - 1)) % 38_976) as u16
    }
}

impl ConnWire {
    /// Subflow `sf`'s numbers for incarnation `gen`: drawn afresh when it changes.
    fn incarnation(&mut self, sf: usize, gen: u8) {
        let s = &mut self.subflows[sf];
        if s.gen == gen {
            return;
        }
        *s = SubflowWire::new(self.seed, self.k, sf, gen, s.path);
    }

    /// Byte offset of subflow segment `seq` in the subflow's sequence space.
    fn subflow_offset(&self, sf: usize, seq: u64) -> u64 {
        let shortfall = match self.subflows[sf].short {
            Some((s, len)) if seq > s => self.mss - u64::from(len),
            _ => 0,
        };
        seq * self.mss - shortfall
    }

    /// Byte offset of data segment `dseq` (or of a Data ACK) in the stream.
    fn data_offset(&self, dseq: u64) -> u64 {
        let off = dseq * self.mss;
        self.total.map_or(off, |(bytes, _)| off.min(bytes))
    }
}

pub struct Capture {
    out: Writer<Box<dyn Write>>,
    vantage: Vantage,
    conns: Vec<Option<ConnWire>>,
    buf: Vec<u8>,
    seed: u64,
    failed: bool,
}

impl Capture {
    /// A capture of a run over paths named `paths`, written to `out`.
    pub fn new(
        out: Box<dyn Write>,
        vantage: Vantage,
        paths: &[String],
        seed: u64,
    ) -> io::Result<Capture> {
        let comment = match vantage {
            Vantage::Sender => "simulated packets at the server",
            Vantage::Receiver => "simulated packets at the client",
            Vantage::Links => "simulated packets at each link's output",
        };
        let mut out = Writer::new(out, "mpsched", comment)?;
        for name in paths {
            match vantage {
                Vantage::Sender => {
                    out.add_interface(&format!("server {name}"), LINKTYPE_IPV4, SNAPLEN)?
                }
                Vantage::Receiver => {
                    out.add_interface(&format!("client {name}"), LINKTYPE_IPV4, SNAPLEN)?
                }
                Vantage::Links => {
                    out.add_interface(&format!("{name} down"), LINKTYPE_IPV4, SNAPLEN)?;
                    out.add_interface(&format!("{name} up"), LINKTYPE_IPV4, SNAPLEN)?
                }
            };
        }
        Ok(Capture {
            out,
            vantage,
            conns: Vec::new(),
            buf: Vec::with_capacity(128),
            seed,
            failed: false,
        })
    }

    /// Whether writing failed (the disk, or a size limit the writer enforces): the run stops.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Connection `k` opens (its first SYN is about to leave).
    pub(crate) fn open(&mut self, k: usize, conn: &Conn) {
        let mut rng = self.seed ^ (k as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut next = || splitmix(&mut rng);
        let client_key = next();
        let server_key = next();
        let mss = u64::from(conn.server.data().mss());
        let wire = ConnWire {
            mptcp: conn.mptcp,
            k,
            seed: next(),
            client_key,
            server_key,
            server_idsn: mptcp::idsn(server_key),
            client_idsn: mptcp::idsn(client_key),
            mss,
            total: conn
                .total
                .map(|b| (b.0, b.0.div_ceil(mss).saturating_sub(1))),
            subflows: Vec::new(),
        };
        let mut wire = wire;
        wire.subflows = (conn.paths.iter().enumerate())
            .map(|(sf, &path)| SubflowWire::new(wire.seed, k, sf, 0, path))
            .collect();
        if self.conns.len() <= k {
            self.conns.resize_with(k + 1, || None);
        }
        self.conns[k] = Some(wire);
    }

    /// A handshake packet of connection `k` enters its path at `now`.
    pub(crate) fn hs_sent(&mut self, now: Time, k: usize, p: &HsPacket) {
        match (self.vantage, p.from_client()) {
            (Vantage::Sender, false) | (Vantage::Receiver, true) => self.write_hs(now, k, p),
            _ => {}
        }
    }

    /// A handshake packet of connection `k` leaves its path at `now`.
    pub(crate) fn hs_delivered(&mut self, now: Time, k: usize, p: &HsPacket) {
        match (self.vantage, p.from_client()) {
            (Vantage::Sender, true) | (Vantage::Receiver, false) | (Vantage::Links, _) => {
                self.write_hs(now, k, p)
            }
            _ => {}
        }
    }

    fn write_hs(&mut self, now: Time, k: usize, p: &HsPacket) {
        let Some(c) = self.conns.get_mut(k).and_then(Option::as_mut) else {
            return;
        };
        let sf = p.subflow as usize;
        c.incarnation(sf, p.gen);
        let seg = hs_segment(c, sf, p);
        let from = if p.from_client() {
            Host::Client
        } else {
            Host::Server
        };
        let interface = interface(self.vantage, c.subflows[sf].path, Some(from));
        self.buf.clear();
        let len = seg.encode(&mut self.buf);
        debug_assert_eq!(
            len, p.wire_len,
            "the model and the headers disagree on a handshake packet's length"
        );
        let buf = std::mem::take(&mut self.buf);
        self.emit(interface, now, len, &buf);
        self.buf = buf;
    }

    /// A packet of connection `k` enters a link at `now` (data from the server, ACKs from the
    /// client).
    pub(crate) fn sent(&mut self, now: Time, k: usize, pkt: &Packet) {
        if let (Some(c), Payload::Data(d)) =
            (self.conns.get_mut(k).and_then(Option::as_mut), &pkt.payload)
        {
            c.incarnation(pkt.subflow as usize, pkt.gen);
            if u64::from(d.len) < c.mss {
                c.subflows[pkt.subflow as usize].short = Some((d.seq, d.len));
            }
        }
        let data = matches!(pkt.payload, Payload::Data(_));
        match (self.vantage, data) {
            (Vantage::Sender, true) | (Vantage::Receiver, false) => self.write(now, k, pkt, None),
            _ => {}
        }
    }

    /// A packet of connection `k` leaves its link at `now`.
    pub(crate) fn delivered(&mut self, now: Time, k: usize, pkt: &Packet) {
        let data = matches!(pkt.payload, Payload::Data(_));
        match (self.vantage, data) {
            (Vantage::Sender, false) | (Vantage::Receiver, true) => self.write(now, k, pkt, None),
            (Vantage::Links, _) => self.write(now, k, pkt, Some(data)),
            _ => {}
        }
    }

    /// The run has ended: the file is flushed.
    pub fn finish(&mut self, _end: Time) {
        if let Err(_e) = self.out.flush() {
            self.failed = true;
        }
    }

    fn write(&mut self, now: Time, k: usize, pkt: &Packet, link_down: Option<bool>) {
        let Some(c) = self.conns.get_mut(k).and_then(Option::as_mut) else {
            return;
        };
        let sf = pkt.subflow as usize;
        c.incarnation(sf, pkt.gen);
        let seg = segment(c, sf, pkt);
        let path = c.subflows[sf].path;
        let interface = interface(
            self.vantage,
            path,
            link_down.map(|d| if d { Host::Server } else { Host::Client }),
        );
        self.buf.clear();
        let len = seg.encode(&mut self.buf);
        debug_assert_eq!(
            len, pkt.wire_len,
            "the model and the headers disagree on a length"
        );
        let buf = std::mem::take(&mut self.buf);
        self.emit(interface, now, len, &buf);
        self.buf = buf;
    }

    fn emit(&mut self, interface: u32, t: Time, len: u32, headers: &[u8]) {
        if self.failed {
            return;
        }
        if self
            .out
            .packet(interface, t.as_nanos(), len, headers)
            .is_err()
        {
            self.failed = true;
        }
    }
}

/// Handshake packet `p` of subflow `sf` as a TCP segment: SYN, SYN-ACK, third ACK (MP_CAPABLE
/// or MP_JOIN), and the server's ACK of an MP_JOIN's third ACK.
fn hs_segment(c: &ConnWire, sf: usize, p: &HsPacket) -> Segment {
    let s = &c.subflows[sf];
    let (path, cisn, sisn) = (s.path, s.client_isn, s.server_isn);
    let from = if p.from_client() {
        Host::Client
    } else {
        Host::Server
    };
    let (src, dst) = if from == Host::Server {
        (SERVER, client_addr(path))
    } else {
        (client_addr(path), SERVER)
    };
    let (src_port, dst_port) = if from == Host::Server {
        (SERVER_PORT, s.client_port)
    } else {
        (s.client_port, SERVER_PORT)
    };
    let (seq, ack, flags) = match p.stage {
        Stage::Syn => (cisn, 0, SYN),
        Stage::SynAck => (sisn, cisn.wrapping_add(1), SYN | ACK),
        Stage::Ack => (cisn.wrapping_add(1), sisn.wrapping_add(1), ACK),
        Stage::JoinAck => (sisn.wrapping_add(1), cisn.wrapping_add(1), ACK),
    };
    let timestamps = TcpOption::Timestamps(ms(p.ts_val), ms(p.ts_ecr));
    let mut seg = Segment {
        src,
        dst,
        ip_id: 0,
        src_port,
        dst_port,
        seq,
        ack,
        flags,
        window: 64_240,
        options: match p.stage {
            Stage::Syn | Stage::SynAck => vec![
                TcpOption::Mss(1460),
                TcpOption::SackPermitted,
                timestamps,
                TcpOption::WindowScale(WSCALE),
            ],
            Stage::Ack | Stage::JoinAck => vec![timestamps],
        },
        payload_len: 0,
    };
    match p.stage {
        Stage::Ack => seg.window = (64_240u32 >> WSCALE) as u16,
        Stage::JoinAck => seg.window = SERVER_WINDOW,
        _ => {}
    }
    if !c.mptcp {
        return seg;
    }
    let (ck, sk) = (c.client_key, c.server_key);
    let (cn, sn) = (s.client_nonce, s.server_nonce);
    let option = match (p.stage, sf == 0) {
        (Stage::Syn, true) => Some(MptcpOption::CapableSyn),
        (Stage::SynAck, true) => Some(MptcpOption::CapableSynAck { key: sk }),
        (Stage::Ack, true) => Some(MptcpOption::CapableAck {
            sender_key: ck,
            receiver_key: sk,
        }),
        (Stage::Syn, false) => Some(MptcpOption::JoinSyn {
            addr_id: sf as u8,
            token: mptcp::token(sk),
            nonce: cn,
            backup: false,
        }),
        (Stage::SynAck, false) => {
            let mac = mptcp::join_hmac(sk, ck, sn, cn);
            Some(MptcpOption::JoinSynAck {
                addr_id: 0,
                truncated_hmac: u64::from_be_bytes(mac[..8].try_into().expect("8 bytes")),
                nonce: sn,
                backup: false,
            })
        }
        (Stage::Ack, false) => {
            let mac = mptcp::join_hmac(ck, sk, cn, sn);
            Some(MptcpOption::JoinAck {
                hmac: mac[..20].try_into().expect("20 bytes"),
            })
        }
        (Stage::JoinAck, _) => None,
    };
    seg.options.extend(option.map(TcpOption::Mptcp));
    seg
}

/// The interface a packet of `path` is captured on; on the links, the direction decides.
fn interface(vantage: Vantage, path: usize, from: Option<Host>) -> u32 {
    match vantage {
        Vantage::Sender | Vantage::Receiver => path as u32,
        Vantage::Links => 2 * path as u32 + u32::from(from == Some(Host::Client)),
    }
}

/// Linux's TCP timestamp clock: milliseconds.
fn ms(t: Time) -> u32 {
    (t.as_nanos() / 1_000_000) as u32
}

/// The model's packet as a TCP segment.
fn segment(c: &mut ConnWire, sf: usize, pkt: &Packet) -> Segment {
    let path = c.subflows[sf].path;
    let (cisn, sisn) = (c.subflows[sf].client_isn, c.subflows[sf].server_isn);
    match &pkt.payload {
        Payload::Data(d) => {
            let off = c.subflow_offset(sf, d.seq);
            let data_fin = c.total.is_some_and(|(_, last)| d.dseq == last);
            let mut options = vec![TcpOption::Timestamps(ms(d.ts_val), ms(d.ts_ecr))];
            if c.mptcp {
                options.push(TcpOption::Mptcp(MptcpOption::Dss {
                    data_ack: Some(c.client_idsn.wrapping_add(1)),
                    ack32: true,
                    mapping: Some(Mapping {
                        dsn: c.server_idsn.wrapping_add(1 + c.data_offset(d.dseq)),
                        ssn: 1 + off as u32,
                        len: d.len as u16 + u16::from(data_fin),
                    }),
                    data_fin,
                }));
            }
            let id = &mut c.subflows[sf].ip_id[0];
            *id = id.wrapping_add(1);
            Segment {
                src: SERVER,
                dst: client_addr(path),
                ip_id: *id,
                src_port: SERVER_PORT,
                dst_port: c.subflows[sf].client_port,
                seq: sisn.wrapping_add(1).wrapping_add(off as u32),
                ack: cisn.wrapping_add(1),
                flags: ACK,
                window: SERVER_WINDOW,
                options,
                payload_len: d.len,
            }
        }
        Payload::Ack(a) => {
            let rel = |seq: u64| {
                sisn.wrapping_add(1)
                    .wrapping_add(c.subflow_offset(sf, seq) as u32)
            };
            let mut options = vec![TcpOption::Timestamps(ms(a.ts_val), ms(a.ts_ecr))];
            if a.sack_len > 0 {
                options.push(TcpOption::Sack(
                    a.sack_blocks()
                        .iter()
                        .map(|b| (rel(b.start), rel(b.end)))
                        .collect(),
                ));
            }
            if c.mptcp {
                let off = c.data_offset(a.data_ack);
                // A file's DATA_FIN takes one more number once everything is in.
                let fin = c.total.is_some_and(|(bytes, _)| off >= bytes);
                options.push(TcpOption::Mptcp(MptcpOption::Dss {
                    data_ack: Some(c.server_idsn.wrapping_add(1 + off + u64::from(fin))),
                    ack32: false,
                    mapping: None,
                    data_fin: false,
                }));
            }
            let ack = rel(a.ack);
            let id = &mut c.subflows[sf].ip_id[1];
            *id = id.wrapping_add(1);
            Segment {
                src: client_addr(path),
                dst: SERVER,
                ip_id: *id,
                src_port: c.subflows[sf].client_port,
                dst_port: SERVER_PORT,
                seq: cisn.wrapping_add(1),
                ack,
                flags: ACK,
                window: (a.rwnd >> WSCALE).min(u64::from(u16::MAX)) as u16,
                options,
                payload_len: 0,
            }
        }
    }
}

/// SplitMix64: keys, sequence numbers and nonces that differ between runs of other seeds.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_capture_point_is_refused_with_the_known_ones() {
        assert_eq!(Vantage::parse("links"), Ok(Vantage::Links));
        let e = Vantage::parse("nic").unwrap_err();
        assert_eq!(e.given, "nic");
        assert_eq!(
            e.to_string(),
            r#"capture point "nic": expected sender, receiver or links"#
        );
    }
}
