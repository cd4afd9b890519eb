//! The trace as a replay plays it: parsed once, before the replay, into
//! fixed-size binary records, so that the issuing thread only copies the
//! next request out between a completion and the next issue. Parsing a
//! text trace there (line reading, number parsing, a fio iolog's file-name
//! lookup) cost a closed-loop replay at depth 4 on a loop device over tmpfs
//! about 0.3 µs of CPU per request, where `drivelab run`'s whole
//! user-space path is 0.5 µs.
//!
//! The records fill memory up to [`SpoolOptions::mem_bytes`]
//! ([`DEFAULT_MEM_BYTES`], 64 MiB: 1,677,721 requests of [`RECORD`]
//! bytes); the rest of the trace goes to a spool file in
//! [`SpoolOptions::dir`], written as the trace is read and read back
//! sequentially, [`READ_BLOCK`] bytes at a time, as the replay plays. The
//! file is unlinked as soon as it is created: it holds no name while it is
//! used and its space is freed when the spool is dropped, or the process
//! ends, however it ends. A spool can be read any number of times
//! ([`Spool::iter`]): the session's prepass, the think-time pass of
//! dependency timing and the replay itself each read it once.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use drivelab_trace::{Flags, Op, Request, TraceError};

/// Bytes of one record: issue time, completion time, offset and length
/// (8 bytes each, little-endian), device (4), op, flags, whether the
/// completion time is known, and a zero byte.
pub const RECORD: usize = 40;

/// Memory the records may take before the rest goes to the spool file.
pub const DEFAULT_MEM_BYTES: usize = 64 << 20;

/// Bytes read from the spool file at once: whole records, about 1 MiB.
pub const READ_BLOCK: usize = (1 << 20) / RECORD * RECORD;

/// Where a spool keeps the records that do not fit in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolOptions {
    /// Memory for records, bytes (rounded down to whole records; 0 puts
    /// every record in the file).
    pub mem_bytes: usize,
    /// The directory the spool file is made in.
    pub dir: PathBuf,
}

impl Default for SpoolOptions {
    /// [`DEFAULT_MEM_BYTES`] in memory, the rest in the system's temporary
    /// directory (`TMPDIR`, else `/tmp`).
    fn default() -> Self {
        SpoolOptions {
            mem_bytes: DEFAULT_MEM_BYTES,
            dir: std::env::temp_dir(),
        }
    }
}

/// Why a trace could not be spooled.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The spool file could not be made or written.
    #[error("cannot spool the trace to {}: {source}; set TMPDIR to a directory with room for {RECORD} bytes a request", dir.display())]
    File {
        /// The spool directory.
        dir: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
}

/// A trace's requests in replay order, as fixed-size records.
#[derive(Debug)]
pub struct Spool {
    mem: Vec<u8>,
    /// The records beyond memory, and how many.
    file: Option<File>,
    in_file: u64,
}

impl Spool {
    /// Read `reqs` to its end (the first error ends it) and keep every
    /// request.
    pub fn build<I>(reqs: I, o: &SpoolOptions) -> Result<Spool, SpoolError>
    where
        I: Iterator<Item = drivelab_trace::Result<Request>>,
    {
        let cap = o.mem_bytes / RECORD * RECORD;
        let mut mem = Vec::new();
        let mut out: Option<BufWriter<File>> = None;
        let mut in_file = 0u64;
        let fail = |source| SpoolError::File {
            dir: o.dir.clone(),
            source,
        };
        for r in reqs {
            let rec = encode(&r?);
            if mem.len() + RECORD <= cap {
                if mem.len() == mem.capacity() {
                    // Grow by doubling, but never past the bound.
                    let want = (mem.capacity() * 2).max(RECORD * 1024).min(cap);
                    mem.reserve_exact(want - mem.len());
                }
                mem.extend_from_slice(&rec);
                continue;
            }
            let w = match &mut out {
                Some(w) => w,
                None => out.insert(BufWriter::with_capacity(
                    READ_BLOCK,
                    unnamed_file(&o.dir).map_err(fail)?,
                )),
            };
            w.write_all(&rec).map_err(fail)?;
            in_file += 1;
        }
        let file = match out {
            Some(w) => Some(w.into_inner().map_err(|e| fail(e.into_error()))?),
            None => None,
        };
        Ok(Spool { mem, file, in_file })
    }

    /// Requests held.
    pub fn len(&self) -> u64 {
        (self.mem.len() / RECORD) as u64 + self.in_file
    }

    /// Whether it holds no request.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Requests in the spool file (the rest are in memory).
    pub fn in_file(&self) -> u64 {
        self.in_file
    }

    /// The requests, in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            mem: &self.mem,
            file: self.file.as_ref(),
            at: 0,
            end: self.in_file * RECORD as u64,
            buf: Vec::new(),
            pos: 0,
        }
    }
}

/// The requests of a [`Spool`], in order.
pub struct Iter<'a> {
    /// Records in memory not yet handed out.
    mem: &'a [u8],
    file: Option<&'a File>,
    /// The file's next byte to read, and its end.
    at: u64,
    end: u64,
    /// The block read last from the file, and the next record in it.
    buf: Vec<u8>,
    pos: usize,
}

impl Iter<'_> {
    /// Read the file's next block; `false` at its end.
    fn refill(&mut self) -> std::io::Result<bool> {
        let Some(f) = self.file.filter(|_| self.at < self.end) else {
            return Ok(false);
        };
        let n = (self.end - self.at).min(READ_BLOCK as u64) as usize;
        self.buf.resize(n, 0);
        f.read_exact_at(&mut self.buf, self.at)?;
        self.at += n as u64;
        self.pos = 0;
        Ok(true)
    }
}

