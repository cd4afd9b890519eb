//! The recorder's spool: what each drain read from the kernel, kept as it
//! was read in an unlinked scratch file beside the output, so the decoding,
//! the merge, the matching and the writing run after the recording stops
//! instead of on the CPUs the workload runs on.
//!
//! The spool is a sequence of items, each a 16-byte header (tag u32, CPU
//! u32, then a u64) and for a chunk its bytes:
//! - a **chunk**: bytes one CPU's buffer gave (a tracefs page, or BPF
//!   records of one CPU read in a row); the u64 is their length;
//! - a **pass**: the end of one drain; the u64 is the watermark that drain
//!   released the merge up to.
//!
//! Read back in order, the chunks pushed to their CPU's queue of the merge
//! and the merge released at each pass, it gives the events in the order
//! the live reader gave them.

use std::fs::File;
use std::io::{ErrorKind, Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::error::{Result, TraceError};

const TAG_CHUNK: u32 = 0;
const TAG_PASS: u32 = 1;
const HEADER: usize = 16;

/// A spool being written: items gather in memory during a drain, then go
/// to the file in one write at its pass ([`Spool::pass`]).
pub(crate) struct Spool {
    file: File,
    buf: Vec<u8>,
    /// Where the open chunk's header starts in `buf`, and its CPU.
    open: Option<(usize, u32)>,
    /// The output the spool is beside (for errors).
    beside: PathBuf,
}

/// One item read back.
pub(crate) enum Item<'a> {
    Chunk { cpu: usize, bytes: &'a [u8] },
    Pass { mark: u64 },
}

impl Spool {
    /// A spool in `file` (a scratch file beside `beside`).
    pub(crate) fn new(file: File, beside: &Path) -> Spool {
        Spool {
            file,
            buf: Vec::new(),
            open: None,
            beside: beside.to_path_buf(),
        }
    }

    fn header(&mut self, tag: u32, cpu: u32, word: u64) {
        self.buf.extend_from_slice(&tag.to_le_bytes());
        self.buf.extend_from_slice(&cpu.to_le_bytes());
        self.buf.extend_from_slice(&word.to_le_bytes());
    }

    /// `bytes` as a chunk of its own (a tracefs page).
    pub(crate) fn chunk(&mut self, cpu: usize, bytes: &[u8]) {
        self.open = None;
        self.header(TAG_CHUNK, cpu as u32, bytes.len() as u64);
        self.buf.extend_from_slice(bytes);
    }

    /// `bytes` added to the open chunk when it is `cpu`'s, else to a new
    /// one (BPF records read one at a time).
    pub(crate) fn extend(&mut self, cpu: usize, bytes: &[u8]) {
        let at = match self.open {
            Some((at, c)) if c == cpu as u32 => at,
            _ => {
                let at = self.buf.len();
                self.header(TAG_CHUNK, cpu as u32, 0);
                self.open = Some((at, cpu as u32));
                at
            }
        };
        self.buf.extend_from_slice(bytes);
        let len = (self.buf.len() - at - HEADER) as u64;
        self.buf[at + 8..at + HEADER].copy_from_slice(&len.to_le_bytes());
    }

    /// End a drain that released up to `mark`, and write what it read.
    pub(crate) fn pass(&mut self, mark: u64) -> Result<()> {
        self.open = None;
        self.header(TAG_PASS, 0, mark);
        let r = self.file.write_all(&self.buf);
        self.buf.clear();
        r.map_err(|e| self.failed("write", e))
    }

    fn failed(&self, what: &'static str, source: std::io::Error) -> TraceError {
        TraceError::Spool {
            what,
            path: self.beside.clone(),
            source,
        }
    }

    /// Read every item back, in order, into `f`.
    pub(crate) fn read_back(mut self, mut f: impl FnMut(Item<'_>) -> Result<()>) -> Result<()> {
        self.file
            .rewind()
            .map_err(|e| self.failed("read back", e))?;
        let mut r = std::io::BufReader::with_capacity(1 << 20, &self.file);
        let mut header = [0u8; HEADER];
        let mut bytes = Vec::new();
        loop {
            match r.read_exact(&mut header) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(self.failed("read back", e)),
            }
            let word =
                |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().unwrap_or_default());
            let long = u64::from_le_bytes(header[8..].try_into().unwrap_or_default());
            match word(0) {
                TAG_PASS => f(Item::Pass { mark: long })?,
                _ => {
                    bytes.resize(long as usize, 0);
                    r.read_exact(&mut bytes)
                        .map_err(|e| self.failed("read back", e))?;
                    f(Item::Chunk {
                        cpu: word(4) as usize,
                        bytes: &bytes,
                    })?
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items come back as written: records of one CPU in a row make one
    /// chunk, pages stay whole, passes keep their marks.
    #[test]
    fn items_read_back_as_written() {
        let dir = std::env::temp_dir().join(format!("drivelab-spool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = drivelab_device::output::Output::new(dir.join("t.dlt"))
            .scratch()
            .unwrap();
        let mut s = Spool::new(file, &dir.join("t.dlt"));
        s.extend(0, b"aa");
        s.extend(0, b"bb");
        s.extend(1, b"cc");
        s.pass(7).unwrap();
        s.chunk(1, b"page one");
        s.chunk(1, b"page two");
        s.extend(1, b"dd");
        s.pass(u64::MAX).unwrap();
        let mut got = Vec::new();
        s.read_back(|it| {
            got.push(match it {
                Item::Chunk { cpu, bytes } => format!("{cpu}:{}", String::from_utf8_lossy(bytes)),
                Item::Pass { mark } => format!("pass {mark}"),
            });
            Ok(())
        })
        .unwrap();
        assert_eq!(
            got,
            [
                "0:aabb",
                "1:cc",
                "pass 7",
                "1:page one",
                "1:page two",
                "1:dd",
                &format!("pass {}", u64::MAX)
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
