//! Sessions: a Noise handshake (`Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s`, through `snow`) keyed
//! by the pre-shared secret, then every datagram sealed in place with the AEAD the handshake
//! negotiated (`aead`: AES-128-GCM or ChaCha20-Poly1305, ring's) under the packet number as
//! nonce and the clear header as associated data. The client's first message already proves
//! the key (psk0), so the server answers no one who lacks it; fresh ephemeral keys on both
//! sides give each connection its own keys (forward secrecy). The packet number doubles as the
//! replay window's index.
//!
//! What the handshake binds (docs/wire.md, "The handshake"): the version and the connection
//! id (the Noise prologue: a rewritten id fails), the client's clock (an encrypted timestamp:
//! a replayed Initial is refused once it is old), its idle timeout, the offset it resumes
//! from and its AEAD offer, and the server's pick of the suite; `mac1` lets the server drop an
//! Initial without the key before any Diffie-Hellman, `mac2` carries the cookie of a server
//! under load (WireGuard's two MACs).

use crate::aead::{self, Direction, Offer, Opener, Sealer, Suite};
use crate::replay::ReplayWindow;
use crate::secret::{derive, Secret, SecretError};
use crate::wire::{
    Frame, Header, Kind, WireError, HANDSHAKE_HEADER_LEN, HEADER_LEN, MAX_PATHS, PN_LIMIT, TAG_LEN,
};
use blake2::digest::consts::U16;
use blake2::digest::{FixedOutput, KeyInit, Mac};
use blake2::{Blake2s256, Blake2sMac, Digest};
use chacha20poly1305::aead::{Aead, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use snow::{Builder, HandshakeState};
use std::fmt;
use zeroize::Zeroizing;

const PATTERN: &str = "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s";
/// What the Initial's payload says: the client's clock (seconds and nanoseconds since the
/// Unix epoch: 12 bytes, as TAI64N), its idle timeout (ms), the stream offset it resumes from,
/// its AEAD offer (one byte, `aead::Offer`).
pub const HELLO_LEN: usize = 12 + 4 + 8 + 1;
/// The Response's payload: the idle timeout both ends use (ms) and the suite the server
/// picked (one byte, `aead::Suite`).
pub const WELCOME_LEN: usize = 4 + 1;
pub const MAC_LEN: usize = 16;
/// Initial: header, ephemeral key, sealed hello, mac1, mac2 (110 bytes).
pub const INITIAL_LEN: usize = HANDSHAKE_HEADER_LEN + 32 + HELLO_LEN + TAG_LEN + 2 * MAC_LEN;
/// Response: header, ephemeral key, sealed welcome (58 bytes): smaller than the Initial.
pub const RESPONSE_LEN: usize = HANDSHAKE_HEADER_LEN + 32 + WELCOME_LEN + TAG_LEN;
/// Cookie: header, nonce, sealed cookie (61 bytes): smaller than the Initial.
pub const COOKIE_LEN: usize = HANDSHAKE_HEADER_LEN + 24 + MAC_LEN + TAG_LEN;
/// Reset: header, token (21 bytes): smaller than any protected datagram (at least 28).
pub const RESET_LEN: usize = HANDSHAKE_HEADER_LEN + MAC_LEN;
const _: () = assert!(RESPONSE_LEN < INITIAL_LEN && COOKIE_LEN < INITIAL_LEN);
const _: () = assert!(RESET_LEN < crate::wire::HEADER_LEN + 1 + TAG_LEN);

/// More failed decryptions than this end a connection's keys (RFC 9001 6.6: an AEAD's
/// integrity fades with forgeries tried; ChaCha20-Poly1305's limit is 2^36 and AES-128-GCM's
/// 2^52, this stops well before both, after ~30 GB of forged datagrams).
pub const FAILED_OPEN_LIMIT: u64 = 1 << 30;

/// The keys derived from the secret, each for one job. Wiped when dropped.
#[derive(Clone)]
pub struct Psk {
    noise: Zeroizing<[u8; 32]>,
    mac1: Zeroizing<[u8; 32]>,
    cookie: Zeroizing<[u8; 32]>,
    reset: Zeroizing<[u8; 32]>,
}

impl fmt::Debug for Psk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Psk(..)")
    }
}

impl Psk {
    pub fn new(secret: &Secret) -> Psk {
        Psk {
            noise: derive(secret, b"noise psk"),
            mac1: derive(secret, b"mac1"),
            cookie: derive(secret, b"cookie"),
            reset: derive(secret, b"reset"),
        }
    }

