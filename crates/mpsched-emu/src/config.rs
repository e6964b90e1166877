//! The emulator's input: a normalized scenario (the same JSON the simulator runs) and, per
//! path, the namespaces and names of its two TUN devices.

use mpsched_scenario::{Config, ConfigError};
pub use mpsched_scenario::{LinkChange, LinkPlan, Route};
use serde::Deserialize;
use std::fmt;

/// The emulator's config refused: the field it is about (as the config's JSON names it:
/// `devices[0].client_dev`, or the scenario's own field) and why. Displayed as the messages
/// always were.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmuConfigError {
    /// Not the config's JSON; serde's message.
    Json(String),
    /// The scenario refused (its field and why, as the simulator says it).
    Scenario(ConfigError),
    /// `devices` has `devices` entries for `paths` paths.
    DeviceCount { devices: usize, paths: usize },
    /// A TUN device's name (`field`: `devices[i].client_dev`) that Linux would not take.
    DeviceName { field: String, name: String },
    /// `rt_priority` above 99.
    RtPriority(u32),
}

impl EmuConfigError {
    /// The field the refusal is about (`emulator config` for JSON that does not parse, the
    /// scenario's own field for a scenario refused).
    pub fn field(&self) -> &str {
        match self {
            EmuConfigError::Json(_) => "emulator config",
            EmuConfigError::Scenario(e) => &e.field,
            EmuConfigError::DeviceCount { .. } => "devices",
            EmuConfigError::DeviceName { field, .. } => field,
            EmuConfigError::RtPriority(_) => "rt_priority",
        }
    }
}

impl fmt::Display for EmuConfigError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            EmuConfigError::Json(e) => write!(f, "emulator config: {e}"),
            EmuConfigError::Scenario(e) => e.fmt(f),
            EmuConfigError::DeviceCount { devices, paths } => {
                write!(f, "devices: {devices} entries for {paths} paths")
            }
            EmuConfigError::DeviceName { field, name } => {
                write!(f, "{field}: invalid device name {name:?}")
            }
            EmuConfigError::RtPriority(_) => f.write_str("rt_priority: must be in 0..=99"),
        }
    }
}

