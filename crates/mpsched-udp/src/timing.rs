//! What a scheduler costs in real time: each decision (`Scheduler::next`) timed on the OS
//! clock, for any scheduler (one written in Python costs a call into the interpreter).

use mpsched_core::sched::{Decision, SchedCtx, Scheduler, SubflowSet};
use mpsched_core::Time;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

/// Decisions asked for and the time they took, shared with whoever reports them.
#[derive(Clone, Debug, Default)]
pub struct DecisionCost {
    calls: Rc<Cell<u64>>,
    nanos: Rc<Cell<u64>>,
}

impl DecisionCost {
    pub fn calls(&self) -> u64 {
        self.calls.get()
    }
    /// Mean microseconds per call.
    pub fn mean_us(&self) -> Option<f64> {
        let n = self.calls.get();
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
        let start = Instant::now();
        let d = self.inner.next(ctx);
        let took = start.elapsed().as_nanos() as u64;
        self.cost.calls.set(self.cost.calls.get() + 1);
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
