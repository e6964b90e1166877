//! Random loss of one link direction: independent (Bernoulli) or bursty (Gilbert-Elliott).
//!
//! Gilbert-Elliott is a two-state Markov chain stepped once per packet: in the good state a
//! packet is lost with probability `loss_good`, in the bad state with `loss_bad`; after each
//! packet the chain moves good -> bad with probability `p` and bad -> good with `r` (the four
//! parameters of netem's `loss gemodel p r 1-h 1-k`). The user-facing form is Gilbert's: no
//! loss when good, every packet lost when bad, set by the mean loss rate and the mean length
//! of a run of consecutive losses. Then a burst is one stay in the bad state, geometric with
//! mean 1/r, and the stationary share of bad packets p/(p+r) is the mean loss.

use crate::rng::Rng;
use std::fmt;

/// A loss model refused: which setting and why. Displayed as the messages always were (`mean
/// loss must be in [0, 1), got 1`); the scenario puts the field in front.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossError {
    /// `bursty`'s mean loss rate is not in [0, 1).
    Mean(f64),
    /// `bursty`'s mean burst length is below 1 packet (or not a number).
    Burst(f64),
    /// Bursts this short cannot reach this mean: the good state would last < 1 packet.
    BurstTooShort { mean: f64, burst: f64 },
    /// A Gilbert-Elliott parameter (`p`, `r`, `loss_good`, `loss_bad`) is not in [0, 1].
    Probability { name: &'static str, value: f64 },
    /// `r` = 0 with `p` > 0: the bad state would never end.
    EndlessBadState,
}

impl fmt::Display for LossError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match *self {
            LossError::Mean(mean) => write!(f, "mean loss must be in [0, 1), got {mean}"),
            LossError::Burst(burst) => {
                write!(f, "mean burst length must be >= 1 packet, got {burst}")
            }
            LossError::BurstTooShort { mean, burst } => write!(
                f,
                "a mean loss of {mean} needs bursts of at least {:.3} packets, got {burst}",
                mean / (1.0 - mean)
            ),
            LossError::Probability { name, value } => {
                write!(f, "{name} must be in [0, 1], got {value}")
            }
            LossError::EndlessBadState => {
                f.write_str("r must be > 0 (the bad state would never end)")
            }
        }
    }
}

impl std::error::Error for LossError {}

/// For the callers whose own errors are still messages.
impl From<LossError> for String {
    fn from(e: LossError) -> String {
        e.to_string()
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossModel {
    /// Each packet lost independently with this probability.
    Bernoulli(f64),
    GilbertElliott {
        /// Good -> bad, per packet.
        p: f64,
        /// Bad -> good, per packet.
        r: f64,
        loss_good: f64,
        loss_bad: f64,
    },
}

impl LossModel {
    /// Gilbert's model with mean loss rate `mean` in bursts of `burst` packets on average
    /// (`burst` >= 1; a mean of 0 loses nothing).
    pub fn bursty(mean: f64, burst: f64) -> Result<LossModel, LossError> {
        if !(0.0..1.0).contains(&mean) {
            return Err(LossError::Mean(mean));
        }
        if !(burst >= 1.0 && burst.is_finite()) {
            return Err(LossError::Burst(burst));
        }
        let r = 1.0 / burst;
        let p = mean * r / (1.0 - mean);
        if p > 1.0 {
            // Bursts this short cannot reach this mean: the good state would last < 1 packet.
            return Err(LossError::BurstTooShort { mean, burst });
        }
        Ok(LossModel::GilbertElliott {
            p,
            r,
            loss_good: 0.0,
            loss_bad: 1.0,
        })
    }

    /// Checks the four parameters of a Gilbert-Elliott chain (all probabilities, a chain that
    /// leaves each state).
    pub fn gilbert_elliott(
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
    ) -> Result<Self, LossError> {
        for (name, v) in [
            ("p", p),
            ("r", r),
            ("loss_good", loss_good),
            ("loss_bad", loss_bad),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(LossError::Probability { name, value: v });
            }
        }
        if r == 0.0 && p > 0.0 {
            return Err(LossError::EndlessBadState);
        }
        Ok(LossModel::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        })
    }

    /// The long-run share of packets lost.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::Bernoulli(p) => p,
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                if p == 0.0 {
                    return loss_good;
                }
                let bad = p / (p + r);
                (1.0 - bad) * loss_good + bad * loss_bad
            }
        }
    }
}

/// A loss model with its state.
#[derive(Clone, Debug)]
pub struct Loss {
    model: LossModel,
    bad: bool,
}

impl Loss {
    /// Starts in the good state.
    pub fn new(model: LossModel) -> Loss {
        Loss { model, bad: false }
    }

    pub fn model(&self) -> LossModel {
        self.model
    }

    /// Whether the next packet is lost.
    #[inline]
    pub fn lose(&mut self, rng: &mut Rng) -> bool {
        match self.model {
            LossModel::Bernoulli(p) => rng.chance(p),
            LossModel::GilbertElliott { .. } => self.step_chain(rng),
        }
    }

