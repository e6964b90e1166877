//! Registry entries of otias, stms-c, stms-a, mptcp-sf and linux.

use super::linux::LinuxSched;
use super::mptcp_sf::MptcpSf;
use super::otias::{Otias, WaitRule};
use super::stms::{OwdEstimate, Stms, StmsVariant};
use super::{SchedInfo, Scheduler};

pub const SCHEDULERS: &[SchedInfo] = &[
    SchedInfo {
        name: "otias",
        params: &["wait"],
        description: "out-of-order transmission for in-order arrival: each segment goes to the \
                      subflow where it would arrive first, queued if that subflow has no window",
        source: "Yang, Wang, Amer, \"Out-of-order Transmission for In-order Arrival Scheduling \
                 for Multipath TCP\", Figure 3, eqs. 1-3",
        build: |p| {
            let wait = match p.choice("wait", "paper", &["paper", "kau", "xquic"])? {
                "kau" => WaitRule::Kau,
                "xquic" => WaitRule::Xquic,
                _ => WaitRule::Paper,
            };
            Ok(Box::new(Otias::new(wait)) as Box<dyn Scheduler>)
        },
    },
    SchedInfo {
        name: "stms-c",
        params: &["owd"],
        description: "STMS with the gap calculated: the fast subflow sends the first unsent \
                      segment, the slow one the gap-th, gap = B_f x (OWD_s - OWD_f)",
        source: "Shi et al., \"STMS\", USENIX ATC 2018, Algorithm 1, eqs. 2 and 4, sec. 4",
        build: |p| {
            let owd = match p.choice("owd", "half-rtt", &["half-rtt", "forward-queue"])? {
                "forward-queue" => OwdEstimate::ForwardQueue,
                _ => OwdEstimate::HalfRtt,
            };
            Ok(Box::new(Stms::new(StmsVariant::Calculated { owd })) as Box<dyn Scheduler>)
        },
    },
    SchedInfo {
        name: "stms-a",
        params: &["adjust_interval", "recovery_jumps"],
        description: "STMS with the gap adjusted from the Data ACKs (who held the left edge, how \
                      many segments each Data ACK released)",
        source: "Shi et al., \"STMS\", USENIX ATC 2018, Algorithms 1 and 2, eq. 4",
        build: |p| {
            let interval = p.duration("adjust_interval")?;
            let skip_recovery = p.choice("recovery_jumps", "count", &["count", "skip"])? == "skip";
            Ok(Box::new(Stms::new(StmsVariant::Adjusted {
                interval,
                skip_recovery,
            })) as Box<dyn Scheduler>)
        },
    },
    SchedInfo {
        name: "mptcp-sf",
        params: &["s1_bytes", "s2_bytes", "lambda"],
        description: "flow classification by bytes sent: the fastest subflow below s1_bytes, the \
                      subflows within lambda x min RTT below s2_bytes, then every subflow \
                      (default policy)",
        source: "Yang et al., \"A MPTCP Scheduler for Web Transfer\", Algorithms 1 and 2",
        build: |p| {
            let s1 = p.num("s1_bytes", 100_000.0, 0.0, 1e15)?;
            let s2 = p.num("s2_bytes", 400_000.0, 0.0, 1e15)?;
            if s2 < s1 {
                return Err(format!(
                    "connection.scheduler_params.s2_bytes: must be >= s1_bytes ({s1}), got {s2}"
                ));
            }
            let lambda = p.num("lambda", 4.0, 1.0, 1e6)?;
            Ok(Box::new(MptcpSf::new(s1 as u64, s2 as u64, lambda)) as Box<dyn Scheduler>)
        },
    },
    SchedInfo {
        name: "linux",
        params: &[],
        description: "upstream Linux: the subflow with the smallest linger time (queued bytes / \
                      average pacing rate), bursts of up to 65,428 bytes, backup only if no \
                      regular subflow is active",
        source: "Linux 5.x/6.x net/mptcp/protocol.c, mptcp_subflow_get_send",
        build: |_| Ok(Box::new(LinuxSched::new()) as Box<dyn Scheduler>),
    },
];
