//! What a scheduler costs in real time: decisions (`Scheduler::next`) timed on the OS clock,
//! for any scheduler (one written in Python costs a call into the interpreter). One decision
//! in `SAMPLE` is timed, the first of all included: two clock reads per decision were 3% of
//! a loopback transfer's CPU (issue 29), and the mean of a regular sample is the mean.

use mpsched_core::sched::{Decision, SchedCtx, Scheduler, SubflowSet};
use mpsched_core::Time;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

/// Decisions timed: one in this many.
pub const SAMPLE: u64 = 16;

/// Decisions asked for and the time the timed ones took, shared with whoever reports them.
#[derive(Clone, Debug, Default)]
pub struct DecisionCost {
    calls: Rc<Cell<u64>>,
    timed: Rc<Cell<u64>>,
    nanos: Rc<Cell<u64>>,
}

impl DecisionCost {
    pub fn calls(&self) -> u64 {
        self.calls.get()
    }
    /// Mean microseconds per call (over the timed ones).
    pub fn mean_us(&self) -> Option<f64> {
        let n = self.timed.get();
        (n > 0).then(|| self.nanos.get() as f64 / n as f64 / 1e3)
    }
}

/// `inner`, timed.
#[derive(Debug)]
pub struct Timed {
    inner: Box<dyn Scheduler>,
    cost: DecisionCost,
}

impl Timed {
    pub fn new(inner: Box<dyn Scheduler>, cost: DecisionCost) -> Timed {
        Timed { inner, cost }
    }
}

impl Scheduler for Timed {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        let calls = self.cost.calls.get();
        self.cost.calls.set(calls + 1);
        if !calls.is_multiple_of(SAMPLE) {
            return self.inner.next(ctx);
        }
        let start = Instant::now();
        let d = self.inner.next(ctx);
        let took = start.elapsed().as_nanos() as u64;
        self.cost.timed.set(self.cost.timed.get() + 1);
        self.cost.nanos.set(self.cost.nanos.get() + took);
        d
    }

    fn on_data_ack(&mut self, now: Time, acked: u64, left_edge: SubflowSet) {
        self.inner.on_data_ack(now, acked, left_edge);
    }

    fn pushed_end(&self) -> u64 {
        self.inner.pushed_end()
    }

    fn queued(&self, sf: usize) -> u32 {
        self.inner.queued(sf)
    }
}
