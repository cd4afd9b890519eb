//! The reader side's common parts: the [`TraceReader`] trait every format
//! implements, the read options and counters, a byte-oriented line reader
//! (no UTF-8 or per-line allocation, so text parsing stays fast), and small
//! field parsers that return messages instead of panicking.

use std::io::{BufRead, Read};

use drivelab_device::input::MAX_TRACE_LINE;

use serde::Serialize;

use crate::error::{Result, TraceError};
use crate::model::{Device, Op, Request};

/// Options common to every reader.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions {
    /// Skip and count malformed lines/records instead of failing on the
    /// first one. Default: false.
    pub lenient: bool,
    /// blkparse only: build requests from Q (queue) events instead of D
    /// (issue) events. Default: false (D, like the device sees them).
    pub use_queue: bool,
}

/// Counters a reader keeps while it streams.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ReadStats {
    /// Lines (text) or records (binary) consumed.
    pub lines: u64,
    /// Malformed lines/records skipped (lenient mode only).
    pub skipped: u64,
    /// blkparse: bio merges seen (M and F actions).
    pub merges: u64,
    /// Issues for which no completion was seen.
    pub unmatched_issues: u64,
    /// Completions for which no issue was seen.
    pub unmatched_completions: u64,
    /// Completions that covered only part of the request.
    pub partial_completions: u64,
    /// Requests requeued by the driver (the re-issue is what is kept).
    pub requeues: u64,
    /// Events of other kinds or ops (passthrough, `N`) ignored.
    pub ignored: u64,
}

/// A streaming trace reader: yields requests in issue order as it goes,
/// in constant memory (bounded by the number of outstanding requests for
/// formats that match issues with completions).
pub trait TraceReader: Iterator<Item = Result<Request>> {
    /// Counters so far.
    fn stats(&self) -> ReadStats;
    /// Device table so far (ids used in [`Request::device`] with names).
    fn devices(&self) -> Vec<Device> {
        Vec::new()
    }
}

/// Reads lines as bytes, counting them (1-based), with the end-of-line
/// (`\n`, `\r\n`) removed. A line that lies whole in the reader's buffer
/// (nearly all of them) is handed out in place and consumed at the next
/// call; only one that crosses the buffer's end is copied.
pub(crate) struct Lines<R> {
    inner: R,
    buf: Vec<u8>,
    /// Bytes of `inner`'s buffer the last line was handed out from.
    used: usize,
    pub(crate) line: u64,
}

impl<R: BufRead> Lines<R> {
    pub(crate) fn new(inner: R) -> Self {
        Lines {
            inner,
            buf: Vec::with_capacity(256),
            used: 0,
            line: 0,
        }
    }

    /// The next line, or `None` at end of input. A line longer than
    /// [`MAX_TRACE_LINE`] is an error (its end is never looked for, so
    /// input without line ends is read no further).
    pub(crate) fn next_line(&mut self) -> Result<Option<&[u8]>> {
        if self.used > 0 {
            self.inner.consume(std::mem::take(&mut self.used));
        }
        let whole = match self.inner.fill_buf() {
            Ok(b) => b.iter().position(|c| *c == b'\n'),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => None,
            Err(e) => return Err(e.into()),
        };
        if let Some(p) = whole.filter(|p| *p < MAX_TRACE_LINE) {
            self.used = p + 1;
            self.line += 1;
            // The same buffer again: it holds data, so no read is made.
            let b = self.inner.fill_buf()?;
            return Ok(Some(strip_eol(&b[..p])));
        }
        self.buf.clear();
        let n = (&mut self.inner)
            .take(MAX_TRACE_LINE as u64 + 1)
            .read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        if n > MAX_TRACE_LINE {
            return Err(TraceError::LineTooLong {
                line: self.line,
                max: MAX_TRACE_LINE,
            });
        }
        Ok(Some(strip_eol(&self.buf)))
    }
}

