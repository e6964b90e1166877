//! The pre-shared secret, as WireGuard handles its keys: 32 random bytes written in base64 (or
//! hex), made by `mpsched keygen`, never a phrase a person chose (one captured Initial lets
//! an attacker test guesses offline, ~36,000 a second per core). A key file must not be
//! readable by group or others (as ssh refuses such private keys), and every copy of the key
//! is wiped from memory when dropped.
//!
//! The secret is a group credential: every holder can act as the server or as any client.

use blake2::{Blake2s256, Digest};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use zeroize::{Zeroize, Zeroizing};

/// Bytes of a secret.
pub const SECRET_LEN: usize = 32;

/// Fewer distinct byte values than this in 32 bytes: made by hand, not drawn at random (32
/// random bytes have fewer than 16 distinct values with probability below 10^-9).
const MIN_DISTINCT: usize = 16;

/// What to do about a secret refused.
const HINT: &str = "make one with `mpsched keygen`";

/// A secret or key file refused, or no secret made: why. Displayed as the messages always
/// were; a secret's own refusals end with how to make one.
#[derive(Debug)]
pub enum SecretError {
    /// The system gave no random bytes (`Secret::generate`); the reason as it said it.
    Random(String),
    /// The text has `n` characters (white space around it aside), neither base64's 44 (or 43)
    /// nor hex's 64.
    Length(usize),
    /// The length of base64 or hex, but not 32 bytes in either.
    Encoding,
    /// Only `distinct` distinct byte values: made by hand, not drawn at random.
    NotRandom { distinct: usize },
    /// The key file could not be looked at.
    KeyFile { path: PathBuf, error: io::Error },
    /// The key file's permissions (`mode`) let group or others read it.
    KeyFileOpen { path: PathBuf, mode: u32 },
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretError::Random(e) => write!(f, "random bytes: {e}"),
            SecretError::Length(n) => write!(
                f,
                "the secret has {n} characters; it must be 32 bytes in base64 (44 characters) \
                 or hex (64): {HINT}"
            ),
            SecretError::Encoding => write!(
                f,
                "the secret is neither base64 nor hex of 32 bytes: {HINT}"
            ),
            SecretError::NotRandom { distinct } => write!(
                f,
                "the secret has only {distinct} distinct byte values: it was not drawn at \
                 random; {HINT}"
            ),
            SecretError::KeyFile { path, error } => {
                write!(f, "key file {}: {error}", path.display())
            }
            SecretError::KeyFileOpen { path, mode } => write!(
                f,
                "key file {}: permissions {mode:04o} are too open (group or others may read \
                 it); `chmod 600 {}`",
                path.display(),
                path.display()
            ),
        }
    }
}

impl std::error::Error for SecretError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SecretError::KeyFile { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// For the callers whose own errors are still messages.
impl From<SecretError> for String {
    fn from(e: SecretError) -> String {
        e.to_string()
    }
}

/// The 32 bytes of the secret. Wiped when dropped.
#[derive(Clone)]
pub struct Secret(Zeroizing<[u8; SECRET_LEN]>);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// 32 fresh random bytes (`mpsched keygen`).
    pub fn generate() -> Result<Secret, SecretError> {
        let mut b = Zeroizing::new([0u8; SECRET_LEN]);
        getrandom::getrandom(b.as_mut()).map_err(|e| SecretError::Random(e.to_string()))?;
        Ok(Secret(b))
    }

    /// The secret from its text (a key file's content, `$MPSCHED_SECRET`): 32 bytes in base64
    /// (44 characters) or hex (64), surrounding white space ignored.
    pub fn parse(text: &[u8]) -> Result<Secret, SecretError> {
        let text = text.trim_ascii();
        let bytes = match text.len() {
            64 => decode_hex(text),
            43 | 44 => decode_base64(text),
            n => return Err(SecretError::Length(n)),
        }
        .ok_or(SecretError::Encoding)?;
        let mut distinct = [false; 256];
        bytes.iter().for_each(|&b| distinct[usize::from(b)] = true);
        let n = distinct.iter().filter(|&&d| d).count();
        if n < MIN_DISTINCT {
            return Err(SecretError::NotRandom { distinct: n });
        }
        Ok(Secret(bytes))
    }

    /// The secret in base64, as `mpsched keygen` prints it.
    pub fn to_base64(&self) -> Zeroizing<String> {
        Zeroizing::new(encode_base64(self.0.as_ref()))
    }

    pub(crate) fn bytes(&self) -> &[u8; SECRET_LEN] {
        &self.0
    }
}

