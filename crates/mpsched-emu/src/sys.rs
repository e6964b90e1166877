//! The few system calls the emulator needs, over `libc`: TUN devices in a network namespace,
//! the monotonic clock, epoll, timerfd, thread CPU time and scheduling.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn open_path(path: &str, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = CString::new(path).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: a valid C string; the returned descriptor is owned by the OwnedFd.
    let fd = check(unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) })?;
    // SAFETY: `fd` was just opened and is not owned elsewhere.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of every emulator time stamp (and of Python's
/// `time.monotonic_ns`, which the driver uses to set the epoch).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Runs `f` with the calling thread in the network namespace `ns` (a name under /run/netns,
/// or "" for the current one), then returns the thread to its own namespace.
pub fn in_netns<T>(ns: &str, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    if ns.is_empty() {
        return f();
    }
    let own = open_path("/proc/thread-self/ns/net", libc::O_RDONLY)?;
    let target = open_path(&format!("/run/netns/{ns}"), libc::O_RDONLY)
        .map_err(|e| io::Error::new(e.kind(), format!("network namespace {ns}: {e}")))?;
    // SAFETY: both descriptors are open namespace files.
    check(unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) })
        .map_err(|e| io::Error::new(e.kind(), format!("setns {ns}: {e}")))?;
    let out = f();
    // SAFETY: as above; failing to return would leave the thread in the wrong namespace.
    check(unsafe { libc::setns(own.as_raw_fd(), libc::CLONE_NEWNET) })
        .expect("cannot return to the emulator's own network namespace");
    out
}

/// Creates the (non-persistent) TUN device `name` in namespace `ns` and returns its
/// non-blocking descriptor. The device disappears when the descriptor is closed.
pub fn open_tun(ns: &str, name: &str) -> io::Result<OwnedFd> {
    in_netns(ns, || {
        let fd = open_path("/dev/net/tun", libc::O_RDWR | libc::O_NONBLOCK)?;
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
            _pad: [0; 22],
        };
        if name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "device name too long",
            ));
        }
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads and writes an ifreq, which `req` is laid out as.
        check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) })
            .map_err(|e| io::Error::new(e.kind(), format!("TUNSETIFF {name} in {ns:?}: {e}")))?;
        Ok(fd)
    })
}

/// `read(2)`; `Ok(None)` when nothing is waiting.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: `buf` is valid for `buf.len()` bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(e),
    }
}

pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// An epoll instance with a timerfd in it: waits for input or an absolute deadline.
pub struct Waiter {
    epoll: OwnedFd,
    timer: OwnedFd,
}

impl Waiter {
    pub fn new(inputs: &[RawFd]) -> io::Result<Waiter> {
        // SAFETY: plain system calls; descriptors are owned right away.
        let epoll =
            unsafe { OwnedFd::from_raw_fd(check(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
        let timer = unsafe {
            OwnedFd::from_raw_fd(check(libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            ))?)
        };
        let w = Waiter { epoll, timer };
        for &fd in inputs.iter().chain([&w.timer.as_raw_fd()]) {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: fd as u64,
            };
            // SAFETY: `ev` is a valid epoll_event; `fd` is open.
            check(unsafe {
                libc::epoll_ctl(w.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev)
            })?;
        }
        Ok(w)
    }

    /// Blocks until an input is readable or CLOCK_MONOTONIC reaches `deadline_ns`.
    pub fn wait_until(&self, deadline_ns: u64) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid descriptors and structures.
        check(unsafe {
            libc::timerfd_settime(
                self.timer.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        })?;
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 16];
        // SAFETY: `events` has room for 16 entries.
        let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), events.as_mut_ptr(), 16, -1) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        // Clear the timer's expiry count, if it fired (non-blocking).
        let mut buf = [0u8; 8];
        let _ = read(self.timer.as_raw_fd(), &mut buf);
        Ok(())
    }
}

/// CPU time (user, system) in seconds of the calling thread, or of the whole process.
pub fn cpu_times(thread: bool) -> (f64, f64) {
    // SAFETY: `ru` is a valid rusage to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let who = if thread {
        libc::RUSAGE_THREAD
    } else {
        libc::RUSAGE_SELF
    };
    // SAFETY: as above.
    unsafe { libc::getrusage(who, &mut ru) };
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// Timer slack of 1 ns for the calling thread (the default 50 us would delay every wake-up),
/// and SCHED_FIFO at `rt_priority` if it is not 0.
pub fn tune_thread(rt_priority: u32) -> io::Result<()> {
    // SAFETY: plain prctl/sched calls on the calling thread.
    check(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) })?;
    if rt_priority > 0 {
        let param = libc::sched_param {
            sched_priority: rt_priority as libc::c_int,
        };
        // SAFETY: as above.
        check(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) })?;
    }
    Ok(())
}

pub static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::SeqCst);
}

const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// SIGINT, SIGTERM and SIGHUP set [`STOP`] and interrupt blocking calls (no SA_RESTART).
pub fn install_stop_handlers() {
    for sig in STOP_SIGNALS {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Blocks (`true`) or unblocks the stop signals in the calling thread, so that they reach the
/// main thread (which is waiting on stdin) rather than a link thread.
pub fn block_stop_signals(block: bool) {
    // SAFETY: a local signal set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in STOP_SIGNALS {
            libc::sigaddset(&mut set, sig);
        }
        let how = if block {
            libc::SIG_BLOCK
        } else {
            libc::SIG_UNBLOCK
        };
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}
