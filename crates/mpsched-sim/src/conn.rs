//! One connection of a run: its server and client sockets (the core's `Sender` and
//! `Receiver`), the paths of its subflows and their handshakes, and what crosses the links
//! (`Tagged`: a segment or a handshake packet of one connection).

use crate::config::{Config, Protocol};
use crate::error::SimError;
use crate::handshake::{Handshakes, HsPacket};
use mpsched_core::cc::CcKind;
use mpsched_core::conn::sender::SubflowConfig;
use mpsched_core::conn::{Reader, Receiver, ReceiverConfig, Sender, SenderConfig, Stack};
use mpsched_core::link::{HasWireLen, Link};
use mpsched_core::packet::Packet;
use mpsched_core::sched;
use mpsched_core::{Bytes, Dur, Time};
use mpsched_scenario::plan::Route;

/// Bytes of a SYN / SYN-ACK on the wire (IP + TCP + options).
const SYN_BYTES: u64 = 64;

/// What crosses a link: a segment of a subflow, or a packet of its handshake.
pub enum Item {
    Seg(Packet),
    Hs(HsPacket),
}

impl Item {
    pub fn subflow(&self) -> usize {
        match self {
            Item::Seg(p) => p.subflow as usize,
            Item::Hs(h) => h.subflow as usize,
        }
    }
}

/// A packet on a link, with the index of the connection it belongs to (at most 10,001
/// connections, `Config::validate`), where it is on its path's route (index into
/// `Route::links`) and its size on the wire, read at every step of the link.
pub struct Tagged {
    pub conn: u16,
    pub hop: u16,
    wire_len: u32,
    pub item: Item,
}

impl Tagged {
    pub fn new(conn: usize, hop: u16, item: Item) -> Tagged {
        let wire_len = match &item {
            Item::Seg(p) => p.wire_len,
            Item::Hs(h) => h.wire_len,
        };
        Tagged {
            conn: conn as u16,
            hop,
            wire_len,
            item,
        }
    }
}

impl Tagged {
    /// A segment at the start of its route (`new` without the match on the item).
    #[inline]
    pub fn seg(conn: usize, pkt: Packet) -> Tagged {
        Tagged {
            conn: conn as u16,
            hop: 0,
            wire_len: pkt.wire_len,
            item: Item::Seg(pkt),
        }
    }
}

impl HasWireLen for Tagged {
    #[inline]
    fn wire_len(&self) -> u32 {
        self.wire_len
    }
    /// A subflow of a connection is a TCP flow (its own ports).
    fn flow_key(&self) -> u64 {
        (u64::from(self.conn) << 8) | self.item.subflow() as u64
    }
}

pub type SimLink = Link<Tagged>;

/// Packets of one subflow the links dropped.
#[derive(Clone, Copy, Debug, Default)]
pub struct Drops {
    pub queue: u64,
    pub random: u64,
    pub ack_queue: u64,
    pub ack_random: u64,
    /// Lost to a path outage.
    pub outage: u64,
    pub ack_outage: u64,
    /// Handshake packets (SYN, SYN-ACK, ACK) lost, either way and for any reason.
    pub handshake: u64,
}

/// One connection: its two sockets and the paths of its subflows.
pub struct Conn {
    pub mptcp: bool,
    pub server: Sender,
    pub client: Receiver,
    /// The path of each subflow.
    pub paths: Vec<usize>,
    /// Its subflows' handshakes, packets in the links.
    pub hs: Handshakes,
    /// When its first SYN leaves the client.
    pub syn_at: Time,
    /// When its handshake would complete over idle paths with nothing lost: when a
    /// rate-limited application starts writing.
    pub start: Time,
    /// The size of its file; `None`: a bulk transfer to the end of the run.
    pub total: Option<Bytes>,
    /// Whether it transfers a file.
    pub file: bool,
    pub drops: Vec<Drops>,
    started: bool,
    pub(crate) done: bool,
    /// Before its first SYN.
    pub(crate) syn_pending: bool,
    /// The first subflow is up and the others wait to join until the connection is fully
    /// established: the server's first data reached the client.
    pub(crate) joins_pending: bool,
}

impl Conn {
    /// Whether the request has reached the server.
    pub(crate) fn started(&self) -> bool {
        self.started
    }

    /// The request reaches the server: it starts sending (once).
    pub(crate) fn start_once(&mut self, now: Time) {
        if !self.started {
            self.started = true;
            self.server.start(now);
        }
    }

