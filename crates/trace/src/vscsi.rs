//! CloudPhysics vSCSI binary traces (as distributed with libCacheSim).
//!
//! Version 1, 32-byte little-endian records:
//! `u32 sn, u32 len (bytes), u32 nSG, u16 cmd (SCSI opcode), u16 ver, u64 lbn
//! (512 B blocks), u64 ts (µs)`, with `ver >> 8 == 1`.
//! Version 2, 40-byte records: `u16 cmd, u16 ver, u32 sn, u32 len, u32 nSG,
//! u64 lbn, u64 ts (µs), u64 rt (response time, µs)`, with `ver >> 8 == 2`.
//!
//! Times are made relative to the first record. READ(6/10/12/16) and
//! WRITE(6/10/12/16) become reads and writes, SYNCHRONIZE CACHE(10/16)
//! flushes; other commands are counted as ignored. A record whose version
//! byte is wrong is malformed (skipped and counted in lenient mode).

use std::io::BufRead;

use crate::error::{Result, TraceError};
use crate::model::{Flags, Op, Request};
use crate::source::{check_request, ReadOptions, ReadStats, TraceReader};

/// Which vscsi record layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VscsiVersion {
    /// 32-byte records.
    V1,
    /// 40-byte records with response time.
    V2,
}

impl VscsiVersion {
    /// Record size in bytes.
    pub fn record_len(self) -> usize {
        match self {
            VscsiVersion::V1 => 32,
            VscsiVersion::V2 => 40,
        }
    }
}

/// One decoded record (fields as stored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VscsiRecord {
    pub cmd: u16,
    pub ver: u16,
    pub len: u32,
    pub lbn: u64,
    pub ts_us: u64,
    pub rt_us: Option<u64>,
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

/// Decode a record; `b` must be exactly `v.record_len()` bytes.
pub(crate) fn decode(v: VscsiVersion, b: &[u8]) -> VscsiRecord {
    match v {
        VscsiVersion::V1 => VscsiRecord {
            len: u32_at(b, 4),
            cmd: u16_at(b, 12),
            ver: u16_at(b, 14),
            lbn: u64_at(b, 16),
            ts_us: u64_at(b, 24),
            rt_us: None,
        },
        VscsiVersion::V2 => VscsiRecord {
            cmd: u16_at(b, 0),
            ver: u16_at(b, 2),
            len: u32_at(b, 8),
            lbn: u64_at(b, 16),
            ts_us: u64_at(b, 24),
            rt_us: Some(u64_at(b, 32)),
        },
    }
}

pub(crate) fn op_of(cmd: u16) -> Option<Op> {
    match cmd {
        0x08 | 0x28 | 0xA8 | 0x88 => Some(Op::Read),
        0x0A | 0x2A | 0xAA | 0x8A => Some(Op::Write),
        0x35 | 0x91 => Some(Op::Flush),
        _ => None,
    }
}

/// Whether `buf` starts with `n >= 1` well-formed records of version `v`
/// (version byte right, opcode a byte). Used by format detection.
pub(crate) fn plausible(v: VscsiVersion, buf: &[u8], n: usize) -> bool {
    let want = match v {
        VscsiVersion::V1 => 1,
        VscsiVersion::V2 => 2,
    };
    let recs = buf.len() / v.record_len();
    let n = n.min(recs);
    if n == 0 {
        return false;
    }
    (0..n).all(|i| {
        let r = decode(v, &buf[i * v.record_len()..(i + 1) * v.record_len()]);
        r.ver >> 8 == want && r.cmd <= 0xff && op_of(r.cmd).is_some()
    })
}

/// Streaming vscsi reader.
pub struct VscsiReader<R> {
    inner: R,
    version: VscsiVersion,
    base: Option<u64>,
    pos: u64,
    stats: ReadStats,
    opts: ReadOptions,
    done: bool,
}

impl<R: BufRead> VscsiReader<R> {
    /// A reader for the given version.
    pub fn new(inner: R, version: VscsiVersion, opts: ReadOptions) -> Self {
        VscsiReader {
            inner,
            version,
            base: None,
            pos: 0,
            stats: ReadStats::default(),
            opts,
            done: false,
        }
    }

    fn err(&self, at: u64, msg: String) -> TraceError {
        TraceError::Binary {
            format: match self.version {
                VscsiVersion::V1 => "vscsi1",
                VscsiVersion::V2 => "vscsi2",
            },
            offset: at,
            msg,
        }
    }

