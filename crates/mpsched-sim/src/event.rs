//! The event list: pending wake-ups ordered by (time, insertion sequence), so that events at the
//! same instant leave in the order they were scheduled and every run is reproducible bit for
//! bit. Each component keeps at most one live entry (its next wake-up); an entry superseded by
//! an earlier one is skipped when it surfaces.
//!
//! The entries are kept in a vector sorted latest first, the next event last. A run has few
//! pending entries (about five in the default scenario: a live one per busy component, and a
//! superseded one now and then), and for so few a sorted vector costs a third of a binary
//! heap's instructions per event: popping is taking the last element, and a new wake-up (a
//! link's next packet, a timer) mostly lands among the soonest, a step or two from the end.
//! Longer lists (many connections) find the place by halves.

use mpsched_core::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub type ComponentId = u32;

/// An event's key packed into one integer so that entries compare as one `u128`:
/// time (64 bits) | insertion sequence (40 bits) | component (24 bits).
type Key = u128;

fn key(t: Time, seq: u64, c: ComponentId) -> Key {
    ((t.as_nanos() as u128) << 64)
        | ((seq as u128 & 0xFF_FFFF_FFFF) << 24)
        | (c as u128 & 0xFF_FFFF)
}

/// Up to this many pending entries a new one walks to its place from the soonest end; beyond,
/// it is found by binary search (a walk would cost as much as the list is long).
const WALK_MAX: usize = 32;

pub struct EventList {
    /// Every pending entry, superseded ones included, sorted by key latest first: the next
    /// event is the last. Popped in increasing key order, as a min-heap would pop them.
    pending: Vec<Key>,
    seq: u64,
    /// The live wake-up of each component.
    due: Vec<Option<Time>>,
}

impl EventList {
    pub fn new(components: usize) -> EventList {
        EventList {
            pending: Vec::with_capacity(64),
            seq: 0,
            due: vec![None; components],
        }
    }

    /// Asks for `c` to run at `t`, unless it already runs no later than that. Inline: most
    /// calls (a link or a socket asking again for the wake-up it has) end at the first test.
    #[inline]
    pub fn schedule(&mut self, c: ComponentId, t: Time) {
        let slot = &mut self.due[c as usize];
        if slot.is_some_and(|d| d <= t) {
            return;
        }
        *slot = Some(t);
        self.insert(key(t, self.seq, c));
        self.seq += 1;
    }

    /// Puts `k` where it keeps `pending` sorted latest first.
    #[inline(never)]
    fn insert(&mut self, k: Key) {
        let n = self.pending.len();
        if n > WALK_MAX {
            let at = self.pending.partition_point(|&x| x > k);
            self.pending.insert(at, k);
            return;
        }
        // An insertion sort's step: the sooner entries move up one until `k`'s place is free.
        self.pending.push(k);
        let v = &mut self.pending[..];
        let mut i = n;
        while i > 0 && v[i - 1] < k {
            v[i] = v[i - 1];
            i -= 1;
        }
        v[i] = k;
    }

    /// The next live event, if any.
    pub fn pop(&mut self) -> Option<(Time, ComponentId)> {
        while let Some(k) = self.pending.pop() {
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
        self.pending.len()
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

    /// The list against the binary heap it replaced (every entry pushed, the smallest key
    /// popped, superseded ones skipped), with few components and with many (binary search),
    /// and with wake-ups that supersede, repeat and tie.
    #[test]
    fn pops_what_a_binary_heap_of_the_same_entries_pops() {
        for components in [3usize, 11, 40, 300] {
            let mut ev = EventList::new(components);
            let mut heap: BinaryHeap<Reverse<Key>> = BinaryHeap::new();
            let mut due: Vec<Option<Time>> = vec![None; components];
            let mut seq = 0u64;
            let mut x: u64 = 0x2545_F491_4F6C_DD1D;
            let mut rand = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let mut now = 0u64;
            for _ in 0..200_000 {
                if rand() % 3 == 0 {
                    let want = loop {
                        let Some(Reverse(k)) = heap.pop() else {
                            break None;
                        };
                        let (t, c) = (Time((k >> 64) as u64), (k & 0xFF_FFFF) as usize);
                        if due[c] == Some(t) {
                            due[c] = None;
                            break Some((t, c as ComponentId));
                        }
                    };
                    assert_eq!(ev.pop(), want);
                    if let Some((t, _)) = want {
                        now = t.0;
                    }
                } else {
                    let c = (rand() % components as u64) as ComponentId;
                    // Soon, often at the same instant, now and then far away.
                    let t = Time(now + [0, 1, rand() % 50, rand() % 100_000][rand() as usize % 4]);
                    ev.schedule(c, t);
                    if due[c as usize].is_none_or(|d| d > t) {
                        due[c as usize] = Some(t);
                        heap.push(Reverse(key(t, seq, c)));
                        seq += 1;
                    }
                }
            }
        }
    }
}
