//! The client's stream bytes between the network and the application: segments held by data
//! sequence number in a ring of fixed slots (one segment each, `MSS` bytes), written once when
//! a datagram is opened and read once, in runs of consecutive slots, when the application
//! takes them. It replaces a map of one `Vec` per segment (an allocation and a copy per
//! datagram, and a hash per lookup).
//!
//! Slots cover `[read, read + capacity)`. The core's receiver decides which segments are in
//! order (`set_in_order`); what it admits lies within the receive window above that point, so
//! a ring as large as the window always has room once the application has read what was in
//! order. Should the application lag, the in-order bytes still in the ring are moved aside
//! (`spill`, an allocation only then) so that no admitted segment is ever refused for room.

use std::io;

/// Data sequence numbers are segment indices; segment `d` holds stream bytes `d x mss ..`.
pub struct Reassembly {
    mss: usize,
    capacity: u64,
    bytes: Box<[u8]>,
    /// Each slot's length; 0: empty.
    lens: Box<[u16]>,
    /// The next segment the application takes.
    read: u64,
    /// Every segment below this is in order (the core's receiver said so).
    in_order: u64,
    /// In-order bytes moved out of the ring while the application lagged.
    spill: Vec<u8>,
}

impl Reassembly {
    /// Room for `capacity` segments of `mss` bytes (allocated zeroed: pages come as used).
    pub fn new(mss: usize, capacity: u64) -> Reassembly {
        assert!(mss > 0 && mss <= usize::from(u16::MAX) && capacity > 0);
        Reassembly {
            mss,
            capacity,
            bytes: vec![0u8; mss * capacity as usize].into_boxed_slice(),
            lens: vec![0u16; capacity as usize].into_boxed_slice(),
            read: 0,
            in_order: 0,
            spill: Vec::new(),
        }
    }

    fn slot(&self, dseq: u64) -> usize {
        (dseq % self.capacity) as usize
    }

    /// Keeps segment `dseq`'s bytes, once: false if it is below the in-order point, already
    /// held, too long, or beyond the window.
    pub fn insert(&mut self, dseq: u64, payload: &[u8]) -> bool {
        if dseq < self.in_order || payload.is_empty() || payload.len() > self.mss {
            return false;
        }
        if dseq >= self.read + self.capacity {
            self.spill();
            if dseq >= self.read + self.capacity {
                return false;
            }
        }
        let i = self.slot(dseq);
        if self.lens[i] != 0 {
            return false;
        }
        self.lens[i] = payload.len() as u16;
        self.bytes[i * self.mss..i * self.mss + payload.len()].copy_from_slice(payload);
        true
    }

    /// Every segment below `end` is in order.
    pub fn set_in_order(&mut self, end: u64) {
        self.in_order = self.in_order.max(end);
    }

    pub fn in_order(&self) -> u64 {
        self.in_order
    }

    /// Moves the in-order bytes still in the ring aside, freeing their slots.
    fn spill(&mut self) {
        let mut spill = std::mem::take(&mut self.spill);
        let _ = self.take_in_order(usize::MAX, |b| {
            spill.extend_from_slice(b);
            Ok(())
        });
        self.spill = spill;
    }

