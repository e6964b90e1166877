//! The emulator's process: `mpsched-emu CONFIG.json` (this crate's binary), or the same started
//! from the Python package (`python -m mpsched.testbed.emulator CONFIG.json`, through the
//! native module), so that an installed wheel has the emulator without a source tree.
//!
//! Protocol on stdin/stdout (one line each, for the driver, `mpsched emulate`):
//! - once the TUN devices exist, prints `{"ready": true, ...}`;
//! - reads commands from stdin: `epoch NS` sets time zero of the scenario's schedules
//!   (CLOCK_MONOTONIC nanoseconds), `stop` (or the end of stdin, SIGINT, SIGTERM, SIGHUP)
//!   stops the links;
//! - then prints the report (`{"report": ...}`) and exits; the TUN devices vanish with it.

use crate::config::{EmuConfig, Threads, PCAP_PACKETS};
use crate::engine::{self, PathIo, Port, Shared, WorkerReport};
use crate::hist::{Hist, Lateness};
use crate::sys;
use mpsched_scenario::plan::{down_link, up_link};
use serde::Serialize;
use std::io::{BufRead, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

#[derive(Serialize)]
struct Report {
    wall_s: f64,
    /// Process CPU time, the kernel's work in the emulator's write() calls included (a TUN
    /// write runs the receiving stack in the writer's context).
    user_s: f64,
    sys_s: f64,
    cpu_percent: f64,
    spin_us: u64,
    threads: Vec<WorkerReport>,
    lateness: Lateness,
    /// Packets written to the pcapng (`pcap` in the config), or why it could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pcap_packets: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pcap_error: Option<String>,
}

fn fail(msg: String) -> ! {
    eprintln!("mpsched-emu: {msg}");
    std::process::exit(2);
}

/// Runs the emulator with `args` as a command line (`args[0]` the program's name); exits the
/// process when done.
pub fn run(args: &[String]) -> ! {
    if args.len() != 2 || args[1].starts_with('-') {
        eprintln!("usage: mpsched-emu CONFIG.json");
        std::process::exit(2);
    }
    let text =
        std::fs::read_to_string(&args[1]).unwrap_or_else(|e| fail(format!("{}: {e}", args[1])));
    let cfg = EmuConfig::from_json(&text).unwrap_or_else(|e| fail(e.to_string()));
    let seed = cfg.scenario().unwrap_or_else(|e| fail(e.to_string())).seed;
    let plans = cfg.links().unwrap_or_else(|e| fail(e.to_string()));
    let routes = cfg.routes().unwrap_or_else(|e| fail(e.to_string()));

    // The TUN devices: per path one in the client's namespace, one in the server's.
    let mut fds: Vec<(OwnedFd, OwnedFd)> = vec![];
    for d in &cfg.devices {
        let c = sys::open_tun(&d.client_ns, &d.client_dev).unwrap_or_else(|e| fail(e.to_string()));
        let s = sys::open_tun(&d.server_ns, &d.server_dev).unwrap_or_else(|e| fail(e.to_string()));
        fds.push((c, s));
    }
    let pcap_cap = match cfg.header_trace {
        0 => PCAP_PACKETS,
        n => n,
    };
    // Which worker runs each link (per direction, or one for all), and its index there.
    let worker_of = |down: bool| match cfg.threads {
        Threads::PerDirection => usize::from(!down),
        Threads::Single => 0,
    };
    let n_workers = match cfg.threads {
        Threads::PerDirection => 2,
        Threads::Single => 1,
    };
    let mut groups: Vec<Vec<Port>> = (0..n_workers).map(|_| Vec::new()).collect();
    let mut at: Vec<(usize, usize)> = Vec::with_capacity(plans.len());
    let n_paths = cfg.devices.len();
    for plan in plans {
        let w = worker_of(plan.down);
        let own = plan.path < n_paths;
        let mut port = Port::link(plan, seed);
        if own {
            // A path's own link records the packets its device gives, in either direction.
            if cfg.header_trace > 0 {
                port.trace_headers(cfg.header_trace);
            }
            if cfg.pcap.is_some() {
                port.capture_packets(pcap_cap);
            }
        }
        at.push((w, groups[w].len()));
        groups[w].push(port);
    }
    // Per path and direction: the device it reads, the one it writes, its route.
    let mut ios: Vec<Vec<PathIo>> = (0..n_workers).map(|_| Vec::new()).collect();
    for (p, route) in routes.iter().enumerate() {
        let (c, s) = (fds[p].0.as_raw_fd(), fds[p].1.as_raw_fd());
        for (down, links, input, output, own) in [
            (true, &route.down, s, c, down_link(p)),
            (false, &route.up, c, s, up_link(p)),
        ] {
            let w = worker_of(down);
            ios[w].push(PathIo {
                path: p,
                input,
                output,
                route: links.iter().map(|&l| at[l].1).collect(),
                log: at[own].1,
            });
        }
    }

    sys::install_stop_handlers();
    sys::block_stop_signals(true);
    let shared = Arc::new(Shared::new());
    let spin_ns = cfg.spin_us * 1000;
    let rt = cfg.rt_priority;
    let workers: Vec<_> = groups
        .into_iter()
        .zip(ios)
        .enumerate()
        .map(|(i, (ports, paths))| {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(format!("link-{i}"))
                .spawn(move || {
                    if let Err(e) = sys::tune_thread(rt) {
                        eprintln!("mpsched-emu: thread tuning (rt_priority {rt}): {e}");
                    }
                    engine::run_routed(ports, paths, &shared, spin_ns)
                })
                .unwrap_or_else(|e| fail(format!("cannot start a thread: {e}")))
        })
        .collect();
    sys::block_stop_signals(false);
    let start = sys::now_ns();
    let (u0, s0) = sys::cpu_times(false);

    let mut out = std::io::stdout().lock();
    let ready = serde_json::json!({
        "ready": true,
        "pid": std::process::id(),
        "devices": cfg.devices.len() * 2,
        "links": at.len(),
    });
    let _ = writeln!(out, "{ready}");
    let _ = out.flush();

    // Commands, until stop.
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        line.clear();
        if sys::STOP.load(Ordering::SeqCst) {
            break;
        }
        match stdin.lock().read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("epoch"), Some(n)) => match n.parse::<u64>() {
                Ok(ns) if ns > 0 => shared.epoch.store(ns, Ordering::SeqCst),
                _ => eprintln!("mpsched-emu: bad epoch {n:?}"),
            },
            (Some("stop"), _) => break,
            (None, _) => {}
            (Some(other), _) => eprintln!("mpsched-emu: unknown command {other:?}"),
        }
    }
    shared.stop.store(true, Ordering::SeqCst);
    let mut threads = vec![];
    for w in workers {
        match w.join() {
            Ok(Ok(r)) => threads.push(r),
            Ok(Err(e)) => fail(format!("link thread: {e}")),
            Err(_) => fail("link thread panicked".into()),
        }
    }
    let wall_s = (sys::now_ns() - start) as f64 * 1e-9;
    let (pcap_packets, pcap_error) = match &cfg.pcap {
        Some(path) => match write_pcap(path, &mut threads, &shared) {
            Ok(n) => (Some(n), None),
            Err(e) => (None, Some(format!("{path}: {e}"))),
        },
        None => (None, None),
    };
    let (u1, s1) = sys::cpu_times(false);
    let mut all = Hist::default();
    for t in &threads {
        all.merge(&t.hist);
    }
    let report = Report {
        wall_s,
        user_s: u1 - u0,
        sys_s: s1 - s0,
        cpu_percent: if wall_s > 0.0 {
            100.0 * (u1 - u0 + s1 - s0) / wall_s
        } else {
            0.0
        },
        spin_us: cfg.spin_us,
        threads,
        lateness: all.summary(),
        pcap_packets,
        pcap_error,
    };
    let _ = writeln!(out, "{}", serde_json::json!({ "report": report }));
    let _ = out.flush();
    drop(fds);
    std::process::exit(0)
}

/// Writes the links' packet logs to `path` as pcapng, stamped from the scenario's time zero
/// (the emulator's start if none was set); the logs are freed as they are taken.
fn write_pcap(path: &str, threads: &mut [WorkerReport], shared: &Shared) -> std::io::Result<u64> {
    let zero = match shared.epoch.load(Ordering::Relaxed) {
        0 => shared.origin,
        e => e,
    };
    let mut links: Vec<(usize, bool, String, crate::pcap::PacketLog)> = threads
        .iter_mut()
        .flat_map(|t| t.links.iter_mut())
        .filter_map(|l| {
            let log = l.packets.take()?;
            Some((
                l.path,
                l.direction == "up",
                format!("{} {}", l.name, l.direction),
                log,
            ))
        })
        .collect();
    // Interfaces in the simulator's order: per path, down then up.
    links.sort_by_key(|(path, up, _, _)| (*path, *up));
    let named: Vec<(String, &crate::pcap::PacketLog)> = links
        .iter()
        .map(|(_, _, name, log)| (name.clone(), log))
        .collect();
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    crate::pcap::write(file, &named, zero)
}
