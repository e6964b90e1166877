//! Drives a `Sender` through the sans-IO API, for the unit tests of the schedulers.

use crate::cc::Reno;
use crate::conn::sender::SubflowConfig;
use crate::conn::{Sender, SenderConfig};
use crate::packet::{Ack, Packet, Payload, SackBlock, MAX_SACK_BLOCKS};
use crate::sched::{self, ParamValue, SchedInfo, SchedParams};
use crate::time::{Dur, Time};
use crate::units::{wire, Bytes};

/// Payload of a full data segment of the (MPTCP) test senders.
pub const MSS64: u64 = wire::MPTCP_MSS as u64;

pub struct Setup {
    /// Handshake RTT of each subflow in ms.
    pub rtts_ms: Vec<u64>,
    pub backup: Vec<bool>,
    pub rwnd_segments: u64,
    pub sndbuf_segments: u64,
    pub total_bytes: Option<u64>,
    pub params: Vec<(&'static str, ParamValue)>,
    /// The kernel modelled (the papers' out-of-tree one unless told).
    pub stack: crate::conn::Stack,
    /// When each subflow is established, in ms (0 unless told).
    pub established_ms: Vec<u64>,
    /// Linux's send-buffer autotuning (`sndbuf_segments` is then `tcp_wmem[2]`).
    pub sndbuf_autotune: bool,
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
            stack: crate::conn::Stack::OutOfTree,
            established_ms: vec![],
            sndbuf_autotune: false,
        }
    }
}

/// A sender over subflows with the given handshake RTTs, all up at time 0, Reno.
pub fn sender(scheduler: &str, s: Setup) -> Sender {
    sender_params(scheduler, s, SchedParams::new())
}

/// The same, with scheduler parameters given as `SchedParams` as well.
pub fn sender_params(scheduler: &str, s: Setup, mut params: SchedParams) -> Sender {
    let subflows = s
        .rtts_ms
        .iter()
        .enumerate()
        .map(|(i, &ms)| SubflowConfig {
            established_at: Time(s.established_ms.get(i).copied().unwrap_or(0) * 1_000_000),
            handshake_rtt: Dur::from_millis(ms),
            backup: s.backup.get(i).copied().unwrap_or(false),
        })
        .collect();
    for (k, v) in s.params {
        params.insert(k, v);
    }
    Sender::new(
        SenderConfig {
            mptcp: true,
            sndbuf: Bytes(s.sndbuf_segments * MSS64),
            sndbuf_autotune: s.sndbuf_autotune,
            // The papers' kernel by default: reinjection at a subflow's timeout, no
            // connection-level timer. With autotuning off, that is all the stack changes here.
            stack: s.stack,
            initial_rwnd: Bytes(s.rwnd_segments * MSS64),
            total: s.total_bytes.map(Bytes),
            app_limited: false,
            write_chunk: None,
            subflows,
            loss_recovery: Default::default(),
            jiffies: crate::jiffies::Jiffies::EXACT,
            trace: true,
        },
        Box::new(Reno),
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
            ts_val: Time::ZERO,
            ts_ecr: Time::ZERO,
            dsack: false,
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

/// Numeric scheduler parameters.
pub fn params(kv: &[(&str, f64)]) -> SchedParams {
    kv.iter().fold(SchedParams::new(), |p, &(k, v)| {
        p.with(k, ParamValue::Num(v))
    })
}

/// A Reno sender over subflows with the given handshake RTTs, all up at time 0.
pub fn sender_with(
    scheduler: &str,
    p: &SchedParams,
    rtts_ms: &[u64],
    rwnd_segments: u64,
    total_bytes: Option<u64>,
) -> Sender {
    sender_params(
        scheduler,
        Setup {
            rtts_ms: rtts_ms.to_vec(),
            rwnd_segments,
            sndbuf_segments: (64 << 20) / MSS64,
            total_bytes,
            ..Setup::default()
        },
        p.clone(),
    )
}

/// Building with each default of `info` written out gives the scheduler built without it, so
/// that what `mpsched schedulers` says is what the code does (compared by `Debug`, which shows
/// a scheduler's configuration). A default that is a formula (neither a number nor a quoted
/// string) is left out.
pub fn assert_documented_defaults(info: &SchedInfo) {
    let build = |p: &SchedParams| (info.build)(p).map(|s| format!("{s:?}"));
    let absent = build(&SchedParams::new()).unwrap();
    for p in info.params {
        let value = match p
            .default
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
        {
            Some(s) => ParamValue::Str(s.into()),
            None => match p.default.parse() {
                Ok(x) => ParamValue::Num(x),
                Err(_) => continue,
            },
        };
        let given = build(&SchedParams::new().with(p.key, value)).unwrap();
        assert_eq!(given, absent, "{}: {} = {}", info.name, p.key, p.default);
    }
}
