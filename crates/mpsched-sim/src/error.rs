//! Why a simulation could not be set up: the scenario refused (its field and why), or a
//! scheduler it names that cannot be built.

use mpsched_core::sched::BuildError;
use mpsched_scenario::ConfigError;
use std::fmt;

/// A simulation refused. Displayed as the messages always were: a scenario's refusal as
/// `field: reason`, a scheduler's as the core says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// The scenario refused: its field and why. JSON that does not parse is the field
    /// `scenario` (`Config::from_json`).
    Config(ConfigError),
    /// The scheduler of table `owner` (`connection`, `flows[3]`) cannot be built. Validation
    /// builds each scheduler first and refuses with the field, so a scenario that passed it
    /// gets here only with a scheduler replaced after validation.
    Scheduler { owner: String, error: BuildError },
}

impl SimError {
    /// The scenario's field the refusal is about (`paths[0].down.rate_bps`,
    /// `flows[3].scheduler_params.lambda`).
    pub fn field(&self) -> String {
        match self {
            SimError::Config(e) => e.field.clone(),
            SimError::Scheduler { owner, error } => match error {
                BuildError::UnknownScheduler(_) => format!("{owner}.scheduler"),
                BuildError::Param(p) => format!("{owner}.scheduler_params.{}", p.key),
            },
        }
    }

    pub(crate) fn scheduler(owner: impl Into<String>) -> impl FnOnce(BuildError) -> SimError {
        move |error| SimError::Scheduler {
            owner: owner.into(),
            error,
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            SimError::Config(e) => e.fmt(f),
            SimError::Scheduler { error, .. } => error.fmt(f),
        }
    }
}

impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimError::Config(e) => Some(e),
            SimError::Scheduler { error, .. } => Some(error),
        }
    }
}

impl From<ConfigError> for SimError {
    fn from(e: ConfigError) -> SimError {
        SimError::Config(e)
    }
}

/// For the callers whose own errors are still messages (the Python binding's).
impl From<SimError> for String {
    fn from(e: SimError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::sched::{self, ParamError};

    /// A refused scenario is a `Config` error that names its field, displayed `field: reason`
    /// as before; a scheduler's names its table but reads as the core's message.
    #[test]
    fn refusals_are_typed_and_name_their_field() {
        let e = crate::run_json("{}", false).err().expect("refused");
        assert!(
            matches!(&e, SimError::Config(c) if c.field == "scenario"),
            "{e:?}"
        );
        assert_eq!(e.field(), "scenario");
        assert!(e.to_string().starts_with("scenario: missing field"), "{e}");
        let e = SimError::scheduler("flows[3]")(BuildError::Param(ParamError::new(
            "lambda",
            "must be in [0.1, 100], got 0",
        )));
        assert_eq!(e.field(), "flows[3].scheduler_params.lambda");
        assert_eq!(e.to_string(), "lambda: must be in [0.1, 100], got 0");
        let e = sched::build("nope", &sched::SchedParams::new())
            .map_err(SimError::scheduler("connection"))
            .expect_err("no such scheduler");
        assert_eq!(e.field(), "connection.scheduler");
        assert!(String::from(e).starts_with("unknown scheduler 'nope' (known: "));
    }
}
