//! The pcapng file format (IETF draft-ietf-opsawg-pcapng): a section header, one interface
//! description per capture point, then one enhanced packet block per packet. Timestamps are in
//! nanoseconds (`if_tsresol` = 9), so simulated time survives exactly.

use std::fmt;
use std::io::{self, Write};

/// Raw IPv4 packets, no link-layer header (LINKTYPE_IPV4).
pub const LINKTYPE_IPV4: u16 = 228;

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;

/// Writes a pcapng section to `W`, counting the bytes written.
pub struct Writer<W: Write> {
    out: W,
    interfaces: u32,
    written: u64,
    block: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Starts a section; `app` names the program that wrote it, `comment` says what it holds.
    pub fn new(out: W, app: &str, comment: &str) -> io::Result<Writer<W>> {
        let mut w = Writer {
            out,
            interfaces: 0,
            written: 0,
            block: Vec::with_capacity(256),
        };
        let mut body = Vec::new();
        body.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        // Section length unknown: it is written as it goes.
        body.extend_from_slice(&u64::MAX.to_le_bytes());
        option(&mut body, OPT_COMMENT, comment.as_bytes());
        option(&mut body, SHB_USERAPPL, app.as_bytes());
        option(&mut body, OPT_END, &[]);
        w.write_block(SHB, &body)?;
        Ok(w)
    }

    /// Describes the next capture point; packets name it by the index returned.
    pub fn add_interface(&mut self, name: &str, linktype: u16, snaplen: u32) -> io::Result<u32> {
        let mut body = Vec::new();
        body.extend_from_slice(&linktype.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&snaplen.to_le_bytes());
        option(&mut body, IF_NAME, name.as_bytes());
        option(&mut body, IF_TSRESOL, &[9]);
        option(&mut body, OPT_END, &[]);
        self.write_block(IDB, &body)?;
        self.interfaces += 1;
        Ok(self.interfaces - 1)
    }

    /// One packet seen on `interface` at `t_ns`: `data` is what was captured of it (its
    /// headers, say), `orig_len` its length on the wire.
    pub fn packet(
        &mut self,
        interface: u32,
        t_ns: u64,
        orig_len: u32,
        data: &[u8],
    ) -> io::Result<()> {
        debug_assert!(interface < self.interfaces);
        let mut body = std::mem::take(&mut self.block);
        body.clear();
        body.extend_from_slice(&interface.to_le_bytes());
        body.extend_from_slice(&((t_ns >> 32) as u32).to_le_bytes());
        body.extend_from_slice(&(t_ns as u32).to_le_bytes());
        body.extend_from_slice(&(data.len() as u32).to_le_bytes());
        body.extend_from_slice(&orig_len.max(data.len() as u32).to_le_bytes());
        body.extend_from_slice(data);
        pad(&mut body);
        let res = self.write_block(EPB, &body);
        self.block = body;
        res
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    fn write_block(&mut self, kind: u32, body: &[u8]) -> io::Result<()> {
        debug_assert!(body.len().is_multiple_of(4));
        let total = (body.len() + 12) as u32;
        self.out.write_all(&kind.to_le_bytes())?;
        self.out.write_all(&total.to_le_bytes())?;
        self.out.write_all(body)?;
        self.out.write_all(&total.to_le_bytes())?;
        self.written += u64::from(total);
        Ok(())
    }
}

fn option(body: &mut Vec<u8>, code: u16, value: &[u8]) {
    body.extend_from_slice(&code.to_le_bytes());
    body.extend_from_slice(&(value.len() as u16).to_le_bytes());
    body.extend_from_slice(value);
    pad(body);
}

fn pad(body: &mut Vec<u8>) {
    body.resize(body.len().next_multiple_of(4), 0);
}

/// A packet read back from a pcapng section this crate wrote (little-endian, ns times).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub interface: u32,
    pub t_ns: u64,
    pub orig_len: u32,
    pub data: Vec<u8>,
}