impl Iterator for Iter<'_> {
    type Item = drivelab_trace::Result<Request>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if let Some((rec, rest)) = self.mem.split_first_chunk::<RECORD>() {
            self.mem = rest;
            return Some(Ok(decode(rec)));
        }
        if self.buf.len() - self.pos < RECORD {
            match self.refill() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    self.at = self.end;
                    self.buf.clear();
                    self.pos = 0;
                    return Some(Err(TraceError::Io(e)));
                }
            }
        }
        let rec = self.buf[self.pos..].first_chunk::<RECORD>()?;
        self.pos += RECORD;
        Some(Ok(decode(rec)))
    }
}

/// A new file in `dir`, readable and writable by this process alone, its
/// name removed at once.
fn unnamed_file(dir: &Path) -> std::io::Result<File> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let path = dir.join(format!(
        ".drivelab-replay-spool.{}.{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let f = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(f)
}

fn encode(r: &Request) -> [u8; RECORD] {
    let mut b = [0u8; RECORD];
    b[0..8].copy_from_slice(&r.issue_ns.to_le_bytes());
    b[8..16].copy_from_slice(&r.complete_ns.unwrap_or(0).to_le_bytes());
    b[16..24].copy_from_slice(&r.offset.to_le_bytes());
    b[24..32].copy_from_slice(&r.len.to_le_bytes());
    b[32..36].copy_from_slice(&r.device.to_le_bytes());
    b[36] = match r.op {
        Op::Read => 0,
        Op::Write => 1,
        Op::Trim => 2,
        Op::Flush => 3,
    };
    b[37] = r.flags.0;
    b[38] = u8::from(r.complete_ns.is_some());
    b
}

#[inline]
fn decode(b: &[u8; RECORD]) -> Request {
    let u = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i..i + 8]);
        u64::from_le_bytes(w)
    };
    let mut d = [0u8; 4];
    d.copy_from_slice(&b[32..36]);
    Request {
        issue_ns: u(0),
        complete_ns: (b[38] != 0).then(|| u(8)),
        device: u32::from_le_bytes(d),
        op: match b[36] {
            0 => Op::Read,
            1 => Op::Write,
            2 => Op::Trim,
            _ => Op::Flush,
        },
        offset: u(16),
        len: u(24),
        flags: Flags(b[37]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests of every op, with and without completions, flags and
    /// devices, and values that need all 64 bits.
    fn trace(n: u64) -> Vec<Request> {
        (0..n)
            .map(|i| {
                let op = [Op::Read, Op::Write, Op::Trim, Op::Flush][(i % 4) as usize];
                let (hi, top) = ((i % 4) << 60, (i % 8) << 60);
                let mut r = Request::new(i * 1_000 + hi, op, i * 4096 + top, 512 * i);
                r.complete_ns = (i % 3 != 0).then_some(r.issue_ns + 7 * i);
                r.device = (i as u32).wrapping_mul(0x9E37_79B9);
                r.flags = Flags((i % 8) as u8);
                r
            })
            .collect()
    }

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("drivelab-spool-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn every_request_comes_back_in_order_from_memory_the_file_or_both() {
        let d = dir("order");
        let t = trace(70_000);
        // All in memory; 100 in memory and the rest in the file (more than
        // one read block of it); all in the file; a bound that is not a
        // whole number of records.
        for (mem_bytes, in_file) in [
            (DEFAULT_MEM_BYTES, 0),
            (100 * RECORD, 69_900),
            (0, 70_000),
            (100 * RECORD + 7, 69_900),
        ] {
            let o = SpoolOptions {
                mem_bytes,
                dir: d.clone(),
            };
            let s = Spool::build(t.iter().map(|r| Ok(*r)), &o).unwrap();
            assert_eq!((s.len(), s.in_file()), (70_000, in_file), "{mem_bytes}");
            assert!(s.mem.capacity() <= mem_bytes, "{}", s.mem.capacity());
            // Twice: a spool is read as often as asked.
            for _ in 0..2 {
                let back: Vec<Request> = s.iter().map(|r| r.unwrap()).collect();
                if let Some(i) = (0..t.len()).find(|&i| back.get(i) != Some(&t[i])) {
                    panic!(
                        "{mem_bytes}: request {i} came back as {:?}, not {:?}",
                        back.get(i),
                        t[i]
                    );
                }
                assert_eq!(back.len(), t.len());
            }
            // The spool file has no name in the directory, while it is
            // used and after.
            assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
            drop(s);
            assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_trace_error_ends_the_spool_with_that_error_and_a_missing_dir_says_what_to_do() {
        let d = dir("errors");
        let o = SpoolOptions {
            mem_bytes: 0,
            dir: d.join("missing"),
        };
        let e = Spool::build(trace(3).into_iter().map(Ok), &o).unwrap_err();
        assert!(
            e.to_string().starts_with("cannot spool the trace to "),
            "{e}"
        );
        assert!(e.to_string().contains("set TMPDIR"), "{e}");
        let bad = vec![
            Ok(Request::new(0, Op::Read, 0, 4096)),
            Err(TraceError::Parse {
                format: "fio",
                line: 2,
                msg: "bad offset".into(),
            }),
        ];
        let o = SpoolOptions {
            mem_bytes: 0,
            dir: d.clone(),
        };
        match Spool::build(bad.into_iter(), &o) {
            Err(SpoolError::Trace(TraceError::Parse { line: 2, .. })) => {}
            other => panic!("{other:?}"),
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