    /// The keys of a secret given as text (`Secret::parse`).
    pub fn from_secret(text: &[u8]) -> Result<Psk, SecretError> {
        Ok(Psk::new(&Secret::parse(text)?))
    }

    /// The stateless reset token of connection id `id`: only holders of the secret can
    /// derive it, and a restarted server still can.
    pub fn reset_token(&self, id: u32) -> [u8; MAC_LEN] {
        mac(self.reset.as_ref(), &[&id.to_be_bytes()])
    }
}

pub(crate) fn mac(key: &[u8], parts: &[&[u8]]) -> [u8; MAC_LEN] {
    let mut m = <Blake2sMac<U16> as KeyInit>::new_from_slice(key).expect("a 32-byte key");
    for p in parts {
        Mac::update(&mut m, p);
    }
    m.finalize_fixed().into()
}

/// Compares in time independent of where the bytes differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    Wire(WireError),
    /// A packet number seen before, or too old to tell.
    Replay,
    /// Decryption failed: forged, corrupted, or under another key.
    Auth,
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Wire(e) => write!(f, "malformed: {e}"),
            OpenError::Replay => write!(f, "replayed"),
            OpenError::Auth => write!(f, "failed authentication"),
        }
    }
}

impl From<WireError> for OpenError {
    fn from(e: WireError) -> Self {
        OpenError::Wire(e)
    }
}

fn builder<'a>(psk: &'a Psk, prologue: &'a [u8]) -> Builder<'a> {
    Builder::new(PATTERN.parse().expect("a valid Noise pattern"))
        .psk(0, psk.noise.as_ref())
        .prologue(prologue)
}

/// The version and the connection id, which the handshake's hash covers.
fn prologue(conn_id: u32) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..11].copy_from_slice(b"mpsched-udp");
    out[11] = crate::wire::VERSION;
    out[12..].copy_from_slice(&conn_id.to_be_bytes());
    out
}

/// What the client's Initial says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    /// Nanoseconds since the Unix epoch on the client's clock.
    pub unix_ns: u64,
    pub idle_ms: u32,
    /// The stream's byte the client wants first (`get --resume`).
    pub offset: u64,
    /// The AEAD suites the client takes (and whether it has AES hardware).
    pub offer: Offer,
}

impl Hello {
    fn encode(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[..8].copy_from_slice(&(self.unix_ns / 1_000_000_000).to_be_bytes());
        b[8..12].copy_from_slice(&((self.unix_ns % 1_000_000_000) as u32).to_be_bytes());
        b[12..16].copy_from_slice(&self.idle_ms.to_be_bytes());
        b[16..24].copy_from_slice(&self.offset.to_be_bytes());
        b[24] = self.offer.to_byte();
        b
    }

    fn decode(b: &[u8]) -> Option<Hello> {
        let b: &[u8; HELLO_LEN] = b.try_into().ok()?;
        let secs = u64::from_be_bytes(b[..8].try_into().ok()?);
        let nanos = u32::from_be_bytes(b[8..12].try_into().ok()?);
        if nanos >= 1_000_000_000 {
            return None;
        }
        Some(Hello {
            unix_ns: secs
                .checked_mul(1_000_000_000)?
                .checked_add(u64::from(nanos))?,
            idle_ms: u32::from_be_bytes(b[12..16].try_into().ok()?),
            offset: u64::from_be_bytes(b[16..24].try_into().ok()?),
            offer: Offer::from_byte(b[24]),
        })
    }
}

/// A datagram that authenticated, and what it says.
#[derive(Debug)]
pub struct Opened<'b> {
    pub frame: Frame<'b>,
    /// The path whose connection id it carried.
    pub path: usize,
    /// Its packet number is the highest yet (only such a datagram may move a path).
    pub highest: bool,
}

/// One side of an established connection: seals what it sends, opens what it receives.
pub struct Session {
    /// Each path's connection id (derived from the handshake: nothing in clear links them).
    path_ids: [u32; MAX_PATHS],
    suite: Suite,
    sealer: Sealer,
    opener: Opener,
    next_pn: u64,
    replay: ReplayWindow,
    failed_opens: u64,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("path_ids", &self.path_ids)
            .field("suite", &self.suite)
            .field("next_pn", &self.next_pn)
            .finish()
    }
}