impl std::error::Error for EmuConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EmuConfigError::Scenario(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ConfigError> for EmuConfigError {
    fn from(e: ConfigError) -> EmuConfigError {
        EmuConfigError::Scenario(e)
    }
}

/// For the callers whose own errors are still messages.
impl From<EmuConfigError> for String {
    fn from(e: EmuConfigError) -> String {
        e.to_string()
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmuConfig {
    /// The normalized scenario (`mpsched.scenario.to_native`); only its paths and seed are used.
    pub scenario: serde_json::Value,
    /// One entry per path of the scenario, in order.
    pub devices: Vec<PathDevices>,
    /// Spin (busy-wait) for this long before a due release instead of sleeping through it.
    #[serde(default = "default_spin_us")]
    pub spin_us: u64,
    #[serde(default)]
    pub threads: Threads,
    /// SCHED_FIFO priority of the link threads (1-99); 0 keeps the normal scheduler.
    #[serde(default)]
    pub rt_priority: u32,
    /// Record the headers of every TCP segment entering a link (the client's windows and Data
    /// ACKs on the up links, the data mappings on the down links), at most this many per
    /// link; 0 records nothing.
    #[serde(default)]
    pub header_trace: usize,
    /// Also write the packets entering the links as pcapng to this file (their IP and TCP
    /// headers; at most `header_trace` packets per link, or `PCAP_PACKETS` if that is 0).
    #[serde(default)]
    pub pcap: Option<String>,
}

/// Packets kept per link for the pcapng when `header_trace` does not say.
pub const PCAP_PACKETS: usize = 5_000_000;

fn default_spin_us() -> u64 {
    50
}

/// Where the two TUN devices of a path live. An empty namespace name means the emulator's own.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathDevices {
    pub client_ns: String,
    pub client_dev: String,
    pub server_ns: String,
    pub server_dev: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Threads {
    /// One thread for the down links, one for the up links.
    #[default]
    PerDirection,
    /// One thread for every link.
    Single,
}

impl EmuConfig {
    pub fn from_json(s: &str) -> Result<EmuConfig, EmuConfigError> {
        let cfg: EmuConfig =
            serde_json::from_str(s).map_err(|e| EmuConfigError::Json(e.to_string()))?;
        let scenario = cfg.scenario()?;
        if cfg.devices.len() != scenario.paths.len() {
            return Err(EmuConfigError::DeviceCount {
                devices: cfg.devices.len(),
                paths: scenario.paths.len(),
            });
        }
        for (i, d) in cfg.devices.iter().enumerate() {
            for (field, name) in [("client_dev", &d.client_dev), ("server_dev", &d.server_dev)] {
                if name.is_empty() || name.len() > 15 || name.contains('/') {
                    return Err(EmuConfigError::DeviceName {
                        field: format!("devices[{i}].{field}"),
                        name: name.clone(),
                    });
                }
            }
        }
        if cfg.rt_priority > 99 {
            return Err(EmuConfigError::RtPriority(cfg.rt_priority));
        }
        Ok(cfg)
    }

    /// The scenario, validated as the simulator validates it (the scheduler's name aside: the
    /// kernel's schedulers are not the simulator's).
    pub fn scenario(&self) -> Result<Config, EmuConfigError> {
        Ok(Config::from_json_external_scheduler(
            &self.scenario.to_string(),
        )?)
    }

    /// Every link of the scenario: per path the down link, then the up link, then per shared
    /// link its down and up link, planned as the simulator plans them.
    pub fn links(&self) -> Result<Vec<LinkPlan>, EmuConfigError> {
        Ok(self.scenario()?.link_plans())
    }

    /// Each path's route through the links (indices into `links()`), as the simulator's.
    pub fn routes(&self) -> Result<Vec<Route>, EmuConfigError> {
        Ok(self.scenario()?.routes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::{Dur, Rate};

    fn config(paths: &str, devices: &str) -> String {
        format!(
            r#"{{"scenario": {{"duration_ns": 1000000000, "seed": 3, "protocol": "mptcp",
                "scheduler": "default", "congestion": "cubic", "sndbuf_bytes": 1000,
                "rcvbuf_bytes": 1000, "workload": {{"kind": "bulk"}}, "paths": [{paths}]}},
               "devices": [{devices}]}}"#
        )
    }

    const PATH: &str = r#"{"name": "a", "down": {"rate_bps": 30000000, "delay_ns": 20000000,
        "loss": 0.01, "queue": {"time_ns": 50000000}, "jitter_ns": 4000000}, "up": {"rate_bps": 10000000,
        "delay_ns": 10000000, "loss": 0.0, "queue": {"packets": 100}},
        "schedule": [{"at_ns": 2000, "delay_up_ns": 5}, {"at_ns": 1000, "rate_bps": 5},
        {"at_ns": 3000, "jitter_down_ns": 7}]}"#;
    const DEV: &str =
        r#"{"client_ns": "c", "client_dev": "c0", "server_ns": "s", "server_dev": "s0"}"#;

    #[test]
    fn shared_links_are_planned_and_routed_as_in_the_simulator() {
        let mut cfg: serde_json::Value = serde_json::from_str(&config(PATH, DEV)).unwrap();
        let link: serde_json::Value = serde_json::from_str(LINK).unwrap();
        cfg["scenario"]["links"] = serde_json::json!([{"name": "dsl", "down": link, "up": link}]);
        cfg["scenario"]["paths"][0]["via"] = serde_json::json!([0]);
        let cfg = EmuConfig::from_json(&cfg.to_string()).unwrap();
        let links = cfg.links().unwrap();
        assert_eq!(links.len(), 4);
        assert_eq!((links[2].name.as_str(), links[2].down), ("dsl", true));
        assert_eq!((links[2].stream, links[3].stream), (3, 4));
        let routes = cfg.routes().unwrap();
        // Data: the shared link first (from the server), then the path's own; ACKs reversed.
        assert_eq!(routes[0].down, vec![2, 0]);
        assert_eq!(routes[0].up, vec![1, 3]);
    }

    const LINK: &str = r#"{"rate_bps": 1000000, "delay_ns": 1, "loss": 0.0,
        "queue": {"bytes": 3000}}"#;

    #[test]
    fn links_follow_the_simulator() {
        let cfg = EmuConfig::from_json(&config(PATH, DEV)).unwrap();
        assert_eq!(cfg.spin_us, 50);
        assert_eq!(cfg.threads, Threads::PerDirection);
        let links = cfg.links().unwrap();
        assert_eq!(links.len(), 2);
        let (down, up) = (&links[0], &links[1]);
        assert!(down.down && !up.down);
        assert_eq!((down.stream, up.stream), (1, 2));
        assert_eq!(down.link.rate, Rate::mbps(30));
        assert_eq!(up.link.delay, Dur::from_millis(10));
        assert_eq!(
            (down.link.jitter, up.link.jitter),
            (Dur::from_millis(4), Dur::ZERO)
        );
        // Sorted by time; the rate applies to both directions, each delay and jitter to its
        // own.
        assert_eq!(down.changes.len(), 2);
        assert_eq!(down.changes[0].rate, Some(Rate::bps(5)));
        assert_eq!(down.changes[1].jitter, Some(Dur(7)));
        assert_eq!(up.changes.len(), 2);
        assert_eq!(up.changes[0].at, Dur(1000));
        assert_eq!(up.changes[1].delay, Some(Dur(5)));
    }

    #[test]
    fn refuses_bad_input() {
        assert!(EmuConfig::from_json(&config(PATH, "")).is_err());
        let long = DEV.replace("\"c0\"", "\"a-very-long-device-name\"");
        assert!(EmuConfig::from_json(&config(PATH, &long))
            .unwrap_err()
            .to_string()
            .contains("client_dev"));
        let bad = PATH.replace("30000000", "0");
        assert!(EmuConfig::from_json(&config(&bad, DEV)).is_err());
    }

    /// Each refusal is its variant, names its field, and reads as the message it always was.
    #[test]
    fn refusals_are_typed_and_name_their_field() {
        let long = DEV.replace("\"c0\"", "\"a-very-long-device-name\"");
        let e = EmuConfig::from_json(&config(PATH, &long)).unwrap_err();
        assert_eq!(
            e,
            EmuConfigError::DeviceName {
                field: "devices[0].client_dev".into(),
                name: "a-very-long-device-name".into()
            }
        );
        assert_eq!(e.field(), "devices[0].client_dev");
        assert_eq!(
            e.to_string(),
            r#"devices[0].client_dev: invalid device name "a-very-long-device-name""#
        );
        let e = EmuConfig::from_json(&config(PATH, "")).unwrap_err();
        assert_eq!(
            e,
            EmuConfigError::DeviceCount {
                devices: 0,
                paths: 1
            }
        );
        assert_eq!(e.to_string(), "devices: 0 entries for 1 paths");
        let bad = PATH.replace("30000000", "0");
        let e = EmuConfig::from_json(&config(&bad, DEV)).unwrap_err();
        assert!(matches!(e, EmuConfigError::Scenario(_)), "{e:?}");
        assert_eq!(e.field(), "paths[0].down.rate_bps");
        assert_eq!(String::from(e), "paths[0].down.rate_bps: must be > 0");
        let e = EmuConfig::from_json("{").unwrap_err();
        assert!(matches!(e, EmuConfigError::Json(_)), "{e:?}");
        assert!(e.to_string().starts_with("emulator config: "), "{e}");
    }
}
