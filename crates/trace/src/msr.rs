//! MSR Cambridge (SNIA IOTTA) CSV traces:
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
//! Timestamp is a Windows FILETIME (100 ns ticks since 1601); drivelab makes
//! it relative to the first line. ResponseTime is in 100 ns ticks, Offset and
//! Size in bytes, Type `Read` or `Write`. Every line has a response time, so
//! every request read from MSR has a completion.

use std::io::Write;

use crate::error::{Result, TraceError};
use crate::model::{Device, Flags, Op, Request};
use crate::source::{parse_u64, show, LineOutcome, LineParser, ReadStats};
use crate::TraceWriter;

pub(crate) struct MsrParser {
    base: Option<u64>,
    hosts: Vec<String>,
}

impl MsrParser {
    pub(crate) fn new() -> Self {
        MsrParser {
            base: None,
            hosts: Vec::new(),
        }
    }
}

/// Split a CSV line into exactly `N` fields (no quoting in these formats).
pub(crate) fn csv_fields<const N: usize>(line: &[u8]) -> std::result::Result<[&[u8]; N], String> {
    let mut out: [&[u8]; N] = [&[]; N];
    let mut it = line.split(|c| *c == b',');
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = it
            .next()
            .ok_or_else(|| format!("expected {N} comma-separated fields, found {i}"))?;
    }
    Ok(out)
}

impl LineParser for MsrParser {
    const NAME: &'static str = "msr";

    fn parse(
        &mut self,
        line: &[u8],
        _stats: &mut ReadStats,
    ) -> std::result::Result<LineOutcome, String> {
        if crate::source::trim(line).is_empty() {
            return Ok(LineOutcome::Skip);
        }
        let [ts, host, disk, ty, off, size, resp] = csv_fields::<7>(line)?;
        if line.iter().filter(|c| **c == b',').count() > 6 {
            return Err("more than 7 comma-separated fields".into());
        }
        let ts = parse_u64(ts, "Timestamp")?;
        let base = *self.base.get_or_insert(ts);
        let rel = ts
            .checked_sub(base)
            .ok_or_else(|| "Timestamp is earlier than the first line's".to_string())?;
        let op = if ty.eq_ignore_ascii_case(b"read") {
            Op::Read
        } else if ty.eq_ignore_ascii_case(b"write") {
            Op::Write
        } else {
            return Err(format!("Type '{}' is neither Read nor Write", show(ty)));
        };
        let disk = parse_u64(disk, "DiskNumber")?;
        let device = u32::try_from(disk).map_err(|_| "DiskNumber exceeds 32 bits".to_string())?;
        let offset = parse_u64(off, "Offset")?;
        let len = parse_u64(size, "Size")?;
        let resp = parse_u64(resp, "ResponseTime")?;
        let issue_ns = rel
            .checked_mul(100)
            .ok_or_else(|| "Timestamp too large".to_string())?;
        let complete = resp
            .checked_mul(100)
            .and_then(|r| issue_ns.checked_add(r))
            .ok_or_else(|| "ResponseTime too large".to_string())?;
        if self.hosts.len() < 64 && !host.is_empty() {
            let h = String::from_utf8_lossy(host);
            if !self.hosts.iter().any(|x| *x == h) {
                self.hosts.push(h.into_owned());
            }
        }
        Ok(LineOutcome::Request(Request {
            issue_ns,
            complete_ns: Some(complete),
            device,
            op,
            offset,
            len,
            flags: Flags::empty(),
        }))
    }

    fn devices(&self) -> Vec<Device> {
        Vec::new()
    }
}

/// Writes MSR CSV. The timestamp is written as ticks from 0 (the trace
/// start); sub-100 ns parts of times are truncated. Requests without a
/// completion get ResponseTime 0. Trims and flushes cannot be written.
pub struct MsrWriter<W: Write> {
    out: W,
    host: String,
    index: u64,
    line: String,
}

impl<W: Write> MsrWriter<W> {
    /// A writer naming `host` in the Hostname column (default "drivelab").
    pub fn new(out: W, host: &str) -> Self {
        MsrWriter {
            out,
            host: host.replace(',', "_"),
            index: 0,
            line: String::with_capacity(96),
        }
    }
}

impl<W: Write> TraceWriter for MsrWriter<W> {
    fn write(&mut self, r: &Request) -> Result<()> {
        use std::fmt::Write as _;
        let ty = match r.op {
            Op::Read => "Read",
            Op::Write => "Write",
            other => {
                return Err(TraceError::Unrepresentable {
                    format: "msr",
                    index: self.index,
                    msg: format!(
                        "MSR has no {} requests; filter them out or use the native format",
                        other.name()
                    ),
                })
            }
        };
        self.line.clear();
        let resp = r.service_ns().unwrap_or(0) / 100;
        let _ = writeln!(
            self.line,
            "{},{},{},{},{},{},{}",
            r.issue_ns / 100,
            self.host,
            r.device,
            ty,
            r.offset,
            r.len,
            resp
        );
        self.out.write_all(self.line.as_bytes())?;
        self.index += 1;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.out.flush()?;
        Ok(())
    }
}
