//! drivelab's own trace format: compact, exact (nanosecond times, byte
//! offsets, every flag) and streamable both ways, so a recorder can append
//! while it runs and a reader yields requests as it goes.
//!
//! # Layout (version 1, all integers little-endian)
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `"DLTRACE\0"` |
//! | 8 | 2 | version, `1` |
//! | 10 | 2 | header flags, `0` (reserved; readers refuse other values) |
//! | 12 | varint | device count *n* |
//! | … | *n* × | device: id (varint), name length (varint), name (UTF-8) |
//!
//! Then records until end of file. Each record:
//!
//! | size | field |
//! |---|---|
//! | 1 | tag: bits 0–1 op (0 read, 1 write, 2 trim, 3 flush), bit 2 completion present, bit 3 device present, bits 4–6 flags (sync, fua, meta), bit 7 must be 0 |
//! | varint | zigzag(issue_ns − previous issue_ns) |
//! | varint | device id, only when tag bit 3 is set (otherwise: the previous record's device, initially 0) |
//! | varint | zigzag(offset − previous record's end offset), end = offset + len, initially 0 |
//! | varint | len in bytes |
//! | varint | zigzag(complete_ns − issue_ns), only when tag bit 2 is set |
//!
//! A varint is LEB128: 7 bits per byte, least significant group first, high
//! bit set on every byte but the last, at most 10 bytes. zigzag maps a
//! signed delta d to `(d << 1) ^ (d >> 63)`, so small negative deltas stay
//! short. A sequential stream of 4 KiB requests costs about 5 bytes each.

use std::io::{BufRead, Write};

use crate::error::{Result, TraceError};
use crate::model::{Device, Flags, Op, Request};
use crate::source::{check_request, ReadStats, TraceReader};
use crate::TraceWriter;

/// The eight magic bytes at the start of a native trace.
pub const MAGIC: &[u8; 8] = b"DLTRACE\0";
/// The version this crate writes and reads.
pub const VERSION: u16 = 1;
/// Longest device name in the header, bytes (Linux's PATH_MAX).
pub const MAX_NAME: usize = 4096;

const TAG_COMPLETE: u8 = 1 << 2;
const TAG_DEVICE: u8 = 1 << 3;

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The native header: built with [`NativeHeader::new`] and
/// [`NativeHeader::device`], encoded with [`NativeHeader::build`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NativeHeader {
    devices: Vec<Device>,
}

impl NativeHeader {
    /// A header with an empty device table.
    pub fn new() -> Self {
        NativeHeader::default()
    }
    /// Add a device table entry.
    pub fn device(mut self, id: u32, name: impl Into<String>) -> Self {
        self.devices.push(Device {
            id,
            name: name.into(),
        });
        self
    }
    /// Add several entries.
    pub fn devices(mut self, devs: &[Device]) -> Self {
        self.devices.extend_from_slice(devs);
        self
    }
    /// The encoded bytes.
    pub fn build(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        put_varint(&mut out, self.devices.len() as u64);
        for d in &self.devices {
            put_varint(&mut out, u64::from(d.id));
            put_varint(&mut out, d.name.len() as u64);
            out.extend_from_slice(d.name.as_bytes());
        }
        out
    }
}

/// Streaming writer of the native format.
pub struct NativeWriter<W: Write> {
    out: W,
    /// Requests written so far (for error messages).
    index: u64,
    /// The device table, until the header is written.
    header: Option<Vec<Device>>,
    buf: Vec<u8>,
    prev_issue: u64,
    prev_device: u32,
    prev_end: u64,
}

impl<W: Write> NativeWriter<W> {
    /// A writer with this device table. The header is written with the
    /// first request (or at [`TraceWriter::finish`]), so names the reader
    /// meets before then ([`TraceWriter::devices`]) are in it.
    pub fn new(out: W, devices: &[Device]) -> Result<Self> {
        let mut w = NativeWriter {
            out,
            header: Some(Vec::new()),
            index: 0,
            buf: Vec::with_capacity(64 * 1024),
            prev_issue: 0,
            prev_device: 0,
            prev_end: 0,
        };
        w.learn(devices)?;
        Ok(w)
    }

    /// Add `devices` to the header not yet written (a known id keeps its
    /// name). Never a header the reader would refuse.
    fn learn(&mut self, devices: &[Device]) -> Result<()> {
        let Some(table) = self.header.as_mut() else {
            return Ok(());
        };
        for d in devices {
            if d.name.len() > MAX_NAME {
                return Err(TraceError::Unrepresentable {
                    format: "native",
                    index: 0,
                    msg: format!(
                        "device {} has a name of {} bytes; the format holds at most {MAX_NAME}",
                        d.id,
                        d.name.len()
                    ),
                });
            }
            if !table.iter().any(|t| t.id == d.id) {
                table.push(d.clone());
            }
        }
        Ok(())
    }

