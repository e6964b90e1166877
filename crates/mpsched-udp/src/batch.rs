//! Batched UDP socket I/O: `recvmmsg` and `sendmmsg`, many datagrams per system call, into
//! and out of buffers of fixed size allocated once; with UDP GSO (`UDP_SEGMENT`: a run of
//! datagrams to one destination handed to the kernel as one) and GRO (`UDP_GRO`: such a run
//! received as one) where the kernel offers them. The unsafe libc plumbing lives here, behind
//! small safe types: `RecvBatch` and `SendBatch`.

use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;

/// Datagrams (or GSO runs) per system call.
pub const BATCH: usize = 32;

/// Bytes per receive slot without GRO: above the wire format's largest datagram
/// (`wire::MAX_DATAGRAM`, 1,472 bytes), so that a longer one arrives truncated and is
/// reported as such.
pub const SLOT: usize = 2048;

/// Receive slots with GRO, each as large as a UDP datagram can be (one slot holds a run of
/// up to 64 datagrams): 1 MiB in all.
pub const GRO_SLOTS: usize = 16;
pub const GRO_SLOT: usize = 65_536;
const _: () = assert!(GRO_SLOTS <= BATCH);

/// At most this many datagrams in one GSO run (the kernel's `UDP_MAX_SEGMENTS` is 64 or more)
/// and this many bytes (an IP packet's limit, with room for the headers).
const GSO_SEGMENTS: usize = 64;
const GSO_BYTES: usize = 65_000;

/// Control-message room per datagram (a `cmsghdr` and an `int` need 24 bytes), aligned.
type Control = [u64; 4];

/// Asks the kernel to hand over runs of datagrams received together as one (`UDP_GRO`); false
/// where it does not offer that. A socket with GRO needs a `RecvBatch::new(true)`.
pub fn enable_gro(socket: &UdpSocket) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: `on` outlives the call and its length is given.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_UDP,
            libc::UDP_GRO,
            (&on as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// One received datagram.
#[cfg(test)]
#[derive(Debug)]
pub struct Received<'a> {
    /// Its bytes (cut short if `truncated`).
    pub data: &'a [u8],
    /// Its source; `None` for an address family other than IPv4 and IPv6.
    pub from: Option<SocketAddr>,
    /// Longer than a slot: the kernel dropped its tail (`MSG_TRUNC`).
    pub truncated: bool,
}

/// Receive slots of fixed size, with their source addresses: `BATCH` of `SLOT` bytes, or
/// `GRO_SLOTS` of `GRO_SLOT` bytes for sockets with GRO.
pub struct RecvBatch {
    bufs: Box<[u8]>,
    slot: usize,
    addrs: Box<[libc::sockaddr_storage]>,
    lens: [usize; BATCH],
    /// The size of the datagrams a slot holds (GRO), else its length.
    segs: [usize; BATCH],
    flags: [libc::c_int; BATCH],
    count: usize,
}

impl RecvBatch {
    pub fn new(gro: bool) -> RecvBatch {
        let (slots, slot) = if gro {
            (GRO_SLOTS, GRO_SLOT)
        } else {
            (BATCH, SLOT)
        };
        RecvBatch {
            bufs: vec![0u8; slots * slot].into_boxed_slice(),
            slot,
            // SAFETY: `sockaddr_storage` is plain old data; all zeroes is a valid value.
            addrs: (0..slots)
                .map(|_| unsafe { mem::zeroed::<libc::sockaddr_storage>() })
                .collect(),
            lens: [0; BATCH],
            segs: [0; BATCH],
            flags: [0; BATCH],
            count: 0,
        }
    }

