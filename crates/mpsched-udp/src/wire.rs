//! The datagram format (docs/wire.md): one subflow segment or ACK per UDP datagram, each
//! sealed by the session's AEAD. Every field is read with its bounds checked; nothing here
//! allocates from what a datagram says.
//!
//! ```text
//! handshake:  kind|version (1)  conn_id (4)  body (Initial, Response, Cookie, Reset)
//! protected:  kind|version (1)  conn_id (4)  packet number (6)  AEAD(frame) (frame + 16)
//! frame:      kind (1) then the kind's fields, big-endian
//! ```
//! The clear header is bound to the frame: it is the AEAD's associated data, the packet number
//! is its nonce, the kind is repeated inside the frame, and the connection id (one per path)
//! selects the connection.

use std::fmt;

/// Paths (subflows) a connection may open: frames number their subflow within it and the
/// handshake derives a connection id for each.
pub const MAX_PATHS: usize = 8;

/// 2: the handshake bound to version and connection id, per-path connection ids, path
/// challenges, cookies and resets (issue 28); the AEAD suite negotiated in the handshake and
/// the clear header authenticated as associated data (issue 29). docs/wire.md.
pub const VERSION: u8 = 2;
/// UDP payload on a 1,500-byte path (IPv4: 20 + 8 bytes of headers).
pub const MAX_DATAGRAM: usize = 1472;
/// UDP payload on a 1,500-byte IPv6 path (40 + 8 bytes of headers): where a path over IPv6
/// starts (RFC 8899's probing may raise it to `MAX_DATAGRAM`).
pub const IPV6_DATAGRAM: usize = 1452;
/// Kind, connection id, packet number.
pub const HEADER_LEN: usize = 11;
/// Kind and connection id of a handshake datagram.
pub const HANDSHAKE_HEADER_LEN: usize = 5;
/// The AEAD's tag (AES-128-GCM and ChaCha20-Poly1305 alike).
pub const TAG_LEN: usize = 16;
/// A data frame's fields before its payload (kind included).
pub const DATA_FIELDS: usize = 20;
/// The largest payload of a data frame in one datagram: 1,425 bytes, one more than the core's
/// MPTCP segment (1,424), so a segment is one datagram on a 1,500-byte path.
pub const MAX_PAYLOAD: usize = MAX_DATAGRAM - HEADER_LEN - DATA_FIELDS - TAG_LEN;
/// Packet numbers are 48 bits on the wire.
pub const PN_LIMIT: u64 = 1 << 48;
/// A JoinAck's challenge that asks for no Proof: its path's address is proven already
/// (random challenges are never zero).
pub const NO_PROOF: u64 = 0;
pub const MAX_SACK: usize = 3;
/// Subflows a Stats frame reports, at most.
pub const MAX_STATS: usize = 8;

/// One subflow's counters, as the server's sender has them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SubflowStats {
    pub subflow: u8,
    pub bytes_sent: u64,
    pub packets_sent: u64,
    pub retransmits: u32,
    pub rtos: u32,
    pub fast_recoveries: u32,
    pub tlp_probes: u32,
    pub srtt_us: u32,
    pub min_rtt_us: u32,
    pub cwnd: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// Client to server: the first Noise message (it proves the pre-shared key).
    Initial = 1,
    /// Server to client: the second Noise message.
    Response = 2,
    Data = 3,
    Ack = 4,
    /// The client opens a subflow on another path.
    Join = 5,
    JoinAck = 6,
    Close = 7,
    /// The server's counters per subflow (the answer to a Close).
    Stats = 8,
    /// A random 64-bit value the peer must send back from the address it went to (path
    /// validation, RFC 9000 8.2), padded to probe a datagram size.
    Challenge = 9,
    /// The answer to a Challenge.
    Proof = 10,
    /// Server to client, instead of a Response under load: a cookie sealed to the Initial,
    /// which the client's next Initial must carry (WireGuard's cookie reply).
    Cookie = 11,
    /// Server to client: a connection id the server does not know, with the token only the
    /// holders of the secret can derive for it (a stateless reset, RFC 9000 10.3).
    Reset = 12,
}

