//! One TCP subflow: the sending half lives at the server, the receiving half at the client.

pub mod prr;
pub mod rack;
pub mod rate;
pub mod rx;
pub mod scoreboard;
pub mod set;
pub mod sndbuf;
pub mod timer;
pub mod tlp;
pub mod tx;

pub use rx::SubflowRx;
pub use set::SubflowSet;
pub use tx::SubflowTx;