    /// Receives what is waiting on `socket`, up to a slot per datagram (or GRO run), without
    /// blocking: the number of slots filled (at least 1), or the error of the first
    /// (`WouldBlock` when none is waiting; a pending ICMP error such as `ConnectionRefused`).
    pub fn recv(&mut self, socket: &UdpSocket) -> io::Result<usize> {
        self.count = 0;
        let slots = self.addrs.len();
        // SAFETY: `iovec`, `mmsghdr` and the control buffers are plain old data; all zeroes is
        // a valid value.
        let mut iovs: [libc::iovec; BATCH] = unsafe { mem::zeroed() };
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { mem::zeroed() };
        let mut ctrl: [Control; BATCH] = [[0; 4]; BATCH];
        for (i, slot) in self.bufs.chunks_exact_mut(self.slot).enumerate() {
            iovs[i].iov_base = slot.as_mut_ptr().cast();
            iovs[i].iov_len = slot.len();
            let h = &mut hdrs[i].msg_hdr;
            h.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_iov = &mut iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = ctrl[i].as_mut_ptr().cast();
            h.msg_controllen = mem::size_of::<Control>();
        }
        // SAFETY: each of the first `slots` headers points at its own `iovec` (in `iovs`),
        // which points at its own slot of `self.bufs` with that slot's length, at its own
        // `sockaddr_storage` and its own control buffer, each with its size; all of them
        // outlive the call, which writes within those bounds only.
        let n = unsafe {
            libc::recvmmsg(
                socket.as_raw_fd(),
                hdrs.as_mut_ptr(),
                slots as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        for (i, hdr) in hdrs[..n].iter().enumerate() {
            self.lens[i] = (hdr.msg_len as usize).min(self.slot);
            self.segs[i] = gro_size(&hdr.msg_hdr).unwrap_or(self.lens[i]);
            self.flags[i] = hdr.msg_hdr.msg_flags;
            if (hdr.msg_hdr.msg_namelen as usize) < mem::size_of::<libc::sa_family_t>() {
                self.addrs[i].ss_family = libc::AF_UNSPEC as libc::sa_family_t;
            }
        }
        self.count = n;
        Ok(n)
    }

    /// Whether the last `recv` filled every slot (more may be waiting).
    pub fn is_full(&self) -> bool {
        self.count == self.addrs.len()
    }

    /// Hands each datagram of the last `recv` to `f` (its source, whether the kernel cut it
    /// short, its bytes), in order, a GRO run split into its datagrams; writable, so that the
    /// transport opens each in place.
    pub fn for_each_mut(&mut self, mut f: impl FnMut(Option<SocketAddr>, bool, &mut [u8])) {
        for i in 0..self.count {
            let from = to_socket_addr(&self.addrs[i]);
            let truncated = self.flags[i] & libc::MSG_TRUNC != 0;
            let data = &mut self.bufs[i * self.slot..i * self.slot + self.lens[i]];
            if data.is_empty() {
                // An empty datagram is one datagram, which `chunks_mut` would not yield.
                f(from, truncated, data);
                continue;
            }
            for d in data.chunks_mut(self.segs[i].max(1)) {
                f(from, truncated, d);
            }
        }
    }

    /// The datagrams of the last `recv`, in order (a GRO run split into its datagrams).
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = Received<'_>> + '_ {
        (0..self.count).flat_map(move |i| {
            let from = to_socket_addr(&self.addrs[i]);
            let truncated = self.flags[i] & libc::MSG_TRUNC != 0;
            let data = &self.bufs[i * self.slot..i * self.slot + self.lens[i]];
            // An empty datagram is one datagram, which `chunks` would not yield.
            let seg = self.segs[i].max(1);
            let empty = data.is_empty().then_some(&data[..0]);
            data.chunks(seg).chain(empty).map(move |data| Received {
                data,
                from,
                truncated,
            })
        })
    }
}

/// The size of the datagrams a received GRO run holds, from its control message.
fn gro_size(h: &libc::msghdr) -> Option<usize> {
    // SAFETY: `h` is a header the kernel filled: its control pointer and length describe
    // control messages within the buffer it pointed at, which is still alive; the macros
    // walk them within `msg_controllen`, and the data is read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO {
                let size = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                return usize::try_from(size).ok().filter(|&s| s > 0);
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

/// Datagrams to send, up to `BATCH`, each with its destination (`None` on a connected
/// socket), sent by one `sendmmsg` (more if the kernel takes part of them). Runs of
/// datagrams of one size to one destination go as one GSO message until the kernel refuses
/// one (then, for this batch's socket, never again).
pub struct SendBatch {
    queue: Vec<(Option<SocketAddr>, Vec<u8>)>,
    /// The buffers of datagrams sent (or dropped), for their owner to use again.
    spent: Vec<Vec<u8>>,
    gso: bool,
}

impl Default for SendBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl SendBatch {
    pub fn new() -> SendBatch {
        SendBatch {
            queue: Vec::with_capacity(BATCH),
            spent: Vec::with_capacity(BATCH),
            gso: true,
        }
    }

    /// Whether runs still go as GSO messages.
    #[cfg(test)]
    pub fn gso(&self) -> bool {
        self.gso
    }

    /// Sends each datagram as a message of its own.
    #[cfg(test)]
    pub fn disable_gso(&mut self) {
        self.gso = false;
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.queue.len() >= BATCH
    }

    /// Queues a datagram; the caller flushes when `is_full`.
    pub fn push(&mut self, to: Option<SocketAddr>, datagram: Vec<u8>) {
        debug_assert!(!self.is_full());
        self.queue.push((to, datagram));
    }

    /// Sends the queued datagrams, in order, and empties the queue. A datagram the network
    /// refused (`is_loss`) is lost, as on the wire (with a GSO message, its whole run), and
    /// the rest still go; another error stops (the datagrams not yet sent are dropped with
    /// the queue).
    pub fn flush(&mut self, socket: &UdpSocket) -> io::Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let mut from = 0;
        let r = loop {
            match self.send_from(socket, from) {
                Ok(()) => break Ok(()),
                // The kernel refused GSO here (too large for the route's MTU, no checksum
                // offload, ...): the run again as datagrams, and no GSO from now on.
                Err((e, at)) if self.gso && at.is_some() && refuses_gso(&e) => {
                    self.gso = false;
                    from = at.unwrap_or(0);
                }
                Err((e, _)) => break Err(e),
            }
        };
        self.spent.extend(self.queue.drain(..).map(|(_, d)| d));
        r
    }

    /// The buffers of the datagrams flushed since the last call.
    pub fn take_spent(&mut self) -> std::vec::Drain<'_, Vec<u8>> {
        self.spent.drain(..)
    }

    /// Sends the queue from datagram `first` on; on an error that stops, the error and, if
    /// the message that met it was a GSO run, where that run starts.
    fn send_from(
        &self,
        socket: &UdpSocket,
        first: usize,
    ) -> Result<(), (io::Error, Option<usize>)> {
        let queue = &self.queue[first..];
        let n = queue.len();
        // SAFETY: plain old data; all zeroes is a valid value.
        let mut addrs: [libc::sockaddr_storage; BATCH] = unsafe { mem::zeroed() };
        let mut iovs: [libc::iovec; BATCH] = unsafe { mem::zeroed() };
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { mem::zeroed() };
        let mut ctrl: [Control; BATCH] = [[0; 4]; BATCH];
        // Each message's first datagram and count.
        let mut runs = [(0usize, 0usize); BATCH];
        for (iov, (_, d)) in iovs.iter_mut().zip(queue) {
            iov.iov_base = d.as_ptr() as *mut libc::c_void;
            iov.iov_len = d.len();
        }
        let mut msgs = 0;
        let mut i = 0;
        while i < n {
            let (to, d) = &queue[i];
            let size = d.len();
            let mut j = i + 1;
            if self.gso && size > 0 {
                let mut bytes = size;
                while j < n && j - i < GSO_SEGMENTS && queue[j].0 == *to {
                    let len = queue[j].1.len();
                    if len == 0 || len > size || bytes + len > GSO_BYTES {
                        break;
                    }
                    j += 1;
                    bytes += len;
                    if len < size {
                        // A shorter datagram ends a run.
                        break;
                    }
                }
            }
            runs[msgs] = (i, j - i);
            let h = &mut hdrs[msgs].msg_hdr;
            h.msg_iov = iovs[i..].as_mut_ptr();
            h.msg_iovlen = j - i;
            if let Some(to) = to {
                h.msg_namelen = from_socket_addr(to, &mut addrs[msgs]);
                h.msg_name = (&mut addrs[msgs] as *mut libc::sockaddr_storage).cast();
            }
            if j - i > 1 {
                h.msg_control = ctrl[msgs].as_mut_ptr().cast();
                h.msg_controllen = mem::size_of::<Control>();
                // SAFETY: the header's control buffer is `Control`, 32 aligned bytes, room for
                // one `cmsghdr` with a `u16` (CMSG_SPACE(2) = 24); the message is written
                // within it, and the length then set to what it takes.
                unsafe {
                    let c = libc::CMSG_FIRSTHDR(h);
                    (*c).cmsg_level = libc::SOL_UDP;
                    (*c).cmsg_type = libc::UDP_SEGMENT;
                    (*c).cmsg_len = libc::CMSG_LEN(mem::size_of::<u16>() as u32) as usize;
                    std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), size as u16);
                    h.msg_controllen = libc::CMSG_SPACE(mem::size_of::<u16>() as u32) as usize;
                }
            }
            msgs += 1;
            i = j;
        }
        let mut sent = 0;
        while sent < msgs {
            // SAFETY: headers `sent..msgs` each point at their own `iovec`s over queued
            // datagrams' bytes (which the kernel only reads), at their own initialized
            // `sockaddr_storage` with its length if addressed, and at their own control
            // message if a GSO run; all of them outlive the call.
            let r = unsafe {
                libc::sendmmsg(
                    socket.as_raw_fd(),
                    hdrs[sent..].as_mut_ptr(),
                    (msgs - sent) as libc::c_uint,
                    0,
                )
            };
            if r >= 0 {
                // At least one, since `msgs - sent > 0`; an error after the first is
                // reported by the next call, on the message that met it.
                sent += (r as usize).max(1);
                continue;
            }
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if !is_loss(&e) {
                let (start, count) = runs[sent];
                return Err((e, (count > 1).then_some(first + start)));
            }
            // That message is lost; the next ones still go.
            sent += 1;
        }
        Ok(())
    }
}

