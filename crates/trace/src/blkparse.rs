//! blkparse's default text output:
//! `maj,min cpu seq sec.nsec pid action rwbs [sector + nsect] [comm|error]`.
//!
//! Requests are built from D (issued to the driver) and C (completed)
//! actions matched by (device, sector) through [`crate::matcher::Matcher`];
//! with [`ReadOptions::use_queue`] from Q (queued) instead of D, in which
//! case bios merged into another request (M, F) never see a completion of
//! their own. R (requeue) cancels an outstanding issue. M and F are counted
//! as merges; other actions (A, G, I, P, U, m, …) are skipped. Sectors are
//! 512 bytes; the device id is the kernel `dev_t` (`major << 20 | minor`).
//! The per-CPU summary blkparse prints at the end ends the request stream.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufRead, Write};

use crate::error::{Result, TraceError};
use crate::matcher::Matcher;
use crate::model::{kernel_dev, parse_rwbs_sized, rwbs, split_kernel_dev, Device, Request};
use crate::source::{
    check_request, parse_seconds_ns, parse_u64, show, ws_fields, Lines, ReadOptions, ReadStats,
    TraceReader,
};
use crate::TraceWriter;

/// Parse `maj,min`.
pub(crate) fn parse_majmin(s: &[u8]) -> Option<(u32, u32)> {
    let p = s.iter().position(|c| *c == b',')?;
    let maj = parse_u64(&s[..p], "major").ok()?;
    let min = parse_u64(&s[p + 1..], "minor").ok()?;
    Some((u32::try_from(maj).ok()?, u32::try_from(min).ok()?))
}

/// Streaming blkparse reader.
pub struct BlkparseReader<R> {
    lines: Lines<R>,
    matcher: Matcher,
    stats: ReadStats,
    opts: ReadOptions,
    summary: bool,
    eof: bool,
    devices: Vec<Device>,
}

impl<R: BufRead> BlkparseReader<R> {
    /// A reader over blkparse text.
    pub fn new(inner: R, opts: ReadOptions) -> Self {
        BlkparseReader {
            lines: Lines::new(inner),
            matcher: Matcher::new(),
            stats: ReadStats::default(),
            opts,
            summary: false,
            eof: false,
            devices: Vec::new(),
        }
    }

    fn note_device(&mut self, dev: u32, maj: u32, min: u32) {
        if self.devices.len() < 256 && !self.devices.iter().any(|d| d.id == dev) {
            self.devices.push(Device {
                id: dev,
                name: format!("{maj},{min}"),
            });
        }
    }

    fn line(&mut self, line: &[u8]) -> std::result::Result<(), String> {
        let mut f = ws_fields(line);
        let Some(first) = f.next() else {
            return Ok(());
        };
        let Some((maj, min)) = parse_majmin(first) else {
            if first.starts_with(b"CPU") || first == b"Total" {
                self.summary = true;
                return Ok(());
            }
            return Err(format!("'{}' is not maj,min", show(first)));
        };
        let dev = kernel_dev(maj, min);
        let mut need = |what: &str| {
            f.next()
                .ok_or_else(|| format!("missing {what} (expected 'maj,min cpu seq sec.nsec pid action rwbs sector + nsect')"))
        };
        parse_u64(need("cpu")?, "cpu")?;
        parse_u64(need("seq")?, "seq")?;
        let t = parse_seconds_ns(need("time")?, "time")?;
        parse_u64(need("pid")?, "pid")?;
        let action = need("action")?;
        let rw = need("rwbs")?;
        let issue_action: &[u8] = if self.opts.use_queue { b"Q" } else { b"D" };
        let wanted = action == issue_action || action == b"C" || action == b"R";
        if action == b"M" || action == b"F" {
            self.stats.merges += 1;
        }
        if !wanted {
            return Ok(());
        }
        // sector + nsect (absent on some flush lines)
        let (sector, nsect) = match need("sector") {
            Ok(s) if s.first().is_some_and(u8::is_ascii_digit) => {
                let sector = parse_u64(s, "sector")?;
                // Zero-length requests (flush sequences) print no "+ nsect".
                match need("'+'") {
                    Ok(b"+") => (sector, parse_u64(need("nsect")?, "nsect")?),
                    _ => (sector, 0),
                }
            }
            _ => (0, 0),
        };
        let Some((op, flags)) = parse_rwbs_sized(rw, nsect) else {
            self.stats.ignored += 1;
            return Ok(());
        };
        if action != b"C" && action != b"R" {
            // The request as the matcher will build it, checked like every
            // reader's.
            let bytes = |v: u64, what: &str| {
                v.checked_mul(512)
                    .ok_or_else(|| format!("{what} {v} overflows 64 bits in bytes"))
            };
            let mut r = Request::new(t, op, bytes(sector, "sector")?, bytes(nsect, "nsect")?);
            r.device = dev;
            check_request(&r)?;
        }
        self.note_device(dev, maj, min);
        match action {
            b"C" => self.matcher.complete(t, dev, sector, nsect),
            b"R" => self.matcher.requeue(t, dev, sector),
            _ => self.matcher.issue(t, dev, sector, nsect, op, flags),
        }
        Ok(())
    }
}

