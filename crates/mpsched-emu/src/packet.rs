//! A raw IP packet as the link model carries it.

use mpsched_core::link::HasWireLen;

/// An IP packet read from a TUN device (no packet-information header), with where it is on
/// its path's route through the links.
#[derive(Clone, Debug, Default)]
pub struct IpPacket {
    pub bytes: Vec<u8>,
    /// The path whose device it came from (its route and its output device).
    pub path: u16,
    /// Its position on the route: the index of the link it is in.
    pub hop: u8,
}

impl IpPacket {
    /// The TCP or UDP port of the server's side: the source port of a packet the server sent
    /// (`down`), else the destination port. Each connection of a run has a server port of its
    /// own, so this tells a packet's connection. `None` for other packets.
    pub fn server_port(&self, down: bool) -> Option<u16> {
        let b = &self.bytes;
        if b.len() < 20 || b[0] >> 4 != 4 || !matches!(b[9], 6 | 17) {
            return None;
        }
        let ihl = usize::from(b[0] & 0x0F) * 4;
        let at = if down { ihl } else { ihl + 2 };
        b.get(at..at + 2).map(|p| u16::from_be_bytes([p[0], p[1]]))
    }
}

impl HasWireLen for IpPacket {
    /// The IP packet's length: IP and transport headers included, no link-layer framing, as
    /// the simulator's `wire_len` counts a full segment as 1500 bytes.
    fn wire_len(&self) -> u32 {
        self.bytes.len() as u32
    }

    /// The 5-tuple of an IPv4 packet (addresses, protocol, and the ports of TCP or UDP),
    /// folded into 64 bits; anything else is flow 0.
    fn flow_key(&self) -> u64 {
        let b = &self.bytes;
        if b.len() < 20 || b[0] >> 4 != 4 {
            return 0;
        }
        let ihl = usize::from(b[0] & 0x0F) * 4;
        let proto = b[9];
        let ports = match (proto, b.get(ihl..ihl + 4)) {
            (6 | 17, Some(p)) => u32::from_be_bytes([p[0], p[1], p[2], p[3]]),
            _ => 0,
        };
        let src = u32::from_be_bytes([b[12], b[13], b[14], b[15]]);
        let dst = u32::from_be_bytes([b[16], b[17], b[18], b[19]]);
        let mut h = (u64::from(src) << 32 | u64::from(dst)) ^ u64::from(proto) << 56;
        h ^= u64::from(ports).rotate_left(17);
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(src_port: u16, dst_port: u16) -> IpPacket {
        let mut b = vec![0u8; 40];
        b[0] = 0x45;
        b[9] = 6;
        b[12..16].copy_from_slice(&[10, 10, 0, 2]);
        b[16..20].copy_from_slice(&[10, 20, 0, 1]);
        b[20..22].copy_from_slice(&src_port.to_be_bytes());
        b[22..24].copy_from_slice(&dst_port.to_be_bytes());
        IpPacket {
            bytes: b,
            ..IpPacket::default()
        }
    }

    #[test]
    fn flows_are_told_apart_by_their_ports() {
        assert_eq!(tcp(40000, 5201).flow_key(), tcp(40000, 5201).flow_key());
        assert_ne!(tcp(40000, 5201).flow_key(), tcp(40001, 5201).flow_key());
        assert_eq!(
            IpPacket {
                bytes: vec![0x60; 40],
                ..IpPacket::default()
            }
            .flow_key(),
            0
        );
        assert_eq!(IpPacket::default().flow_key(), 0);
    }

    #[test]
    fn the_server_port_names_the_connection_both_ways() {
        // Data from the server (10.20.0.1:5202) and the ACK back to it.
        assert_eq!(tcp(5202, 40000).server_port(true), Some(5202));
        assert_eq!(tcp(40000, 5202).server_port(false), Some(5202));
        assert_eq!(IpPacket::default().server_port(true), None);
    }
}
