//! The Multipath TCP connection (RFC 8684 data-level semantics), one half per host: the
//! server sends (`Sender`), the client receives (`Receiver`). Plain TCP is the same machinery
//! with one subflow and no MPTCP options.

pub mod data;
pub mod dfrag;
pub mod meta_rto;
pub mod msk_rtx;
pub mod rcvwin;
pub mod receiver;
pub mod sender;
pub mod stats;

pub use receiver::{Reader, Receiver, ReceiverConfig};
pub use sender::{Sender, SenderConfig, DEFAULT_WRITE_CHUNK};

/// Which Linux MPTCP the hosts run. Both are modelled on the same TCP; they differ in when a
/// subflow ACKs, in the window and in how the send buffer grows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stack {
    /// Upstream Linux (5.6+), calibrated against 6.18 on this machine: data moves from the
    /// subflows to the connection as it arrives, so a subflow ACKs every second segment
    /// whatever the connection holds; each subflow's send buffer grows with its own window.
    #[default]
    Upstream,
    /// The out-of-tree multipath-tcp.org MPTCP (v0.9x on Linux 3.x-4.x), the kernel of the
    /// STMS, BLEST and ECF papers:
    /// - a subflow advertises the connection's window, and ACKs a second segment at once only
    ///   if that window would not shrink (`__tcp_ack_snd_check` with `__mptcp_select_window`):
    ///   while connection-level out-of-order data piles up, its ACKs wait for the delayed-ACK
    ///   timer or the next read (`mptcp_cleanup_rbuf`);
    /// - one `rcv_ssthresh` for the connection, grown while below the free space, and its
    ///   growth ACKs the segment at once (`tcp_grow_window` on the meta socket);
    /// - the window is half the free buffer (`tcp_adv_win_scale` = 1);
    /// - a subflow's send buffer is sized for what it sends in the largest subflow RTT
    ///   (`mptcp_check_snd_buf`: cwnd x RTT_max / sRTT segments), the connection's is their
    ///   sum up to `tcp_wmem[2]` (`mptcp_update_sndbuf`).
    OutOfTree,
}
