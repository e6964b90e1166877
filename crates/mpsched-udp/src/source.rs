//! What the server sends: the bytes of a file, or a generated stream, read by offset as the
//! core's segments go out (a segment `dseq` is bytes `dseq x MSS ..`).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

pub trait Source: Send {
    /// Its length; `None`: endless.
    fn len(&self) -> Option<u64>;
    fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }
    /// Fills `buf` with the bytes at `offset`.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
}

/// A file.
pub struct FileSource {
    file: File,
    len: u64,
}

impl FileSource {
    pub fn open(path: &Path) -> io::Result<FileSource> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(FileSource { file, len })
    }
}

impl Source for FileSource {
    fn len(&self) -> Option<u64> {
        Some(self.len)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }
}

/// A generated stream (`len` bytes, or endless): each 8-byte word is a hash of its offset, so
/// the receiver can check every byte without a copy of the file.
pub struct Pattern {
    pub len: Option<u64>,
}

impl Pattern {
    /// The word at word index `w` (bytes `8w .. 8w + 8`, little-endian): splitmix64's
    /// finalizer, every word different, cheap.
    fn word(w: u64) -> u64 {
        let mut z = w.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The byte at `offset`.
    pub fn byte(offset: u64) -> u8 {
        Pattern::word(offset / 8).to_le_bytes()[(offset % 8) as usize]
    }
}

impl Source for Pattern {
    fn len(&self) -> Option<u64> {
        self.len
    }
    /// A word per hash, not a byte (one hash gives eight bytes: issue 29 measured the
    /// per-byte loop at 14-21% of the transfer's CPU); segments start on word boundaries
    /// (1,424 = 8 x 178), so the unaligned ends are the exception.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let head = ((8 - offset % 8) % 8).min(buf.len() as u64) as usize;
        let (head_bytes, rest) = buf.split_at_mut(head);
        for (i, b) in head_bytes.iter_mut().enumerate() {
            *b = Pattern::byte(offset + i as u64);
        }
        let mut w = (offset + head as u64) / 8;
        let mut words = rest.chunks_exact_mut(8);
        for chunk in &mut words {
            chunk.copy_from_slice(&Pattern::word(w).to_le_bytes());
            w += 1;
        }
        for (i, b) in words.into_remainder().iter_mut().enumerate() {
            *b = Pattern::byte(w * 8 + i as u64);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_at_a_time_give_the_bytes_one_at_a_time() {
        let p = Pattern { len: None };
        for offset in [0u64, 1, 7, 8, 13, 1424 * 3, (1 << 40) + 5] {
            for len in [0usize, 1, 5, 8, 9, 23, 1424] {
                let mut buf = vec![0u8; len];
                p.read_at(offset, &mut buf).unwrap();
                let want: Vec<u8> = (0..len as u64).map(|i| Pattern::byte(offset + i)).collect();
                assert_eq!(buf, want, "offset {offset} len {len}");
            }
        }
    }
}
