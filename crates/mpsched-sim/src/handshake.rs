//! Handshakes in the network: each subflow's SYN, SYN-ACK and third ACK (MP_CAPABLE for the
//! first subflow, MP_JOIN for the others, with the server's ACK of an MP_JOIN's third ACK;
//! RFC 8684 3.1-3.2) cross the links as packets: they queue, take their share of the rate and
//! can be lost. The client sends a SYN again, and the server a SYN-ACK, at Linux's timeouts:
//! `TCP_TIMEOUT_INIT` (1 s), doubling at each attempt, up to `tcp_syn_retries` (6) and
//! `tcp_synack_retries` (5) attempts again; a lost third ACK is answered by the server's
//! SYN-ACK again.
//!
//! A pure state machine per connection: packets and time in, packets and events out.

use mpsched_core::jiffies::Jiffies;
use mpsched_core::{Dur, Time};

/// Linux `TCP_TIMEOUT_INIT`: the first SYN (and SYN-ACK) retransmission timeout.
const TIMEOUT_INIT: Dur = Dur::from_secs(1);
/// `net.ipv4.tcp_syn_retries` and `tcp_synack_retries`'s defaults.
const SYN_RETRIES: u8 = 6;
const SYNACK_RETRIES: u8 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Syn,
    SynAck,
    /// The third ACK (the client's; it carries the request on the first subflow).
    Ack,
    /// The server's ACK of an MP_JOIN's third ACK (RFC 8684 3.2).
    JoinAck,
}

/// A handshake packet on a link.
#[derive(Clone, Copy, Debug)]
pub struct HsPacket {
    pub subflow: u8,
    /// The subflow's incarnation (a subflow opened again after its address came back).
    pub gen: u8,
    pub stage: Stage,
    /// RFC 7323 timestamps: when it was sent, and the peer's latest TSval it echoes.
    pub ts_val: Time,
    pub ts_ecr: Time,
    pub wire_len: u32,
}

impl HsPacket {
    /// Whether the client sent it (up the path) rather than the server (down).
    pub fn from_client(&self) -> bool {
        matches!(self.stage, Stage::Syn | Stage::Ack)
    }
}

/// Bytes on the wire of each handshake packet: IPv4 and TCP headers with the options Linux
/// puts there (MSS, SACK permitted, timestamps, window scale on SYNs; timestamps after), plus
/// MPTCP's (MP_CAPABLE: 4, 12 with the server's key, 20 with both; MP_JOIN: 12, 16, 24), padded
/// to 4 bytes; `capture.rs` checks them against the headers it encodes.
pub fn wire_len(stage: Stage, mptcp: bool, join: bool) -> u32 {
    let syn_options: u32 = 4 + 2 + 10 + 3;
    let (options, mptcp_option) = match stage {
        Stage::Syn => (syn_options, if join { 12 } else { 4 }),
        Stage::SynAck => (syn_options, if join { 16 } else { 12 }),
        Stage::Ack => (10, if join { 24 } else { 20 }),
        Stage::JoinAck => (10, 0),
    };
    let options = options + if mptcp { mptcp_option } else { 0 };
    40 + options.div_ceil(4) * 4
}

#[derive(Clone, Copy, Debug, Default)]
struct Side {
    established: bool,
    /// Attempts again so far, and when the next is due.
    retries: u8,
    timer: Option<Time>,
    /// The TSval of the peer's latest handshake packet (echoed).
    peer_ts: Time,
}

#[derive(Clone, Copy, Debug, Default)]
struct SubflowHs {
    gen: u8,
    /// The client has sent its SYN (the handshake is under way or done).
    started: bool,
    client: Side,
    server: Side,
}

/// What a handshake packet or a timeout brought about.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event {
    /// The client received the SYN-ACK: it may receive data and, on the first subflow, open
    /// the others; its RTT measured by the exchange (the SYN-ACK echoes the SYN's timestamp).
    ClientEstablished { subflow: usize, rtt: Dur },
    /// The server received the third ACK: it may send on the subflow, its RTT measured by the
    /// exchange (the ACK echoes the SYN-ACK's timestamp).
    ServerEstablished { subflow: usize, rtt: Dur },
}