/// Refuses a key file that group or others may read (the secret would not be secret), as
/// ssh refuses such private keys.
pub fn check_key_file(path: &Path) -> Result<(), SecretError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|error| SecretError::KeyFile {
        path: path.to_owned(),
        error,
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(SecretError::KeyFileOpen {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// 32 bytes derived from the secret for one purpose (`label`): each key does one job.
pub(crate) fn derive(secret: &Secret, label: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut h = Blake2s256::new();
    h.update(b"mpsched-udp v2 ");
    h.update(label);
    h.update(secret.bytes());
    let mut out = Zeroizing::new([0u8; 32]);
    out.copy_from_slice(&h.finalize());
    out
}

fn decode_hex(text: &[u8]) -> Option<Zeroizing<[u8; SECRET_LEN]>> {
    let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Zeroizing::new([0u8; SECRET_LEN]);
    for (o, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *o = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn decode_base64(text: &[u8]) -> Option<Zeroizing<[u8; SECRET_LEN]>> {
    // 32 bytes are 43 symbols and one '=' of padding (which may be left out).
    let text = text.strip_suffix(b"=").unwrap_or(text);
    if text.len() != 43 {
        return None;
    }
    let value = |c: u8| B64.iter().position(|&b| b == c).map(|v| v as u32);
    let mut out = Zeroizing::new([0u8; SECRET_LEN]);
    let mut acc = Zeroizing::new(0u32);
    let mut bits = 0;
    let mut n = 0;
    for &c in text {
        *acc = *acc << 6 | value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out[n] = (*acc >> bits) as u8;
            n += 1;
        }
    }
    // The last symbol's 2 spare bits must be zero (one encoding per key).
    (n == SECRET_LEN && *acc & ((1 << bits) - 1) == 0).then_some(out)
}

fn encode_base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let mut b = [0u8; 3];
        b[..chunk.len()].copy_from_slice(chunk);
        let mut v = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(v >> 18 & 63) as usize] as char);
            } else {
                out.push('=');
            }
            v <<= 6;
        }
        v.zeroize();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_secret_reads_back_in_base64_and_hex() {
        let s = Secret::generate().unwrap();
        let text = s.to_base64();
        assert_eq!(text.len(), 44);
        assert_eq!(Secret::parse(text.as_bytes()).unwrap().bytes(), s.bytes());
        assert_eq!(
            Secret::parse(text.trim_end_matches('=').as_bytes())
                .unwrap()
                .bytes(),
            s.bytes()
        );
        let hex: String = s.bytes().iter().map(|b| format!("{b:02X}")).collect();
        let padded = format!("  {hex}\n");
        assert_eq!(Secret::parse(padded.as_bytes()).unwrap().bytes(), s.bytes());
    }

    #[test]
    fn base64_agrees_with_the_standard() {
        // RFC 4648 10's vectors.
        assert_eq!(encode_base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(encode_base64(b"fo"), "Zm8=");
        let bytes: Vec<u8> = (0..32).collect();
        let text = encode_base64(&bytes);
        assert_eq!(text, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
        assert_eq!(decode_base64(text.as_bytes()).unwrap().as_ref(), &bytes[..]);
        assert!(decode_base64(b"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=").is_none());
    }

    #[test]
    fn secrets_a_person_made_are_refused_with_the_way_to_make_one() {
        for bad in [
            &b"hunter2"[..],
            b"a shared secret of at least thirty-two bytes",
            &[b'a'; 32],
            &[b'a'; 44],
            &[b'a'; 64],
            b"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            b"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
        ] {
            let e = Secret::parse(bad).unwrap_err().to_string();
            assert!(e.contains("mpsched keygen"), "{e}");
        }
    }

    #[test]
    fn key_files_others_may_read_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("mpsched-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("key");
        std::fs::write(&f, "x").unwrap();
        for (mode, ok) in [
            (0o600, true),
            (0o400, true),
            (0o640, false),
            (0o644, false),
            (0o666, false),
        ] {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            let r = check_key_file(&f);
            assert_eq!(r.is_ok(), ok, "{mode:o}: {r:?}");
            if let Err(e) = r {
                let e = e.to_string();
                assert!(e.contains("too open") && e.contains("chmod 600"), "{e}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Each refusal is its variant, displayed as the message it always was.
    #[test]
    fn refusals_are_typed_and_say_why() {
        let e = Secret::parse(b"hunter2").unwrap_err();
        assert!(matches!(e, SecretError::Length(7)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "the secret has 7 characters; it must be 32 bytes in base64 (44 characters) or hex \
             (64): make one with `mpsched keygen`"
        );
        let e = Secret::parse(&[b'z'; 64]).unwrap_err();
        assert!(matches!(e, SecretError::Encoding), "{e:?}");
        assert_eq!(
            e.to_string(),
            "the secret is neither base64 nor hex of 32 bytes: make one with `mpsched keygen`"
        );
        let e = Secret::parse(&[b'a'; 64]).unwrap_err();
        assert!(matches!(e, SecretError::NotRandom { distinct: 1 }), "{e:?}");
        assert_eq!(
            String::from(e),
            "the secret has only 1 distinct byte values: it was not drawn at random; make one \
             with `mpsched keygen`"
        );
        let missing = Path::new("/nonexistent/mpsched-key");
        let e = check_key_file(missing).unwrap_err();
        assert!(
            matches!(&e, SecretError::KeyFile { path, error }
                if path == missing && error.kind() == io::ErrorKind::NotFound),
            "{e:?}"
        );
        assert!(e
            .to_string()
            .starts_with("key file /nonexistent/mpsched-key: "));
        let e = SecretError::KeyFileOpen {
            path: "k".into(),
            mode: 0o644,
        };
        assert_eq!(
            e.to_string(),
            "key file k: permissions 0644 are too open (group or others may read it); \
             `chmod 600 k`"
        );
    }
}