    /// Write the header, once.
    fn header(&mut self) -> Result<()> {
        if let Some(table) = self.header.take() {
            self.out
                .write_all(&NativeHeader::new().devices(&table).build())?;
        }
        Ok(())
    }
}

impl<W: Write> TraceWriter for NativeWriter<W> {
    fn devices(&mut self, devices: &[Device]) -> Result<()> {
        self.learn(devices)
    }

    fn write(&mut self, r: &Request) -> Result<()> {
        // Never write what the reader would refuse.
        check_request(r).map_err(|msg| TraceError::Unrepresentable {
            format: "native",
            index: self.index,
            msg,
        })?;
        self.header()?;
        self.index += 1;
        let mut tag = r.op.code() | ((r.flags.0 & Flags::ALL.0) << 4);
        if r.complete_ns.is_some() {
            tag |= TAG_COMPLETE;
        }
        if r.device != self.prev_device {
            tag |= TAG_DEVICE;
        }
        self.buf.push(tag);
        put_varint(
            &mut self.buf,
            zigzag(r.issue_ns.wrapping_sub(self.prev_issue) as i64),
        );
        if r.device != self.prev_device {
            put_varint(&mut self.buf, u64::from(r.device));
        }
        put_varint(
            &mut self.buf,
            zigzag(r.offset.wrapping_sub(self.prev_end) as i64),
        );
        put_varint(&mut self.buf, r.len);
        if let Some(c) = r.complete_ns {
            put_varint(&mut self.buf, zigzag(c.wrapping_sub(r.issue_ns) as i64));
        }
        self.prev_issue = r.issue_ns;
        self.prev_device = r.device;
        self.prev_end = r.offset.wrapping_add(r.len);
        if self.buf.len() >= 60 * 1024 {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.header()?;
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()?;
        Ok(())
    }
}

/// Streaming reader of the native format.
pub struct NativeReader<R: BufRead> {
    inner: R,
    pos: u64,
    devices: Vec<Device>,
    prev_issue: u64,
    prev_device: u32,
    prev_end: u64,
    stats: ReadStats,
    failed: bool,
}

enum Byte {
    Got(u8),
    Eof,
}

impl<R: BufRead> NativeReader<R> {
    /// Read and check the header.
    pub fn new(mut inner: R) -> Result<Self> {
        let mut fixed = [0u8; 12];
        inner
            .read_exact(&mut fixed)
            .map_err(|e| bin(0, format!("header: {e}")))?;
        if &fixed[..8] != MAGIC {
            return Err(bin(0, "bad magic: not a drivelab native trace".into()));
        }
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if version != VERSION {
            return Err(bin(8, format!("version {version} is not supported (this drivelab reads version {VERSION}); upgrade drivelab")));
        }
        let hflags = u16::from_le_bytes([fixed[10], fixed[11]]);
        if hflags != 0 {
            return Err(bin(10, format!("unknown header flags {hflags:#x}")));
        }
        let mut r = NativeReader {
            inner,
            pos: 12,
            devices: Vec::new(),
            prev_issue: 0,
            prev_device: 0,
            prev_end: 0,
            stats: ReadStats::default(),
            failed: false,
        };
        let n = r.varint_required("device count")?;
        if n > 65_536 {
            return Err(bin(12, format!("device count {n} is implausible")));
        }
        for _ in 0..n {
            let id = r.varint_required("device id")?;
            let id = u32::try_from(id)
                .map_err(|_| bin(r.pos, format!("device id {id} exceeds 32 bits")))?;
            let len = r.varint_required("device name length")?;
            if len > MAX_NAME as u64 {
                return Err(bin(
                    r.pos,
                    format!("device name length {len} is implausible"),
                ));
            }
            let mut name = vec![0u8; len as usize];
            r.inner
                .read_exact(&mut name)
                .map_err(|e| bin(r.pos, format!("device name: {e}")))?;
            r.pos += len;
            let name = String::from_utf8(name)
                .map_err(|_| bin(r.pos, "device name is not UTF-8".into()))?;
            r.devices.push(Device { id, name });
        }
        Ok(r)
    }

    fn byte(&mut self) -> Result<Byte> {
        let buf = self.inner.fill_buf()?;
        match buf.first() {
            Some(&b) => {
                self.inner.consume(1);
                self.pos += 1;
                Ok(Byte::Got(b))
            }
            None => Ok(Byte::Eof),
        }
    }