/// `line` without its trailing `\n` and `\r` bytes.
fn strip_eol(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && (line[end - 1] == b'\n' || line[end - 1] == b'\r') {
        end -= 1;
    }
    &line[..end]
}

/// What a text format's line parser returns for one line.
pub(crate) enum LineOutcome {
    /// A request.
    Request(Request),
    /// A line that carries no request (header, comment, other event).
    Skip,
}

/// A line-oriented reader: `P` parses one line.
pub(crate) trait LineParser {
    const NAME: &'static str;
    fn parse(
        &mut self,
        line: &[u8],
        stats: &mut ReadStats,
    ) -> std::result::Result<LineOutcome, String>;
    fn devices(&self) -> Vec<Device> {
        Vec::new()
    }
}

/// Generic streaming reader over a [`LineParser`].
pub(crate) struct LineReader<R, P> {
    lines: Lines<R>,
    parser: P,
    stats: ReadStats,
    opts: ReadOptions,
}

impl<R: BufRead, P: LineParser> LineReader<R, P> {
    pub(crate) fn new(inner: R, parser: P, opts: ReadOptions) -> Self {
        LineReader {
            lines: Lines::new(inner),
            parser,
            stats: ReadStats::default(),
            opts,
        }
    }
}

impl<R: BufRead, P: LineParser> Iterator for LineReader<R, P> {
    type Item = Result<Request>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let line = match self.lines.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            };
            self.stats.lines += 1;
            let parsed = match self.parser.parse(line, &mut self.stats) {
                Ok(LineOutcome::Request(r)) => check_request(&r).map(|()| Some(r)),
                Ok(LineOutcome::Skip) => Ok(None),
                Err(msg) => Err(msg),
            };
            match parsed {
                Ok(Some(r)) => return Some(Ok(r)),
                Ok(None) => continue,
                Err(msg) => {
                    if self.opts.lenient {
                        self.stats.skipped += 1;
                        continue;
                    }
                    return Some(Err(TraceError::Parse {
                        format: P::NAME,
                        line: self.lines.line,
                        msg,
                    }));
                }
            }
        }
    }
}

impl<R: BufRead, P: LineParser> TraceReader for LineReader<R, P> {
    fn stats(&self) -> ReadStats {
        self.stats
    }
    fn devices(&self) -> Vec<Device> {
        self.parser.devices()
    }
}

/// The largest byte offset a request may reach, exclusive: Linux offsets
/// are `loff_t` (signed 64-bit), so no device or file extends past
/// 2^63 − 1 bytes. A request beyond it is malformed, not merely large.
pub const MAX_EXTENT: u64 = i64::MAX as u64;

/// The checks every reader applies to a request it decoded: reads, writes
/// and trims have a length, and offset + length neither overflows nor runs
/// past [`MAX_EXTENT`]. The message names what is wrong.
pub(crate) fn check_request(r: &Request) -> std::result::Result<(), String> {
    if r.len == 0 && r.op != Op::Flush {
        return Err(format!(
            "zero-length {} at offset {} (only flushes have no length)",
            r.op.name(),
            r.offset
        ));
    }
    match r.offset.checked_add(r.len) {
        Some(end) if end <= MAX_EXTENT => Ok(()),
        Some(_) => Err(format!(
            "offset {} + length {} runs past {MAX_EXTENT}, the largest byte offset a device can have",
            r.offset, r.len
        )),
        None => Err(format!(
            "offset {} + length {} overflows 64 bits",
            r.offset, r.len
        )),
    }
}

/// Whitespace-separated fields of a line.
pub(crate) fn ws_fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|c| *c == b' ' || *c == b'\t')
        .filter(|f| !f.is_empty())
}