impl Session {
    /// The keys of a finished handshake: the client seals with the split's first secret and
    /// the server with its second; the paths' connection ids come from the handshake's hash.
    fn new(mut hs: HandshakeState, suite: Suite) -> Result<Session, OpenError> {
        if !hs.is_handshake_finished() {
            return Err(OpenError::Auth);
        }
        let hash = hs.get_handshake_hash().to_vec();
        let mut path_ids = [0u32; MAX_PATHS];
        let mut n = 0u32;
        for i in 0..MAX_PATHS {
            // Distinct within the connection (a repeat draws again).
            loop {
                let mut h = Blake2s256::new();
                Digest::update(&mut h, b"mpsched-udp v2 path id");
                Digest::update(&mut h, &hash);
                Digest::update(&mut h, n.to_be_bytes());
                n += 1;
                let d = h.finalize();
                let id = u32::from_be_bytes([d[0], d[1], d[2], d[3]]);
                if !path_ids[..i].contains(&id) {
                    path_ids[i] = id;
                    break;
                }
            }
        }
        let (c2s, s2c) = hs.dangerously_get_raw_split();
        let (c2s, s2c) = (Zeroizing::new(c2s), Zeroizing::new(s2c));
        let client = Direction::new(suite, &c2s, b"client");
        let server = Direction::new(suite, &s2c, b"server");
        let (sealer, opener) = if hs.is_initiator() {
            (Sealer::new(client), Opener::new(server))
        } else {
            (Sealer::new(server), Opener::new(client))
        };
        Ok(Session {
            path_ids,
            suite,
            sealer,
            opener,
            next_pn: 0,
            replay: ReplayWindow::default(),
            failed_opens: 0,
        })
    }

    /// Path `path`'s connection id.
    pub fn path_id(&self, path: usize) -> u32 {
        self.path_ids[path]
    }

    pub fn path_ids(&self) -> &[u32; MAX_PATHS] {
        &self.path_ids
    }

    /// The path a connection id names, if it is this connection's.
    pub fn path_of(&self, id: u32) -> Option<usize> {
        self.path_ids.iter().position(|&p| p == id)
    }

    /// The AEAD the handshake chose.
    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// Decryptions that failed; at `FAILED_OPEN_LIMIT` the keys are spent.
    pub fn failed_opens(&self) -> u64 {
        self.failed_opens
    }

    pub fn keys_spent(&self) -> bool {
        self.failed_opens >= FAILED_OPEN_LIMIT
    }

    /// Puts the datagram carrying `frame` on path `path` in `out` (cleared first).
    pub fn seal(&mut self, path: usize, frame: &Frame, out: &mut Vec<u8>) {
        self.seal_with(path, frame.kind(), out, |o| frame.encode(o));
    }

    /// Puts a datagram of `kind` on path `path` in `out` (cleared first): its header, then the
    /// frame that `write` appends (the kind byte first), sealed in place. Whatever `write`
    /// returns is returned; the datagram is only meant to be sent if that says so.
    pub fn seal_with<R>(
        &mut self,
        path: usize,
        kind: Kind,
        out: &mut Vec<u8>,
        write: impl FnOnce(&mut Vec<u8>) -> R,
    ) -> R {
        assert!(self.next_pn < PN_LIMIT, "packet numbers exhausted: rekey");
        let header = Header {
            kind,
            conn_id: self.path_ids[path],
            pn: self.next_pn,
        };
        self.next_pn += 1;
        out.clear();
        header.encode(out);
        let r = write(out);
        self.sealer.seal(header.pn, out, HEADER_LEN);
        r
    }

    /// The frame of `datagram` (whose header is `header`), opened in place: it borrows the
    /// datagram's bytes.
    pub fn open<'b>(
        &mut self,
        header: &Header,
        datagram: &'b mut [u8],
    ) -> Result<Opened<'b>, OpenError> {
        if header.kind.is_handshake() {
            return Err(OpenError::Wire(WireError::Kind(header.kind as u8)));
        }
        let path = self
            .path_of(header.conn_id)
            .ok_or(OpenError::Wire(WireError::Mismatch))?;
        if datagram.len() < HEADER_LEN + TAG_LEN {
            return Err(OpenError::Wire(WireError::Short));
        }
        if !self.replay.may_accept(header.pn) {
            return Err(OpenError::Replay);
        }
        if self.keys_spent() {
            return Err(OpenError::Auth);
        }
        let (clear, sealed) = datagram.split_at_mut(HEADER_LEN);
        let Some(plain) = self.opener.open(header.pn, clear, sealed) else {
            self.failed_opens += 1;
            return Err(OpenError::Auth);
        };
        let highest = self.replay.top().is_none_or(|top| header.pn > top);
        // Only an authenticated datagram moves the window, so forgeries cannot close it.
        self.replay.accept(header.pn);
        Ok(Opened {
            frame: Frame::decode(header.kind, plain)?,
            path,
            highest,
        })
    }
}