/// A section read back: its interfaces' names and its packets.
#[derive(Clone, Debug, Default)]
pub struct Section {
    pub interfaces: Vec<String>,
    pub packets: Vec<Packet>,
}

/// A section `read` refused: what is wrong and, where the block is known, its byte offset.
/// Displayed as the messages always were (`bad block length 13 at byte 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcapError {
    /// The bytes end inside a block's framing.
    Truncated { at: usize },
    /// A block's length is too small, not a multiple of 4, past the end, or not repeated at
    /// the block's end.
    BadBlockLength { len: usize, at: usize },
    /// A section header that is not little-endian pcapng.
    NotLittleEndian { at: usize },
    /// An interface description's option runs past its block.
    OptionOverrun,
    /// A packet block too short for its fixed fields.
    ShortPacketBlock { at: usize },
    /// A packet block's captured length runs past its block.
    CaptureOverrun,
}

impl fmt::Display for PcapError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match *self {
            PcapError::Truncated { at } => write!(f, "truncated at byte {at}"),
            PcapError::BadBlockLength { len, at } => {
                write!(f, "bad block length {len} at byte {at}")
            }
            PcapError::NotLittleEndian { at } => {
                write!(f, "section header at byte {at}: not little-endian pcapng")
            }
            PcapError::OptionOverrun => f.write_str("option overruns its block"),
            PcapError::ShortPacketBlock { at } => {
                write!(f, "packet block at byte {at}: too short")
            }
            PcapError::CaptureOverrun => f.write_str("captured length overruns its block"),
        }
    }
}

impl std::error::Error for PcapError {}

/// For the callers whose own errors are still messages.
impl From<PcapError> for String {
    fn from(e: PcapError) -> String {
        e.to_string()
    }
}