impl<R: BufRead> Iterator for BlkparseReader<R> {
    type Item = Result<Request>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.matcher.pop() {
                return Some(Ok(r));
            }
            if self.eof {
                return None;
            }
            let line = match self.lines.next_line() {
                Ok(Some(l)) => l.to_vec(),
                Ok(None) => {
                    self.eof = true;
                    self.matcher.finish();
                    continue;
                }
                Err(e) => return Some(Err(e)),
            };
            self.stats.lines += 1;
            if self.summary {
                continue;
            }
            if let Err(msg) = self.line(&line) {
                if self.opts.lenient {
                    self.stats.skipped += 1;
                    continue;
                }
                return Some(Err(TraceError::Parse {
                    format: "blkparse",
                    line: self.lines.line,
                    msg,
                }));
            }
        }
    }
}

impl<R: BufRead> TraceReader for BlkparseReader<R> {
    fn stats(&self) -> ReadStats {
        let m = self.matcher.stats();
        ReadStats {
            unmatched_issues: m.unmatched_issues,
            unmatched_completions: m.unmatched_completions,
            partial_completions: m.partial_completions,
            requeues: m.requeues,
            ..self.stats
        }
    }
    fn devices(&self) -> Vec<Device> {
        self.devices.clone()
    }
}

/// Writes blkparse-like text: one D line per request and, for requests with
/// a completion, one C line, in time order (completions are held in a heap
/// bounded by the number of outstanding requests). cpu, seq and pid are
/// written as 0, seq counting up, and the comm as `[drivelab]`. Offsets and
/// lengths must be multiples of 512 bytes.
pub struct BlkparseWriter<W: Write> {
    out: W,
    seq: u64,
    index: u64,
    completions: BinaryHeap<Reverse<Line>>,
}

/// One output line's variable part (ordered by time first).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Line {
    t: u64,
    dev: u32,
    sector: u64,
    nsect: u64,
    rw: String,
}

impl<W: Write> BlkparseWriter<W> {
    /// A writer.
    pub fn new(out: W) -> Self {
        BlkparseWriter {
            out,
            seq: 0,
            index: 0,
            completions: BinaryHeap::new(),
        }
    }

    fn line(&mut self, action: char, l: &Line, tail: &str) -> Result<()> {
        self.seq += 1;
        let (maj, min) = split_kernel_dev(l.dev);
        writeln!(
            self.out,
            "{maj:3},{min:<3} {:3} {:8} {:5}.{:09} {:5}  {action} {:>3} {} + {} {tail}",
            0,
            self.seq,
            l.t / 1_000_000_000,
            l.t % 1_000_000_000,
            0,
            l.rw,
            l.sector,
            l.nsect
        )?;
        Ok(())
    }

    fn flush_until(&mut self, t: u64) -> Result<()> {
        while let Some(Reverse(l)) = self.completions.peek() {
            if l.t > t {
                break;
            }
            let Some(Reverse(l)) = self.completions.pop() else {
                break;
            };
            self.line('C', &l, "[0]")?;
        }
        Ok(())
    }
}

impl<W: Write> TraceWriter for BlkparseWriter<W> {
    fn write(&mut self, r: &Request) -> Result<()> {
        if r.offset % 512 != 0 || r.len % 512 != 0 {
            return Err(TraceError::Unrepresentable {
                format: "blkparse",
                index: self.index,
                msg: format!(
                    "offset {} / length {} are not multiples of 512 bytes",
                    r.offset, r.len
                ),
            });
        }
        self.flush_until(r.issue_ns)?;
        let mut l = Line {
            t: r.issue_ns,
            dev: r.device,
            sector: r.offset / 512,
            nsect: r.len / 512,
            rw: rwbs(r.op, r.flags),
        };
        self.line('D', &l, "[drivelab]")?;
        if let Some(c) = r.complete_ns {
            l.t = c.max(r.issue_ns);
            self.completions.push(Reverse(l));
        }
        self.index += 1;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.flush_until(u64::MAX)?;
        self.out.flush()?;
        Ok(())
    }
}
