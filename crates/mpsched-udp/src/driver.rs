//! The real-time driver: the OS clock mapped onto the core's time, UDP sockets (the server's
//! one; the client's one per path, each bound to its own local address so that each takes
//! its own route), and a wait on the sockets with the next timer as deadline (`ppoll`, to the
//! nanosecond; the kernel's timer slack, 50 us, is the precision). Datagrams go in and out
//! in batches (`recvmmsg`/`sendmmsg`, up to `batch::BATCH` per system call; runs to one
//! destination as one GSO message, and received as one with GRO, where the kernel offers it).

use crate::batch::{self, RecvBatch, SendBatch};
use crate::client::{Client, Failure};
use crate::server::Server;
use mpsched_core::Time;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The core's time: nanoseconds since `epoch`.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    epoch: Instant,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            epoch: Instant::now(),
        }
    }
    pub fn now(&self) -> Time {
        Time(self.epoch.elapsed().as_nanos() as u64)
    }
}

/// Waits until one of `sockets` is readable or `deadline` (core time) passes; at most
/// `cap` so that a stop flag is seen.
fn wait(
    sockets: &[&UdpSocket],
    clock: &Clock,
    deadline: Option<Time>,
    cap: Duration,
) -> io::Result<()> {
    let now = clock.now();
    let wait = deadline.map_or(cap, |d| {
        Duration::from_nanos(d.0.saturating_sub(now.0)).min(cap)
    });
    if wait.is_zero() {
        return Ok(());
    }
    let mut fds: Vec<libc::pollfd> = sockets
        .iter()
        .map(|s| libc::pollfd {
            fd: s.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as libc::time_t,
        tv_nsec: wait.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs for the call's duration.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Socket buffers large enough for a window's burst at loopback speeds (the default, about
/// 200 KB, overflows and loses datagrams the transport then retransmits).
pub const SOCKET_BUFFER: usize = 4 << 20;

/// What the client's application reads between two looks at its sockets: 256 KiB hash in
/// about 0.15 ms here, so a datagram waits in the socket about that long for its ACK.
const READ_SLICE: usize = 256 << 10;

/// Receive batches taken from one socket before the client's loop looks at its timers again
/// (64 batches: at least 2,048 datagrams, 2.9 MB).
const DRAIN_BATCHES: u32 = 64;

/// Asks for `SOCKET_BUFFER` each way: beyond `net.core.rmem_max` if privileged (the FORCE
/// options), else as far as the limit allows.
pub fn enlarge_buffers(socket: &UdpSocket) {
    let fd = socket.as_raw_fd();
    let size = SOCKET_BUFFER as libc::c_int;
    for (force, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        let set = |opt| {
            // SAFETY: `size` outlives the call and its length is given.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    opt,
                    (&size as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            }
        };
        if set(force) != 0 {
            set(plain);
        }
    }
}

/// Sets the don't-fragment bit on what `socket` sends (IPv4 and IPv6) and has the kernel
/// refuse a datagram larger than the link rather than fragment it: the transport sizes its
/// datagrams to the path itself (RFC 8899; a probe larger than the path is lost, as a
/// datagram the network dropped). Without the kernel's PMTU cache (`PROBE`), so that an
/// ICMP message an attacker forged cannot shrink the path.
pub fn forbid_fragments(socket: &UdpSocket) {
    let fd = socket.as_raw_fd();
    let set = |level, opt, value: libc::c_int| {
        // SAFETY: `value` outlives the call and its length is given.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                opt,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        }
    };
    // Each applies to the sockets of its family (an IPv6 socket takes both); the others
    // fail harmlessly.
    set(
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        libc::IP_PMTUDISC_PROBE,
    );
    set(
        libc::IPPROTO_IPV6,
        libc::IPV6_MTU_DISCOVER,
        libc::IPV6_PMTUDISC_PROBE,
    );
    set(libc::IPPROTO_IPV6, libc::IPV6_DONTFRAG, 1);
}

/// Serves until `stop` is set: each datagram into the server, its answers out.
pub fn serve(
    socket: &UdpSocket,
    server: &mut Server,
    stop: &AtomicBool,
    mut tick: impl FnMut(&Server),
) -> io::Result<()> {
    socket.set_nonblocking(true)?;
    enlarge_buffers(socket);
    forbid_fragments(socket);
    let clock = Clock::start();
    server.set_unix_at_zero(crate::admit::unix_now_ns().saturating_sub(clock.now().0));
    let mut rx = RecvBatch::new(batch::enable_gro(socket));
    let mut tx = SendBatch::new();
    let mut last_tick = clock.now();
    while !stop.load(Ordering::Relaxed) {
        if clock.now().0 - last_tick.0 >= 100_000_000 {
            tick(server);
            last_tick = clock.now();
        }
        wait(
            &[socket],
            &clock,
            server.poll_timeout(),
            Duration::from_millis(100),
        )?;
        loop {
            match rx.recv(socket) {
                Ok(_) => {
                    rx.for_each_mut(|from, truncated, data| match from {
                        Some(from) if !truncated => server.handle_mut(clock.now(), from, data),
                        // Longer than any datagram of the wire format, or from no IP
                        // address: dropped and counted, never parsed in part.
                        _ => server.drops.malformed += 1,
                    });
                    // What the batch's ACKs released goes now, not once the socket is
                    // drained (the ACKs' wait would count as RTT).
                    transmit_server(server, socket, &mut tx)?;
                    if !rx.is_full() {
                        // Drained (what arrives meanwhile wakes the next wait at once).
                        break;
                    }
                    // Never drained while clients keep sending: up for the timers, the tick
                    // and `stop` all the same.
                    let now = clock.now();
                    if now.0 - last_tick.0 >= 100_000_000
                        || stop.load(Ordering::Relaxed)
                        || server.poll_timeout().is_some_and(|t| t <= now)
                    {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // A refused send toward a client that left shows up here: not the server's end.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e),
            }
        }
        let now = clock.now();
        if server.poll_timeout().is_some_and(|t| t <= now) {
            server.handle_timeout(now);
        }
        transmit_server(server, socket, &mut tx)?;
    }
    Ok(())
}

/// Sends what the server has to send, in batches; the buffers go back to it.
fn transmit_server(server: &mut Server, socket: &UdpSocket, tx: &mut SendBatch) -> io::Result<()> {
    while let Some((to, d)) = server.poll_transmit() {
        tx.push(Some(to), d);
        if tx.is_full() {
            tx.flush(socket)?;
            tx.take_spent().for_each(|b| server.recycle(b));
        }
    }
    tx.flush(socket)?;
    tx.take_spent().for_each(|b| server.recycle(b));
    Ok(())
}

/// Sends what the client has to send, batched per path's socket; a send that the network
/// refused is a lost datagram, as on the wire (`batch::is_loss`); other errors stop.
fn transmit(client: &mut Client, sockets: &[UdpSocket], tx: &mut [SendBatch]) -> io::Result<()> {
    while let Some((p, d)) = client.poll_transmit() {
        tx[p].push(None, d);
        if tx[p].is_full() {
            tx[p].flush(&sockets[p])?;
            tx[p].take_spent().for_each(|b| client.recycle(b));
        }
    }
    for (t, s) in tx.iter_mut().zip(sockets) {
        t.flush(s)?;
        t.take_spent().for_each(|b| client.recycle(b));
    }
    Ok(())
}

/// Hands one batch of what waits on path `p`'s socket to the client: whether more may be
/// waiting (the batch was full), or an error that stops.
fn receive(
    client: &mut Client,
    clock: &Clock,
    p: usize,
    socket: &UdpSocket,
    rx: &mut RecvBatch,
) -> io::Result<bool> {
    loop {
        match rx.recv(socket) {
            Ok(_) => {
                rx.for_each_mut(|_, truncated, data| {
                    if truncated {
                        // Longer than any datagram of the wire format: never parsed in part.
                        client.drops.malformed += 1;
                    } else {
                        client.handle_mut(clock.now(), p, data);
                    }
                });
                return Ok(rx.is_full());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // The server's port refused (ICMP): that path's datagrams are lost.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Ok(false),
            Err(e) => return Err(e),
        }
    }
}

/// The client's sockets: one per path, bound to the path's local address and connected to
/// the server; the local address that failed, and why.
pub fn client_sockets(
    locals: &[SocketAddr],
    server: SocketAddr,
) -> Result<Vec<UdpSocket>, (SocketAddr, io::Error)> {
    locals
        .iter()
        .map(|&local| {
            let open = || {
                let s = UdpSocket::bind(local)?;
                s.connect(server)?;
                s.set_nonblocking(true)?;
                enlarge_buffers(&s);
                forbid_fragments(&s);
                Ok(s)
            };
            open().map_err(|e| (local, e))
        })
        .collect()
}

/// How a client's run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The whole stream arrived.
    Complete,
    /// The server closed (an endless stream it stopped).
    Closed,
    /// `stop` was set (Ctrl-C).
    Stopped,
    /// `until` passed.
    Duration,
    /// The connection failed.
    Failed(Failure),
}

/// Runs `client` until the stream is complete, the server closes, `stop` is set, `until`
/// passes, or the client fails; `sink` takes the stream's bytes in order, `tick` is called
/// about every 100 ms (progress).
#[allow(clippy::too_many_arguments)]
pub fn run_client(
    sockets: &[UdpSocket],
    client: &mut Client,
    clock: &Clock,
    stop: &AtomicBool,
    until: Option<Time>,
    mut sink: impl FnMut(&[u8]) -> io::Result<()>,
    mut tick: impl FnMut(&Client, Time),
) -> io::Result<End> {
    // Runs of datagrams received as one where the kernel offers it (any socket with GRO
    // needs the large slots).
    let gro = sockets
        .iter()
        .fold(false, |any, s| batch::enable_gro(s) | any);
    let mut rx = RecvBatch::new(gro);
    let mut tx: Vec<SendBatch> = sockets.iter().map(|_| SendBatch::new()).collect();
    let refs: Vec<&UdpSocket> = sockets.iter().collect();
    let mut last_tick = clock.now();
    loop {
        let now = clock.now();
        if client.poll_timeout().is_some_and(|t| t <= now) {
            client.handle_timeout(now);
        }
        transmit(client, sockets, &mut tx)?;
        if now.0 - last_tick.0 >= 100_000_000 {
            tick(client, now);
            last_tick = now;
        }
        let end = if client.is_complete() {
            Some(End::Complete)
        } else if client.is_closed() {
            Some(End::Closed)
        } else if stop.load(Ordering::Relaxed) {
            Some(End::Stopped)
        } else if until.is_some_and(|u| now >= u) {
            Some(End::Duration)
        } else {
            client.failed().map(End::Failed)
        };
        if let Some(how) = end {
            // What arrived is the application's before the run ends.
            client.read_with(now, usize::MAX, &mut sink)?;
            if let End::Failed(_) = how {
                tick(client, now);
                return Ok(how);
            }
            tick(client, now);
            // Done: say so, and wait a little for the server's counters.
            client.close();
            transmit(client, sockets, &mut tx)?;
            let end = now + mpsched_core::Dur::from_millis(500);
            while client.server_stats().is_none() && clock.now() < end {
                wait(&refs, clock, Some(end), Duration::from_millis(100))?;
                for (p, s) in sockets.iter().enumerate() {
                    // An error here ends nothing: the stream is done.
                    while let Ok(true) = receive(client, clock, p, s, &mut rx) {}
                }
                client.read_with(clock.now(), usize::MAX, &mut sink)?;
            }
            return Ok(how);
        }
        let deadline = match (client.poll_timeout(), until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if client.unread_bytes() == 0 {
            wait(&refs, clock, deadline, Duration::from_millis(100))?;
        }
        // The network first: every socket drained, a batch at a time with the ACKs each
        // called for sent before the next (held back until every socket is drained, they
        // would wait as long as data keeps coming, and the sender would see that wait as
        // RTT). Then the application's turn, a slice at a time: what it has not read counts
        // against the receive window, so a reader slower than the network closes the window
        // (the sender waits) instead of leaving the window's worth of datagrams queued in the
        // socket, where every ACK would wait behind them (the smoothed RTT on the loopback
        // was 4-5 ms against a minimum of 0.1 when the application read each batch before
        // looking at the sockets again). While data keeps coming, the loop still comes up
        // for the timers, the progress tick, Ctrl-C and `until`.
        loop {
            // Every socket drained first, up to `DRAIN_BATCHES` batches each: the sender's
            // data is bounded by the window, a flood of datagrams is not, and must not keep
            // the loop from its timers and Ctrl-C.
            let mut more = false;
            for (p, s) in sockets.iter().enumerate() {
                let mut batches = 0;
                while receive(client, clock, p, s, &mut rx)? {
                    transmit(client, sockets, &mut tx)?;
                    batches += 1;
                    if batches == DRAIN_BATCHES {
                        more = true;
                        break;
                    }
                }
            }
            transmit(client, sockets, &mut tx)?;
            if client.read_with(clock.now(), READ_SLICE, &mut sink)? > 0 {
                // The window update the read may call for.
                transmit(client, sockets, &mut tx)?;
            }
            more |= client.unread_bytes() > 0;
            let now = clock.now();
            if !more
                || now.0 - last_tick.0 >= 100_000_000
                || stop.load(Ordering::Relaxed)
                || until.is_some_and(|u| now >= u)
                || client.poll_timeout().is_some_and(|t| t <= now)
            {
                break;
            }
        }
    }
}
