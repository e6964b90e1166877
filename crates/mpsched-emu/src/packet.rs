//! A raw IP packet as the link model carries it.

use mpsched_core::link::HasWireLen;

/// An IP packet read from a TUN device (no packet-information header).
#[derive(Clone, Debug, Default)]
pub struct IpPacket {
    pub bytes: Vec<u8>,
}

impl HasWireLen for IpPacket {
    /// The IP packet's length: IP and transport headers included, no link-layer framing, as
    /// the simulator's `wire_len` counts a full segment as 1500 bytes.
    fn wire_len(&self) -> u32 {
        self.bytes.len() as u32
    }
}
