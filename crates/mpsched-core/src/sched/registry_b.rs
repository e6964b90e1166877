//! Registry entries of otias, stms-c, stms-a, mptcp-sf and linux.

use super::linux::LinuxSched;
use super::mptcp_sf::MptcpSf;
use super::otias::{Otias, WaitRule};
use super::stms::{Stms, StmsVariant};
use super::{no_params, SchedInfo, Scheduler};

pub const SCHEDULERS: &[SchedInfo] = &[
    SchedInfo {
        name: "otias",
        description: "out-of-order transmission for in-order arrival: each segment goes to the \
                      subflow where it would arrive first, queued if that subflow has no window",
        source: "Yang, Wang, Amer, \"Out-of-order Transmission for In-order Arrival Scheduling \
                 for Multipath TCP\", Figure 3, eqs. 1-3",
        build: |p| {
            p.only("otias", &["wait"])?;
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
        description: "STMS with the gap calculated: the fast subflow sends the first unsent \
                      segment, the slow one the gap-th, gap = B_f x (OWD_s - OWD_f)",
        source: "Shi et al., \"STMS\", USENIX ATC 2018, Algorithm 1, eqs. 2 and 4, sec. 4",
        build: |p| {
            no_params("stms-c", p)?;
            Ok(Box::new(Stms::new(StmsVariant::Calculated)) as Box<dyn Scheduler>)
        },
    },
    SchedInfo {
        name: "stms-a",
        description: "STMS with the gap adjusted from the Data ACKs (who held the left edge, how \
                      many segments each Data ACK released)",
        source: "Shi et al., \"STMS\", USENIX ATC 2018, Algorithms 1 and 2, eq. 4",
        build: |p| {
            p.only("stms-a", &["adjust_interval", "recovery_jumps"])?;
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
        description: "flow classification by bytes sent: the fastest subflow below s1_bytes, the \
                      subflows within lambda x min RTT below s2_bytes, then every subflow \
                      (default policy)",
        source: "Yang et al., \"A MPTCP Scheduler for Web Transfer\", Algorithms 1 and 2",
        build: |p| {
            p.only("mptcp-sf", &["s1_bytes", "s2_bytes", "lambda"])?;
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
        description: "upstream Linux: the subflow with the smallest linger time (queued bytes / \
                      average pacing rate), bursts of up to 65,428 bytes, backup only if no \
                      regular subflow is active",
        source: "Linux 5.x/6.x net/mptcp/protocol.c, mptcp_subflow_get_send",
        build: |p| {
            no_params("linux", p)?;
            Ok(Box::new(LinuxSched::new()) as Box<dyn Scheduler>)
        },
    },
];

/// Helpers for the unit tests of this registry's schedulers: a sender driven by hand through
/// the sans-IO API.
#[cfg(test)]
pub(super) mod testkit {
    use crate::cc::CcKind;
    use crate::conn::sender::SubflowConfig;
    use crate::conn::{Sender, SenderConfig};
    use crate::packet::{Ack, Packet, Payload, SackBlock, MAX_SACK_BLOCKS};
    use crate::sched::{self, ParamValue, SchedParams};
    use crate::time::{Dur, Time};
    use crate::units::{wire::MSS, Bytes};

    pub const MSS64: u64 = MSS as u64;

    pub struct Setup {
        /// Handshake RTT of each subflow in ms.
        pub rtts_ms: Vec<u64>,
        pub backup: Vec<bool>,
        pub rwnd_segments: u64,
        pub sndbuf_segments: u64,
        pub total_bytes: Option<u64>,
        pub params: Vec<(&'static str, ParamValue)>,
    }

    impl Default for Setup {
        fn default() -> Setup {
            Setup {
                rtts_ms: vec![10, 100],
                backup: vec![],
                rwnd_segments: 1000,
                sndbuf_segments: 1000,
                total_bytes: None,
                params: vec![],
            }
        }
    }

    /// A sender over subflows with the given handshake RTTs, all up at time 0, Reno.
    pub fn sender(scheduler: &str, s: Setup) -> Sender {
        let subflows = s
            .rtts_ms
            .iter()
            .enumerate()
            .map(|(i, &ms)| SubflowConfig {
                established_at: Time::ZERO,
                handshake_rtt: Dur::from_millis(ms),
                backup: s.backup.get(i).copied().unwrap_or(false),
            })
            .collect();
        let mut params = SchedParams::new();
        for (k, v) in s.params {
            params.insert(k, v);
        }
        Sender::new(
            SenderConfig {
                mptcp: true,
                sndbuf: Bytes(s.sndbuf_segments * MSS64),
                initial_rwnd: Bytes(s.rwnd_segments * MSS64),
                total: s.total_bytes.map(Bytes),
                subflows,
                trace: true,
            },
            CcKind::Reno.build(),
            sched::build(scheduler, &params).unwrap(),
            Time::ZERO,
        )
    }

    /// (subflow, subflow seq, data seq) of every packet the sender has queued.
    pub fn drain(s: &mut Sender) -> Vec<(u8, u64, u64)> {
        std::iter::from_fn(|| s.poll_transmit())
            .map(|p| match p.payload {
                Payload::Data(d) => (p.subflow, d.seq, d.dseq),
                Payload::Ack(_) => unreachable!(),
            })
            .collect()
    }

    pub fn ack(subflow: u8, cum: u64, data_ack: u64, rwnd_segments: u64) -> Packet {
        Packet::ack(
            subflow,
            Ack {
                ack: cum,
                sack: [SackBlock { start: 0, end: 0 }; MAX_SACK_BLOCKS],
                sack_len: 0,
                data_ack,
                rwnd: rwnd_segments * MSS64,
                ts_ecr: Time::ZERO,
            },
            true,
        )
    }

    pub fn ms(t: u64) -> Time {
        Time(t * 1_000_000)
    }

    pub fn on(out: &[(u8, u64, u64)], sf: u8) -> Vec<u64> {
        out.iter().filter(|x| x.0 == sf).map(|x| x.2).collect()
    }
}
