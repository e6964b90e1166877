//! mpsched-sim: drives the sans-IO core in virtual time.

pub mod build;
pub mod config;
pub mod event;
pub mod sim;
pub mod summary;
pub mod trace_out;

pub use config::Config;
pub use event::bench_event_queue;
pub use sim::{RunOutput, Simulation, Traces};
pub use summary::Summary;

/// Runs a normalized scenario given as JSON, streaming traces to `sink`.
pub fn run_json_streaming(
    config_json: &str,
    sample_interval: mpsched_core::Dur,
    chunk_rows: usize,
    sink: &mut trace_out::Sink,
) -> Result<Summary, String> {
    let cfg = Config::from_json(config_json)?;
    Ok(Simulation::new(cfg, true)?.run_streaming(sample_interval, chunk_rows, sink))
}

/// Runs a normalized scenario given as JSON.
pub fn run_json(config_json: &str, trace: bool) -> Result<RunOutput, String> {
    let cfg = Config::from_json(config_json)?;
    Ok(Simulation::new(cfg, trace)?.run())
}

/// The summary as the JSON object the command line prints.
pub fn summary_json(s: &Summary) -> Result<String, serde_json::Error> {
    serde_json::to_string(s)
}
