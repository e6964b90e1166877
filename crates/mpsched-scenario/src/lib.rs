//! mpsched-scenario: the normalized scenario that the simulator runs and the emulator
//! emulates (every quantity an integer in base units), its validation, and the plan of every
//! link it describes, written once for both.

pub mod build;
pub mod config;
pub mod keys;
pub mod plan;

pub use config::{Config, ConfigError};
pub use plan::{LinkChange, LinkPlan, PathChange, Route};
