//! One TCP subflow: the sending half lives at the server, the receiving half at the client.

pub mod rx;
pub mod set;
pub mod tx;

pub use rx::SubflowRx;
pub use set::SubflowSet;
pub use tx::SubflowTx;
