//! The AEAD that seals every datagram after the handshake, chosen per connection: AES-128-GCM
//! where both ends have AES and carry-less-multiply instructions (AES-NI + PCLMULQDQ, ARMv8's
//! AES + PMULL), ChaCha20-Poly1305 where either lacks them. Both are ring's: its AES-GCM
//! seals a full datagram for 0.21 CPU-s/GB on a VAES machine, its ChaCha for 0.80, against
//! 2.3-2.6 for the portable ChaCha the handshake library ships (issue 29's profile). ring
//! rather than aws-lc-rs: a smaller build (no cmake, one crate of C and assembly) with the
//! same AES-GCM code paths.
//!
//! The client offers the suites it accepts and says whether it has AES hardware, inside the
//! first (psk-authenticated) Noise message; the server picks (`pick`) and names its choice
//! inside the second. Keys come from the Noise split, one per direction, bound to the suite,
//! and change every `2^epoch_bits` packet numbers (`Sealer`, `Opener`): AES-GCM's
//! confidentiality limit is 2^23 datagrams per key (RFC 9001 6.6), about 12 GB, and each side
//! derives the next key from the packet number alone, so the update needs nothing on the wire.

use blake2::{Blake2s256, Digest};
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use std::fmt;

/// An AEAD suite, as its byte on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Suite {
    Aes128Gcm = 1,
    ChaCha20Poly1305 = 2,
}

impl Suite {
    pub const ALL: [Suite; 2] = [Suite::Aes128Gcm, Suite::ChaCha20Poly1305];

    pub fn from_u8(v: u8) -> Option<Suite> {
        Suite::ALL.into_iter().find(|s| *s as u8 == v)
    }

    /// The name `get` prints and `--aead` takes.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Aes128Gcm => "aes-128-gcm",
            Suite::ChaCha20Poly1305 => "chacha20-poly1305",
        }
    }

    pub fn parse(name: &str) -> Option<Suite> {
        Suite::ALL.into_iter().find(|s| s.name() == name)
    }

    fn algorithm(self) -> &'static aead::Algorithm {
        match self {
            Suite::Aes128Gcm => &aead::AES_128_GCM,
            Suite::ChaCha20Poly1305 => &aead::CHACHA20_POLY1305,
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8 - 1)
    }

    /// Packet numbers sealed under one key: `2^epoch_bits`. AES-GCM's confidentiality limit
    /// (RFC 9001 6.6: 2^23); ChaCha20-Poly1305's (2^62) lies beyond the 48-bit numbers.
    pub fn epoch_bits(self) -> u32 {
        match self {
            Suite::Aes128Gcm => 23,
            Suite::ChaCha20Poly1305 => 48,
        }
    }
}

impl fmt::Display for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether this CPU runs AES-GCM in hardware (AES rounds and the GHASH multiply).
pub fn aes_hardware() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("aes")
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

/// What the client offers: the suites it accepts (one bit each) and, in the high bit, whether
/// it has AES hardware. One byte inside the Initial's Noise payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer(u8);

const AES_HW: u8 = 0x80;

impl Offer {
    /// Every suite, or only `only`; the hardware bit from this CPU.
    pub fn local(only: Option<Suite>) -> Offer {
        let suites = only.map_or(Suite::ALL.iter().fold(0, |b, s| b | s.bit()), Suite::bit);
        Offer(suites | if aes_hardware() { AES_HW } else { 0 })
    }

    pub fn to_byte(self) -> u8 {
        self.0
    }

    pub fn from_byte(b: u8) -> Offer {
        Offer(b)
    }

    pub fn accepts(self, s: Suite) -> bool {
        self.0 & s.bit() != 0
    }

    fn aes_hardware(self) -> bool {
        self.0 & AES_HW != 0
    }
}

/// The server's choice: AES-128-GCM when both ends have AES hardware (or the client accepts
/// nothing else), else ChaCha20-Poly1305, which is fast in software; `None` if the client
/// offers nothing this side knows. `only` restricts the server as `Offer::local` the client.
pub fn pick(offer: Offer, server_aes_hardware: bool, only: Option<Suite>) -> Option<Suite> {
    let usable = |s: Suite| offer.accepts(s) && only.is_none_or(|o| o == s);
    let aes_first = offer.aes_hardware() && server_aes_hardware;
    let order = if aes_first {
        [Suite::Aes128Gcm, Suite::ChaCha20Poly1305]
    } else {
        [Suite::ChaCha20Poly1305, Suite::Aes128Gcm]
    };
    order.into_iter().find(|s| usable(*s))
}

/// One direction's key: seals or opens with the packet number as nonce and the datagram's
/// clear header as associated data.
pub struct Key {
    key: LessSafeKey,
}