impl Kind {
    fn from_u8(v: u8) -> Result<Kind, WireError> {
        Ok(match v {
            1 => Kind::Initial,
            2 => Kind::Response,
            3 => Kind::Data,
            4 => Kind::Ack,
            5 => Kind::Join,
            6 => Kind::JoinAck,
            7 => Kind::Close,
            8 => Kind::Stats,
            9 => Kind::Challenge,
            10 => Kind::Proof,
            11 => Kind::Cookie,
            12 => Kind::Reset,
            _ => return Err(WireError::Kind(v)),
        })
    }

    /// Datagrams outside the transport keys: no packet number, no frame.
    pub fn is_handshake(self) -> bool {
        matches!(
            self,
            Kind::Initial | Kind::Response | Kind::Cookie | Kind::Reset
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes than the fields need.
    Short,
    Version(u8),
    Kind(u8),
    /// The frame's kind differs from the header's.
    Mismatch,
    /// More SACK blocks than a frame may carry.
    Sack(u8),
    /// Bytes left after the last field.
    Trailing,
    TooLong,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Short => write!(f, "datagram shorter than its fields"),
            WireError::Version(v) => write!(f, "unknown version {v}"),
            WireError::Kind(k) => write!(f, "unknown kind {k}"),
            WireError::Mismatch => write!(f, "frame kind differs from the header's"),
            WireError::Sack(n) => write!(f, "{n} SACK blocks (at most {MAX_SACK})"),
            WireError::Trailing => write!(f, "bytes after the last field"),
            WireError::TooLong => write!(f, "datagram longer than {MAX_DATAGRAM} bytes"),
        }
    }
}

impl std::error::Error for WireError {}

/// The clear part of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub conn_id: u32,
    /// Absent (0) in handshake datagrams.
    pub pn: u64,
}

impl Header {
    pub fn len(&self) -> usize {
        if self.kind.is_handshake() {
            HANDSHAKE_HEADER_LEN
        } else {
            HEADER_LEN
        }
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        debug_assert!(self.pn < PN_LIMIT);
        out.push(VERSION << 4 | self.kind as u8);
        out.extend_from_slice(&self.conn_id.to_be_bytes());
        if !self.kind.is_handshake() {
            out.extend_from_slice(&self.pn.to_be_bytes()[2..]);
        }
    }

    /// The header and the bytes after it.
    pub fn decode(datagram: &[u8]) -> Result<(Header, &[u8]), WireError> {
        if datagram.len() > MAX_DATAGRAM {
            return Err(WireError::TooLong);
        }
        let mut r = Reader(datagram);
        let first = r.u8()?;
        if first >> 4 != VERSION {
            return Err(WireError::Version(first >> 4));
        }
        let kind = Kind::from_u8(first & 0x0f)?;
        let conn_id = r.u32()?;
        let pn = if kind.is_handshake() {
            0
        } else {
            let b = r.take(6)?;
            u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]])
        };
        Ok((Header { kind, conn_id, pn }, r.0))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start: u32,
    pub end: u32,
}

/// Which bytes of a segment a Data frame carries: all of them, or one half of a segment split
/// over two datagrams for a path whose datagrams cannot hold it whole (IPv6 on a 1,500-byte
/// link: 1,452 bytes of UDP payload). The first half is the segment's first `ceil(len / 2)`
/// bytes; the receiver takes the segment when both halves are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Whole,
    First,
    Second,
}