/// The client's half of the handshake.
pub struct ClientHandshake {
    conn_id: u32,
    offer: Offer,
    hs: Option<HandshakeState>,
    initial: Vec<u8>,
}

/// What the server's Response says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Welcome {
    pub idle_ms: u32,
    /// The AEAD the server picked from the offer.
    pub suite: Suite,
}

impl ClientHandshake {
    /// Starts a connection with id `conn_id`, offering the AEAD suites of `hello.offer`;
    /// `initial()` is the datagram to send (again, as it is, if no Response comes).
    pub fn start(psk: &Psk, conn_id: u32, hello: &Hello) -> ClientHandshake {
        let prologue = prologue(conn_id);
        let mut hs = builder(psk, &prologue)
            .build_initiator()
            .expect("the pattern takes a psk");
        let mut out = Vec::with_capacity(INITIAL_LEN);
        Header {
            kind: Kind::Initial,
            conn_id,
            pn: 0,
        }
        .encode(&mut out);
        let mut msg = [0u8; 32 + HELLO_LEN + TAG_LEN];
        let n = hs.write_message(&hello.encode(), &mut msg).expect("fits");
        out.extend_from_slice(&msg[..n]);
        let m1 = mac(psk.mac1.as_ref(), &[&out]);
        out.extend_from_slice(&m1);
        out.extend_from_slice(&[0; MAC_LEN]);
        debug_assert_eq!(out.len(), INITIAL_LEN);
        ClientHandshake {
            conn_id,
            offer: hello.offer,
            hs: Some(hs),
            initial: out,
        }
    }

    pub fn conn_id(&self) -> u32 {
        self.conn_id
    }

    /// The Initial to send (with the server's cookie once one came).
    pub fn initial(&self) -> &[u8] {
        &self.initial
    }

    /// A server under load answered with a cookie: the next Initial carries it (mac2).
    pub fn accept_cookie(&mut self, psk: &Psk, datagram: &[u8]) -> Result<(), OpenError> {
        let (h, body) = Header::decode(datagram)?;
        if h.kind != Kind::Cookie || h.conn_id != self.conn_id || datagram.len() != COOKIE_LEN {
            return Err(OpenError::Wire(WireError::Mismatch));
        }
        let mac1 = &self.initial[INITIAL_LEN - 2 * MAC_LEN..INITIAL_LEN - MAC_LEN];
        let (nonce, sealed) = body.split_at(24);
        let cipher = XChaCha20Poly1305::new_from_slice(psk.cookie.as_ref()).expect("32 bytes");
        let cookie = Zeroizing::new(
            cipher
                .decrypt(
                    XNonce::from_slice(nonce),
                    Payload {
                        msg: sealed,
                        aad: mac1,
                    },
                )
                .map_err(|_| OpenError::Auth)?,
        );
        let m2 = mac(&cookie, &[&self.initial[..INITIAL_LEN - MAC_LEN]]);
        self.initial[INITIAL_LEN - MAC_LEN..].copy_from_slice(&m2);
        Ok(())
    }

    /// The server's Response: the session, or why not. A Response that fails leaves the
    /// handshake as it was (a forged one cannot end it).
    pub fn finish(&mut self, datagram: &[u8]) -> Result<(Session, Welcome), OpenError> {
        let (h, msg) = Header::decode(datagram)?;
        if h.kind != Kind::Response || h.conn_id != self.conn_id || datagram.len() != RESPONSE_LEN {
            return Err(OpenError::Wire(WireError::Mismatch));
        }
        let hs = self.hs.as_mut().ok_or(OpenError::Replay)?;
        let mut payload = [0u8; RESPONSE_LEN];
        // A failed read restores the handshake's state (snow checkpoints it).
        let n = hs
            .read_message(msg, &mut payload)
            .map_err(|_| OpenError::Auth)?;
        if n != WELCOME_LEN {
            return Err(OpenError::Wire(WireError::Short));
        }
        // An authenticated Response naming a suite the client did not offer: the handshake
        // cannot go on (its state has moved), so it ends.
        let Some(suite) = Suite::from_u8(payload[4]).filter(|s| self.offer.accepts(*s)) else {
            self.hs = None;
            return Err(OpenError::Wire(WireError::Mismatch));
        };
        let welcome = Welcome {
            idle_ms: u32::from_be_bytes(payload[..4].try_into().expect("4 bytes")),
            suite,
        };
        let hs = self.hs.take().expect("checked");
        Ok((Session::new(hs, suite)?, welcome))
    }
}

