//! Sessions: a Noise handshake (`Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s`, through `snow`) keyed
//! by a pre-shared key, then every datagram sealed in place with the AEAD the handshake
//! negotiated (`aead`: AES-128-GCM or ChaCha20-Poly1305, ring's) under the packet number as
//! nonce and the clear header as associated data. The client's first message already proves
//! the key (psk0), so the server answers no one who lacks it; fresh ephemeral keys on both
//! sides give each connection its own keys (forward secrecy). The packet number doubles as the
//! replay window's index.

use crate::aead::{self, Direction, Offer, Opener, Sealer, Suite};
use crate::replay::ReplayWindow;
use crate::wire::{
    Frame, Header, Kind, WireError, HANDSHAKE_HEADER_LEN, HEADER_LEN, PN_LIMIT, TAG_LEN,
};
use blake2::{Blake2s256, Digest};
use snow::{Builder, HandshakeState};
use std::fmt;

const PATTERN: &str = "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s";
/// The Noise payload of each handshake message: one byte, the client's `Offer` in the
/// Initial and the server's `Suite` in the Response (so the Response is no larger).
const SUITE_PAYLOAD_LEN: usize = 1;
/// A Noise message of this pattern: an ephemeral key and the sealed one-byte payload.
pub const HANDSHAKE_MSG_LEN: usize = 32 + SUITE_PAYLOAD_LEN + TAG_LEN;

/// The pre-shared key: 32 bytes.
#[derive(Clone)]
pub struct Psk([u8; 32]);

impl fmt::Debug for Psk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Psk(..)")
    }
}

impl Psk {
    /// A key from secret material (a key file's bytes, an environment variable): at least 32
    /// bytes, hashed with BLAKE2s so that any length gives 32 uniform bytes.
    pub fn from_secret(secret: &[u8]) -> Result<Psk, String> {
        if secret.len() < 32 {
            return Err(format!(
                "the secret has {} bytes; at least 32 are needed (e.g. `head -c 32 /dev/urandom \
                 | base64`)",
                secret.len()
            ));
        }
        let mut h = Blake2s256::new();
        h.update(b"mpsched-udp psk v1");
        h.update(secret);
        Ok(Psk(h.finalize().into()))
    }
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

fn builder(psk: &Psk) -> Builder<'_> {
    Builder::new(PATTERN.parse().expect("a valid Noise pattern")).psk(0, &psk.0)
}

/// One side of an established connection: seals what it sends, opens what it receives.
pub struct Session {
    conn_id: u32,
    suite: Suite,
    sealer: Sealer,
    opener: Opener,
    next_pn: u64,
    replay: ReplayWindow,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("conn_id", &self.conn_id)
            .field("suite", &self.suite)
            .field("next_pn", &self.next_pn)
            .finish()
    }
}

impl Session {
    /// The keys of a finished handshake: the client seals with the split's first secret and
    /// the server with its second.
    fn new(conn_id: u32, mut hs: HandshakeState, suite: Suite) -> Result<Session, OpenError> {
        if !hs.is_handshake_finished() {
            return Err(OpenError::Auth);
        }
        let (c2s, s2c) = hs.dangerously_get_raw_split();
        let client = Direction::new(suite, c2s, b"client");
        let server = Direction::new(suite, s2c, b"server");
        let (sealer, opener) = if hs.is_initiator() {
            (Sealer::new(client), Opener::new(server))
        } else {
            (Sealer::new(server), Opener::new(client))
        };
        Ok(Session {
            conn_id,
            suite,
            sealer,
            opener,
            next_pn: 0,
            replay: ReplayWindow::default(),
        })
    }

    pub fn conn_id(&self) -> u32 {
        self.conn_id
    }

    /// The AEAD the handshake chose.
    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// Puts the datagram carrying `frame` in `out` (cleared first).
    pub fn seal(&mut self, frame: &Frame, out: &mut Vec<u8>) {
        self.seal_with(frame.kind(), out, |o| frame.encode(o));
    }

