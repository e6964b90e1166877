//! mpsched-emu: the mpsched link model in real time, between TUN devices.
//!
//! Each `[[path]]` of a scenario is a pair of links, exactly as in the simulator: the *down*
//! link carries data from the server to the client, the *up* link carries ACKs back. A link is
//! [`mpsched_core::link::Link`] itself (Bernoulli loss, a drop-tail FIFO, a serializer at the
//! link rate, a propagation delay line), carrying raw IP packets instead of modelled ones; its
//! wire size is the IP packet's length, so a 1500-byte MTU path carries 1500-byte packets,
//! as the simulator counts full segments. Schedules of rate and delay apply at the same
//! offsets as in the simulator, counted from an epoch the driver sets (the moment the client
//! connects, which is time zero of a simulation).
//!
//! # Topology
//!
//! Two network namespaces, `client` and `server`, and per path one TUN device in each
//! (created by this process inside the namespaces, so they vanish with it):
//!
//! ```text
//!   client netns                 mpsched-emu                  server netns
//!   [tcp stack] -- tun c<p> <=> up link p   (ACKs)   <=> tun s<p> -- [tcp stack]
//!                          <=> down link p (data)  <=>
//! ```
//!
//! Whatever the client's kernel sends on `c<p>` enters the up link of path `p` and is written
//! into `s<p>` when the link releases it; the other way through the down link. No router, no
//! bridge, no veth: a TUN device is a point-to-point layer-3 interface, and the emulator is
//! the wire between the two namespaces. Addresses and routes are the driver's business
//! (`mpsched emulate` sets them up).
//!
//! # Real time
//!
//! One thread per direction (or one for all links), each an epoll loop over its input TUN
//! descriptors and a `timerfd`. A thread sleeps until shortly before the next release (the
//! `poll_at` of its links), then spins for the last `spin_us` microseconds and writes the
//! packet at its due time. Every release records its lateness (actual minus due time), and
//! each thread its CPU time, reported when the emulator stops.

pub mod app;
pub mod config;
pub mod engine;
pub mod hist;
pub mod packet;
pub mod pcap;
pub mod sys;
pub mod tcp;
