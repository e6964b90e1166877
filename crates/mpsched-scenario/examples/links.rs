//! The scenario crate's links, without a simulator: what a check of a new link knob needs
//! (tests/test_extending.py runs it on a copy of this crate with the knob added).
//!
//! `links knobs`: the link knobs as the contract publishes them (JSON).
//! `links plans`: each link a normalized scenario (JSON on stdin) describes, one per line:
//! `NAME down|up CONFIG`, the configuration the simulator and the emulator build it from.

use mpsched_scenario::{keys, Config};
use std::io::Read;

fn main() -> Result<(), String> {
    match std::env::args().nth(1).as_deref() {
        Some("knobs") => {
            let knobs = serde_json::to_string(&keys::link_knobs()).map_err(|e| e.to_string())?;
            println!("{knobs}");
        }
        Some("plans") => {
            let mut json = String::new();
            std::io::stdin()
                .read_to_string(&mut json)
                .map_err(|e| e.to_string())?;
            let cfg = Config::from_json(&json)?;
            for plan in cfg.link_plans() {
                let direction = if plan.down { "down" } else { "up" };
                println!("{} {direction} {:?}", plan.name, plan.link);
            }
        }
        _ => return Err("usage: links knobs | links plans < scenario.json".into()),
    }
    Ok(())
}