    /// Puts a datagram of `kind` in `out` (cleared first): its header, then the frame that
    /// `write` appends (the kind byte first), sealed in place. Whatever `write` returns is
    /// returned; the datagram is only meant to be sent if that says so.
    pub fn seal_with<R>(
        &mut self,
        kind: Kind,
        out: &mut Vec<u8>,
        write: impl FnOnce(&mut Vec<u8>) -> R,
    ) -> R {
        assert!(self.next_pn < PN_LIMIT, "packet numbers exhausted: rekey");
        let header = Header {
            kind,
            conn_id: self.conn_id,
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
    ) -> Result<Frame<'b>, OpenError> {
        if header.kind.is_handshake() {
            return Err(OpenError::Wire(WireError::Kind(header.kind as u8)));
        }
        if header.conn_id != self.conn_id {
            return Err(OpenError::Wire(WireError::Mismatch));
        }
        if datagram.len() < HEADER_LEN + TAG_LEN {
            return Err(OpenError::Wire(WireError::Short));
        }
        if !self.replay.may_accept(header.pn) {
            return Err(OpenError::Replay);
        }
        let (clear, sealed) = datagram.split_at_mut(HEADER_LEN);
        let plain = self
            .opener
            .open(header.pn, clear, sealed)
            .ok_or(OpenError::Auth)?;
        // Only an authenticated datagram moves the window, so forgeries cannot close it.
        self.replay.accept(header.pn);
        Ok(Frame::decode(header.kind, plain)?)
    }
}

/// The client's half of the handshake.
pub struct ClientHandshake {
    conn_id: u32,
    offer: Offer,
    hs: HandshakeState,
}

impl ClientHandshake {
    /// Starts a connection with id `conn_id`, offering the AEAD suites of `offer`; returns the
    /// Initial datagram to send (again, as it is, if no Response comes).
    pub fn start(psk: &Psk, conn_id: u32, offer: Offer) -> (ClientHandshake, Vec<u8>) {
        let mut hs = builder(psk)
            .build_initiator()
            .expect("the pattern takes a psk");
        let mut out = vec![];
        Header {
            kind: Kind::Initial,
            conn_id,
            pn: 0,
        }
        .encode(&mut out);
        let mut msg = [0u8; HANDSHAKE_MSG_LEN];
        let n = hs
            .write_message(&[offer.to_byte()], &mut msg)
            .expect("fits");
        out.extend_from_slice(&msg[..n]);
        (ClientHandshake { conn_id, offer, hs }, out)
    }

    /// The server's Response: the session, or why not.
    pub fn finish(mut self, datagram: &[u8]) -> Result<Session, OpenError> {
        let (h, msg) = Header::decode(datagram)?;
        if h.kind != Kind::Response || h.conn_id != self.conn_id {
            return Err(OpenError::Wire(WireError::Mismatch));
        }
        let mut payload = [0u8; HANDSHAKE_MSG_LEN];
        let n = self
            .hs
            .read_message(msg, &mut payload)
            .map_err(|_| OpenError::Auth)?;
        let suite = match payload[..n] {
            [b] => Suite::from_u8(b).filter(|s| self.offer.accepts(*s)),
            _ => None,
        }
        .ok_or(OpenError::Wire(WireError::Mismatch))?;
        Session::new(self.conn_id, self.hs, suite)
    }
}