/// Reads what `Writer` wrote, checking every block's framing; an error says what and where.
pub fn read(bytes: &[u8]) -> Result<Section, PcapError> {
    let u32_at = |at: usize| -> Result<u32, PcapError> {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
            .ok_or(PcapError::Truncated { at })
    };
    let mut out = Section::default();
    let mut at = 0;
    while at < bytes.len() {
        let kind = u32_at(at)?;
        let len = u32_at(at + 4)? as usize;
        if len < 12
            || !len.is_multiple_of(4)
            || at + len > bytes.len()
            || u32_at(at + len - 4)? as usize != len
        {
            return Err(PcapError::BadBlockLength { len, at });
        }
        let body = &bytes[at + 8..at + len - 4];
        match kind {
            SHB if body.get(..4) != Some(&BYTE_ORDER_MAGIC.to_le_bytes()[..]) => {
                return Err(PcapError::NotLittleEndian { at });
            }
            IDB => {
                let mut name = String::new();
                let mut o = 8;
                while o + 4 <= body.len() {
                    let code = u16::from_le_bytes([body[o], body[o + 1]]);
                    let olen = usize::from(u16::from_le_bytes([body[o + 2], body[o + 3]]));
                    let value = body
                        .get(o + 4..o + 4 + olen)
                        .ok_or(PcapError::OptionOverrun)?;
                    if code == IF_NAME {
                        name = String::from_utf8_lossy(value).into_owned();
                    }
                    o += 4 + olen.div_ceil(4) * 4;
                }
                out.interfaces.push(name);
            }
            EPB => {
                if body.len() < 20 {
                    return Err(PcapError::ShortPacketBlock { at });
                }
                let word = |i: usize| u32::from_le_bytes(body[i..i + 4].try_into().expect("4"));
                let caplen = word(12) as usize;
                let data = body.get(20..20 + caplen).ok_or(PcapError::CaptureOverrun)?;
                out.packets.push(Packet {
                    interface: word(0),
                    t_ns: (u64::from(word(4)) << 32) | u64::from(word(8)),
                    orig_len: word(16),
                    data: data.to_vec(),
                });
            }
            _ => {}
        }
        at += len;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn blocks_are_framed_by_their_length_and_padded_to_four_bytes() {
        let mut w = Writer::new(Vec::new(), "test", "a comment").unwrap();
        let ifc = w.add_interface("wifi", LINKTYPE_IPV4, 128).unwrap();
        w.packet(ifc, 5_000_000_123, 1500, &[0x45; 5]).unwrap();
        let written = w.written();
        let b = w.into_inner();
        assert_eq!(written, b.len() as u64);
        // Walk the blocks: each starts and ends with its total length.
        let mut at = 0;
        let mut kinds = vec![];
        while at < b.len() {
            let len = u32_at(&b, at + 4) as usize;
            assert_eq!(len % 4, 0);
            assert_eq!(u32_at(&b, at + len - 4) as usize, len);
            kinds.push(u32_at(&b, at));
            at += len;
        }
        assert_eq!(at, b.len());
        assert_eq!(kinds, [SHB, IDB, EPB]);
        // The packet block: interface, the time split in two halves, lengths, data.
        let epb = b.len() - (12 + 20 + 8);
        assert_eq!(u32_at(&b, epb), EPB);
        assert_eq!(u32_at(&b, epb + 8), 0);
        let t = (u64::from(u32_at(&b, epb + 12)) << 32) | u64::from(u32_at(&b, epb + 16));
        assert_eq!(t, 5_000_000_123);
        assert_eq!(u32_at(&b, epb + 20), 5);
        assert_eq!(u32_at(&b, epb + 24), 1500);
        assert_eq!(&b[epb + 28..epb + 33], &[0x45; 5]);
    }

    #[test]
    fn what_is_written_reads_back_and_broken_framing_is_refused() {
        let mut w = Writer::new(Vec::new(), "test", "").unwrap();
        let a = w.add_interface("wifi down", LINKTYPE_IPV4, 80).unwrap();
        let b = w.add_interface("lte up", LINKTYPE_IPV4, 80).unwrap();
        w.packet(b, 7, 52, &[1, 2, 3]).unwrap();
        w.packet(a, 1 << 40, 1500, &[9; 40]).unwrap();
        let bytes = w.into_inner();
        let s = read(&bytes).unwrap();
        assert_eq!(s.interfaces, ["wifi down", "lte up"]);
        let p = &s.packets;
        assert_eq!((p[0].interface, p[0].t_ns, p[0].orig_len), (1, 7, 52));
        assert_eq!(p[0].data, [1, 2, 3]);
        assert_eq!(
            (p[1].interface, p[1].t_ns, p[1].data.len()),
            (0, 1 << 40, 40)
        );
        assert!(read(&bytes[..bytes.len() - 2]).is_err());
        let mut bad = bytes.clone();
        bad[4] = 13; // the first block's length
        assert!(read(&bad).is_err());
    }

    /// Each refusal is its variant, displayed as the message it always was.
    #[test]
    fn refusals_are_typed_and_say_where() {
        let mut w = Writer::new(Vec::new(), "test", "").unwrap();
        let a = w.add_interface("wifi", LINKTYPE_IPV4, 80).unwrap();
        w.packet(a, 7, 52, &[1, 2, 3]).unwrap();
        let bytes = w.into_inner();
        let mut bad = bytes.clone();
        bad[4] = 13;
        let e = read(&bad).unwrap_err();
        assert_eq!(e, PcapError::BadBlockLength { len: 13, at: 0 });
        assert_eq!(e.to_string(), "bad block length 13 at byte 0");
        let e = read(&bytes[..6]).unwrap_err();
        assert_eq!(e, PcapError::Truncated { at: 4 });
        assert_eq!(e.to_string(), "truncated at byte 4");
        let mut big_endian = bytes.clone();
        big_endian[8..12].copy_from_slice(&BYTE_ORDER_MAGIC.to_be_bytes());
        let e = read(&big_endian).unwrap_err();
        assert_eq!(e, PcapError::NotLittleEndian { at: 0 });
        assert_eq!(
            String::from(e),
            "section header at byte 0: not little-endian pcapng"
        );
    }
}