/// Whether an Initial carries a valid mac1: its sender holds the secret (or replays an Initial
/// that did). Checked before anything costly.
pub fn initial_mac1_ok(psk: &Psk, datagram: &[u8]) -> bool {
    datagram.len() == INITIAL_LEN
        && same(
            &mac(psk.mac1.as_ref(), &[&datagram[..INITIAL_LEN - 2 * MAC_LEN]]),
            &datagram[INITIAL_LEN - 2 * MAC_LEN..INITIAL_LEN - MAC_LEN],
        )
}

/// Whether an Initial carries `cookie` in its mac2.
pub fn initial_mac2_ok(cookie: &[u8; MAC_LEN], datagram: &[u8]) -> bool {
    datagram.len() == INITIAL_LEN
        && same(
            &mac(cookie, &[&datagram[..INITIAL_LEN - MAC_LEN]]),
            &datagram[INITIAL_LEN - MAC_LEN..],
        )
}

/// The cookie reply to an Initial: `cookie` sealed under the secret's cookie key, bound to
/// the Initial's mac1 (only its sender can use it).
pub fn cookie_reply(psk: &Psk, initial: &[u8], cookie: &[u8; MAC_LEN]) -> Vec<u8> {
    let (h, _) = Header::decode(initial).expect("a checked Initial");
    let mut out = Vec::with_capacity(COOKIE_LEN);
    Header {
        kind: Kind::Cookie,
        conn_id: h.conn_id,
        pn: 0,
    }
    .encode(&mut out);
    let mut nonce = [0u8; 24];
    crate::random::fill(&mut nonce);
    let cipher = XChaCha20Poly1305::new_from_slice(psk.cookie.as_ref()).expect("32 bytes");
    let sealed = cipher
        .encrypt(
            XNonce::from_slice(&nonce),
            Payload {
                msg: cookie,
                aad: &initial[INITIAL_LEN - 2 * MAC_LEN..INITIAL_LEN - MAC_LEN],
            },
        )
        .expect("sealing 16 bytes");
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&sealed);
    out
}

/// The Reset datagram for connection id `id`.
pub fn reset_datagram(psk: &Psk, id: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(RESET_LEN);
    Header {
        kind: Kind::Reset,
        conn_id: id,
        pn: 0,
    }
    .encode(&mut out);
    out.extend_from_slice(&psk.reset_token(id));
    out
}

/// Whether `datagram` is a genuine Reset of connection id `id`.
pub fn is_reset(psk: &Psk, id: u32, datagram: &[u8]) -> bool {
    datagram.len() == RESET_LEN && same(&datagram[HANDSHAKE_HEADER_LEN..], &psk.reset_token(id))
}

/// What the server accepts of an Initial.
pub struct Accepted {
    pub session: Session,
    pub response: Vec<u8>,
    pub hello: Hello,
    /// The client's ephemeral key (the replay cache's entry).
    pub ephemeral: [u8; 32],
}