/// What a protected datagram carries, once decrypted. Sequence numbers and timestamps are the
/// low 32 bits of the core's; `expand` restores them.
// A Stats frame is the largest (8 subflows' counters, ~400 bytes): frames live briefly on the
// stack, one at a time, so it is not boxed.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Data {
        subflow: u8,
        gen: u8,
        probe: bool,
        part: Part,
        seq: u32,
        dseq: u32,
        /// Microseconds on the sender's clock.
        ts_val: u32,
        ts_ecr: u32,
        payload: &'a [u8],
    },
    Ack {
        subflow: u8,
        gen: u8,
        dsack: bool,
        ack: u32,
        data_ack: u32,
        /// Bytes above the Data ACK the receiver can take.
        rwnd: u32,
        ts_val: u32,
        ts_ecr: u32,
        sack_len: u8,
        sack: [SackBlock; MAX_SACK],
    },
    Join {
        subflow: u8,
        gen: u8,
        ts_val: u32,
    },
    /// The server's answer to a Join: a random challenge, which the client's Proof on the
    /// path must carry back from the same address (`NO_PROOF`: the address is proven, path 0
    /// from where the handshake came), and the whole stream's length, from its first byte
    /// whatever offset was asked for (`u64::MAX`: endless).
    JoinAck {
        subflow: u8,
        gen: u8,
        ts_ecr: u32,
        size: u64,
        challenge: u64,
    },
    Close {
        code: u8,
    },
    Stats {
        count: u8,
        subflows: [SubflowStats; MAX_STATS],
    },
    /// `pad` zero bytes follow: a probe of the path's datagram size.
    Challenge {
        subflow: u8,
        data: u64,
        pad: u16,
    },
    Proof {
        subflow: u8,
        data: u64,
    },
}

impl Frame<'_> {
    /// The subflow (path) a frame names, if it names one: it must be the path whose
    /// connection id it came with.
    pub fn subflow(&self) -> Option<u8> {
        match *self {
            Frame::Data { subflow, .. }
            | Frame::Ack { subflow, .. }
            | Frame::Join { subflow, .. }
            | Frame::JoinAck { subflow, .. }
            | Frame::Challenge { subflow, .. }
            | Frame::Proof { subflow, .. } => Some(subflow),
            Frame::Close { .. } | Frame::Stats { .. } => None,
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Frame::Data { .. } => Kind::Data,
            Frame::Ack { .. } => Kind::Ack,
            Frame::Join { .. } => Kind::Join,
            Frame::JoinAck { .. } => Kind::JoinAck,
            Frame::Close { .. } => Kind::Close,
            Frame::Stats { .. } => Kind::Stats,
            Frame::Challenge { .. } => Kind::Challenge,
            Frame::Proof { .. } => Kind::Proof,
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.kind() as u8);
        match *self {
            Frame::Data {
                subflow,
                gen,
                probe,
                part,
                seq,
                dseq,
                ts_val,
                ts_ecr,
                payload,
            } => {
                let part = match part {
                    Part::Whole => 0,
                    Part::First => 2,
                    Part::Second => 4,
                };
                out.extend_from_slice(&[subflow, gen, u8::from(probe) | part]);
                for v in [seq, dseq, ts_val, ts_ecr] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
                out.extend_from_slice(payload);
            }
            Frame::Ack {
                subflow,
                gen,
                dsack,
                ack,
                data_ack,
                rwnd,
                ts_val,
                ts_ecr,
                sack_len,
                sack,
            } => {
                out.extend_from_slice(&[subflow, gen, u8::from(dsack), sack_len]);
                for v in [ack, data_ack, rwnd, ts_val, ts_ecr] {
                    out.extend_from_slice(&v.to_be_bytes());
                }
                for b in &sack[..usize::from(sack_len).min(MAX_SACK)] {
                    out.extend_from_slice(&b.start.to_be_bytes());
                    out.extend_from_slice(&b.end.to_be_bytes());
                }
            }
            Frame::Join {
                subflow,
                gen,
                ts_val,
            } => {
                out.extend_from_slice(&[subflow, gen]);
                out.extend_from_slice(&ts_val.to_be_bytes());
            }
            Frame::JoinAck {
                subflow,
                gen,
                ts_ecr,
                size,
                challenge,
            } => {
                out.extend_from_slice(&[subflow, gen]);
                out.extend_from_slice(&ts_ecr.to_be_bytes());
                out.extend_from_slice(&size.to_be_bytes());
                out.extend_from_slice(&challenge.to_be_bytes());
            }
            Frame::Challenge { subflow, data, pad } => {
                out.push(subflow);
                out.extend_from_slice(&data.to_be_bytes());
                out.resize(out.len() + usize::from(pad), 0);
            }
            Frame::Proof { subflow, data } => {
                out.push(subflow);
                out.extend_from_slice(&data.to_be_bytes());
            }
            Frame::Close { code } => out.push(code),
            Frame::Stats { count, subflows } => {
                out.push(count);
                for st in &subflows[..usize::from(count).min(MAX_STATS)] {
                    out.push(st.subflow);
                    out.extend_from_slice(&st.bytes_sent.to_be_bytes());
                    out.extend_from_slice(&st.packets_sent.to_be_bytes());
                    for v in [
                        st.retransmits,
                        st.rtos,
                        st.fast_recoveries,
                        st.tlp_probes,
                        st.srtt_us,
                        st.min_rtt_us,
                        st.cwnd,
                    ] {
                        out.extend_from_slice(&v.to_be_bytes());
                    }
                }
            }
        }
    }
}

