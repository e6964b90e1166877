//! The engine between two TUN devices in two network namespaces, measured with UDP. Needs
//! root, `ip` and /dev/net/tun; skips (with a message) where they are missing, unless
//! `MPSCHED_REQUIRE_TESTBED=1` (CI): then it fails.

use mpsched_core::link::{LinkConfig, QueueLimit};
use mpsched_core::{Dur, Rate};
use mpsched_emu::config::{LinkChange, LinkPlan};
use mpsched_emu::engine::{self, Port, Shared};
use mpsched_emu::sys;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

fn missing() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("needs /dev/net/tun".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("needs iproute2's ip".into()),
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two namespaces, removed on drop.
struct Namespaces([String; 2]);

impl Namespaces {
    fn new(tag: &str) -> Namespaces {
        let id = format!("mpsemu-rs{}{tag}", std::process::id());
        let names = [format!("{id}-c"), format!("{id}-s")];
        for n in &names {
            ip(&["netns", "add", n]);
            ip(&["-n", n, "link", "set", "lo", "up"]);
            // No IPv6 chatter (router solicitations...) on the TUN devices.
            ip(&[
                "netns",
                "exec",
                n,
                "sysctl",
                "-q",
                "-w",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
            ]);
        }
        Namespaces(names)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

fn plan(down: bool, rate: Rate, delay: Dur, queue: QueueLimit) -> LinkPlan {
    LinkPlan {
        path: 0,
        name: "p".into(),
        down,
        link: LinkConfig::new(rate, delay, queue),
        stream: if down { 1 } else { 2 },
        changes: Vec::<LinkChange>::new(),
    }
}

/// The timing checks need the emulator's threads to run when due. A virtual machine's CPU
/// is sometimes taken away for milliseconds (steal time), whatever the threads' priority, so
/// the burst is tried up to five times, two seconds apart (a CI run on 2026-11-27 missed in
/// three attempts within two seconds, then passed three times in a row alone: the steal came
/// in a spell longer than the attempts): the emulator must meet its timing in one of them,
/// and every attempt must keep the queue's accounting exact.
#[test]
fn udp_burst_through_the_engine_sees_rate_delay_and_queue() {
    if let Some(why) = missing() {
        // CI (`.ci/run`, as root) sets MPSCHED_REQUIRE_TESTBED=1: there a skip would pass
        // without testing anything.
        assert!(
            std::env::var("MPSCHED_REQUIRE_TESTBED").as_deref() != Ok("1"),
            "MPSCHED_REQUIRE_TESTBED=1 but the TUN engine test {why}"
        );
        eprintln!("skipped: the TUN engine test {why}");
        return;
    }
    let mut misses = vec![];
    for attempt in 0..5 {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
        match udp_burst(&format!("a{attempt}")) {
            Ok(()) => return,
            Err(e) => {
                eprintln!("attempt {attempt}: {e}");
                misses.push(e);
            }
        }
    }
    panic!("the emulator missed its timing in every attempt: {misses:?}");
}

/// One burst; `Err` when the timing (not the accounting) is off.
fn udp_burst(tag: &str) -> Result<(), String> {
    let ns = Namespaces::new(tag);
    let (cns, sns) = (&ns.0[0], &ns.0[1]);
    let c = sys::open_tun(cns, "rsc0").unwrap();
    let s = sys::open_tun(sns, "rss0").unwrap();
    ip(&["-n", cns, "addr", "add", "10.10.0.2/32", "dev", "rsc0"]);
    ip(&["-n", cns, "link", "set", "rsc0", "up"]);
    ip(&["-n", cns, "route", "add", "10.20.0.1/32", "dev", "rsc0"]);
    ip(&["-n", sns, "addr", "add", "10.20.0.1/32", "dev", "lo"]);
    ip(&["-n", sns, "link", "set", "rss0", "up"]);
    ip(&["-n", sns, "route", "add", "10.10.0.2/32", "dev", "rss0"]);

    // The up link (client to server): 10 Mbit/s, 5 ms, 150 packets of queue.
    let rate = Rate::mbps(10);
    let delay = Dur::from_millis(5);
    let up = Port::new(
        plan(false, rate, delay, QueueLimit::Packets(150)),
        1,
        c.as_raw_fd(),
        s.as_raw_fd(),
    );
    let down = Port::new(
        plan(true, rate, delay, QueueLimit::Packets(150)),
        1,
        s.as_raw_fd(),
        c.as_raw_fd(),
    );
    let shared = Arc::new(Shared::new());
    let workers: Vec<_> = [vec![down], vec![up]]
        .into_iter()
        .map(|ports| {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                sys::tune_thread(10).ok();
                engine::run(ports, &shared, 50_000).unwrap()
            })
        })
        .collect();

    // Sockets live in the namespace they were created in.
    let rx = sys::in_netns(sns, || UdpSocket::bind("10.20.0.1:9000")).unwrap();
    let tx = sys::in_netns(cns, || UdpSocket::bind("10.10.0.2:0")).unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    // This thread stamps the arrivals: real-time priority, so that a busy machine does not
    // delay its wake-ups (the emulator's threads have it too).
    sys::tune_thread(5).ok();
    // 200 datagrams of 1250 bytes on the wire (1 ms each at 10 Mbit/s), sent at once.
    let payload = vec![0u8; 1250 - 28];
    let sent_at = sys::now_ns();
    for _ in 0..200 {
        tx.send_to(&payload, "10.20.0.1:9000").unwrap();
    }
    let mut arrivals = vec![];
    let mut buf = [0u8; 2048];
    while let Ok(n) = rx.recv(&mut buf) {
        assert_eq!(n, payload.len());
        arrivals.push(sys::now_ns());
        rx.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
    }
    shared.stop.store(true, Ordering::SeqCst);
    let reports: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let up = &reports[1].links[0];

    // The queue holds 150 (the one in service included); the burst outlasts no serialization
    // by much, so 150 or a few more get through and the rest is dropped at the tail.
    let n = arrivals.len() as u64;
    assert_eq!(up.delivered, n);
    assert_eq!(up.queue_drops, 200 - n);
    assert_eq!(up.random_drops, 0);
    assert_eq!(up.sizes, vec![(1250, n)]);
    if !(150..=155).contains(&n) {
        return Err(format!("{n} delivered"));
    }
    // Datagram k arrives after k + 1 serializations and the propagation delay, plus the time
    // the receiving stack takes to hand it over: on a busy machine the kernel defers that to
    // ksoftirqd now and then, by milliseconds, but not for every datagram. So the smallest
    // excess over the ideal schedule is the emulator's own timing.
    let excess_ms = arrivals
        .iter()
        .enumerate()
        .map(|(k, &t)| {
            let ideal = sent_at + delay.as_nanos() + (k as u64 + 1) * 1_000_000;
            (t as f64 - ideal as f64) / 1e6
        })
        .fold(f64::INFINITY, f64::min);
    if !(0.0..0.6).contains(&excess_ms) {
        return Err(format!(
            "arrivals at least {excess_ms} ms later than rate and delay allow"
        ));
    }
    // Back-to-back at the link rate.
    let span = (arrivals[arrivals.len() - 1] - arrivals[0]) as f64 / 1e9;
    let measured = (n - 1) as f64 * 1250.0 * 8.0 / span;
    if (measured / 10e6 - 1.0).abs() >= 0.01 {
        return Err(format!("{measured} bit/s"));
    }
    if up.lateness.p99_us >= 1000.0 {
        return Err(format!("{:?}", up.lateness));
    }
    Ok(())
}
