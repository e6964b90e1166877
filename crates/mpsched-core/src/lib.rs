//! mpsched-core: a sans-IO model of TCP and Multipath TCP.
//!
//! Links, TCP subflows, the MPTCP connection, congestion controls and schedulers are plain
//! state machines: they take packets and the current time and return packets and the time
//! they next need to run. No clock, socket, thread or global state lives here; a driver (the
//! discrete-event simulator, or a real-time emulator) owns time.
//!
//! Specifications implemented, cited where they apply: RFC 5681 (congestion control),
//! RFC 6298 (RTO), RFC 6675 (SACK loss recovery), RFC 6937 (PRR), RFC 7323 (timestamps),
//! RFC 9438 (CUBIC), RFC 6356 (LIA), OLIA (Khalili et al.), RFC 8684 (MPTCP), and the
//! schedulers of the papers in `shared/papers`.

pub mod batch;
pub mod cc;
pub mod codel;
pub mod conn;
pub mod fq_codel;
pub mod jiffies;
pub mod link;
pub mod loss;
pub mod opportunities;
pub mod packet;
pub mod rng;
pub mod rtt;
pub mod sched;
pub mod subflow;
pub mod time;
pub mod trace;
pub mod units;

pub use time::{Dur, Time};
pub use units::{Bytes, Rate};
