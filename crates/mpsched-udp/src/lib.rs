//! mpsched-udp: the core's MPTCP connection over real networks, one UDP socket per path.
//!
//! - `wire`: the datagram format (docs/wire.md), parsed with every bound checked.
//! - `session`: the Noise handshake with a pre-shared key and the sealed datagrams after it.
//! - `replay`, `amplify`: replayed datagrams refused; at most 3x toward an unproven peer.

pub mod amplify;
pub mod replay;
pub mod session;
pub mod wire;
