//! No amplification toward an unproven peer: until a peer has shown it holds the key (its
//! first authenticated datagram), what is sent toward its address is at most three times what
//! was received from it (the limit QUIC sets, RFC 9000 8.1).

pub const FACTOR: u64 = 3;

#[derive(Clone, Copy, Debug, Default)]
pub struct Budget {
    received: u64,
    sent: u64,
    proven: bool,
}

impl Budget {
    pub fn on_received(&mut self, bytes: usize) {
        self.received = self.received.saturating_add(bytes as u64);
    }

    /// The peer authenticated: the limit no longer applies.
    pub fn prove(&mut self) {
        self.proven = true;
    }

    pub fn proven(&self) -> bool {
        self.proven
    }

    /// Whether `bytes` more may go toward the peer now; if so they are counted as sent.
    pub fn try_send(&mut self, bytes: usize) -> bool {
        let after = self.sent.saturating_add(bytes as u64);
        if !self.proven && after > FACTOR.saturating_mul(self.received) {
            return false;
        }
        self.sent = after;
        true
    }

    pub fn sent(&self) -> u64 {
        self.sent
    }

    pub fn received(&self) -> u64 {
        self.received
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unproven_peer_gets_at_most_three_times_what_it_sent() {
        let mut b = Budget::default();
        assert!(!b.try_send(1), "nothing received, nothing sent");
        b.on_received(100);
        assert!(b.try_send(300));
        assert!(!b.try_send(1));
        b.prove();
        assert!(b.try_send(1_000_000));
        assert_eq!(b.sent(), 1_000_300);
    }
}