    fn read_record(&mut self, buf: &mut [u8]) -> Result<bool> {
        let mut got = 0;
        while got < buf.len() {
            let n = match self.inner.read(&mut buf[got..]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if n == 0 {
                if got == 0 {
                    return Ok(false);
                }
                return Err(self.err(
                    self.pos,
                    format!("truncated record ({got} of {} bytes)", buf.len()),
                ));
            }
            got += n;
        }
        Ok(true)
    }
}

impl<R: BufRead> Iterator for VscsiReader<R> {
    type Item = Result<Request>;
    fn next(&mut self) -> Option<Self::Item> {
        let mut buf = [0u8; 40];
        let len = self.version.record_len();
        loop {
            if self.done {
                return None;
            }
            let at = self.pos;
            match self.read_record(&mut buf[..len]) {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
            self.pos += len as u64;
            self.stats.lines += 1;
            let r = decode(self.version, &buf[..len]);
            let want = if self.version == VscsiVersion::V1 {
                1
            } else {
                2
            };
            let problem = if r.ver >> 8 != want {
                Some(format!(
                    "version field {:#06x} is not a vscsi v{want} record",
                    r.ver
                ))
            } else {
                None
            };
            if let Some(msg) = problem {
                if self.opts.lenient {
                    self.stats.skipped += 1;
                    continue;
                }
                return Some(Err(self.err(at, msg)));
            }
            let Some(op) = op_of(r.cmd) else {
                self.stats.ignored += 1;
                continue;
            };
            let base = *self.base.get_or_insert(r.ts_us);
            let Some(rel) = r.ts_us.checked_sub(base).and_then(|d| d.checked_mul(1000)) else {
                if self.opts.lenient {
                    self.stats.skipped += 1;
                    continue;
                }
                return Some(Err(self.err(
                    at,
                    format!(
                        "timestamp {} µs is before the first record's {base} µs",
                        r.ts_us
                    ),
                )));
            };
            let (offset, len_b) = if op == Op::Flush {
                (0, 0)
            } else {
                (r.lbn.saturating_mul(512), u64::from(r.len))
            };
            let req = Request {
                issue_ns: rel,
                complete_ns: r
                    .rt_us
                    .map(|rt| rel.saturating_add(rt.saturating_mul(1000))),
                device: 0,
                op,
                offset,
                len: len_b,
                flags: Flags::empty(),
            };
            let checked = if r.lbn.checked_mul(512).is_none() {
                Err(format!("LBA {} overflows 64 bits in bytes", r.lbn))
            } else {
                check_request(&req)
            };
            if let Err(msg) = checked {
                if self.opts.lenient {
                    self.stats.skipped += 1;
                    continue;
                }
                return Some(Err(self.err(at, msg)));
            }
            return Some(Ok(req));
        }
    }
}

impl<R: BufRead> TraceReader for VscsiReader<R> {
    fn stats(&self) -> ReadStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_record_layout() {
        // From the first record of cloudPhysicsIO.vscsi (xxd):
        // f4000080 00020000 01000000 2a00 0001 091a8f0200000000 22cf82be1f050000
        let b: [u8; 32] = [
            0xf4, 0x00, 0x00, 0x80, 0x00, 0x02, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x2a, 0x00,
            0x00, 0x01, 0x09, 0x1a, 0x8f, 0x02, 0x00, 0x00, 0x00, 0x00, 0x22, 0xcf, 0x82, 0xbe,
            0x1f, 0x05, 0x00, 0x00,
        ];
        let r = decode(VscsiVersion::V1, &b);
        assert_eq!(r.len, 512);
        assert_eq!(r.cmd, 0x2a);
        assert_eq!(r.ver >> 8, 1);
        assert_eq!(r.lbn, 0x028f1a09);
        assert_eq!(r.ts_us, 0x051fbe82cf22);
    }

    #[test]
    fn v2_record_layout() {
        let mut b = [0u8; 40];
        b[0..2].copy_from_slice(&0x28u16.to_le_bytes());
        b[2..4].copy_from_slice(&0x0200u16.to_le_bytes());
        b[8..12].copy_from_slice(&4096u32.to_le_bytes());
        b[16..24].copy_from_slice(&77u64.to_le_bytes());
        b[24..32].copy_from_slice(&1000u64.to_le_bytes());
        b[32..40].copy_from_slice(&250u64.to_le_bytes());
        let r = decode(VscsiVersion::V2, &b);
        assert_eq!(
            (r.cmd, r.ver, r.len, r.lbn, r.ts_us, r.rt_us),
            (0x28, 0x200, 4096, 77, 1000, Some(250))
        );
        assert!(plausible(VscsiVersion::V2, &b, 4));
        assert!(!plausible(VscsiVersion::V1, &b, 4));
    }
}