impl Key {
    /// The key of `suite` for packet-number epoch `epoch` from one of the handshake's split
    /// secrets; `label` tells the directions apart (each side derives the same two).
    pub fn derive(suite: Suite, secret: &[u8; 32], label: &[u8], epoch: u64) -> Key {
        let mut h = Blake2s256::new();
        h.update(b"mpsched-udp v2 key");
        h.update([suite as u8]);
        h.update(label);
        h.update(epoch.to_be_bytes());
        h.update(secret);
        let okm: [u8; 32] = h.finalize().into();
        let alg = suite.algorithm();
        let unbound = UnboundKey::new(alg, &okm[..alg.key_len()]).expect("the suite's key length");
        Key {
            key: LessSafeKey::new(unbound),
        }
    }

    fn nonce(pn: u64) -> Nonce {
        let mut n = [0u8; aead::NONCE_LEN];
        n[4..].copy_from_slice(&pn.to_be_bytes());
        Nonce::assume_unique_for_key(n)
    }

    /// Seals `buf[header_len..]` in place and appends the tag; `buf[..header_len]` is the
    /// associated data. Each `pn` once per key (the caller's packet numbers never repeat).
    pub fn seal(&self, pn: u64, buf: &mut Vec<u8>, header_len: usize) {
        let (header, body) = buf.split_at_mut(header_len);
        let tag = self
            .key
            .seal_in_place_separate_tag(Self::nonce(pn), Aad::from(&*header), body)
            .expect("a datagram is far below the AEAD's length limit");
        buf.extend_from_slice(tag.as_ref());
    }

    /// Opens `sealed` (ciphertext and tag) in place: the plaintext, or `None` if it fails
    /// authentication under `header` and `pn`.
    pub fn open<'a>(&self, pn: u64, header: &[u8], sealed: &'a mut [u8]) -> Option<&'a [u8]> {
        self.key
            .open_in_place(Self::nonce(pn), Aad::from(header), sealed)
            .ok()
            .map(|p| &*p)
    }
}

/// One direction's keying: the suite, the split secret, the label, and how many packet
/// numbers each key covers.
pub struct Direction {
    suite: Suite,
    secret: [u8; 32],
    label: &'static [u8],
    epoch_bits: u32,
}

impl Direction {
    pub fn new(suite: Suite, secret: [u8; 32], label: &'static [u8]) -> Direction {
        Direction {
            suite,
            secret,
            label,
            epoch_bits: suite.epoch_bits(),
        }
    }

    /// Keys changing every `2^bits` packet numbers (tests cross epochs quickly).
    #[cfg(test)]
    pub fn with_epoch_bits(mut self, bits: u32) -> Direction {
        self.epoch_bits = bits;
        self
    }

    fn epoch(&self, pn: u64) -> u64 {
        pn >> self.epoch_bits
    }

    fn key(&self, epoch: u64) -> Key {
        Key::derive(self.suite, &self.secret, self.label, epoch)
    }
}

/// The sending side: the key of the current epoch, the next derived when a packet number
/// reaches it.
pub struct Sealer {
    dir: Direction,
    epoch: u64,
    key: Key,
}

impl Sealer {
    pub fn new(dir: Direction) -> Sealer {
        let key = dir.key(0);
        Sealer { dir, epoch: 0, key }
    }

    /// `Key::seal` under the key of `pn`'s epoch (packet numbers only grow).
    pub fn seal(&mut self, pn: u64, buf: &mut Vec<u8>, header_len: usize) {
        let epoch = self.dir.epoch(pn);
        if epoch != self.epoch {
            self.key = self.dir.key(epoch);
            self.epoch = epoch;
        }
        self.key.seal(pn, buf, header_len);
    }
}

/// The receiving side: the current epoch's key, the previous one (datagrams reordered across
/// the change) and the next (derived once, kept only when a datagram authenticates under it,
/// so forgeries with far packet numbers move nothing).
pub struct Opener {
    dir: Direction,
    epoch: u64,
    key: Key,
    prev: Option<Key>,
    next: Option<Key>,
}

impl Opener {
    pub fn new(dir: Direction) -> Opener {
        let key = dir.key(0);
        Opener {
            dir,
            epoch: 0,
            key,
            prev: None,
            next: None,
        }
    }

