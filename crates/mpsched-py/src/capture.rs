//! The capture file of `run(..., pcap=...)`: written through a writer that counts its bytes,
//! refuses to pass a limit (before a disk fills) and keeps the first error for the caller.

use mpsched_sim::capture::Vantage;
use mpsched_sim::Simulation;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::{Arc, Mutex};

/// What went wrong with a capture file, shared between its writer and the binding.
pub type Status = Arc<Mutex<Option<String>>>;

struct LimitedFile {
    out: BufWriter<File>,
    path: String,
    written: u64,
    limit: u64,
    status: Status,
}

impl LimitedFile {
    fn fail(&self, msg: String) -> io::Error {
        let mut s = self.status.lock().expect("not poisoned");
        s.get_or_insert(msg.clone());
        io::Error::other(msg)
    }
}

impl Write for LimitedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written + buf.len() as u64 > self.limit {
            return Err(self.fail(format!(
                "the capture {} reached its limit of {} bytes (--max-trace-size); the run stopped there",
                self.path, self.limit
            )));
        }
        match self.out.write(buf) {
            Ok(n) => {
                self.written += n as u64;
                Ok(n)
            }
            Err(e) => Err(self.fail(format!("cannot write the capture {}: {e}", self.path))),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out
            .flush()
            .map_err(|e| self.fail(format!("cannot write the capture {}: {e}", self.path)))
    }
}

/// Attaches a capture to `path` at `vantage` (sender, receiver or links).
pub fn attach(
    sim: &mut Simulation,
    path: &str,
    vantage: &str,
    limit: u64,
) -> Result<Status, String> {
    let vantage = Vantage::parse(vantage)?;
    let file = File::create(path).map_err(|e| format!("cannot write the capture {path}: {e}"))?;
    let status = Status::default();
    let out = LimitedFile {
        out: BufWriter::with_capacity(1 << 20, file),
        path: path.to_owned(),
        written: 0,
        limit,
        status: status.clone(),
    };
    sim.capture(vantage, Box::new(out))
        .map_err(|e| format!("cannot write the capture {path}: {e}"))?;
    Ok(status)
}

/// The capture's error, if it had one.
pub fn error(status: &Option<Status>) -> Option<String> {
    status
        .as_ref()
        .and_then(|s| s.lock().expect("not poisoned").clone())
}