/// The server's answer to an Initial whose mac1 was checked: the session and the Response
/// datagram, or the reason the Initial is dropped (no answer is ever sent to a datagram
/// without the key, nor to one whose offer names no suite this side takes). `idle_ms`: the
/// server's idle timeout (the lower of the two is used); `only` restricts the suites the
/// server takes.
pub fn respond(
    psk: &Psk,
    datagram: &[u8],
    idle_ms: u32,
    only: Option<Suite>,
) -> Result<Accepted, OpenError> {
    let (h, body) = Header::decode(datagram)?;
    if h.kind != Kind::Initial {
        return Err(OpenError::Wire(WireError::Mismatch));
    }
    if datagram.len() != INITIAL_LEN {
        return Err(OpenError::Wire(WireError::Short));
    }
    let msg = &body[..body.len() - 2 * MAC_LEN];
    let prologue = prologue(h.conn_id);
    let mut hs = builder(psk, &prologue)
        .build_responder()
        .expect("the pattern takes a psk");
    let mut payload = [0u8; INITIAL_LEN];
    let n = hs
        .read_message(msg, &mut payload)
        .map_err(|_| OpenError::Auth)?;
    let hello = Hello::decode(&payload[..n]).ok_or(OpenError::Wire(WireError::Short))?;
    let suite = aead::pick(hello.offer, aead::aes_hardware(), only)
        .ok_or(OpenError::Wire(WireError::Mismatch))?;
    let idle_ms = idle_ms.min(hello.idle_ms);
    let mut out = Vec::with_capacity(RESPONSE_LEN);
    Header {
        kind: Kind::Response,
        conn_id: h.conn_id,
        pn: 0,
    }
    .encode(&mut out);
    let mut reply = [0u8; RESPONSE_LEN];
    let mut welcome = [0u8; WELCOME_LEN];
    welcome[..4].copy_from_slice(&idle_ms.to_be_bytes());
    welcome[4] = suite as u8;
    let n = hs
        .write_message(&welcome, &mut reply)
        .map_err(|_| OpenError::Auth)?;
    out.extend_from_slice(&reply[..n]);
    debug_assert_eq!(out.len(), RESPONSE_LEN);
    let mut ephemeral = [0u8; 32];
    ephemeral.copy_from_slice(&msg[..32]);
    Ok(Accepted {
        session: Session::new(hs, suite)?,
        response: out,
        hello: Hello { idle_ms, ..hello },
        ephemeral,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn psk(b: u8) -> Psk {
        let text: String = (0..32u8).map(|i| format!("{:02x}", i ^ b)).collect();
        Psk::from_secret(text.as_bytes()).unwrap()
    }

    const HELLO: Hello = Hello {
        unix_ns: 1_700_000_000_123_456_789,
        idle_ms: 30_000,
        offset: 7,
        // Both suites, no AES hardware claimed: the server picks ChaCha20-Poly1305.
        offer: Offer::from_byte(0b11),
    };

    fn pair() -> (Session, Session) {
        let mut client = ClientHandshake::start(&psk(1), 77, &HELLO);
        let a = respond(&psk(1), client.initial(), 10_000, None).unwrap();
        assert_eq!(
            a.hello,
            Hello {
                idle_ms: 10_000,
                ..HELLO
            }
        );
        let (c, welcome) = client.finish(&a.response).unwrap();
        assert_eq!(welcome.idle_ms, 10_000);
        assert_eq!(welcome.suite, Suite::ChaCha20Poly1305);
        assert_eq!(
            (c.suite(), a.session.suite()),
            (welcome.suite, welcome.suite)
        );
        assert_eq!(c.path_ids, a.session.path_ids);
        (c, a.session)
    }

    /// Both ends of a handshake where the client takes `client` (or every suite, with this
    /// CPU's hardware bit) and the server `server`.
    fn pair_with(client: Option<Suite>, server: Option<Suite>) -> (Session, Session) {
        let hello = Hello {
            offer: Offer::local(client),
            ..HELLO
        };
        let mut c = ClientHandshake::start(&psk(1), 77, &hello);
        let a = respond(&psk(1), c.initial(), 10_000, server).unwrap();
        let (c, welcome) = c.finish(&a.response).unwrap();
        assert_eq!(welcome.suite, a.session.suite());
        (c, a.session)
    }

    fn open(s: &mut Session, d: &[u8]) -> Result<Vec<u8>, OpenError> {
        let (h, _) = Header::decode(d)?;
        let mut buf = d.to_vec();
        s.open(&h, &mut buf).map(|o| {
            let mut out = vec![];
            o.frame.encode(&mut out);
            out
        })
    }

    #[test]
    fn a_handshake_gives_both_sides_one_channel_each_way_and_an_id_per_path() {
        let (mut c, mut s) = pair();
        let f = Frame::Close { code: 9 };
        let mut d = vec![];
        c.seal(3, &f, &mut d);
        let (h, _) = Header::decode(&d).unwrap();
        assert_eq!(h.conn_id, s.path_id(3));
        let mut buf = d.clone();
        let o = s.open(&h, &mut buf).unwrap();
        assert_eq!((o.path, o.highest), (3, true));
        s.seal(0, &f, &mut d);
        assert!(open(&mut c, &d).is_ok());
        let ids: std::collections::HashSet<u32> = c.path_ids.iter().copied().collect();
        assert_eq!(ids.len(), MAX_PATHS, "no two paths share an id");
        assert!(!ids.contains(&77), "nor the handshake's");
        // Another connection gets other ids.
        let (c2, _) = pair();
        assert!(c2.path_ids.iter().all(|id| !ids.contains(id)));
    }

    #[test]
    fn a_rewritten_connection_id_or_version_fails_before_and_in_the_handshake() {
        let client = ClientHandshake::start(&psk(1), 77, &HELLO);
        let mut forged = client.initial().to_vec();
        forged[1..5].copy_from_slice(&78u32.to_be_bytes());
        assert!(!initial_mac1_ok(&psk(1), &forged), "mac1 covers the id");
        // Even with a mac1 recomputed by a holder of the secret, the prologue binds the id.
        let m1 = mac(
            psk(1).mac1.as_ref(),
            &[&forged[..INITIAL_LEN - 2 * MAC_LEN]],
        );
        forged[INITIAL_LEN - 2 * MAC_LEN..INITIAL_LEN - MAC_LEN].copy_from_slice(&m1);
        assert!(initial_mac1_ok(&psk(1), &forged));
        assert_eq!(
            respond(&psk(1), &forged, 1, None).err(),
            Some(OpenError::Auth)
        );
        assert!(initial_mac1_ok(&psk(1), client.initial()));
        assert!(!initial_mac1_ok(&psk(2), client.initial()));
    }

    #[test]
    fn a_forged_response_is_refused_and_the_real_one_still_completes() {
        let mut client = ClientHandshake::start(&psk(1), 77, &HELLO);
        let a = respond(&psk(1), client.initial(), 10_000, None).unwrap();
        let mut forged = a.response.clone();
        forged[20] ^= 1;
        assert_eq!(client.finish(&forged).err(), Some(OpenError::Auth));
        assert!(client.finish(&[0x22, 0, 0, 0, 77]).is_err(), "5 bytes");
        let other = respond(
            &psk(1),
            ClientHandshake::start(&psk(1), 77, &HELLO).initial(),
            1,
            None,
        )
        .unwrap()
        .response;
        assert_eq!(client.finish(&other).err(), Some(OpenError::Auth));
        assert!(client.finish(&a.response).is_ok());
        assert_eq!(client.finish(&a.response).err(), Some(OpenError::Replay));
    }

    #[test]
    fn a_cookie_reaches_only_the_initials_sender_and_proves_its_address() {
        let mut client = ClientHandshake::start(&psk(1), 5, &HELLO);
        let cookie = [9u8; MAC_LEN];
        assert!(!initial_mac2_ok(&cookie, client.initial()));
        let reply = cookie_reply(&psk(1), client.initial(), &cookie);
        assert_eq!(reply.len(), COOKIE_LEN);
        assert!(reply.len() < client.initial().len(), "no amplification");
        let mut other = ClientHandshake::start(&psk(1), 5, &HELLO);
        assert!(
            other.accept_cookie(&psk(1), &reply).is_err(),
            "bound to mac1"
        );
        let mut bad = reply.clone();
        bad[40] ^= 1;
        assert!(client.accept_cookie(&psk(1), &bad).is_err());
        client.accept_cookie(&psk(1), &reply).unwrap();
        assert!(initial_mac1_ok(&psk(1), client.initial()));
        assert!(initial_mac2_ok(&cookie, client.initial()));
        assert!(!initial_mac2_ok(&[8; MAC_LEN], client.initial()));
    }

    #[test]
    fn resets_are_known_only_to_holders_of_the_secret() {
        let d = reset_datagram(&psk(1), 42);
        assert_eq!(d.len(), RESET_LEN);
        assert!(is_reset(&psk(1), 42, &d));
        assert!(!is_reset(&psk(1), 43, &d));
        assert!(!is_reset(&psk(2), 42, &d));
        let mut bad = d.clone();
        bad[10] ^= 1;
        assert!(!is_reset(&psk(1), 42, &bad));
        assert_eq!(Header::decode(&d).unwrap().0.kind, Kind::Reset);
    }

    #[test]
    fn no_response_to_an_initial_without_the_key() {
        let client = ClientHandshake::start(&psk(2), 5, &HELLO);
        assert!(!initial_mac1_ok(&psk(1), client.initial()));
        assert_eq!(
            respond(&psk(1), client.initial(), 1, None).err(),
            Some(OpenError::Auth)
        );
        assert!(respond(&psk(1), &client.initial()[..20], 1, None).is_err());
    }

    #[test]
    fn the_suite_is_negotiated_and_each_works() {
        let (c, s) = pair_with(None, None);
        assert_eq!(c.suite(), s.suite());
        let want = if aead::aes_hardware() {
            Suite::Aes128Gcm
        } else {
            Suite::ChaCha20Poly1305
        };
        assert_eq!(c.suite(), want);
        for suite in Suite::ALL {
            let (mut c, mut s) = pair_with(Some(suite), None);
            assert_eq!((c.suite(), s.suite()), (suite, suite));
            let mut d = vec![];
            c.seal(1, &Frame::Close { code: 3 }, &mut d);
            assert!(open(&mut s, &d).is_ok());
            s.seal(2, &Frame::Close { code: 4 }, &mut d);
            assert!(open(&mut c, &d).is_ok());
            let (_, s2) = pair_with(None, Some(suite));
            assert_eq!(s2.suite(), suite);
        }
        // Nothing in common: the server does not answer.
        let hello = Hello {
            offer: Offer::local(Some(Suite::Aes128Gcm)),
            ..HELLO
        };
        let c = ClientHandshake::start(&psk(1), 5, &hello);
        assert!(initial_mac1_ok(&psk(1), c.initial()));
        assert!(respond(&psk(1), c.initial(), 1, Some(Suite::ChaCha20Poly1305)).is_err());
        // A Response naming a suite the client did not offer ends the handshake.
        let mut c = ClientHandshake::start(&psk(1), 5, &hello);
        let a = respond(&psk(1), c.initial(), 1, None).unwrap();
        assert_eq!(a.session.suite(), Suite::Aes128Gcm);
        c.offer = Offer::local(Some(Suite::ChaCha20Poly1305));
        assert_eq!(
            c.finish(&a.response).err(),
            Some(OpenError::Wire(WireError::Mismatch))
        );
        assert_eq!(c.finish(&a.response).err(), Some(OpenError::Replay));
    }

    #[test]
    fn forged_replayed_and_foreign_datagrams_are_refused() {
        let (mut c, mut s) = pair();
        let payload = [3u8; 100];
        let f = Frame::Data {
            subflow: 0,
            gen: 0,
            probe: false,
            part: crate::wire::Part::Whole,
            seq: 1,
            dseq: 1,
            ts_val: 1,
            ts_ecr: 0,
            payload: &payload,
        };
        let mut d = vec![];
        c.seal(0, &f, &mut d);
        // Every single flipped bit, in the header or the sealed part, is caught.
        for i in 0..d.len() {
            let mut forged = d.clone();
            forged[i] ^= 0x01;
            assert!(open(&mut s, &forged).is_err(), "byte {i}");
        }
        assert!(s.failed_opens() > 0);
        assert!(open(&mut s, &d).is_ok());
        assert_eq!(open(&mut s, &d), Err(OpenError::Replay));
        // Another connection's keys and ids open nothing of this one.
        let (mut c2, _) = pair();
        c2.seal(0, &f, &mut d);
        assert_eq!(open(&mut s, &d), Err(OpenError::Wire(WireError::Mismatch)));
        // Truncated anywhere: refused.
        c.seal(0, &f, &mut d);
        for n in 0..d.len() {
            assert!(open(&mut s, &d[..n]).is_err(), "{n} bytes");
        }
    }

    #[test]
    fn a_reordered_datagram_is_not_the_highest() {
        let (mut c, mut s) = pair();
        let f = Frame::Close { code: 0 };
        let (mut a, mut b) = (vec![], vec![]);
        c.seal(0, &f, &mut a);
        c.seal(0, &f, &mut b);
        let (h, _) = Header::decode(&b).unwrap();
        assert!(s.open(&h, &mut b.clone()).unwrap().highest);
        let (h, _) = Header::decode(&a).unwrap();
        assert!(!s.open(&h, &mut a.clone()).unwrap().highest);
    }

    #[test]
    fn hellos_round_trip_and_bad_clocks_are_refused() {
        assert_eq!(Hello::decode(&HELLO.encode()), Some(HELLO));
        let mut b = HELLO.encode();
        b[8..12].copy_from_slice(&1_000_000_000u32.to_be_bytes());
        assert_eq!(Hello::decode(&b), None);
        assert_eq!(Hello::decode(&b[..10]), None);
    }
}