    /// `Key::open` under the key of `pn`'s epoch: the current one, the one before or the one
    /// after (which then becomes current); any other epoch fails.
    pub fn open<'a>(&mut self, pn: u64, header: &[u8], sealed: &'a mut [u8]) -> Option<&'a [u8]> {
        let epoch = self.dir.epoch(pn);
        if epoch == self.epoch {
            return self.key.open(pn, header, sealed);
        }
        if epoch + 1 == self.epoch {
            return self.prev.as_ref()?.open(pn, header, sealed);
        }
        if epoch != self.epoch + 1 {
            return None;
        }
        let next = match self.next.take() {
            Some(k) => k,
            None => self.dir.key(epoch),
        };
        let Some(plain) = next.open(pn, header, sealed) else {
            self.next = Some(next);
            return None;
        };
        self.prev = Some(std::mem::replace(&mut self.key, next));
        self.epoch = epoch;
        Some(plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_picks_aes_only_when_both_ends_have_it() {
        let all = 0b11;
        let with_hw = Offer::from_byte(all | AES_HW);
        let without = Offer::from_byte(all);
        assert_eq!(pick(with_hw, true, None), Some(Suite::Aes128Gcm));
        assert_eq!(pick(with_hw, false, None), Some(Suite::ChaCha20Poly1305));
        assert_eq!(pick(without, true, None), Some(Suite::ChaCha20Poly1305));
        // A client that accepts one suite gets it, or nothing.
        let aes_only = Offer::from_byte(Suite::Aes128Gcm.bit());
        assert_eq!(pick(aes_only, false, None), Some(Suite::Aes128Gcm));
        assert_eq!(pick(aes_only, true, Some(Suite::ChaCha20Poly1305)), None);
        assert_eq!(pick(Offer::from_byte(AES_HW), true, None), None);
        assert!(Offer::local(Some(Suite::ChaCha20Poly1305)).accepts(Suite::ChaCha20Poly1305));
        assert!(!Offer::local(Some(Suite::ChaCha20Poly1305)).accepts(Suite::Aes128Gcm));
    }

    #[test]
    fn each_suite_round_trips_and_binds_header_and_number() {
        for suite in Suite::ALL {
            assert_eq!(Suite::parse(suite.name()), Some(suite));
            assert_eq!(Suite::from_u8(suite as u8), Some(suite));
            let secret = [9u8; 32];
            let (a, b) = (
                Key::derive(suite, &secret, b"c2s", 0),
                Key::derive(suite, &secret, b"c2s", 0),
            );
            let mut buf = b"head".to_vec();
            buf.extend_from_slice(b"a frame's bytes");
            a.seal(7, &mut buf, 4);
            assert_eq!(buf.len(), 4 + 15 + 16);
            let (h, s) = buf.split_at(4);
            assert!(b.open(8, h, &mut s.to_vec()).is_none(), "another number");
            assert!(
                b.open(7, b"Head", &mut s.to_vec()).is_none(),
                "another header"
            );
            let other = Key::derive(suite, &secret, b"s2c", 0);
            assert!(
                other.open(7, h, &mut s.to_vec()).is_none(),
                "another direction"
            );
            let other = Key::derive(suite, &secret, b"c2s", 1);
            assert!(other.open(7, h, &mut s.to_vec()).is_none(), "another epoch");
            let mut s = s.to_vec();
            assert_eq!(b.open(7, h, &mut s), Some(&b"a frame's bytes"[..]));
        }
    }

    #[test]
    fn keys_change_every_epoch_and_reordering_across_the_change_still_opens() {
        let dir = || Direction::new(Suite::Aes128Gcm, [3u8; 32], b"client").with_epoch_bits(2);
        let (mut sealer, mut opener) = (Sealer::new(dir()), Opener::new(dir()));
        let sealed: Vec<Vec<u8>> = (0..20u64)
            .map(|pn| {
                let mut buf = pn.to_be_bytes().to_vec();
                buf.extend_from_slice(b"payload");
                sealer.seal(pn, &mut buf, 8);
                buf
            })
            .collect();
        // Epochs of 4 numbers: 3 and 4 swapped, 8 before 7, all open; a forgery two epochs
        // ahead opens nothing and moves nothing.
        let mut forged = sealed[19].clone();
        forged[10] ^= 1;
        let (h, s) = forged.split_at_mut(8);
        assert!(opener.open(19, h, s).is_none());
        for pn in [0u64, 1, 2, 4, 3, 5, 6, 8, 7, 9, 10, 11, 12] {
            let mut d = sealed[pn as usize].clone();
            let (h, s) = d.split_at_mut(8);
            assert_eq!(opener.open(pn, h, s), Some(&b"payload"[..]), "{pn}");
        }
        // Two epochs back: gone.
        let mut d = sealed[2].clone();
        let (h, s) = d.split_at_mut(8);
        assert!(opener.open(2, h, s).is_none());
        // Sealed under epoch 0's key with a number of epoch 1: refused.
        let mut buf = 5u64.to_be_bytes().to_vec();
        buf.extend_from_slice(b"x");
        dir().key(0).seal(5, &mut buf, 8);
        let (h, s) = buf.split_at_mut(8);
        assert!(Opener::new(dir()).open(5, h, s).is_none());
    }
}
