//! Datagram buffers used again: each end takes one per datagram it seals and the driver gives
//! it back once the kernel has it, so a transfer allocates only while its window grows (a
//! 1,500-byte `malloc`/`free` per datagram cost 4% of the CPU in issue 29's profile).

use crate::wire::MAX_DATAGRAM;

/// Buffers kept at most: a window's worth of datagrams waiting to be sent (about 23 MB at
/// this many full ones); beyond it buffers are freed.
const KEPT: usize = 16_384;

#[derive(Default)]
pub struct Pool {
    free: Vec<Vec<u8>>,
}

impl Pool {
    /// An empty buffer with room for the largest datagram.
    pub fn take(&mut self) -> Vec<u8> {
        self.free
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(MAX_DATAGRAM))
    }

    pub fn give(&mut self, mut buf: Vec<u8>) {
        if self.free.len() < KEPT && buf.capacity() >= MAX_DATAGRAM {
            buf.clear();
            self.free.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_taken_again_empty() {
        let mut p = Pool::default();
        let mut b = p.take();
        b.extend_from_slice(b"abc");
        let ptr = b.as_ptr();
        p.give(b);
        let b = p.take();
        assert!(b.is_empty() && b.as_ptr() == ptr);
        p.give(Vec::new());
        assert!(p.free.is_empty(), "too small to keep");
    }
}