/// The handshakes of one connection's subflows.
pub struct Handshakes {
    mptcp: bool,
    subflows: Vec<SubflowHs>,
    /// The client has received the first subflow's SYN-ACK: the connection exists, and
    /// further subflows join it.
    open: bool,
    /// The hosts' ticks, on which the SYN and SYN-ACK timers run.
    jiffies: Jiffies,
}

impl Handshakes {
    pub fn new(mptcp: bool, subflows: usize, jiffies: Jiffies) -> Handshakes {
        Handshakes {
            mptcp,
            subflows: vec![SubflowHs::default(); subflows],
            open: false,
            jiffies,
        }
    }

    fn packet(&self, sf: usize, stage: Stage, now: Time, ts_ecr: Time) -> HsPacket {
        HsPacket {
            subflow: sf as u8,
            gen: self.subflows[sf].gen,
            stage,
            ts_val: now,
            ts_ecr,
            wire_len: wire_len(stage, self.mptcp, sf > 0),
        }
    }

    /// The client opens subflow `sf`: its SYN.
    pub fn connect(&mut self, now: Time, sf: usize) -> HsPacket {
        let s = &mut self.subflows[sf];
        s.started = true;
        s.client.timer = Some(self.jiffies.expiry(now, TIMEOUT_INIT));
        self.packet(sf, Stage::Syn, now, Time::ZERO)
    }

    /// Subflow `sf` starts over as a new incarnation (its address came back): a new
    /// handshake, and the old one's packets still on the way are ignored.
    pub fn restart(&mut self, sf: usize) {
        let gen = self.subflows[sf].gen.wrapping_add(1);
        self.subflows[sf] = SubflowHs {
            gen,
            ..SubflowHs::default()
        };
    }

    /// Subflow `sf`'s address went away: its handshake, if under way, stops (nothing more
    /// is sent again); `restart` opens a new one when the address returns.
    pub fn abort(&mut self, sf: usize) {
        let s = &mut self.subflows[sf];
        s.client.timer = None;
        s.server.timer = None;
        s.started = false;
    }

    /// Whether the connection exists (the client received its first SYN-ACK): a subflow
    /// opens by joining it.
    pub fn open(&self) -> bool {
        self.open
    }

    /// Whether the client has sent subflow `sf`'s SYN.
    pub fn started(&self, sf: usize) -> bool {
        self.subflows[sf].started
    }

    /// A handshake packet arrived at its host: the answer to send, if any, and what it
    /// established.
    pub fn on_packet(&mut self, now: Time, p: &HsPacket) -> (Option<HsPacket>, Option<Event>) {
        let sf = p.subflow as usize;
        let Some(s) = self.subflows.get(sf).filter(|s| s.gen == p.gen) else {
            return (None, None);
        };
        let (client, server) = (s.client, s.server);
        match p.stage {
            // A SYN, or the same SYN again: the server answers each with a SYN-ACK until the
            // third ACK arrives.
            Stage::Syn if !server.established => {
                let first_timer = self.jiffies.expiry(now, TIMEOUT_INIT);
                let side = &mut self.subflows[sf].server;
                side.peer_ts = p.ts_val;
                side.timer.get_or_insert(first_timer);
                (Some(self.packet(sf, Stage::SynAck, now, p.ts_val)), None)
            }
            Stage::SynAck => {
                let side = &mut self.subflows[sf].client;
                side.peer_ts = p.ts_val;
                side.timer = None;
                let first = !client.established;
                side.established = true;
                self.open = true;
                let ack = self.packet(sf, Stage::Ack, now, p.ts_val);
                let rtt = now - p.ts_ecr;
                let event = first.then_some(Event::ClientEstablished { subflow: sf, rtt });
                (Some(ack), event)
            }
            Stage::Ack if !server.established => {
                let side = &mut self.subflows[sf].server;
                side.established = true;
                side.timer = None;
                side.peer_ts = p.ts_val;
                let rtt = now - p.ts_ecr;
                let answer =
                    (self.mptcp && sf > 0).then(|| self.packet(sf, Stage::JoinAck, now, p.ts_val));
                (answer, Some(Event::ServerEstablished { subflow: sf, rtt }))
            }
            _ => (None, None),
        }
    }