/// The server's answer to an Initial: the session and the Response datagram, or the reason
/// the Initial is dropped (no answer is ever sent to a datagram without the key, nor to one
/// whose offer names no suite this side takes). `only` restricts the suites the server takes.
pub fn respond(
    psk: &Psk,
    datagram: &[u8],
    only: Option<Suite>,
) -> Result<(Session, Vec<u8>), OpenError> {
    let (h, msg) = Header::decode(datagram)?;
    if h.kind != Kind::Initial {
        return Err(OpenError::Wire(WireError::Mismatch));
    }
    if msg.len() != HANDSHAKE_MSG_LEN {
        return Err(OpenError::Wire(WireError::Short));
    }
    let mut hs = builder(psk)
        .build_responder()
        .expect("the pattern takes a psk");
    let mut payload = [0u8; HANDSHAKE_MSG_LEN];
    let n = hs
        .read_message(msg, &mut payload)
        .map_err(|_| OpenError::Auth)?;
    let suite = match payload[..n] {
        [b] => aead::pick(Offer::from_byte(b), aead::aes_hardware(), only),
        _ => None,
    }
    .ok_or(OpenError::Wire(WireError::Mismatch))?;
    let mut out = Vec::with_capacity(HANDSHAKE_HEADER_LEN + HANDSHAKE_MSG_LEN);
    Header {
        kind: Kind::Response,
        conn_id: h.conn_id,
        pn: 0,
    }
    .encode(&mut out);
    let mut reply = [0u8; HANDSHAKE_MSG_LEN];
    let n = hs
        .write_message(&[suite as u8], &mut reply)
        .map_err(|_| OpenError::Auth)?;
    out.extend_from_slice(&reply[..n]);
    Ok((Session::new(h.conn_id, hs, suite)?, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn psk(b: u8) -> Psk {
        Psk::from_secret(&[b; 32]).unwrap()
    }

    fn pair() -> (Session, Session) {
        pair_with(None, None)
    }

    fn pair_with(client: Option<Suite>, server: Option<Suite>) -> (Session, Session) {
        let (c, initial) = ClientHandshake::start(&psk(1), 77, Offer::local(client));
        let (s, response) = respond(&psk(1), &initial, server).unwrap();
        (c.finish(&response).unwrap(), s)
    }

    fn open(s: &mut Session, d: &[u8]) -> Result<Vec<u8>, OpenError> {
        let (h, _) = Header::decode(d)?;
        let mut buf = d.to_vec();
        s.open(&h, &mut buf).map(|f| {
            let mut out = vec![];
            f.encode(&mut out);
            out
        })
    }

    #[test]
    fn a_handshake_gives_both_sides_one_channel_each_way() {
        let (mut c, mut s) = pair();
        let f = Frame::Close { code: 9 };
        let mut d = vec![];
        c.seal(&f, &mut d);
        assert!(open(&mut s, &d).is_ok());
        s.seal(&f, &mut d);
        assert!(open(&mut c, &d).is_ok());
    }

    #[test]
    fn short_secrets_are_refused() {
        assert!(Psk::from_secret(b"hunter2")
            .unwrap_err()
            .contains("at least 32"));
    }

    #[test]
    fn no_response_to_an_initial_without_the_key() {
        let (_, initial) = ClientHandshake::start(&psk(2), 5, Offer::local(None));
        assert_eq!(
            respond(&psk(1), &initial, None).err(),
            Some(OpenError::Auth)
        );
        assert!(respond(&psk(1), &initial[..20], None).is_err());
    }

    #[test]
    fn the_suite_is_negotiated_and_each_works() {
        let (c, s) = pair();
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
            c.seal(&Frame::Close { code: 3 }, &mut d);
            assert!(open(&mut s, &d).is_ok());
            let (_, s2) = pair_with(None, Some(suite));
            assert_eq!(s2.suite(), suite);
        }
        // Nothing in common: the server does not answer.
        let (_, initial) = ClientHandshake::start(&psk(1), 5, Offer::local(Some(Suite::Aes128Gcm)));
        assert!(respond(&psk(1), &initial, Some(Suite::ChaCha20Poly1305)).is_err());
    }

    #[test]
    fn forged_replayed_and_foreign_datagrams_are_refused() {
        let (mut c, mut s) = pair();
        let payload = [3u8; 100];
        let f = Frame::Data {
            subflow: 0,
            gen: 0,
            probe: false,
            seq: 1,
            dseq: 1,
            ts_val: 1,
            ts_ecr: 0,
            payload: &payload,
        };
        let mut d = vec![];
        c.seal(&f, &mut d);
        // Every single flipped bit, in the header or the sealed part, is caught.
        for i in 0..d.len() {
            let mut forged = d.clone();
            forged[i] ^= 0x01;
            assert!(open(&mut s, &forged).is_err(), "byte {i}");
        }
        assert!(open(&mut s, &d).is_ok());
        assert_eq!(open(&mut s, &d), Err(OpenError::Replay));
        // Another connection's keys (same psk, other ephemerals) open nothing of this one.
        let (mut c2, _) = pair();
        c2.seal(&f, &mut d);
        c2.seal(&f, &mut d); // packet number 1: not yet seen here
        assert_eq!(open(&mut s, &d), Err(OpenError::Auth));
        // Truncated anywhere: refused.
        c.seal(&f, &mut d);
        for n in 0..d.len() {
            assert!(open(&mut s, &d[..n]).is_err(), "{n} bytes");
        }
    }
}
