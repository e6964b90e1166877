//! A connection's path as the server sees it: the address its data goes to and whether that
//! address proved itself, the challenge out (a Join's, a move's, a size probe's), the datagrams
//! held while a move is checked, and the largest datagram the path takes.

use crate::amplify::Budget;
use crate::drops::Drops;
use crate::session::Session;
use crate::wire::{Frame, HEADER_LEN, IPV6_DATAGRAM, MAX_DATAGRAM, TAG_LEN};
use mpsched_core::conn::Sender;
use mpsched_core::{Dur, Time};
use std::collections::VecDeque;
use std::net::SocketAddr;

/// A challenge toward a new address is sent again after this, at most `CHALLENGE_TRIES`
/// times in all.
pub const CHALLENGE_RETRY: Dur = Dur::from_secs(1);
pub const CHALLENGE_TRIES: u32 = 3;
/// While a path's new address is being checked, its datagrams wait (rather than go to an
/// address the client has likely left, lost with the retransmissions that would follow):
/// at most twice the path's smoothed RTT, within these bounds, and this many datagrams;
/// then they go to the proven address.
pub const HOLD_MIN: Dur = Dur::from_millis(50);
pub const HOLD_MAX: Dur = Dur::from_secs(1);
pub const HOLD_DATAGRAMS: usize = 4096;

/// A challenge out, and what may be sent to its address meanwhile.
pub(crate) struct Validation {
    pub(crate) addr: SocketAddr,
    pub(crate) data: u64,
    pub(crate) sent: Time,
    pub(crate) tries: u32,
    pub(crate) budget: Budget,
}

pub(crate) struct Path {
    /// Where data goes.
    pub(crate) addr: SocketAddr,
    /// What `addr` may get before it proved itself.
    pub(crate) budget: Budget,
    /// A challenge out: to `addr` (the Join's) or to a new address (a move).
    pub(crate) pending: Option<Validation>,
    pub(crate) established: bool,
    /// Datagrams held while a move is checked, until when.
    pub(crate) held: VecDeque<Vec<u8>>,
    pub(crate) hold_until: Option<Time>,
    /// The largest datagram the path takes (RFC 8899's PLPMTU): `MAX_DATAGRAM` over IPv4,
    /// `IPV6_DATAGRAM` over IPv6 until a probe of `MAX_DATAGRAM` bytes came back.
    pub(crate) max_datagram: usize,
    /// A padded challenge of `MAX_DATAGRAM` bytes out: its data, when, how many so far.
    pub(crate) probe: Option<(u64, Time, u32)>,
}

/// The largest datagram toward `addr` before any probe.
pub(crate) fn base_datagram(addr: SocketAddr) -> usize {
    match addr {
        SocketAddr::V6(a) if a.ip().to_ipv4_mapped().is_none() => IPV6_DATAGRAM,
        _ => MAX_DATAGRAM,
    }
}

impl Path {
    /// Sends what was held to `addr` (the new one if it proved itself, else the old one).
    pub(crate) fn release(&mut self, out: &mut VecDeque<(SocketAddr, Vec<u8>)>) {
        self.hold_until = None;
        for d in self.held.drain(..) {
            out.push_back((self.addr, d));
        }
    }
}

/// An authenticated datagram on path `i` from an address other than the path's: if it is
/// the newest yet, the new address gets a challenge (within three times what came from
/// it); data stays on the proven address until the answer.
#[allow(clippy::too_many_arguments)]
pub(crate) fn on_moved(
    session: &mut Session,
    path: &mut Path,
    out: &mut VecDeque<(SocketAddr, Vec<u8>)>,
    drops: &mut Drops,
    (i, hold): (usize, Dur),
    from: SocketAddr,
    len: usize,
    highest: bool,
    now: Time,
) {
    if let Some(v) = path.pending.as_mut().filter(|v| v.addr == from) {
        v.budget.on_received(len);
        return;
    }
    if !highest || !path.established {
        return;
    }
    let mut v = Validation {
        addr: from,
        data: crate::random::u64(),
        sent: now,
        tries: 1,
        budget: Budget::default(),
    };
    v.budget.on_received(len);
    challenge(session, &mut v, out, drops, i);
    // Datagrams wait only for the first candidate: one who races copies from ever new
    // addresses replaces the challenge each time, but cannot keep the path waiting.
    let first = path.pending.is_none();
    path.pending = Some(v);
    path.release(out);
    if first {
        path.hold_until = Some(now + hold);
    }
}

/// A challenge padded to `MAX_DATAGRAM` bytes (RFC 8899's probe; the don't-fragment bit
/// is set on the socket): its proof raises the path's datagram size.
pub(crate) fn probe(
    session: &mut Session,
    path: &mut Path,
    out: &mut VecDeque<(SocketAddr, Vec<u8>)>,
    i: usize,
    now: Time,
    tries: u32,
) {
    let data = crate::random::u64();
    let pad = MAX_DATAGRAM - (HEADER_LEN + 1 + 1 + 8 + TAG_LEN);
    let mut d = Vec::with_capacity(MAX_DATAGRAM);
    let frame = Frame::Challenge {
        subflow: i as u8,
        data,
        pad: pad as u16,
    };
    session.seal(i, &frame, &mut d);
    debug_assert_eq!(d.len(), MAX_DATAGRAM);
    path.probe = Some((data, now, tries));
    out.push_back((path.addr, d));
}

pub(crate) fn challenge(
    session: &mut Session,
    v: &mut Validation,
    out: &mut VecDeque<(SocketAddr, Vec<u8>)>,
    drops: &mut Drops,
    i: usize,
) {
    let mut d = Vec::with_capacity(48);
    let frame = Frame::Challenge {
        subflow: i as u8,
        data: v.data,
        pad: 0,
    };
    session.seal(i, &frame, &mut d);
    if v.budget.try_send(d.len()) {
        out.push_back((v.addr, d));
    } else {
        drops.amplification += 1;
    }
}

/// How long subflow `i`'s datagrams may wait for a move to be checked.
pub(crate) fn hold_time(sender: &Sender, i: usize) -> Dur {
    let srtt = sender.subflows()[i].rtt().srtt().unwrap_or(HOLD_MIN);
    Dur(srtt.0.saturating_mul(2)).clamp(HOLD_MIN, HOLD_MAX)
}