    /// When a SYN or SYN-ACK is next due again.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.subflows
            .iter()
            .flat_map(|s| [s.client.timer, s.server.timer])
            .flatten()
            .min()
    }

    /// The SYNs and SYN-ACKs due again at `now`.
    pub fn on_timeout(&mut self, now: Time, out: &mut Vec<HsPacket>) {
        let jiffies = self.jiffies;
        let backed_off = |retries: u8| jiffies.expiry(now, TIMEOUT_INIT * (1u64 << retries));
        for sf in 0..self.subflows.len() {
            let s = self.subflows[sf];
            if s.client.timer.is_some_and(|t| t <= now) {
                let side = &mut self.subflows[sf].client;
                side.retries += 1;
                side.timer = (side.retries <= SYN_RETRIES).then(|| backed_off(side.retries));
                if side.timer.is_some() {
                    out.push(self.packet(sf, Stage::Syn, now, Time::ZERO));
                }
            }
            if s.server.timer.is_some_and(|t| t <= now) {
                let side = &mut self.subflows[sf].server;
                side.retries += 1;
                let ecr = side.peer_ts;
                side.timer = (side.retries <= SYNACK_RETRIES).then(|| backed_off(side.retries));
                if side.timer.is_some() {
                    out.push(self.packet(sf, Stage::SynAck, now, ecr));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::ZERO + Dur::from_millis(x)
    }

    #[test]
    fn a_handshake_establishes_both_sides_and_measures_the_round_trip() {
        let mut h = Handshakes::new(true, 2, Jiffies::EXACT);
        let syn = h.connect(ms(0), 1);
        assert_eq!(syn.stage, Stage::Syn);
        let (synack, e) = h.on_packet(ms(10), &syn);
        assert_eq!(e, None);
        let synack = synack.unwrap();
        assert_eq!((synack.stage, synack.ts_ecr), (Stage::SynAck, ms(0)));
        let (ack, e) = h.on_packet(ms(20), &synack);
        assert!(matches!(
            e,
            Some(Event::ClientEstablished { subflow: 1, .. })
        ));
        let ack = ack.unwrap();
        let (join_ack, e) = h.on_packet(ms(30), &ack);
        // The server's RTT: from its SYN-ACK (10 ms) to the ACK echoing it (30 ms).
        assert_eq!(
            e,
            Some(Event::ServerEstablished {
                subflow: 1,
                rtt: Dur::from_millis(20)
            })
        );
        assert_eq!(join_ack.unwrap().stage, Stage::JoinAck);
        assert_eq!(h.poll_timeout(), None);
    }

    #[test]
    fn a_lost_syn_goes_again_after_one_second_then_two_then_four() {
        let mut h = Handshakes::new(false, 1, Jiffies::EXACT);
        h.connect(ms(0), 0);
        let mut out = vec![];
        let mut at = vec![];
        while let Some(t) = h.poll_timeout().filter(|t| *t < ms(10_000)) {
            h.on_timeout(t, &mut out);
            at.push(t);
        }
        assert_eq!(at, vec![ms(1000), ms(3000), ms(7000)]);
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|p| p.stage == Stage::Syn));
    }

    #[test]
    fn a_lost_third_ack_is_answered_by_the_syn_ack_again() {
        let mut h = Handshakes::new(false, 1, Jiffies::EXACT);
        let syn = h.connect(ms(0), 0);
        let (synack, _) = h.on_packet(ms(10), &syn);
        let (_lost, e) = h.on_packet(ms(20), &synack.unwrap());
        assert!(matches!(e, Some(Event::ClientEstablished { .. })));
        // The server sends its SYN-ACK again a second after the first; the client answers.
        let mut out = vec![];
        h.on_timeout(ms(1010), &mut out);
        assert_eq!(out[0].stage, Stage::SynAck);
        let (ack, e) = h.on_packet(ms(1020), &out[0]);
        assert_eq!(e, None, "the client was established already");
        let (_, e) = h.on_packet(ms(1030), &ack.unwrap());
        assert!(matches!(e, Some(Event::ServerEstablished { .. })));
    }

    #[test]
    fn packets_of_an_earlier_incarnation_are_ignored() {
        let mut h = Handshakes::new(true, 2, Jiffies::EXACT);
        let syn = h.connect(ms(0), 1);
        h.restart(1);
        let (answer, event) = h.on_packet(ms(10), &syn);
        assert!(answer.is_none() && event.is_none());
    }
}
