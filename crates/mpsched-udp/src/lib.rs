//! mpsched-udp: the core's MPTCP connection over real networks, one UDP socket per path.
//!
//! - `wire`: the datagram format (docs/wire.md), parsed with every bound checked.
//! - `session`: the Noise handshake with a pre-shared key and the sealed datagrams after it;
//!   `aead`: the negotiated AEAD (AES-128-GCM or ChaCha20-Poly1305) and its key epochs.
//! - `secret`: the pre-shared secret (random, base64 or hex, wiped after use).
//! - `replay`, `amplify`: replayed datagrams refused; at most 3x toward an unproven peer.
//! - `admit`: replayed Initials refused, cookies under load; `drops`: what was dropped, by why.
//! - `server`, `client`: the two ends, sans-IO, each running the core (`Sender`, `Receiver`).
//! - `convert`: the core's packets as frames; `source`: the bytes the server sends.

pub mod admit;
pub mod aead;
pub mod amplify;
pub mod app;
mod batch;
pub mod client;
pub mod convert;
pub mod driver;
pub mod drops;
pub mod halves;
mod path;
mod pool;
pub mod random;
pub mod reassembly;
pub mod replay;
pub mod secret;
pub mod server;
pub mod session;
pub mod source;
pub mod timing;
pub mod wire;
