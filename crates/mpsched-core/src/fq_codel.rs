//! FQ-CoDel (RFC 8290): packets are hashed by flow into queues (1024 buckets, Linux's default),
//! served by deficit round robin with a quantum of one MTU (1514 bytes); a flow that has just
//! become active goes on the list of new flows, served before the old ones, so that a sparse
//! flow's packets skip the bulk flows' queues. Each queue has its own CoDel (`codel.rs`). ECN is
//! left out (no ECN in the model).

use crate::codel::{Codel, CodelConfig};
use crate::time::Time;
use std::collections::VecDeque;

/// Flow buckets (`flows` of Linux's fq_codel).
pub const BUCKETS: usize = 1024;
/// The DRR quantum: one Ethernet MTU (Linux's default, 1514).
pub const QUANTUM: i64 = 1514;

struct Flow<P> {
    queue: VecDeque<(Time, P)>,
    bytes: u64,
    deficit: i64,
    codel: Codel,
    /// On the new or old list.
    listed: bool,
}

pub struct FqCodel<P> {
    cfg: CodelConfig,
    flows: Vec<Flow<P>>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    len: usize,
}

impl<P> FqCodel<P> {
    pub fn new(cfg: CodelConfig) -> FqCodel<P> {
        FqCodel {
            cfg,
            flows: Vec::new(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            len: 0,
        }
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn bucket(&mut self, key: u64) -> usize {
        if self.flows.is_empty() {
            self.flows = (0..BUCKETS)
                .map(|_| Flow {
                    queue: VecDeque::new(),
                    bytes: 0,
                    deficit: 0,
                    codel: Codel::new(self.cfg),
                    listed: false,
                })
                .collect();
        }
        // SplitMix64's finalizer spreads consecutive keys over the buckets.
        let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % BUCKETS as u64) as usize
    }

    /// RFC 8290 4.1: the packet joins its flow's queue; a flow not listed becomes a new flow.
    pub fn enqueue(&mut self, now: Time, key: u64, len: u32, pkt: P) {
        let b = self.bucket(key);
        let f = &mut self.flows[b];
        f.queue.push_back((now, pkt));
        f.bytes += u64::from(len);
        self.len += 1;
        if !f.listed {
            f.listed = true;
            f.deficit = QUANTUM;
            self.new_flows.push_back(b);
        }
    }

    /// RFC 8290 4.2: the next packet to send at `now` (with when it was queued), CoDel's
    /// drops on the way going to `dropped`. `len` gives a packet's wire length.
    pub fn dequeue(
        &mut self,
        now: Time,
        len: impl Fn(&P) -> u32,
        mtu: u64,
        dropped: &mut Vec<P>,
    ) -> Option<(Time, P)> {
        loop {
            let from_new = !self.new_flows.is_empty();
            let b = *(if from_new {
                self.new_flows.front()
            } else {
                self.old_flows.front()
            })?;
            let f = &mut self.flows[b];
            if f.deficit <= 0 {
                f.deficit += QUANTUM;
                let list = if from_new {
                    &mut self.new_flows
                } else {
                    &mut self.old_flows
                };
                list.pop_front();
                self.old_flows.push_back(b);
                continue;
            }
            // CoDel on this flow's queue: drop from its head while it says so.
            let mut served = None;
            while let Some((queued_at, pkt)) = f.queue.pop_front() {
                let l = u64::from(len(&pkt));
                f.bytes -= l;
                self.len -= 1;
                if f.codel
                    .should_drop(now, now.saturating_since(queued_at), f.bytes, mtu)
                {
                    dropped.push(pkt);
                    continue;
                }
                served = Some((queued_at, pkt, l));
                break;
            }
            match served {
                Some((queued_at, pkt, l)) => {
                    f.deficit -= l as i64;
                    return Some((queued_at, pkt));
                }
                None => {
                    f.codel.on_empty();
                    // An empty new flow moves to the old list (so that it cannot jump the
                    // queue again at once); an empty old flow leaves.
                    if from_new {
                        self.new_flows.pop_front();
                        self.old_flows.push_back(b);
                    } else {
                        self.old_flows.pop_front();
                        f.listed = false;
                    }
                }
            }
        }
    }

    /// Everything queued, for an outage.
    pub fn drain(&mut self) -> Vec<P> {
        let mut out = Vec::with_capacity(self.len);
        for f in &mut self.flows {
            out.extend(f.queue.drain(..).map(|(_, p)| p));
            f.bytes = 0;
            f.listed = false;
            f.codel.on_empty();
        }
        self.new_flows.clear();
        self.old_flows.clear();
        self.len = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Dur;

    fn ms(m: u64) -> Time {
        Time::ZERO + Dur::from_millis(m)
    }

    #[test]
    fn a_sparse_flow_goes_before_a_bulk_flow_s_queue() {
        let mut q = FqCodel::new(CodelConfig::default());
        // Bulk flow 1 queues 100 packets; then flow 2 sends one.
        for i in 0..100u32 {
            q.enqueue(ms(0), 1, 1500, (1, i));
        }
        let mut dropped = vec![];
        let first = q.dequeue(ms(1), |_| 1500, 1500, &mut dropped).unwrap();
        assert_eq!(first.1, (1, 0));
        q.enqueue(ms(1), 2, 100, (2, 0));
        // Flow 1 still has 14 bytes of its quantum: one more packet (DRR lets the deficit go
        // negative); then flow 2, new, goes before flow 1's next round.
        let next: Vec<_> = (0..3)
            .map(|_| {
                q.dequeue(
                    ms(2),
                    |p| if p.0 == 2 { 100 } else { 1500 },
                    1500,
                    &mut dropped,
                )
            })
            .map(|p| p.unwrap().1)
            .collect();
        assert_eq!(next, [(1, 1), (2, 0), (1, 2)]);
        assert!(dropped.is_empty());
        assert_eq!(q.len(), 97);
    }

    #[test]
    fn a_new_flow_goes_before_every_backlogged_flow() {
        // Three bulk flows have each had a turn (1 and 2 are on the old list, 3 ends its
        // quantum at the head of the new list); then flow 4 sends one packet. RFC 8290 serves
        // it next, ahead of the old flows' turns; plain round robin would put it behind
        // flows 1, 2 and 3.
        let mut q = FqCodel::new(CodelConfig::default());
        for i in 0..10u32 {
            for flow in 1..=3 {
                q.enqueue(ms(0), flow, 1500, (flow, i));
            }
        }
        let mut dropped = vec![];
        let mut next =
            |q: &mut FqCodel<(u64, u32)>| q.dequeue(ms(1), |_| 1500, 1500, &mut dropped).unwrap().1;
        let first: Vec<_> = (0..6).map(|_| next(&mut q)).collect();
        assert_eq!(first, [(1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1)]);
        q.enqueue(ms(1), 4, 1500, (4, 0));
        let then: Vec<_> = (0..4).map(|_| next(&mut q)).collect();
        assert_eq!(then, [(4, 0), (1, 2), (2, 2), (3, 2)]);
    }

    #[test]
    fn two_bulk_flows_share_by_bytes() {
        let mut q = FqCodel::new(CodelConfig::default());
        for i in 0..50u32 {
            q.enqueue(ms(0), 1, 1500, (1, i));
            q.enqueue(ms(0), 2, 500, (2, i));
        }
        let mut dropped = vec![];
        let mut bytes = [0u64; 2];
        for _ in 0..40 {
            let (_, p) = q
                .dequeue(
                    ms(0),
                    |p| if p.0 == 1 { 1500 } else { 500 },
                    1500,
                    &mut dropped,
                )
                .unwrap();
            bytes[p.0 as usize - 1] += if p.0 == 1 { 1500 } else { 500 };
        }
        // Deficit round robin: equal bytes within a quantum.
        assert!(
            bytes[0].abs_diff(bytes[1]) <= 2 * QUANTUM as u64,
            "{bytes:?}"
        );
    }
}