    /// The sockets of one connection whose client sends its SYN at `spec.syn_at`.
    pub(crate) fn open(cfg: &Config, spec: ConnSpec, net: Net, trace: bool) -> Conn {
        let paths = &spec.paths;
        // Handshake timing from the paths as they are when the SYN leaves: their delays and
        // rates, and the queues a SYN and a SYN-ACK wait behind (none on idle paths), on
        // every link of the route.
        // The subflows are established by their handshakes' packets (`handshake.rs`).
        let (rtt0, up0) = net.handshake(paths[0]);
        let start = spec.syn_at + rtt0 + up0;
        let subflows = paths
            .iter()
            .map(|&p| SubflowConfig {
                established_at: Time::MAX,
                handshake_rtt: Dur::ZERO,
                backup: cfg.paths[p].backup,
            })
            .collect();
        let client = Receiver::new(ReceiverConfig {
            mptcp: spec.mptcp,
            rcvbuf: Bytes(cfg.rcvbuf_bytes),
            rcvbuf_initial: Bytes(cfg.rcvbuf_initial_bytes),
            rcvbuf_autotune: cfg.rcvbuf_autotune,
            window_ratio: cfg.window_ratio_256(),
            subflows: paths.len(),
            stack: cfg.stack.stack(),
            total: spec.total,
            jiffies: cfg.jiffies(),
            // The simulator models Linux's receiver: an ACK per second segment.
            ack_policy: mpsched_core::subflow::rx::AckPolicy::LINUX,
            // Its applications read what comes in order at once, in the kernel's order (after
            // the ACK) for the upstream stack.
            reader: match cfg.stack.stack() {
                Stack::Upstream => Reader::AfterAck,
                Stack::OutOfTree => Reader::BeforeAck,
            },
            trace,
        });
        let server = Sender::new(
            SenderConfig {
                mptcp: spec.mptcp,
                sndbuf: Bytes(cfg.sndbuf_bytes),
                sndbuf_autotune: cfg.sndbuf_autotune,
                stack: cfg.stack.stack(),
                initial_rwnd: Bytes(client.initial_window()),
                total: spec.total,
                app_limited: spec.app_limited,
                write_chunk: cfg.write_chunk_bytes.map(Bytes),
                subflows,
                loss_recovery: cfg.loss_recovery.recovery(),
                jiffies: cfg.jiffies(),
                trace,
            },
            spec.cc.build(),
            spec.sched,
            spec.syn_at,
        );
        Conn {
            mptcp: spec.mptcp,
            hs: Handshakes::new(spec.mptcp, paths.len(), cfg.jiffies()),
            server,
            client,
            drops: vec![Drops::default(); paths.len()],
            paths: spec.paths,
            syn_at: spec.syn_at,
            start,
            total: spec.total,
            file: spec.total.is_some(),
            started: false,
            done: false,
            syn_pending: false,
            joins_pending: false,
        }
    }

    /// Competing flow `k` (`cfg.flows[k]`) as it opens over `links`.
    pub(crate) fn flow(cfg: &Config, k: usize, net: Net) -> Result<Conn, SimError> {
        let f = &cfg.flows[k];
        let mptcp = f.protocol == Protocol::Mptcp;
        let owner = format!("flows[{k}]");
        let sched = if mptcp {
            sched::build(&f.scheduler, &f.sched_params(k)?)
        } else {
            sched::build("minrtt", &sched::SchedParams::new())
        }
        .map_err(SimError::scheduler(owner))?;
        let spec = ConnSpec {
            mptcp,
            cc: f.cc(),
            sched,
            total: f.size_bytes.map(Bytes),
            app_limited: false,
            paths: f.paths.clone(),
            syn_at: Time(f.start_ns),
        };
        Ok(Conn::open(cfg, spec, net, false))
    }
}

/// The links and the paths' routes through them.
#[derive(Clone, Copy)]
pub(crate) struct Net<'a> {
    pub(crate) links: &'a [SimLink],
    pub(crate) routes: &'a [Route],
}

impl Net<'_> {
    /// How long a handshake packet takes over path `p`'s route now (data direction or ACK
    /// direction): every link's delay, its serialization and the queue ahead of it.
    pub(crate) fn one_way(&self, p: usize, data: bool) -> Dur {
        (self.routes[p].links(data).iter())
            .map(|&l| {
                let l = &self.links[l];
                l.delay() + l.rate().tx_time(SYN_BYTES) + l.rate().tx_time(l.backlog_bytes())
            })
            .fold(Dur::ZERO, |a, b| a + b)
    }

    /// A handshake over path `p` now, if nothing is lost: its round trip (SYN, SYN-ACK) and
    /// the third ACK's way to the server.
    pub(crate) fn handshake(&self, p: usize) -> (Dur, Dur) {
        let up = self.one_way(p, false);
        (self.one_way(p, true) + up, up)
    }
}

pub(crate) struct ConnSpec {
    pub(crate) mptcp: bool,
    pub(crate) cc: CcKind,
    pub(crate) sched: Box<dyn sched::Scheduler>,
    pub(crate) total: Option<Bytes>,
    pub(crate) app_limited: bool,
    pub(crate) paths: Vec<usize>,
    pub(crate) syn_at: Time,
}
