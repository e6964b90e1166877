//! What the server drops, counted by reason (no dropped datagram reaches a connection).

use crate::session::OpenError;

/// Datagrams dropped, by reason: none of them reaches a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drops {
    pub malformed: u64,
    pub unauthenticated: u64,
    pub replayed: u64,
    pub unknown_connection: u64,
    /// Not sent: the address had not proved itself and the budget was spent.
    pub amplification: u64,
    pub over_capacity: u64,
    /// Initials whose clock was too far from the server's (`admit::FRESHNESS`).
    pub stale: u64,
    /// Proofs that answered no challenge of theirs (a guess, or from another address).
    pub failed_proof: u64,
}

impl Drops {
    pub fn total(&self) -> u64 {
        self.malformed
            + self.unauthenticated
            + self.replayed
            + self.unknown_connection
            + self.over_capacity
            + self.stale
            + self.failed_proof
    }

    pub(crate) fn count(&mut self, e: OpenError) {
        match e {
            OpenError::Wire(_) => self.malformed += 1,
            OpenError::Auth => self.unauthenticated += 1,
            OpenError::Replay => self.replayed += 1,
        }
    }
}
