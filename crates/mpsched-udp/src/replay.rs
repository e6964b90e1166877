//! Replay protection for datagrams that arrive out of order: the last `WINDOW` packet numbers
//! as a ring of bits (RFC 6479's bitmap, the window WireGuard keeps). A number is taken once,
//! and one more than `WINDOW` below the highest seen is too old to tell, so it is refused.

/// Packet numbers remembered below the highest (a path's reordering in flight fits easily).
pub const WINDOW: u64 = 4096;
const WORDS: usize = (WINDOW / 64) as usize;

#[derive(Clone, Debug)]
pub struct ReplayWindow {
    /// The highest number accepted, if any.
    top: Option<u64>,
    bits: Box<[u64; WORDS]>,
}

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow {
            top: None,
            bits: Box::new([0; WORDS]),
        }
    }
}

impl ReplayWindow {
    fn bit(pn: u64) -> (usize, u64) {
        let i = pn % WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// The highest number accepted, if any.
    pub fn top(&self) -> Option<u64> {
        self.top
    }

    /// Whether `pn` may be new: checked before the datagram is decrypted, so that a replay
    /// costs no decryption.
    pub fn may_accept(&self, pn: u64) -> bool {
        match self.top {
            None => true,
            Some(top) if pn > top => true,
            Some(top) if top - pn >= WINDOW => false,
            Some(_) => {
                let (w, b) = Self::bit(pn);
                self.bits[w] & b == 0
            }
        }
    }

    /// Records `pn` once its datagram authenticated; false if it was a replay.
    pub fn accept(&mut self, pn: u64) -> bool {
        if !self.may_accept(pn) {
            return false;
        }
        match self.top {
            Some(top) if pn <= top => {}
            top => {
                // Forget the numbers the window slides past.
                let from = top.map_or(0, |t| t + 1);
                if pn - from >= WINDOW {
                    self.bits.fill(0);
                } else {
                    for n in from..pn {
                        let (w, b) = Self::bit(n);
                        self.bits[w] &= !b;
                    }
                }
                self.top = Some(pn);
            }
        }
        let (w, b) = Self::bit(pn);
        self.bits[w] |= b;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_number_is_taken_once_in_any_order() {
        let mut r = ReplayWindow::default();
        for pn in [5, 3, 9, 4, 0, 1, 2, 8, 7, 6] {
            assert!(r.accept(pn), "{pn}");
        }
        for pn in 0..10 {
            assert!(!r.may_accept(pn) && !r.accept(pn), "{pn}");
        }
        assert!(r.accept(10));
    }

    #[test]
    fn numbers_that_fell_out_of_the_window_are_refused() {
        let mut r = ReplayWindow::default();
        assert!(r.accept(10 * WINDOW));
        assert!(!r.accept(9 * WINDOW), "too old to tell");
        assert!(
            r.accept(10 * WINDOW - WINDOW + 1),
            "the oldest still tracked"
        );
        assert!(!r.accept(10 * WINDOW - WINDOW + 1));
        // A jump clears the bits of the numbers it passes, which may then arrive late.
        assert!(r.accept(10 * WINDOW + 100));
        assert!(r.accept(10 * WINDOW + 50));
        assert!(!r.accept(10 * WINDOW + 50));
    }

    #[test]
    fn a_window_slid_all_the_way_remembers_nothing_stale() {
        let mut r = ReplayWindow::default();
        for pn in 0..WINDOW {
            assert!(r.accept(pn));
        }
        // Far ahead: every old bit is cleared, so numbers in the new window are new.
        let far = 5 * WINDOW + 3;
        assert!(r.accept(far));
        for pn in far - WINDOW + 1..far {
            assert!(r.may_accept(pn), "{pn}");
        }
    }
}
