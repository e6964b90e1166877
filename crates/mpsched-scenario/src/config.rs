//! The normalized scenario the simulator runs: every quantity an integer in base units
//! (nanoseconds, bytes, bits per second). The Python layer parses and validates the
//! user-facing TOML and produces this; the simulator validates again so that no input can
//! make it panic, and names the offending field when it refuses.

use mpsched_core::cc::CcKind;
use mpsched_core::codel::CodelConfig;
use mpsched_core::link::{LinkConfig, QueueLimit};
use mpsched_core::loss::LossModel;
use mpsched_core::opportunities::Opportunities;
use mpsched_core::sched;
use mpsched_core::{Dur, Rate};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// A scenario refused: the field (as the scenario's JSON names it: `paths[1].down.rate_bps`,
/// `flows[3].scheduler_params.lambda`) and why. Displayed as `field: reason`; Python's loader
/// renames the field to the TOML file's key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub field: String,
    pub reason: String,
}

impl ConfigError {
    /// The same error about a field inside `outer` (`down` inside `paths[0]`).
    pub fn within(self, outer: &str) -> ConfigError {
        ConfigError {
            field: format!("{outer}.{}", self.field),
            reason: self.reason,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for ConfigError {}

/// For callers that report messages (tests, binaries printing a line).
impl From<ConfigError> for String {
    fn from(e: ConfigError) -> String {
        e.to_string()
    }
}

fn bad(field: impl Into<String>, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.into(),
        reason: reason.into(),
    }
}

/// A scheduler that cannot be built, as the field of table `owner` it is about.
fn build_error(owner: &str, e: sched::BuildError) -> ConfigError {
    match e {
        sched::BuildError::UnknownScheduler(m) => bad(format!("{owner}.scheduler"), m),
        sched::BuildError::Param(p) => bad(format!("{owner}.scheduler_params.{}", p.key), p.reason),
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub duration_ns: u64,
    pub seed: u64,
    pub protocol: Protocol,
    pub scheduler: String,
    #[serde(default)]
    pub scheduler_params: BTreeMap<String, serde_json::Value>,
    pub congestion: String,
    /// The send buffer; with `sndbuf_autotune`, `tcp_wmem[2]`: the most one socket's buffer
    /// grows to.
    pub sndbuf_bytes: u64,
    #[serde(default = "default_true")]
    pub sndbuf_autotune: bool,
    /// `tcp_rmem[2]`: the largest the receive buffer gets.
    pub rcvbuf_bytes: u64,
    /// `tcp_rmem[1]`: where receive-buffer autotuning starts.
    #[serde(default = "default_rcvbuf_initial")]
    pub rcvbuf_initial_bytes: u64,
    #[serde(default = "default_true")]
    pub rcvbuf_autotune: bool,
    /// Payload advertised per byte of receive buffer, in (0, 1]; `None`: Linux's ratio for
    /// 1,500-byte packets on a TUN or veth device.
    #[serde(default)]
    pub window_ratio: Option<f64>,
    /// The receiving kernel's MPTCP: "upstream" (Linux 5.6+) or "out-of-tree" (v0.9x).
    #[serde(default)]
    pub stack: StackName,
    /// How TCP finds losses, on every connection.
    #[serde(default)]
    pub loss_recovery: RecoveryName,
    /// When a client opens its connection's other subflows.
    #[serde(default)]
    pub join: JoinName,
    /// Both kernels' `CONFIG_HZ`: their TCP and MPTCP timers run on its ticks, rounded as
    /// Linux's timer wheel rounds them; 0 runs them exactly.
    #[serde(default = "default_timer_hz")]
    pub timer_hz: u32,
    /// Where the kernels' jiffies stand at time zero (jiffies x tick + the time since the last
    /// tick): their timer wheel rounds on it. A kernel run records it (`mpsched emulate`).
    #[serde(default)]
    pub timer_phase_ns: u64,
    pub workload: Workload,
    /// A bulk or file application's write size (`workload.write_chunk`): it writes this much
    /// each time the socket is writable; `None` (`"fill"`): it fills the send buffer.
    #[serde(default = "default_write_chunk")]
    pub write_chunk_bytes: Option<u64>,
    pub paths: Vec<PathConfig>,
    /// How many of `paths`, from the first, the main connection uses (all when absent); the
    /// others carry only competing flows.
    #[serde(default)]
    pub main_paths: Option<usize>,
    /// Competing connections sharing the paths with the main one.
    #[serde(default)]
    pub flows: Vec<FlowConfig>,
    /// Links that paths share (a home's DSL line behind its WiFi, one bottleneck under two
    /// subflows): each path's `via` lists those its packets cross besides its own.
    #[serde(default)]
    pub links: Vec<SharedLinkConfig>,
}

/// A link of the topology that paths may share: one link in each direction.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedLinkConfig {
    pub name: String,
    pub down: LinkSpec,
    pub up: LinkSpec,
}

/// A competing connection: its own hosts' sockets, the main connection's buffers and stack.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// When its client sends the SYN.
    pub start_ns: u64,
    pub protocol: Protocol,
    pub scheduler: String,
    #[serde(default)]
    pub scheduler_params: BTreeMap<String, serde_json::Value>,
    pub congestion: String,
    /// Bytes to transfer; `None`: a bulk transfer to the end of the run.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Indices into `paths`, one per subflow (one for TCP).
    pub paths: Vec<usize>,
}

fn default_rcvbuf_initial() -> u64 {
    mpsched_core::conn::rcvwin::RCVBUF_INITIAL
}

fn default_timer_hz() -> u32 {
    mpsched_core::jiffies::DEFAULT_HZ
}

fn default_write_chunk() -> Option<u64> {
    Some(mpsched_core::conn::DEFAULT_WRITE_CHUNK.0)
}

fn default_true() -> bool {
    true
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StackName {
    #[default]
    Upstream,
    OutOfTree,
}

impl StackName {
    /// Upstream's scheduler (`linux`) hands data to subflow queues ahead of their windows and
    /// relies on upstream's connection-level retransmission to get it past a subflow that
    /// stopped working; the out-of-tree stack has neither, so the mixture, which no kernel
    /// runs, would strand what a dead subflow's queue holds.
    pub fn admits(self, scheduler: &str, field: &str) -> Result<(), ConfigError> {
        if self == StackName::OutOfTree && scheduler == "linux" {
            return Err(bad(
                field,
                "'linux' is upstream Linux's scheduler and runs on stack = \"upstream\" \
                 only (the out-of-tree stack's default is 'default')",
            ));
        }
        Ok(())
    }

    pub fn stack(self) -> mpsched_core::conn::Stack {
        match self {
            StackName::Upstream => mpsched_core::conn::Stack::Upstream,
            StackName::OutOfTree => mpsched_core::conn::Stack::OutOfTree,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecoveryName {
    #[default]
    Linux,
    Classic,
    /// Linux's with a reordering window that never widens (`net.ipv4.tcp_recovery = 3`): what
    /// RACK's adaptation to reordering is worth (`scenarios/reordering.toml`).
    #[serde(rename = "linux-static-reo-wnd")]
    LinuxStaticReoWnd,
}

impl RecoveryName {
    pub fn recovery(self) -> mpsched_core::subflow::tx::LossRecovery {
        match self {
            RecoveryName::Linux => mpsched_core::subflow::tx::LossRecovery::Linux,
            RecoveryName::Classic => mpsched_core::subflow::tx::LossRecovery::Classic,
            RecoveryName::LinuxStaticReoWnd => {
                mpsched_core::subflow::tx::LossRecovery::LinuxStaticReoWnd
            }
        }
    }
}

/// When the client sends the MP_JOINs of a connection's other subflows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JoinName {
    /// Once the connection is fully established, when the server's first data arrives:
    /// Linux's path managers (`mptcp_pm_fully_established`).
    #[default]
    FirstData,
    /// As soon as the first subflow's SYN-ACK arrives.
    SynAck,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Mptcp,
    Tcp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Workload {
    Bulk,
    File {
        size_bytes: u64,
    },
    /// An application writing a block of `block_bytes` every `block_bytes x 8 / rate_bps`
    /// seconds (paper 001 sec. 4.3), for the whole run.
    Rate {
        rate_bps: u64,
        block_bytes: u64,
        /// Blocks written within this time of the start are not timed.
        #[serde(default)]
        warmup_ns: u64,
    },
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathConfig {
    pub name: String,
    pub down: LinkSpec,
    pub up: LinkSpec,
    #[serde(default)]
    pub schedule: Vec<Change>,
    /// The client marks its subflow on this path backup (RFC 8684 3.3.8, MP_PRIO): used only
    /// when no regular subflow can carry data.
    #[serde(default)]
    pub backup: bool,
    /// Indices into `links`: the shared links between this path's own link (the client's
    /// access) and the server, from the client outwards. Data crosses them from the last to
    /// the first, then the path's own link; ACKs the path's own link, then these in order.
    #[serde(default)]
    pub via: Vec<usize>,
}

/// One direction of a link. Its plain scalars with a `#[serde(default)]` (a number, a flag)
/// are knobs when `LINK_KNOBS` lists them: a scenario file sets them by rule, with no Python
/// written for them (docs/extending.md, "A link knob").
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub rate_bps: u64,
    pub delay_ns: u64,
    /// Mean loss rate: independent losses, or with `loss_burst` in bursts.
    pub loss: f64,
    pub queue: QueueSpec,
    /// Standard deviation of the per-packet delay (normal; packets never overtake unless
    /// `reorder`).
    #[serde(default)]
    pub jitter_ns: u64,
    /// The jitter may reorder: each packet keeps its own delay draw (netem without a rate).
    #[serde(default)]
    pub reorder: bool,
    /// Mean length of a run of consecutive losses, in packets (Gilbert's model); unset:
    /// independent losses.
    #[serde(default)]
    pub loss_burst: Option<f64>,
    /// A Gilbert-Elliott chain's four parameters, instead of `loss` and `loss_burst`.
    #[serde(default)]
    pub gilbert_elliott: Option<GilbertElliottSpec>,
    /// A Mahimahi trace's delivery opportunities (ms), instead of `rate_bps`.
    #[serde(default)]
    pub trace_ms: Option<Vec<u64>>,
    /// CoDel at the queue's head (RFC 8289), besides the drop-tail limit.
    #[serde(default)]
    pub codel: Option<CodelSpec>,
    /// FQ-CoDel (RFC 8290) instead: per-flow CoDel queues served by deficit round robin.
    #[serde(default)]
    pub fq_codel: Option<CodelSpec>,
}

/// The longest delay or jitter a link takes: an hour.
const HOUR_NS: u64 = 3_600_000_000_000;

/// The link knobs: the plain scalars of `LinkSpec` that a scenario file sets by rule. The
/// contract publishes each one with its type, unit and default, read from `LinkSpec` itself
/// (`keys::link_knobs`), and Python derives the file's keys from it: `KEY` for the data
/// direction and `KEY_up` for the ACKs', `KEY` being the field's name without its unit
/// (`jitter_ns`: `jitter`, a duration), each direction its own value, the field's default
/// when left out. `LinkSpec::validate` checks the range for both.
pub const LINK_KNOBS: &[Knob] = &[
    // In the order the scenario reference lists them.
    Knob {
        key: "jitter_ns",
        get: |l| l.jitter_ns.into(),
        min: None,
        max: Some(HOUR_NS as f64),
        meaning: "Standard deviation of each data packet's propagation delay (normal, cut at 4 \
                  sigma and at zero, like netem's `delay D J distribution normal`); unless \
                  `reorder`, packets never overtake: one drawn to arrive before the packet \
                  ahead waits for it (netem with a rate, or a FIFO behind it).",
    },
];

/// A link knob (`LINK_KNOBS`).
#[derive(Clone, Copy, Debug)]
pub struct Knob {
    /// The field of `LinkSpec`: a duration `_ns`, a rate `_bps` or a size `_bytes` (integers),
    /// else a plain integer, number or flag.
    pub key: &'static str,
    /// Its value in a direction (the compiler checks the field, and its type is the knob's).
    pub get: fn(&LinkSpec) -> KnobValue,
    /// The least it may be, in its unit; `None`: 0.
    pub min: Option<f64>,
    /// The most it may be, in its unit; `None`: no bound but its type's.
    pub max: Option<f64>,
    /// What it does, as the scenario reference says it of the data direction's key (the ACK
    /// direction's is "The same for the ACK direction.").
    pub meaning: &'static str,
}

/// A knob's value: the types a knob may have.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KnobValue {
    Int(u64),
    Float(f64),
    Bool(bool),
}

impl From<u64> for KnobValue {
    fn from(v: u64) -> KnobValue {
        KnobValue::Int(v)
    }
}

impl From<f64> for KnobValue {
    fn from(v: f64) -> KnobValue {
        KnobValue::Float(v)
    }
}

impl From<bool> for KnobValue {
    fn from(v: bool) -> KnobValue {
        KnobValue::Bool(v)
    }
}

impl Knob {
    /// Refuses a value out of the knob's range; `field` is the direction's (`paths[0].down`).
    fn check(&self, link: &LinkSpec, field: &str) -> Result<(), ConfigError> {
        let v = match (self.get)(link) {
            KnobValue::Int(v) => v as f64,
            KnobValue::Float(v) => v,
            KnobValue::Bool(_) => return Ok(()),
        };
        let (min, max) = (self.min.unwrap_or(0.0), self.max.unwrap_or(f64::INFINITY));
        if !(v >= min && v <= max) {
            let range = match self.max {
                Some(max) => format!("in [{min}, {max}]"),
                None => format!(">= {min}"),
            };
            return Err(bad(
                format!("{field}.{}", self.key),
                format!("must be {range}, got {v}"),
            ));
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodelSpec {
    pub target_ns: u64,
    pub interval_ns: u64,
}

impl CodelSpec {
    fn config(self) -> CodelConfig {
        CodelConfig {
            target: Dur(self.target_ns),
            interval: Dur(self.interval_ns),
        }
    }
}

/// The four-parameter form of Gilbert-Elliott loss (netem's `loss gemodel p r 1-h 1-k`).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliottSpec {
    /// Good -> bad, per packet.
    pub p: f64,
    /// Bad -> good, per packet.
    pub r: f64,
    /// Loss probability in the good state.
    #[serde(default)]
    pub loss_good: f64,
    /// Loss probability in the bad state.
    #[serde(default = "one")]
    pub loss_bad: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueSpec {
    Bytes(u64),
    Packets(u64),
    TimeNs(u64),
}

/// A change of a path's properties during the run.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    pub at_ns: u64,
    #[serde(default)]
    pub rate_bps: Option<u64>,
    #[serde(default)]
    pub delay_down_ns: Option<u64>,
    #[serde(default)]
    pub delay_up_ns: Option<u64>,
    #[serde(default)]
    pub jitter_down_ns: Option<u64>,
    #[serde(default)]
    pub jitter_up_ns: Option<u64>,
    /// The path goes down (false: both directions lose every packet, what they hold
    /// included) or comes back (true).
    #[serde(default)]
    pub up: Option<bool>,
    /// The client's address on this path goes away (false: its interface is gone, MPTCP
    /// closes the subflow and REMOVE_ADDR tells the peer; the link loses everything as when
    /// down) or comes back (true: up again, and a new subflow joins with MP_JOIN).
    #[serde(default)]
    pub present: Option<bool>,
}

/// Scheduler parameters as the schedulers take them; `owner` names the table in errors.
fn typed_params(
    params: &BTreeMap<String, serde_json::Value>,
    owner: &str,
) -> Result<sched::SchedParams, ConfigError> {
    let mut p = sched::SchedParams::new();
    for (k, v) in params {
        let v = match v {
            serde_json::Value::Number(n) => sched::ParamValue::Num(n.as_f64().unwrap_or(f64::NAN)),
            serde_json::Value::String(s) => sched::ParamValue::Str(s.clone()),
            other => {
                return Err(bad(
                    format!("{owner}.scheduler_params.{k}"),
                    format!("expected a number or a string, got {other}"),
                ))
            }
        };
        p.insert(k, v);
    }
    Ok(p)
}

impl FlowConfig {
    pub fn sched_params(&self, index: usize) -> Result<sched::SchedParams, ConfigError> {
        typed_params(&self.scheduler_params, &format!("flows[{index}]"))
    }

    pub fn cc(&self) -> CcKind {
        CcKind::parse(&self.congestion).expect("validated")
    }

    fn validate(&self, index: usize, n_paths: usize) -> Result<(), ConfigError> {
        let field = format!("flows[{index}]");
        if CcKind::parse(&self.congestion).is_none() {
            return Err(bad(
                format!("{field}.congestion"),
                format!(
                    "unknown congestion control '{}' (known: {})",
                    self.congestion,
                    CcKind::known()
                ),
            ));
        }
        if self.size_bytes == Some(0) {
            return Err(bad(format!("{field}.size_bytes"), "must be > 0"));
        }
        if self.paths.is_empty() {
            return Err(bad(format!("{field}.paths"), "at least one path is needed"));
        }
        if self.protocol == Protocol::Tcp && self.paths.len() != 1 {
            return Err(bad(
                format!("{field}.paths"),
                "a TCP flow uses exactly one path",
            ));
        }
        for (j, &p) in self.paths.iter().enumerate() {
            if p >= n_paths {
                return Err(bad(
                    format!("{field}.paths[{j}]"),
                    format!("no path {p} (there are {n_paths})"),
                ));
            }
            if self.paths[..j].contains(&p) {
                return Err(bad(
                    format!("{field}.paths[{j}]"),
                    format!("path {p} is listed twice"),
                ));
            }
        }
        if self.protocol == Protocol::Mptcp {
            sched::build(&self.scheduler, &self.sched_params(index)?)
                .map_err(|e| build_error(&field, e))?;
        }
        Ok(())
    }
}

impl LinkSpec {
    /// A direction of `rate_bps`, `delay_ns`, `queue` and independent `loss`, the rest at the
    /// defaults a scenario's JSON gets when it leaves them out (serde's, so a field added
    /// with its `#[serde(default)]` needs nothing here).
    pub fn new(rate_bps: u64, delay_ns: u64, queue: QueueSpec, loss: f64) -> LinkSpec {
        let required = serde_json::json!({
            "rate_bps": 0, "delay_ns": 0, "loss": 0.0, "queue": {"packets": 0}
        });
        let mut link: LinkSpec =
            serde_json::from_value(required).expect("every other field has a default");
        link.rate_bps = rate_bps;
        link.delay_ns = delay_ns;
        link.queue = queue;
        link.loss = loss;
        link
    }

    pub fn to_link(&self) -> LinkConfig {
        LinkConfig {
            rate: Rate::bps(self.rate_bps),
            delay: Dur(self.delay_ns),
            queue: match self.queue {
                QueueSpec::Bytes(b) => QueueLimit::Bytes(b),
                QueueSpec::Packets(p) => QueueLimit::Packets(p),
                QueueSpec::TimeNs(t) => QueueLimit::Time(Dur(t)),
            },
            loss: self.loss_model().expect("validated"),
            jitter: Dur(self.jitter_ns),
            opportunities: self
                .trace_ms
                .as_deref()
                .map(|ms| Opportunities::from_millis(ms).expect("validated")),
            codel: self.codel.map(CodelSpec::config),
            fq_codel: self.fq_codel.map(CodelSpec::config),
            reorder: self.reorder,
        }
    }

    /// The loss process this direction describes.
    pub fn loss_model(&self) -> Result<LossModel, ConfigError> {
        match (self.gilbert_elliott, self.loss_burst) {
            (Some(ge), None) if self.loss == 0.0 => {
                LossModel::gilbert_elliott(ge.p, ge.r, ge.loss_good, ge.loss_bad)
                    .map_err(|e| bad("gilbert_elliott", e))
            }
            (Some(_), _) => Err(bad(
                "gilbert_elliott",
                "replaces loss and loss_burst; set it alone",
            )),
            (None, Some(burst)) => {
                LossModel::bursty(self.loss, burst).map_err(|e| bad("loss_burst", e))
            }
            (None, None) => Ok(LossModel::Bernoulli(self.loss)),
        }
    }

    fn validate(&self, field: &str) -> Result<(), ConfigError> {
        if self.rate_bps == 0 {
            return Err(bad(format!("{field}.rate_bps"), "must be > 0"));
        }
        if !(0.0..1.0).contains(&self.loss) {
            return Err(bad(
                format!("{field}.loss"),
                format!("must be in [0, 1), got {}", self.loss),
            ));
        }
        self.loss_model().map_err(|e| e.within(field))?;
        if self.codel.is_some() && self.fq_codel.is_some() {
            return Err(bad(field, "codel and fq_codel exclude each other"));
        }
        if let Some(c) = self.codel.or(self.fq_codel) {
            if c.target_ns == 0 || c.interval_ns == 0 || c.target_ns > c.interval_ns {
                return Err(bad(
                    format!("{field}.codel"),
                    format!(
                        "needs 0 < target_ns <= interval_ns, got {} and {}",
                        c.target_ns, c.interval_ns
                    ),
                ));
            }
        }
        if let Some(ms) = &self.trace_ms {
            Opportunities::from_millis(ms).map_err(|e| bad(format!("{field}.trace_ms"), e))?;
        }
        if self.delay_ns > HOUR_NS {
            return Err(bad(format!("{field}.delay_ns"), "more than an hour"));
        }
        for knob in LINK_KNOBS {
            knob.check(self, field)?;
        }
        Ok(())
    }
}

impl Config {
    pub fn from_json(s: &str) -> Result<Config, ConfigError> {
        let cfg: Config = serde_json::from_str(s).map_err(|e| bad("scenario", e.to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Parses without checking the scheduler's name: the caller supplies the scheduler.
    pub fn from_json_external_scheduler(s: &str) -> Result<Config, ConfigError> {
        let cfg: Config = serde_json::from_str(s).map_err(|e| bad("scenario", e.to_string()))?;
        cfg.validate_model()?;
        Ok(cfg)
    }

    /// The scheduler parameters, typed.
    pub fn sched_params(&self) -> Result<sched::SchedParams, ConfigError> {
        typed_params(&self.scheduler_params, "connection")
    }

    pub fn cc(&self) -> CcKind {
        CcKind::parse(&self.congestion).expect("validated")
    }

    /// How many paths the main connection uses.
    pub fn main_path_count(&self) -> usize {
        self.main_paths.unwrap_or(self.paths.len())
    }

    /// `window_ratio` as Linux's `scaling_ratio` (payload per 256 bytes of buffer).
    /// The kernels' timer clock.
    pub fn jiffies(&self) -> mpsched_core::jiffies::Jiffies {
        mpsched_core::jiffies::Jiffies::hz(self.timer_hz)
            .with_phase(mpsched_core::Dur(self.timer_phase_ns))
    }

    pub fn window_ratio_256(&self) -> Option<u32> {
        self.window_ratio
            .map(|r| ((r * 256.0).round() as u32).clamp(1, 256))
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_model()?;
        if self.protocol == Protocol::Mptcp {
            // Builds once to check the name and the parameters.
            sched::build(&self.scheduler, &self.sched_params()?)
                .map_err(|e| build_error("connection", e))?;
            self.stack.admits(&self.scheduler, "connection.scheduler")?;
        }
        for (k, f) in self.flows.iter().enumerate() {
            if f.protocol == Protocol::Mptcp {
                self.stack
                    .admits(&f.scheduler, &format!("flows[{k}].scheduler"))?;
            }
        }
        Ok(())
    }

    /// Everything but the scheduler.
    pub fn validate_model(&self) -> Result<(), ConfigError> {
        if self.duration_ns == 0 {
            return Err(bad("duration_ns", "must be > 0"));
        }
        if CcKind::parse(&self.congestion).is_none() {
            return Err(bad(
                "congestion",
                format!(
                    "unknown congestion control '{}' (known: {})",
                    self.congestion,
                    CcKind::known()
                ),
            ));
        }
        if self.sndbuf_bytes == 0 {
            return Err(bad("sndbuf_bytes", "must be > 0"));
        }
        if self.rcvbuf_bytes == 0 {
            return Err(bad("rcvbuf_bytes", "must be > 0"));
        }
        if self.rcvbuf_initial_bytes == 0 {
            return Err(bad("rcvbuf_initial_bytes", "must be > 0"));
        }
        if let Some(r) = self.window_ratio {
            if !(r > 0.0 && r <= 1.0) {
                return Err(bad("window_ratio", format!("must be in (0, 1], got {r}")));
            }
        }
        if self.timer_hz != 0 && !mpsched_core::jiffies::KERNEL_HZ.contains(&self.timer_hz) {
            return Err(bad(
                "timer_hz",
                format!(
                    "a kernel's CONFIG_HZ is one of {:?} (or 0: exact timers), got {}",
                    mpsched_core::jiffies::KERNEL_HZ,
                    self.timer_hz
                ),
            ));
        }
        if self.write_chunk_bytes == Some(0) {
            return Err(bad("write_chunk_bytes", "must be > 0"));
        }
        if let Workload::File { size_bytes: 0 } = self.workload {
            return Err(bad("workload.size_bytes", "must be > 0"));
        }
        if let Workload::Rate {
            rate_bps,
            block_bytes,
            ..
        } = self.workload
        {
            if rate_bps == 0 {
                return Err(bad("workload.rate_bps", "must be > 0"));
            }
            if block_bytes == 0 || block_bytes > 1 << 30 {
                return Err(bad("workload.block_bytes", "must be in 1..=1 GiB"));
            }
        }
        if self.paths.is_empty() {
            return Err(bad("paths", "at least one path is needed"));
        }
        if self.paths.len() > 32 {
            return Err(bad("paths", "at most 32 paths"));
        }
        if let Some(m) = self.main_paths {
            if m == 0 || m > self.paths.len() {
                return Err(bad(
                    "main_paths",
                    format!("must be in 1..={}, got {m}", self.paths.len()),
                ));
            }
        }
        if self.flows.len() > 10_000 {
            return Err(bad("flows", "at most 10,000 competing flows"));
        }
        for (k, f) in self.flows.iter().enumerate() {
            f.validate(k, self.paths.len())?;
        }
        if self.links.len() > 64 {
            return Err(bad("links", "at most 64 shared links"));
        }
        for (s, l) in self.links.iter().enumerate() {
            l.down.validate(&format!("links[{s}].down"))?;
            l.up.validate(&format!("links[{s}].up"))?;
        }
        for (i, p) in self.paths.iter().enumerate() {
            p.down.validate(&format!("paths[{i}].down"))?;
            p.up.validate(&format!("paths[{i}].up"))?;
            for (j, &s) in p.via.iter().enumerate() {
                if s >= self.links.len() {
                    return Err(bad(
                        format!("paths[{i}].via[{j}]"),
                        format!("no shared link {s} (there are {})", self.links.len()),
                    ));
                }
                if p.via[..j].contains(&s) {
                    return Err(bad(
                        format!("paths[{i}].via[{j}]"),
                        format!("link {s} is listed twice"),
                    ));
                }
            }
            for (k, c) in p.schedule.iter().enumerate() {
                if c.rate_bps == Some(0) {
                    return Err(bad(
                        format!("paths[{i}].schedule[{k}].rate_bps"),
                        "must be > 0",
                    ));
                }
                if let (Some(up), Some(present)) = (c.up, c.present) {
                    if up != present {
                        return Err(bad(
                            format!("paths[{i}].schedule[{k}].present"),
                            format!("{present} contradicts up = {up}"),
                        ));
                    }
                }
                let traced = p.down.trace_ms.is_some() || p.up.trace_ms.is_some();
                if c.rate_bps.is_some() && traced {
                    return Err(bad(
                        format!("paths[{i}].schedule[{k}].rate_bps"),
                        "a trace sets this path's capacity",
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"{"duration_ns": 1000000000, "seed": 3, "protocol": "mptcp",
        "scheduler": "bm", "congestion": "cubic", "sndbuf_bytes": 1000,
        "rcvbuf_bytes": 1000, "workload": {"kind": "bulk"}, "paths": [
        {"name": "a", "down": {"rate_bps": 30000000, "delay_ns": 20000000, "loss": 0.0,
        "queue": {"packets": 100}}, "up": {"rate_bps": 10000000, "delay_ns": 10000000,
        "loss": 0.0, "queue": {"packets": 100}}}]}"#;

    fn refused(edit: impl FnOnce(&mut Config)) -> ConfigError {
        let mut cfg = Config::from_json(SCENARIO).unwrap();
        edit(&mut cfg);
        cfg.validate().unwrap_err()
    }

    /// Each refusal names the field it is about, nested ones with their whole path, and the
    /// message is `field: reason`.
    #[test]
    fn a_refused_scenario_names_its_field() {
        let e = refused(|c| c.paths[0].up.loss_burst = Some(0.5));
        assert_eq!(e.field, "paths[0].up.loss_burst");
        assert_eq!(
            e.to_string(),
            format!("paths[0].up.loss_burst: {}", e.reason)
        );
        let e = refused(|c| {
            c.scheduler_params
                .insert("lambda".into(), serde_json::json!(0.0));
        });
        assert_eq!(e.field, "connection.scheduler_params.lambda");
        let e = refused(|c| c.scheduler = "fastest".into());
        assert_eq!(e.field, "connection.scheduler");
        assert!(e.reason.starts_with("unknown scheduler 'fastest'"));
        let e = refused(|c| c.paths[0].down.rate_bps = 0);
        assert_eq!(e.field, "paths[0].down.rate_bps");
        let e = Config::from_json("{}").unwrap_err();
        assert_eq!(e.field, "scenario");
    }
}