    /// Hands the in-order bytes to `sink`, in order, in as few calls as the ring allows (a
    /// run of full consecutive slots is one call), stopping after the run that reaches `max`
    /// bytes; a segment never held (beyond the window when it came) is skipped. Returns the
    /// bytes handed over.
    pub fn read_with(
        &mut self,
        max: usize,
        mut sink: impl FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<usize> {
        let mut read = 0;
        if !self.spill.is_empty() {
            let spill = std::mem::take(&mut self.spill);
            sink(&spill)?;
            read = spill.len();
        }
        if read < max {
            read += self.take_in_order(max - read, sink)?;
        }
        Ok(read)
    }

    fn take_in_order(
        &mut self,
        max: usize,
        mut sink: impl FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<usize> {
        let mut read = 0;
        'runs: while self.read < self.in_order && read < max {
            let first = self.slot(self.read);
            // A run: full slots up to the ring's end, the in-order point or `max`, and at
            // most one short (or empty) slot closing it.
            let mut end = first;
            let mut bytes = 0;
            while self.read < self.in_order && end < self.lens.len() && read + bytes < max {
                let len = usize::from(std::mem::take(&mut self.lens[end]));
                self.read += 1;
                end += 1;
                if len < self.mss {
                    if bytes == 0 && len == 0 {
                        // Never held: nothing to hand over; the run starts after it.
                        continue 'runs;
                    }
                    bytes += len;
                    break;
                }
                bytes += len;
            }
            let start = first * self.mss;
            if bytes > 0 {
                sink(&self.bytes[start..start + bytes])?;
                read += bytes;
            }
        }
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(d: u64, len: usize) -> Vec<u8> {
        (0..len).map(|i| (d * 7 + i as u64) as u8).collect()
    }

    fn read_all(r: &mut Reassembly) -> (Vec<u8>, usize) {
        let mut out = vec![];
        let mut calls = 0;
        let read = r
            .read_with(usize::MAX, |b| {
                out.extend_from_slice(b);
                calls += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(read, out.len());
        (out, calls)
    }

    #[test]
    fn a_bounded_read_stops_after_the_run_that_reaches_its_bound() {
        let mut r = Reassembly::new(4, 8);
        for d in 0..6 {
            assert!(r.insert(d, &seg(d, 4)));
        }
        r.set_in_order(6);
        let mut out = vec![];
        let read = r
            .read_with(9, |b| {
                out.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
        // Whole segments: 9 bytes need three of 4.
        assert_eq!((read, out.len()), (12, 12));
        let (rest, _) = read_all(&mut r);
        let want: Vec<u8> = (0..6).flat_map(|d| seg(d, 4)).collect();
        assert_eq!([out, rest].concat(), want);
    }

    #[test]
    fn segments_in_any_order_come_out_in_order_in_runs() {
        let mut r = Reassembly::new(4, 8);
        for d in [3, 1, 0, 2, 5, 4] {
            assert!(r.insert(d, &seg(d, 4)));
        }
        assert!(!r.insert(2, &seg(2, 4)), "held once");
        r.set_in_order(6);
        let (out, calls) = read_all(&mut r);
        let want: Vec<u8> = (0..6).flat_map(|d| seg(d, 4)).collect();
        assert_eq!(out, want);
        assert_eq!(calls, 1, "one run");
        assert!(!r.insert(3, &seg(3, 4)), "below the in-order point");
        // Across the ring's end: two runs; a short last segment ends the stream.
        for d in 6..10 {
            assert!(r.insert(d, &seg(d, 4)));
        }
        assert!(r.insert(10, &seg(10, 2)));
        r.set_in_order(11);
        let (out, calls) = read_all(&mut r);
        let mut want: Vec<u8> = (6..10).flat_map(|d| seg(d, 4)).collect();
        want.extend(seg(10, 2));
        assert_eq!(out, want);
        assert_eq!(calls, 2);
    }

    #[test]
    fn a_lagging_reader_loses_nothing_and_a_segment_never_held_is_skipped() {
        let mut r = Reassembly::new(4, 4);
        for d in 0..4 {
            assert!(r.insert(d, &seg(d, 4)));
        }
        r.set_in_order(4);
        // The ring is full of unread in-order bytes: they are moved aside for the next.
        for d in 4..8 {
            assert!(r.insert(d, &seg(d, 4)), "{d}");
        }
        assert!(!r.insert(12, &seg(12, 4)), "beyond the window");
        r.set_in_order(9); // 8 never arrived here
        let (out, _) = read_all(&mut r);
        let want: Vec<u8> = (0..8).flat_map(|d| seg(d, 4)).collect();
        assert_eq!(out, want);
        assert!(r.insert(9, &seg(9, 4)));
        r.set_in_order(10);
        assert_eq!(read_all(&mut r).0, seg(9, 4));
    }
}