    #[inline(never)]
    fn step_chain(&mut self, rng: &mut Rng) -> bool {
        let LossModel::GilbertElliott {
            p,
            r,
            loss_good,
            loss_bad,
        } = self.model
        else {
            unreachable!("a chain")
        };
        let lost = rng.chance(if self.bad { loss_bad } else { loss_good });
        self.bad = if self.bad {
            !rng.chance(r)
        } else {
            rng.chance(p)
        };
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loses `n` packets' worth: (loss rate, mean length of runs of consecutive losses).
    fn measure(model: LossModel, n: u64, seed: u64) -> (f64, f64) {
        let mut loss = Loss::new(model);
        let mut rng = Rng::new(seed, 7);
        let (mut lost, mut runs, mut in_run) = (0u64, 0u64, false);
        for _ in 0..n {
            let l = loss.lose(&mut rng);
            lost += u64::from(l);
            runs += u64::from(l && !in_run);
            in_run = l;
        }
        (lost as f64 / n as f64, lost as f64 / runs.max(1) as f64)
    }

    #[test]
    fn gilbert_gives_the_configured_mean_loss_and_burst_length() {
        // Enough packets for over 15,000 bursts: the measured means then lie within 5% with
        // margin (a burst count's relative spread is about 1/sqrt(bursts), times 1.4 for the
        // spread of the geometric lengths).
        for (mean, burst, n) in [
            (0.05, 3.0, 1_000_000),
            (0.02, 10.0, 10_000_000),
            (0.01, 1.5, 10_000_000),
            (0.2, 25.0, 10_000_000),
        ] {
            let (rate, runs) = measure(LossModel::bursty(mean, burst).unwrap(), n, 1);
            assert!(
                (rate / mean - 1.0).abs() < 0.05,
                "{mean} {burst}: rate {rate}"
            );
            assert!(
                (runs / burst - 1.0).abs() < 0.05,
                "{mean} {burst}: bursts {runs}"
            );
        }
    }

    #[test]
    fn independent_losses_come_in_runs_of_one_over_one_minus_p() {
        let (rate, runs) = measure(LossModel::Bernoulli(0.01), 1_000_000, 2);
        assert!((rate / 0.01 - 1.0).abs() < 0.05, "{rate}");
        assert!((runs - 1.0 / 0.99).abs() < 0.01, "{runs}");
    }

    #[test]
    fn four_parameters_give_the_stationary_loss() {
        let m = LossModel::gilbert_elliott(0.02, 0.25, 0.005, 0.6).unwrap();
        let expected = (0.25 * 0.005 + 0.02 * 0.6) / 0.27;
        assert!((m.mean_loss() - expected).abs() < 1e-12);
        let (rate, _) = measure(m, 1_000_000, 3);
        assert!((rate / expected - 1.0).abs() < 0.05, "{rate} vs {expected}");
    }

    #[test]
    fn impossible_settings_are_refused() {
        assert!(LossModel::bursty(0.6, 1.0).is_err()); // needs bursts >= 1.5
        assert!(LossModel::bursty(0.6, 1.5).is_ok());
        assert!(LossModel::bursty(0.01, 0.5).is_err());
        assert!(LossModel::bursty(1.0, 2.0).is_err());
        assert!(LossModel::gilbert_elliott(0.1, 0.0, 0.0, 1.0).is_err());
        assert!(LossModel::gilbert_elliott(0.1, 1.2, 0.0, 1.0).is_err());
        assert_eq!(LossModel::bursty(0.0, 4.0).unwrap().mean_loss(), 0.0);
    }

    /// Each refusal is its variant, displayed as the message it always was.
    #[test]
    fn refusals_are_typed_and_say_why() {
        let e = LossModel::bursty(0.6, 1.0).unwrap_err();
        assert_eq!(
            e,
            LossError::BurstTooShort {
                mean: 0.6,
                burst: 1.0
            }
        );
        assert_eq!(
            e.to_string(),
            "a mean loss of 0.6 needs bursts of at least 1.500 packets, got 1"
        );
        let e = LossModel::bursty(1.0, 2.0).unwrap_err();
        assert_eq!(e, LossError::Mean(1.0));
        assert_eq!(e.to_string(), "mean loss must be in [0, 1), got 1");
        let e = LossModel::bursty(0.01, 0.5).unwrap_err();
        assert_eq!(e, LossError::Burst(0.5));
        assert_eq!(
            e.to_string(),
            "mean burst length must be >= 1 packet, got 0.5"
        );
        let e = LossModel::gilbert_elliott(0.1, 1.2, 0.0, 1.0).unwrap_err();
        assert_eq!(
            e,
            LossError::Probability {
                name: "r",
                value: 1.2
            }
        );
        assert_eq!(e.to_string(), "r must be in [0, 1], got 1.2");
        let e = LossModel::gilbert_elliott(0.1, 0.0, 0.0, 1.0).unwrap_err();
        assert_eq!(e, LossError::EndlessBadState);
        assert_eq!(
            String::from(e),
            "r must be > 0 (the bad state would never end)"
        );
    }
}
