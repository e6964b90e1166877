//! Packet captures that Wireshark and tshark read: the pcapng format, and the IPv4, TCP and
//! MPTCP headers of modelled packets (which carry only the fields the model has).

pub mod mptcp;
pub mod pcapng;
pub mod tcpip;

pub use pcapng::{read, Packet, PcapError, Section, Writer, LINKTYPE_IPV4};