/// Trim ASCII whitespace at both ends.
pub(crate) fn trim(mut s: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = s {
        if first.is_ascii_whitespace() {
            s = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = s {
        if last.is_ascii_whitespace() {
            s = rest;
        } else {
            break;
        }
    }
    s
}

/// Parse an unsigned decimal integer; `what` names the field in the error.
pub(crate) fn parse_u64(s: &[u8], what: &str) -> std::result::Result<u64, String> {
    let s = trim(s);
    if s.is_empty() {
        return Err(format!("{what} is empty"));
    }
    if s.len() < 20 {
        // At most 19 digits: below 10^19 < 2^64, so no step overflows.
        let mut v: u64 = 0;
        for &c in s {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return Err(format!("{what} '{}' is not an unsigned integer", show(s)));
            }
            v = v * 10 + u64::from(d);
        }
        return Ok(v);
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return Err(format!("{what} '{}' is not an unsigned integer", show(s)));
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .ok_or_else(|| format!("{what} '{}' is too large", show(s)))?;
    }
    Ok(v)
}

/// Parse a non-negative decimal number of seconds ("12.345678901", "3",
/// "1e-3" is refused) into nanoseconds exactly (digits beyond 9 decimals
/// are truncated).
pub(crate) fn parse_seconds_ns(s: &[u8], what: &str) -> std::result::Result<u64, String> {
    let s = trim(s);
    let (int, frac) = match s.iter().position(|c| *c == b'.') {
        Some(p) => (&s[..p], &s[p + 1..]),
        None => (s, &s[s.len()..]),
    };
    if int.is_empty() && frac.is_empty() {
        return Err(format!("{what} is empty"));
    }
    let secs = if int.is_empty() {
        0
    } else {
        parse_u64(int, what)?
    };
    let mut ns: u64 = 0;
    let mut scale: u64 = 100_000_000;
    for &c in frac {
        if !c.is_ascii_digit() {
            return Err(format!(
                "{what} '{}' is not a decimal number of seconds",
                show(s)
            ));
        }
        ns += u64::from(c - b'0') * scale;
        scale /= 10;
    }
    secs.checked_mul(1_000_000_000)
        .and_then(|v| v.checked_add(ns))
        .ok_or_else(|| format!("{what} '{}' is too large", show(s)))
}

/// A field shown in an error message: at most 40 characters, lossy UTF-8.
pub(crate) fn show(s: &[u8]) -> String {
    let t = String::from_utf8_lossy(&s[..s.len().min(40)]).into_owned();
    if s.len() > 40 {
        t + "…"
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_across_the_buffer_end_read_as_lines_within_it() {
        // A 16-byte buffer: most lines cross its end (copied), some lie
        // within it (handed out in place); both give the same lines.
        let text = b"a\nbb\r\nthis line is longer than the buffer\n\nccc\n0123456789abcd\nend";
        let mut l = Lines::new(std::io::BufReader::with_capacity(16, &text[..]));
        let mut got = Vec::new();
        while let Some(line) = l.next_line().unwrap() {
            got.push(String::from_utf8(line.to_vec()).unwrap());
        }
        assert_eq!(
            got,
            [
                "a",
                "bb",
                "this line is longer than the buffer",
                "",
                "ccc",
                "0123456789abcd",
                "end"
            ]
        );
        assert_eq!(l.line, 7);
    }

    #[test]
    fn seconds_parse_exactly() {
        assert_eq!(parse_seconds_ns(b"0.000001850", "t").unwrap(), 1850);
        assert_eq!(
            parse_seconds_ns(b"9.378427785", "t").unwrap(),
            9_378_427_785
        );
        assert_eq!(parse_seconds_ns(b"3", "t").unwrap(), 3_000_000_000);
        assert_eq!(parse_seconds_ns(b".5", "t").unwrap(), 500_000_000);
        assert!(parse_seconds_ns(b"1e3", "t").is_err());
        assert!(parse_seconds_ns(b"", "t").is_err());
        assert!(parse_seconds_ns(b"99999999999999999999", "t").is_err());
    }

    #[test]
    fn ints_refuse_garbage() {
        assert_eq!(parse_u64(b" 42 ", "x").unwrap(), 42);
        assert!(parse_u64(b"-1", "x").is_err());
        assert!(parse_u64(b"18446744073709551616", "x").is_err());
    }
}