    fn varint(&mut self) -> Result<Option<u64>> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = match self.byte()? {
                Byte::Got(b) => b,
                Byte::Eof if i == 0 => return Ok(None),
                Byte::Eof => return Err(bin(self.pos, "truncated varint".into())),
            };
            if i == 9 && b > 1 {
                return Err(bin(self.pos, "varint longer than 64 bits".into()));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(Some(v));
            }
        }
        Err(bin(self.pos, "varint longer than 10 bytes".into()))
    }

    fn varint_required(&mut self, what: &str) -> Result<u64> {
        self.varint()?
            .ok_or_else(|| bin(self.pos, format!("truncated record: {what} missing")))
    }

    fn record(&mut self) -> Result<Option<Request>> {
        let start = self.pos;
        let tag = match self.byte()? {
            Byte::Got(t) => t,
            Byte::Eof => return Ok(None),
        };
        if tag & 0x80 != 0 {
            return Err(bin(start, format!("reserved tag bit set ({tag:#04x})")));
        }
        let issue = self
            .prev_issue
            .wrapping_add(unzigzag(self.varint_required("issue delta")?) as u64);
        let device = if tag & TAG_DEVICE != 0 {
            let d = self.varint_required("device")?;
            u32::try_from(d).map_err(|_| bin(start, format!("device id {d} exceeds 32 bits")))?
        } else {
            self.prev_device
        };
        let offset = self
            .prev_end
            .wrapping_add(unzigzag(self.varint_required("offset delta")?) as u64);
        let len = self.varint_required("length")?;
        let complete = if tag & TAG_COMPLETE != 0 {
            Some(issue.wrapping_add(unzigzag(self.varint_required("completion delta")?) as u64))
        } else {
            None
        };
        let req = Request {
            issue_ns: issue,
            complete_ns: complete,
            device,
            op: Op::from_code(tag),
            offset,
            len,
            flags: Flags((tag >> 4) & Flags::ALL.0),
        };
        check_request(&req).map_err(|msg| bin(start, msg))?;
        self.prev_issue = issue;
        self.prev_device = device;
        self.prev_end = offset + len;
        self.stats.lines += 1;
        Ok(Some(req))
    }
}

fn bin(offset: u64, msg: String) -> TraceError {
    TraceError::Binary {
        format: "native",
        offset,
        msg,
    }
}

impl<R: BufRead> Iterator for NativeReader<R> {
    type Item = Result<Request>;
    fn next(&mut self) -> Option<Self::Item> {
        // A delta-encoded stream cannot resynchronise after a bad record,
        // so the first error ends it (lenient mode does not apply).
        if self.failed {
            return None;
        }
        match self.record() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl<R: BufRead> TraceReader for NativeReader<R> {
    fn stats(&self) -> ReadStats {
        self.stats
    }
    fn devices(&self) -> Vec<Device> {
        self.devices.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_bytes_match_the_table() {
        let h = NativeHeader::new().device(5, "sdb").build();
        let want: Vec<u8> = [
            b'D', b'L', b'T', b'R', b'A', b'C', b'E', 0, // magic
            1, 0, // version 1 LE
            0, 0, // flags
            1, // one device
            5, 3, b's', b'd', b'b',
        ]
        .to_vec();
        assert_eq!(h, want);
    }

    #[test]
    fn record_bytes_match_the_table() {
        let mut out = Vec::new();
        let mut w = NativeWriter::new(&mut out, &[]).unwrap();
        let mut r = Request::new(1000, Op::Write, 4096, 4096);
        r.complete_ns = Some(1300);
        r.flags = Flags::FUA;
        w.write(&r).unwrap();
        w.finish().unwrap();
        let rec = &out[13..];
        // tag: op 1 | complete 4 | fua (2) << 4 = 0x25; issue zigzag(1000)=2000
        // = 0xd0 0x0f; offset zigzag(4096) = 8192 = 0x80 0x40; len 4096 =
        // 0x80 0x20; completion zigzag(300) = 600 = 0xd8 0x04.
        assert_eq!(rec, &[0x25, 0xd0, 0x0f, 0x80, 0x40, 0x80, 0x20, 0xd8, 0x04]);
    }

    #[test]
    fn zigzag_roundtrip() {
        for d in [0i64, 1, -1, 63, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }

    #[test]
    fn truncated_record_is_an_error_with_offset() {
        let mut out = Vec::new();
        let mut w = NativeWriter::new(&mut out, &[]).unwrap();
        w.write(&Request::new(5, Op::Read, 1 << 40, 512)).unwrap();
        w.finish().unwrap();
        out.pop();
        let mut r = NativeReader::new(&out[..]).unwrap();
        match r.next() {
            Some(Err(TraceError::Binary { offset, .. })) => assert!(offset >= 12),
            other => panic!("{other:?}"),
        }
        assert!(r.next().is_none());
    }
}