/// The errors with which the kernel refuses a GSO message it cannot send as such.
fn refuses_gso(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO | libc::EINVAL | libc::EMSGSIZE | libc::ENOPROTOOPT | libc::EOPNOTSUPP)
    )
}

/// A send that the network refused: a lost datagram, as on the wire (other errors stop).
pub fn is_loss(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::NetworkUnreachable
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::AddrNotAvailable
    ) || e.raw_os_error() == Some(libc::ENETDOWN)
        || e.raw_os_error() == Some(libc::ENOBUFS)
}

/// The kernel's socket address as a `SocketAddr` (IPv4 or IPv6; else `None`).
fn to_socket_addr(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match libc::c_int::from(s.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a `sockaddr_in`, which it is large
            // and aligned enough for.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(a.sin_addr.s_addr.to_ne_bytes()),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for a `sockaddr_in6`.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                u32::from_be(a.sin6_flowinfo),
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Writes `addr` into `s` as the kernel's socket address; its length.
fn from_socket_addr(addr: &SocketAddr, s: &mut libc::sockaddr_storage) -> libc::socklen_t {
    match addr {
        SocketAddr::V4(a) => {
            // SAFETY: the storage is large and aligned enough for a `sockaddr_in`.
            let sin =
                unsafe { &mut *(s as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr = libc::in_addr {
                s_addr: u32::from_ne_bytes(a.ip().octets()),
            };
            mem::size_of::<libc::sockaddr_in>() as libc::socklen_t
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above, for a `sockaddr_in6`.
            let sin6 =
                unsafe { &mut *(s as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_flowinfo = a.flowinfo().to_be();
            sin6.sin6_addr = libc::in6_addr {
                s6_addr: a.ip().octets(),
            };
            sin6.sin6_scope_id = a.scope_id();
            mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datagram(i: usize) -> Vec<u8> {
        // Runs of 1,200-byte datagrams (GSO runs) among sizes from 1 to 1,472 bytes, each
        // byte naming its datagram and place.
        let len = if i % 9 < 6 { 1200 } else { 1 + (i * 97) % 1472 };
        (0..len).map(|j| (i * 31 + j) as u8).collect()
    }

    /// `n` datagrams of different sizes from `a` to `b` (unconnected, addressed per datagram)
    /// and back (connected), received whole and in order with their sources, with GSO and
    /// GRO or without. `no_check`: the sender's checksums off, which the kernel refuses GSO
    /// for (the fallback). Whether runs went as GSO messages.
    fn round_trip(bind: &str, n: usize, gso: bool, gro: bool, no_check: bool) -> bool {
        let a = UdpSocket::bind(bind).unwrap();
        let b = UdpSocket::bind(bind).unwrap();
        for s in [&a, &b] {
            crate::driver::enlarge_buffers(s);
            if gro {
                assert!(enable_gro(s));
            }
            if no_check {
                let on: libc::c_int = 1;
                // SAFETY: `on` outlives the call and its length is given.
                let r = unsafe {
                    libc::setsockopt(
                        s.as_raw_fd(),
                        libc::SOL_SOCKET,
                        11, // SO_NO_CHECK
                        (&on as *const libc::c_int).cast(),
                        mem::size_of::<libc::c_int>() as libc::socklen_t,
                    )
                };
                assert_eq!(r, 0);
            }
        }
        let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        let mut send = SendBatch::new();
        if !gso {
            send.disable_gso();
        }
        let mut recv = RecvBatch::new(gro);
        let mut coalesced = false;
        for (from, to, to_addr, connected) in [(&a, &b, b_addr, false), (&b, &a, a_addr, true)] {
            if connected {
                from.connect(to_addr).unwrap();
            }
            for i in 0..n {
                send.push((!connected).then_some(to_addr), datagram(i));
                if send.is_full() {
                    send.flush(from).unwrap();
                }
            }
            send.flush(from).unwrap();
            assert!(send.is_empty());
            let from_addr = from.local_addr().unwrap();
            let mut got = 0;
            let mut calls = 0;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while got < n {
                assert!(std::time::Instant::now() < deadline, "{got} of {n}");
                match recv.recv(to) {
                    Ok(k) => {
                        assert!((1..=BATCH).contains(&k));
                        calls += 1;
                        let before = got;
                        for d in recv.iter() {
                            assert!(!d.truncated);
                            assert_eq!(d.from, Some(from_addr));
                            assert_eq!(d.data, &datagram(got)[..], "datagram {got}");
                            got += 1;
                        }
                        coalesced |= got - before > k;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                    Err(e) => panic!("{e}"),
                }
            }
            assert!(calls < n, "{calls} calls for {n} datagrams: batched");
            assert_eq!(recv.recv(to).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        }
        // Runs arrive as runs only if they left as runs.
        assert!(!coalesced || send.gso());
        assert_eq!(coalesced, gso && gro && !no_check, "GRO runs");
        send.gso()
    }

    #[test]
    fn a_batch_crosses_ipv4_loopback_whole() {
        assert!(!round_trip("127.0.0.1:0", 300, false, false, false));
    }

    #[test]
    fn a_batch_crosses_ipv6_loopback_whole() {
        if UdpSocket::bind("[::1]:0").is_err() {
            eprintln!("no IPv6 loopback here: skipped");
            return;
        }
        assert!(!round_trip("[::1]:0", 300, false, false, false));
    }

    #[test]
    fn gso_runs_cross_loopback_whole_to_receivers_with_and_without_gro() {
        let mut binds = vec!["127.0.0.1:0"];
        if UdpSocket::bind("[::1]:0").is_ok() {
            binds.push("[::1]:0");
        }
        for bind in binds {
            for gro in [false, true] {
                assert!(round_trip(bind, 300, true, gro, false), "{bind} gro {gro}");
            }
        }
    }

    #[test]
    fn a_refused_gso_run_goes_as_datagrams_and_gso_stops() {
        assert!(!round_trip("127.0.0.1:0", 300, true, true, true));
    }

    #[test]
    fn a_datagram_longer_than_a_slot_arrives_marked_truncated() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.send_to(&[7u8; SLOT + 100], b.local_addr().unwrap())
            .unwrap();
        a.send_to(&[8u8; 10], b.local_addr().unwrap()).unwrap();
        a.send_to(&[], b.local_addr().unwrap()).unwrap();
        let mut recv = RecvBatch::new(false);
        let mut seen = vec![];
        while seen.len() < 3 {
            if recv.recv(&b).is_ok() {
                seen.extend(recv.iter().map(|d| (d.data.len(), d.truncated)));
            }
        }
        assert_eq!(seen, [(SLOT, true), (10, false), (0, false)]);
    }

    #[test]
    fn addresses_convert_both_ways() {
        // SAFETY: plain old data; all zeroes is a valid value.
        let mut s: libc::sockaddr_storage = unsafe { mem::zeroed() };
        for a in [
            "192.0.2.7:40000",
            "[2001:db8::1]:443",
            "[fe80::1%3]:9",
            "0.0.0.0:0",
        ] {
            let a: SocketAddr = a.parse().unwrap();
            from_socket_addr(&a, &mut s);
            assert_eq!(to_socket_addr(&s), Some(a));
        }
    }
}
