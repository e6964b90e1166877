//! The Multipath TCP connection (RFC 8684 data-level semantics), one half per host: the
//! server sends (`Sender`), the client receives (`Receiver`). Plain TCP is the same machinery
//! with one subflow and no MPTCP options.

pub mod rcvwin;
pub mod receiver;
pub mod sender;
pub mod stats;

pub use receiver::{Receiver, ReceiverConfig};
pub use sender::{Sender, SenderConfig};
