//! mpsched-sim: drives the sans-IO core in virtual time.

pub mod app;
pub mod bench;
pub mod capture;
pub mod component;
pub mod conn;
pub mod contract;
pub mod error;
pub mod event;
pub mod handshake;
pub mod schema;
pub mod sim;
pub mod summary;
pub mod trace_out;
pub mod trace_schema;

pub use error::SimError;
pub use event::bench_event_queue;
pub use mpsched_scenario::Config;
/// The scenario crate's modules, where this crate's users have always found them.
pub use mpsched_scenario::{build, config};
pub use sim::{RunOutput, Simulation, Traces};
pub use summary::Summary;

/// A simulation of a normalized scenario given as JSON; `external` replaces the scenario's
/// scheduler.
pub fn simulation_from_json(
    config_json: &str,
    trace: bool,
    external: Option<Box<dyn mpsched_core::sched::Scheduler>>,
) -> Result<Simulation, SimError> {
    match external {
        None => Simulation::new(Config::from_json(config_json)?, trace),
        Some(s) => {
            Simulation::with_scheduler(Config::from_json_external_scheduler(config_json)?, trace, s)
        }
    }
}

/// Runs a normalized scenario given as JSON.
pub fn run_json(config_json: &str, trace: bool) -> Result<RunOutput, SimError> {
    let cfg = Config::from_json(config_json)?;
    Ok(Simulation::new(cfg, trace)?.run())
}

/// The summary as the JSON object the command line prints.
pub fn summary_json(s: &Summary) -> Result<String, serde_json::Error> {
    serde_json::to_string(s)
}
