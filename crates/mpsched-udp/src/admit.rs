//! Who may open a connection, before the server spends state on it: Initials it has accepted
//! are remembered (a replay is refused), and an Initial's clock must be recent (so the memory
//! is bounded in time); under load, a cookie proves that the client receives at its address
//! before anything is allocated (WireGuard's cookie reply, QUIC's Retry).

use crate::session::{mac, MAC_LEN};
use mpsched_core::{Dur, Time};
use std::collections::HashMap;
use std::net::SocketAddr;

/// Nanoseconds since the Unix epoch now: the clock an Initial carries and is checked by.
pub fn unix_now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(u128::from(u64::MAX)) as u64)
}

/// How far an Initial's clock may be from the server's, either way. Clocks of machines that
/// keep time (NTP) differ by far less; a replay older than this is refused by its timestamp.
pub const FRESHNESS: Dur = Dur::from_secs(120);
/// Initials remembered at most (40 bytes each: 640 KB). A full cache refuses new Initials
/// rather than forget ones a replay could reuse.
pub const REPLAY_CACHE: usize = 16_384;
/// A cookie key serves this long, and the previous one as long again.
pub const COOKIE_ROTATION: Dur = Dur::from_secs(120);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The Initial's clock is too far from the server's.
    Stale,
    /// Accepted before.
    Replayed,
    /// As many Initials remembered as the cache holds, none old enough to forget.
    Full,
}

/// The Initials accepted within the freshness window, by their mac1.
#[derive(Default)]
pub struct ReplayCache {
    /// An Initial's mac1 (which covers all of it but the cookie) -> until when (Unix ns) it
    /// must be remembered.
    seen: HashMap<[u8; 16], u64>,
}

impl ReplayCache {
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Whether the Initial whose mac1 is `key` was accepted before: checked before its
    /// Diffie-Hellman, so that a replay costs a lookup.
    pub fn seen(&self, key: &[u8; 16]) -> bool {
        self.seen.contains_key(key)
    }

    /// Whether an Initial of mac1 `key` and clock `sent_ns` may be accepted at `now_ns`
    /// (both Unix ns); if so it is remembered.
    pub fn admit(&mut self, key: &[u8; 16], sent_ns: u64, now_ns: u64) -> Result<(), Refusal> {
        let w = FRESHNESS.0;
        if sent_ns.abs_diff(now_ns) > w {
            return Err(Refusal::Stale);
        }
        let k = *key;
        if self.seen.contains_key(&k) {
            return Err(Refusal::Replayed);
        }
        if self.seen.len() >= REPLAY_CACHE {
            // Forget what its timestamp now refuses anyway.
            self.seen.retain(|_, until| *until > now_ns);
            if self.seen.len() >= REPLAY_CACHE {
                return Err(Refusal::Full);
            }
        }
        self.seen.insert(k, sent_ns.saturating_add(w));
        Ok(())
    }
}

/// Cookies: a MAC of the client's address under a random key that changes every
/// `COOKIE_ROTATION`; only who receives at the address learns it.
pub struct CookieJar {
    key: [u8; 32],
    previous: Option<[u8; 32]>,
    since: Time,
}

impl CookieJar {
    pub fn new(now: Time) -> CookieJar {
        let mut key = [0u8; 32];
        crate::random::fill(&mut key);
        CookieJar {
            key,
            previous: None,
            since: now,
        }
    }

    fn rotate(&mut self, now: Time) {
        if now >= self.since + COOKIE_ROTATION {
            let mut key = [0u8; 32];
            crate::random::fill(&mut key);
            self.previous = Some(std::mem::replace(&mut self.key, key));
            self.since = now;
        }
    }

    fn of(key: &[u8; 32], addr: SocketAddr) -> [u8; MAC_LEN] {
        let ip = match addr.ip() {
            std::net::IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
            std::net::IpAddr::V6(a) => a.octets(),
        };
        mac(key, &[&ip, &addr.port().to_be_bytes()])
    }

    /// The cookie of `addr` now.
    pub fn cookie(&mut self, addr: SocketAddr, now: Time) -> [u8; MAC_LEN] {
        self.rotate(now);
        Self::of(&self.key, addr)
    }

    /// The cookies `addr` may hold now: the current key's and the previous one's.
    pub fn valid(&mut self, addr: SocketAddr, now: Time) -> impl Iterator<Item = [u8; MAC_LEN]> {
        self.rotate(now);
        [Some(self.key), self.previous]
            .into_iter()
            .flatten()
            .map(move |k| Self::of(&k, addr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn an_initial_is_accepted_once_and_only_while_recent() {
        let mut c = ReplayCache::default();
        let now = 1_700_000_000 * S;
        assert_eq!(c.admit(&[1; 16], now - 5 * S, now), Ok(()));
        assert_eq!(
            c.admit(&[1; 16], now - 5 * S, now + S),
            Err(Refusal::Replayed)
        );
        assert_eq!(c.admit(&[2; 16], now - 121 * S, now), Err(Refusal::Stale));
        assert_eq!(c.admit(&[2; 16], now + 121 * S, now), Err(Refusal::Stale));
        assert_eq!(c.admit(&[2; 16], now + 100 * S, now), Ok(()));
    }

    #[test]
    fn the_cache_is_bounded_and_forgets_only_what_the_clock_refuses() {
        let mut c = ReplayCache::default();
        let now = 1_700_000_000 * S;
        for i in 0..REPLAY_CACHE as u64 {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&i.to_le_bytes());
            assert_eq!(c.admit(&k, now, now), Ok(()));
        }
        assert_eq!(c.admit(&[0xff; 16], now, now + S), Err(Refusal::Full));
        assert_eq!(c.len(), REPLAY_CACHE);
        // Once those are too old to pass, they make room.
        let later = now + FRESHNESS.0 + S;
        assert_eq!(c.admit(&[0xff; 16], later, later), Ok(()));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn a_cookie_names_one_address_and_lasts_two_rotations() {
        let a: SocketAddr = "192.0.2.1:5000".parse().unwrap();
        let b: SocketAddr = "192.0.2.1:5001".parse().unwrap();
        let mut jar = CookieJar::new(Time::ZERO);
        let ca = jar.cookie(a, Time::ZERO);
        assert_ne!(ca, jar.cookie(b, Time::ZERO));
        let t1 = Time::ZERO + COOKIE_ROTATION;
        assert!(jar.valid(a, t1).any(|c| c == ca), "the previous key's");
        let t2 = t1 + COOKIE_ROTATION;
        assert!(!jar.valid(a, t2).any(|c| c == ca), "two rotations on: gone");
    }
}