impl<'a> Frame<'a> {
    /// A decrypted frame; `kind` is the header's, which the frame must repeat.
    pub fn decode(kind: Kind, body: &'a [u8]) -> Result<Frame<'a>, WireError> {
        let mut r = Reader(body);
        if Kind::from_u8(r.u8()?)? != kind {
            return Err(WireError::Mismatch);
        }
        let frame = match kind {
            Kind::Data => {
                let (subflow, gen, flags) = (r.u8()?, r.u8()?, r.u8()?);
                let (seq, dseq, ts_val, ts_ecr) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
                let payload = std::mem::take(&mut r.0);
                if payload.len() > MAX_PAYLOAD {
                    return Err(WireError::TooLong);
                }
                let part = match flags & 6 {
                    0 => Part::Whole,
                    2 => Part::First,
                    4 => Part::Second,
                    _ => return Err(WireError::Mismatch),
                };
                Frame::Data {
                    subflow,
                    gen,
                    probe: flags & 1 != 0,
                    part,
                    seq,
                    dseq,
                    ts_val,
                    ts_ecr,
                    payload,
                }
            }
            Kind::Ack => {
                let (subflow, gen, flags, sack_len) = (r.u8()?, r.u8()?, r.u8()?, r.u8()?);
                if usize::from(sack_len) > MAX_SACK {
                    return Err(WireError::Sack(sack_len));
                }
                let (ack, data_ack, rwnd) = (r.u32()?, r.u32()?, r.u32()?);
                let (ts_val, ts_ecr) = (r.u32()?, r.u32()?);
                let mut sack = [SackBlock::default(); MAX_SACK];
                for b in sack.iter_mut().take(usize::from(sack_len)) {
                    *b = SackBlock {
                        start: r.u32()?,
                        end: r.u32()?,
                    };
                }
                Frame::Ack {
                    subflow,
                    gen,
                    dsack: flags & 1 != 0,
                    ack,
                    data_ack,
                    rwnd,
                    ts_val,
                    ts_ecr,
                    sack_len,
                    sack,
                }
            }
            Kind::Join => Frame::Join {
                subflow: r.u8()?,
                gen: r.u8()?,
                ts_val: r.u32()?,
            },
            Kind::JoinAck => Frame::JoinAck {
                subflow: r.u8()?,
                gen: r.u8()?,
                ts_ecr: r.u32()?,
                size: r.u64()?,
                challenge: r.u64()?,
            },
            Kind::Challenge => {
                let (subflow, data) = (r.u8()?, r.u64()?);
                let pad = std::mem::take(&mut r.0);
                // Padding is zeros (anything else is not this format).
                if pad.iter().any(|&b| b != 0) {
                    return Err(WireError::Trailing);
                }
                Frame::Challenge {
                    subflow,
                    data,
                    pad: u16::try_from(pad.len()).map_err(|_| WireError::TooLong)?,
                }
            }
            Kind::Proof => Frame::Proof {
                subflow: r.u8()?,
                data: r.u64()?,
            },
            Kind::Close => Frame::Close { code: r.u8()? },
            Kind::Stats => {
                let count = r.u8()?;
                if usize::from(count) > MAX_STATS {
                    return Err(WireError::TooLong);
                }
                let mut subflows = [SubflowStats::default(); MAX_STATS];
                for st in subflows.iter_mut().take(usize::from(count)) {
                    *st = SubflowStats {
                        subflow: r.u8()?,
                        bytes_sent: r.u64()?,
                        packets_sent: r.u64()?,
                        retransmits: r.u32()?,
                        rtos: r.u32()?,
                        fast_recoveries: r.u32()?,
                        tlp_probes: r.u32()?,
                        srtt_us: r.u32()?,
                        min_rtt_us: r.u32()?,
                        cwnd: r.u32()?,
                    };
                }
                Frame::Stats { count, subflows }
            }
            Kind::Initial | Kind::Response | Kind::Cookie | Kind::Reset => {
                return Err(WireError::Kind(kind as u8))
            }
        };
        if !r.0.is_empty() {
            return Err(WireError::Trailing);
        }
        Ok(frame)
    }
}

/// The 64-bit value whose low 32 bits are `truncated` and which lies nearest `near` (how QUIC
/// restores packet numbers, RFC 9000 A.3): sequence numbers and timestamps cross the wire in
/// 32 bits and are restored beside the last value seen.
pub fn expand(truncated: u32, near: u64) -> u64 {
    const SPAN: u64 = 1 << 32;
    let candidate = (near & !(SPAN - 1)) | u64::from(truncated);
    if candidate + SPAN / 2 <= near && candidate < u64::MAX - SPAN {
        candidate + SPAN
    } else if candidate > near + SPAN / 2 && candidate >= SPAN {
        candidate - SPAN
    } else {
        candidate
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.0.len() < n {
            return Err(WireError::Short);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        Ok((u64::from(self.u32()?) << 32) | u64::from(self.u32()?))
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(f: Frame) {
        let mut out = vec![];
        f.encode(&mut out);
        assert_eq!(Frame::decode(f.kind(), &out), Ok(f));
        // Every truncation is refused, never a panic.
        for n in 0..out.len() {
            assert!(Frame::decode(f.kind(), &out[..n]).is_err() || f.kind() == Kind::Data);
        }
    }

    #[test]
    fn frames_come_back_as_they_went() {
        let payload = [7u8; 1424];
        roundtrip(Frame::Data {
            subflow: 1,
            gen: 2,
            probe: true,
            part: Part::Second,
            seq: u32::MAX,
            dseq: 12,
            ts_val: 3,
            ts_ecr: 4,
            payload: &payload,
        });
        let mut sack = [SackBlock::default(); MAX_SACK];
        sack[0] = SackBlock { start: 5, end: 9 };
        sack[1] = SackBlock { start: 11, end: 12 };
        roundtrip(Frame::Ack {
            subflow: 0,
            gen: 0,
            dsack: true,
            ack: 4,
            data_ack: 100,
            rwnd: 6 << 20,
            ts_val: 1,
            ts_ecr: 2,
            sack_len: 2,
            sack,
        });
        roundtrip(Frame::Join {
            subflow: 3,
            gen: 1,
            ts_val: 99,
        });
        roundtrip(Frame::JoinAck {
            subflow: 3,
            gen: 1,
            ts_ecr: 99,
            size: u64::MAX - 1,
            challenge: 0x0123_4567_89ab_cdef,
        });
        roundtrip(Frame::Proof {
            subflow: 2,
            data: u64::MAX,
        });
        let mut probe = vec![];
        let f = Frame::Challenge {
            subflow: 1,
            data: 42,
            pad: 1000,
        };
        f.encode(&mut probe);
        assert_eq!(probe.len(), 1 + 1 + 8 + 1000);
        assert_eq!(Frame::decode(Kind::Challenge, &probe), Ok(f));
        *probe.last_mut().unwrap() = 1;
        assert_eq!(
            Frame::decode(Kind::Challenge, &probe),
            Err(WireError::Trailing),
            "padding is zeros"
        );
        roundtrip(Frame::Close { code: 0 });
        let mut subflows = [SubflowStats::default(); MAX_STATS];
        subflows[1] = SubflowStats {
            subflow: 1,
            bytes_sent: u64::MAX,
            packets_sent: 7,
            retransmits: 3,
            rtos: 1,
            fast_recoveries: 2,
            tlp_probes: 4,
            srtt_us: 20_000,
            min_rtt_us: 19_000,
            cwnd: 80,
        };
        roundtrip(Frame::Stats { count: 2, subflows });
    }

    #[test]
    fn a_full_segment_fits_one_datagram() {
        assert_eq!(MAX_PAYLOAD, 1425);
        assert!(MAX_PAYLOAD >= mpsched_core::units::wire::mss(true) as usize);
    }

    #[test]
    fn headers_round_trip_and_bad_ones_are_named() {
        for kind in [
            Kind::Initial,
            Kind::Reset,
            Kind::Data,
            Kind::Ack,
            Kind::Proof,
        ] {
            let h = Header {
                kind,
                conn_id: 0xdead_beef,
                pn: if kind.is_handshake() { 0 } else { PN_LIMIT - 1 },
            };
            let mut out = vec![];
            h.encode(&mut out);
            out.push(42);
            assert_eq!(out.len(), h.len() + 1);
            assert_eq!(Header::decode(&out), Ok((h, &[42u8][..])));
        }
        assert_eq!(Header::decode(&[]), Err(WireError::Short));
        assert_eq!(
            Header::decode(&[0x13, 0, 0, 0, 0]),
            Err(WireError::Version(1)),
            "version 1 is not spoken any more"
        );
        assert_eq!(Header::decode(&[0x20, 0, 0, 0, 0]), Err(WireError::Kind(0)));
        assert_eq!(
            Header::decode(&[0x2d, 0, 0, 0, 0]),
            Err(WireError::Kind(13))
        );
        assert_eq!(
            Header::decode(&[0x23, 0, 0, 0, 0, 1]),
            Err(WireError::Short)
        );
        assert_eq!(
            Header::decode(&[0; MAX_DATAGRAM + 1]),
            Err(WireError::TooLong)
        );
        let mut bad = vec![];
        Frame::Close { code: 1 }.encode(&mut bad);
        assert_eq!(Frame::decode(Kind::Ack, &bad), Err(WireError::Mismatch));
        bad.push(0);
        assert_eq!(Frame::decode(Kind::Close, &bad), Err(WireError::Trailing));
        let ack_with_4_blocks = [4u8, 0, 0, 0, 4];
        assert_eq!(
            Frame::decode(Kind::Ack, &ack_with_4_blocks),
            Err(WireError::Sack(4))
        );
    }

    #[test]
    fn truncated_values_are_restored_beside_the_last_one() {
        assert_eq!(expand(5, 3), 5);
        assert_eq!(expand(u32::MAX, 1 << 32), (1 << 32) - 1);
        assert_eq!(expand(2, (1 << 32) - 3), (1 << 32) + 2);
        let near = 7 * (1u64 << 32) + 100;
        for delta in [-1_000_000i64, -1, 0, 1, 1_000_000] {
            let v = (near as i64 + delta) as u64;
            assert_eq!(expand(v as u32, near), v);
        }
        assert_eq!(expand(9, 0), 9);
        assert_eq!(expand(u32::MAX, 0), u64::from(u32::MAX), "nothing below 0");
    }
}
