//! The event list: a binary heap ordered by (time, insertion sequence), so that events at the
//! same instant leave in the order they were scheduled and every run is reproducible bit for
//! bit. Each component keeps at most one live entry (its next wake-up); an entry superseded by
//! an earlier one is skipped when it surfaces.

use mpsched_core::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub type ComponentId = u32;

/// An event's key packed into one integer so that the heap compares one `u128`:
/// time (64 bits) | insertion sequence (40 bits) | component (24 bits).
type Key = u128;

fn key(t: Time, seq: u64, c: ComponentId) -> Key {
    ((t.as_nanos() as u128) << 64)
        | ((seq as u128 & 0xFF_FFFF_FFFF) << 24)
        | (c as u128 & 0xFF_FFFF)
}

pub struct EventList {
    heap: BinaryHeap<Reverse<Key>>,
    seq: u64,
    /// The live wake-up of each component.
    due: Vec<Option<Time>>,
}

impl EventList {
    pub fn new(components: usize) -> EventList {
        EventList {
            heap: BinaryHeap::with_capacity(64),
            seq: 0,
            due: vec![None; components],
        }
    }

    /// Asks for `c` to run at `t`, unless it already runs no later than that.
    pub fn schedule(&mut self, c: ComponentId, t: Time) {
        let slot = &mut self.due[c as usize];
        if slot.is_some_and(|d| d <= t) {
            return;
        }
        *slot = Some(t);
        self.heap.push(Reverse(key(t, self.seq, c)));
        self.seq += 1;
    }

    /// The next live event, if any.
    pub fn pop(&mut self) -> Option<(Time, ComponentId)> {
        while let Some(Reverse(k)) = self.heap.pop() {
            let t = Time((k >> 64) as u64);
            let c = (k & 0xFF_FFFF) as ComponentId;
            if self.due[c as usize] == Some(t) {
                self.due[c as usize] = None;
                return Some((t, c));
            }
        }
        None
    }

    pub fn pending(&self) -> usize {
        self.heap.len()
    }
}

/// A bare event loop with `pending` events in flight: pop one, push one a pseudo-random time
/// later. Returns million events per second; the yardstick `mpsched bench` divides by.
pub fn bench_event_queue(events: u64, pending: u64) -> f64 {
    let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::with_capacity(pending as usize);
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for i in 0..pending {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        heap.push(Reverse((x % 1_000_000, i)));
    }
    let start = std::time::Instant::now();
    let mut acc = 0u64;
    for seq in pending..pending + events {
        let Reverse((t, s)) = heap.pop().expect("non-empty");
        acc = acc.wrapping_add(s);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        heap.push(Reverse((t + x % 1_000_000, seq)));
    }
    let secs = start.elapsed().as_secs_f64();
    std::hint::black_box(acc);
    events as f64 / secs / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_leave_in_insertion_order_and_superseded_entries_are_skipped() {
        let mut ev = EventList::new(3);
        ev.schedule(2, Time(10));
        ev.schedule(0, Time(10));
        ev.schedule(1, Time(20));
        ev.schedule(1, Time(5)); // earlier: supersedes
        ev.schedule(0, Time(30)); // later: ignored, 10 stays
        assert_eq!(ev.pop(), Some((Time(5), 1)));
        assert_eq!(ev.pop(), Some((Time(10), 2)));
        assert_eq!(ev.pop(), Some((Time(10), 0)));
        assert_eq!(ev.pop(), None);
    }
}
