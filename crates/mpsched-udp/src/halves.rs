//! Segments that crossed a path as two datagrams (a path whose datagrams cannot hold a whole
//! segment: IPv6 on a 1,500-byte link): each half kept until its partner arrives, then the
//! segment whole. Bounded: a half whose partner was lost is forgotten once too many wait (the
//! core sends the segment again, as for any loss).

use crate::wire::Part;
use std::collections::HashMap;

/// Halves held at most (a 6 MB window's worth of segments, twice).
pub const MAX_HALVES: usize = 8192;

/// A segment's first half, its second, and the bytes of the datagrams that brought them.
#[derive(Default)]
struct Waiting {
    first: Option<Vec<u8>>,
    second: Option<Vec<u8>>,
    wire_len: usize,
}

#[derive(Default)]
pub struct Halves {
    /// By (subflow, seq).
    waiting: HashMap<(u8, u32), Waiting>,
}

impl Halves {
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Half `part` of segment `seq` on `subflow`, which came in a datagram of `wire_len`
    /// bytes: the whole segment and its datagrams' bytes once both halves are in.
    pub fn add(
        &mut self,
        (subflow, seq): (u8, u32),
        part: Part,
        payload: &[u8],
        wire_len: usize,
    ) -> Option<(Vec<u8>, usize)> {
        let key = (subflow, seq);
        if !self.waiting.contains_key(&key) && self.waiting.len() >= MAX_HALVES {
            self.waiting.clear();
        }
        let h = self.waiting.entry(key).or_default();
        let slot = match part {
            Part::First => &mut h.first,
            Part::Second => &mut h.second,
            Part::Whole => return Some((payload.to_vec(), wire_len)),
        };
        if slot.is_none() {
            *slot = Some(payload.to_vec());
            h.wire_len += wire_len;
        }
        let (Some(a), Some(b)) = (&h.first, &h.second) else {
            return None;
        };
        let mut whole = Vec::with_capacity(a.len() + b.len());
        whole.extend_from_slice(a);
        whole.extend_from_slice(b);
        let bytes = h.wire_len;
        self.waiting.remove(&key);
        Some((whole, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_is_whole_once_both_halves_are_in_in_either_order() {
        let mut h = Halves::default();
        assert_eq!(h.add((0, 7), Part::Second, b"def", 40), None);
        assert_eq!(
            h.add((0, 7), Part::Second, b"def", 40),
            None,
            "a copy counts once"
        );
        assert_eq!(
            h.add((1, 7), Part::First, b"xyz", 40),
            None,
            "another subflow's"
        );
        assert_eq!(
            h.add((0, 7), Part::First, b"abc", 41),
            Some((b"abcdef".to_vec(), 81))
        );
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn halves_whose_partner_was_lost_do_not_pile_up() {
        let mut h = Halves::default();
        for seq in 0..(3 * MAX_HALVES) as u32 {
            h.add((0, seq), Part::First, &[1; 700], 750);
            assert!(h.len() <= MAX_HALVES);
        }
    }
}
