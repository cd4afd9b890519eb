//! The WinTrace32 part: record block requests from the running kernel's
//! block tracepoints (`block/block_rq_issue`, `block/block_rq_complete`,
//! `block/block_rq_requeue`) in a private tracefs instance, so nothing else
//! using ftrace is disturbed and blktrace's relay files are not needed.
//!
//! [`Recorder::start`] creates `/sys/kernel/tracing/instances/drivelab-<pid>`
//! (suffixed `-N` for a second recorder in one process), sizes its buffer
//! ([`RecordOptions::buffer_kb_per_cpu`]), selects the `mono` trace clock
//! when offered (so times line up with CLOCK_MONOTONIC), filters each event
//! to the devices' kernel `dev_t` (`dev == …`), writes a start marker into
//! the instance (time zero of the recording) and enables the events. The
//! text of `trace_pipe` is read non-blocking; issues and completions are
//! matched by (dev, sector) with partial completions and requeues handled
//! (see [`crate::matcher`]). Lost events (the per-CPU `overrun` and
//! `dropped events` counters) are summed and reported in
//! [`RecordSummary::lost_events`]. [`Recorder::stop`] (or dropping the
//! recorder) disables the events and removes the instance.
//!
//! The text format prints times in microseconds, so recorded times have
//! 1 µs resolution. The payload is parsed tolerantly: `maj,min rwbs …
//! sector + nr_sector …`, whatever fields older or newer kernels put
//! between or after them.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{Result, TraceError};
use crate::matcher::Matcher;
use crate::model::{kernel_dev, parse_rwbs_sized, Device, Op, Request};
use crate::source::{parse_seconds_ns, parse_u64, ws_fields, ReadStats};
use crate::Format;

/// Events enabled in the instance.
pub const EVENTS: [&str; 3] = ["block_rq_issue", "block_rq_complete", "block_rq_requeue"];

const MARKER: &str = "drivelab-record-start";

static INSTANCES: AtomicU32 = AtomicU32::new(0);

/// Recorder settings.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Per-CPU ring buffer size, KiB. Default 16384 (16 MiB per CPU).
    pub buffer_kb_per_cpu: u64,
    /// tracefs mount point. Default: `/sys/kernel/tracing`, else
    /// `/sys/kernel/debug/tracing`.
    pub tracefs: Option<PathBuf>,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            buffer_kb_per_cpu: 16_384,
            tracefs: None,
        }
    }
}

/// What a recording saw.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecordSummary {
    /// Requests recorded.
    pub requests: u64,
    /// Requests with a completion.
    pub completed: u64,
    /// Events lost in the kernel ring buffer (overrun + dropped), summed
    /// over CPUs. Non-zero means the trace is incomplete: raise the buffer.
    pub lost_events: u64,
    /// Tracepoint lines parsed.
    pub events: u64,
    /// Completions with a non-zero error.
    pub errors: u64,
    /// Matching counters (unmatched, partial, requeues).
    pub matching: ReadStats,
    /// Seconds from start to stop.
    pub duration_s: f64,
    /// The trace clock used.
    pub clock: String,
    /// The tracefs instance used (removed at stop).
    pub instance: PathBuf,
}

/// A running recording. See the module doc.
pub struct Recorder {
    dir: PathBuf,
    pipe: Option<File>,
    matcher: Matcher,
    t0: Option<u64>,
    partial: Vec<u8>,
    devices: Vec<Device>,
    events: u64,
    errors: u64,
    /// Issues left out: empty non-flush requests, or beyond MAX_EXTENT.
    ignored: u64,
    requests: u64,
    completed: u64,
    clock: String,
    started: Instant,
    removed: bool,
}

fn tfs(what: &'static str, path: &Path, source: std::io::Error) -> TraceError {
    TraceError::Tracefs {
        what,
        path: path.to_path_buf(),
        source,
    }
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| tfs("cannot write", path, e))
}

/// Whether an issue of `nr` sectors at `sector` is a request every reader
/// accepts back (see `source::check_request`): within MAX_EXTENT bytes.
fn recordable(sector: u64, nr: u64) -> bool {
    sector
        .checked_add(nr)
        .and_then(|s| s.checked_mul(512))
        .is_some_and(|end| end <= crate::source::MAX_EXTENT)
}

/// (major, minor) of a block device node.
pub fn block_dev_numbers(path: &Path) -> Result<(u32, u32)> {
    let md = std::fs::metadata(path).map_err(|e| TraceError::Device {
        path: path.to_path_buf(),
        msg: format!("cannot stat: {e}"),
    })?;
    if !md.file_type().is_block_device() {
        return Err(TraceError::Device {
            path: path.to_path_buf(),
            msg: "not a block device; give a device node such as /dev/sdb".into(),
        });
    }
    let dev = md.rdev();
    // glibc's gnu_dev_major / gnu_dev_minor encoding.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    Ok((major as u32, minor as u32))
}

fn tracefs_root(opts: &RecordOptions) -> Result<PathBuf> {
    if let Some(p) = &opts.tracefs {
        return Ok(p.clone());
    }
    for p in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        let p = PathBuf::from(p);
        if p.join("instances").is_dir() {
            return Ok(p);
        }
    }
    Err(tfs(
        "no tracefs instances directory at",
        Path::new("/sys/kernel/tracing/instances"),
        std::io::Error::new(
            ErrorKind::NotFound,
            "not found (mount -t tracefs nodev /sys/kernel/tracing)",
        ),
    ))
}

/// One parsed tracepoint line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    Issue {
        t: u64,
        dev: u32,
        sector: u64,
        nr: u64,
        rwbs: Vec<u8>,
    },
    Complete {
        t: u64,
        dev: u32,
        sector: u64,
        nr: u64,
        error: i64,
    },
    Requeue {
        t: u64,
        dev: u32,
        sector: u64,
    },
    Marker {
        t: u64,
    },
}

/// Parse one line of trace_pipe text; `None` for lines of no interest or
/// that do not parse.
pub(crate) fn parse_event(line: &[u8]) -> Option<Event> {
    let text = std::str::from_utf8(line).ok()?;
    let (idx, kind) = if let Some(i) = text.find(": block_rq_") {
        (i, 0)
    } else if let Some(i) = text.find(": tracing_mark_write: ") {
        (i, 1)
    } else {
        return None;
    };
    let ts = text[..idx].split_whitespace().last()?;
    let t = parse_seconds_ns(ts.as_bytes(), "timestamp").ok()?;
    let rest = &text[idx + 2..];
    if kind == 1 {
        return rest.contains(MARKER).then_some(Event::Marker { t });
    }
    let colon = rest.find(": ")?;
    let name = &rest[..colon];
    let payload = &rest.as_bytes()[colon + 2..];
    let toks: Vec<&[u8]> = ws_fields(payload).collect();
    let (maj, min) = crate::blkparse::parse_majmin(toks.first()?)?;
    let dev = kernel_dev(maj, min);
    // Skip a parenthesised command, which may contain spaces.
    let mut start = 2;
    if let Some(open) = toks.iter().position(|t| t.starts_with(b"(")) {
        let close = toks[open..].iter().position(|t| t.ends_with(b")"))? + open;
        start = close + 1;
    }
    let plus = toks.iter().skip(start).position(|t| *t == b"+")? + start;
    let sector = parse_u64(toks.get(plus.checked_sub(1)?)?, "sector").ok()?;
    let nr = parse_u64(toks.get(plus + 1)?, "nr_sector").ok()?;
    match name {
        "block_rq_issue" => Some(Event::Issue {
            t,
            dev,
            sector,
            nr,
            rwbs: toks.get(1)?.to_vec(),
        }),
        "block_rq_complete" => {
            let last = toks.last()?;
            let error = std::str::from_utf8(last)
                .ok()
                .and_then(|s| s.strip_prefix('[')?.strip_suffix(']')?.parse::<i64>().ok())
                .unwrap_or(0);
            Some(Event::Complete {
                t,
                dev,
                sector,
                nr,
                error,
            })
        }
        "block_rq_requeue" => Some(Event::Requeue { t, dev, sector }),
        _ => None,
    }
}

impl Recorder {
    /// Start recording the given block devices. Needs root and tracefs.
    pub fn start(devices: &[PathBuf], opts: &RecordOptions) -> Result<Recorder> {
        if devices.is_empty() {
            return Err(TraceError::Device {
                path: PathBuf::new(),
                msg: "no device given to record".into(),
            });
        }
        let mut devs = Vec::new();
        for p in devices {
            let (maj, min) = block_dev_numbers(p)?;
            devs.push(Device {
                id: kernel_dev(maj, min),
                name: p.display().to_string(),
            });
        }
        let root = tracefs_root(opts)?;
        let n = INSTANCES.fetch_add(1, Ordering::Relaxed);
        let name = if n == 0 {
            format!("drivelab-{}", std::process::id())
        } else {
            format!("drivelab-{}-{n}", std::process::id())
        };
        let dir = root.join("instances").join(name);
        std::fs::create_dir(&dir).map_err(|e| tfs("cannot create instance", &dir, e))?;
        let mut rec = Recorder {
            dir,
            pipe: None,
            matcher: Matcher::new(),
            t0: None,
            partial: Vec::new(),
            devices: devs,
            events: 0,
            errors: 0,
            ignored: 0,
            requests: 0,
            completed: 0,
            clock: String::new(),
            started: Instant::now(),
            removed: false,
        };
        // From here on, Drop removes the instance if anything fails.
        rec.configure(opts)?;
        Ok(rec)
    }

    fn configure(&mut self, opts: &RecordOptions) -> Result<()> {
        let d = self.dir.clone();
        write_file(
            &d.join("buffer_size_kb"),
            &opts.buffer_kb_per_cpu.to_string(),
        )?;
        let clocks = std::fs::read_to_string(d.join("trace_clock")).unwrap_or_default();
        if clocks
            .split_whitespace()
            .any(|c| c == "mono" || c == "[mono]")
        {
            write_file(&d.join("trace_clock"), "mono")?;
            self.clock = "mono".into();
        } else {
            self.clock = clocks
                .split_whitespace()
                .find(|c| c.starts_with('['))
                .map(|c| c.trim_matches(['[', ']']).to_string())
                .unwrap_or_else(|| "local".into());
        }
        let filter = self
            .devices
            .iter()
            .map(|d| format!("dev == {}", d.id))
            .collect::<Vec<_>>()
            .join(" || ");
        for ev in EVENTS {
            let e = d.join("events/block").join(ev);
            if !e.is_dir() {
                if ev == "block_rq_requeue" {
                    continue;
                }
                return Err(tfs(
                    "missing tracepoint",
                    &e,
                    std::io::Error::new(
                        ErrorKind::NotFound,
                        "kernel built without block tracepoints",
                    ),
                ));
            }
            write_file(&e.join("filter"), &filter)?;
        }
        let pipe_path = d.join("trace_pipe");
        let pipe = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&pipe_path)
            .map_err(|e| tfs("cannot open", &pipe_path, e))?;
        self.pipe = Some(pipe);
        write_file(&d.join("tracing_on"), "1")?;
        let marker = d.join("trace_marker");
        let mut m = OpenOptions::new()
            .write(true)
            .open(&marker)
            .map_err(|e| tfs("cannot open", &marker, e))?;
        m.write_all(MARKER.as_bytes())
            .map_err(|e| tfs("cannot write", &marker, e))?;
        for ev in EVENTS {
            let e = d.join("events/block").join(ev).join("enable");
            if e.exists() {
                write_file(&e, "1")?;
            }
        }
        self.started = Instant::now();
        Ok(())
    }

    /// The tracefs instance directory.
    pub fn instance(&self) -> &Path {
        &self.dir
    }

    /// Device table (ids are kernel `dev_t`s, names the paths given).
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// Read what the kernel has buffered (without waiting) and return the
    /// requests that are complete in issue order. Call it often (every
    /// 10–100 ms) so the ring buffer does not overrun.
    pub fn poll(&mut self) -> Result<Vec<Request>> {
        let mut buf = vec![0u8; 256 * 1024];
        while let Some(pipe) = self.pipe.as_mut() {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    self.partial.extend_from_slice(&buf[..n]);
                    self.consume_lines();
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(tfs("cannot read", &self.dir.join("trace_pipe"), e)),
            }
        }
        Ok(self.take_ready())
    }

    fn consume_lines(&mut self) {
        let data = std::mem::take(&mut self.partial);
        let mut start = 0;
        while let Some(p) = data[start..].iter().position(|c| *c == b'\n') {
            self.handle_line(&data[start..start + p]);
            start += p + 1;
        }
        self.partial = data[start..].to_vec();
    }

    fn rel(&mut self, t: u64) -> u64 {
        let t0 = *self.t0.get_or_insert(t);
        t.saturating_sub(t0)
    }

    fn handle_line(&mut self, line: &[u8]) {
        let Some(ev) = parse_event(line) else {
            return;
        };
        self.events += 1;
        match ev {
            Event::Marker { t } => {
                if self.t0.is_none() {
                    self.t0 = Some(t);
                }
            }
            Event::Issue {
                t,
                dev,
                sector,
                nr,
                rwbs,
            } => {
                let t = self.rel(t);
                // An empty preflush is the kernel's flush; any other empty
                // request or one past the largest offset is not a transfer
                // a reader would accept again: counted, not recorded.
                match parse_rwbs_sized(&rwbs, nr) {
                    Some((op, flags)) if (nr > 0 || op == Op::Flush) && recordable(sector, nr) => {
                        self.matcher.issue(t, dev, sector, nr, op, flags)
                    }
                    _ => self.ignored += 1,
                }
            }
            Event::Complete {
                t,
                dev,
                sector,
                nr,
                error,
            } => {
                let t = self.rel(t);
                if error != 0 {
                    self.errors += 1;
                }
                self.matcher.complete(t, dev, sector, nr);
            }
            Event::Requeue { t, dev, sector } => {
                let t = self.rel(t);
                self.matcher.requeue(t, dev, sector);
            }
        }
    }

    fn take_ready(&mut self) -> Vec<Request> {
        let out: Vec<Request> = std::iter::from_fn(|| self.matcher.pop()).collect();
        self.requests += out.len() as u64;
        self.completed += out.iter().filter(|r| r.complete_ns.is_some()).count() as u64;
        out
    }

    fn lost_events(&self) -> u64 {
        let mut lost = 0;
        let Ok(rd) = std::fs::read_dir(self.dir.join("per_cpu")) else {
            return 0;
        };
        for e in rd.flatten() {
            let Ok(s) = std::fs::read_to_string(e.path().join("stats")) else {
                continue;
            };
            for line in s.lines() {
                if let Some(v) = line
                    .strip_prefix("overrun:")
                    .or_else(|| line.strip_prefix("dropped events:"))
                {
                    lost += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
        lost
    }

    fn disable(&self) {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        for ev in EVENTS {
            let _ = std::fs::write(self.dir.join("events/block").join(ev).join("enable"), "0");
        }
    }

    fn remove(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        self.disable();
        self.pipe = None;
        // The kernel may briefly hold the instance busy after the pipe closes.
        let mut last = None;
        for _ in 0..50 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => {
                    self.removed = true;
                    return Ok(());
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    self.removed = true;
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(tfs(
            "cannot remove instance",
            &self.dir,
            last.unwrap_or_else(|| std::io::Error::other("busy")),
        ))
    }

    /// Stop: disable the events, drain what is buffered, count lost events,
    /// remove the instance. Returns the remaining requests (everything still
    /// outstanding, without completion) and the summary.
    pub fn stop(mut self) -> Result<(Vec<Request>, RecordSummary)> {
        // Let in-flight completions land before turning tracing off.
        std::thread::sleep(Duration::from_millis(50));
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        let mut out = self.poll()?;
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.handle_line(&rest);
        }
        self.matcher.finish();
        out.extend(self.take_ready());
        let lost = self.lost_events();
        let summary = RecordSummary {
            requests: self.requests,
            completed: self.completed,
            lost_events: lost,
            events: self.events,
            errors: self.errors,
            matching: ReadStats {
                ignored: self.matcher.stats().ignored + self.ignored,
                ..self.matcher.stats()
            },
            duration_s: self.started.elapsed().as_secs_f64(),
            clock: self.clock.clone(),
            instance: self.dir.clone(),
        };
        self.remove()?;
        Ok((out, summary))
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Record `devices` into `output` (format `format`, usually
/// [`Format::Native`]) until `duration` has passed (if given) or `stop` is
/// set (e.g. by a SIGINT handler). Polls every 20 ms.
pub fn record(
    devices: &[PathBuf],
    output: &Path,
    format: Format,
    duration: Option<Duration>,
    stop: &AtomicBool,
    opts: &RecordOptions,
) -> Result<RecordSummary> {
    let mut rec = Recorder::start(devices, opts)?;
    let file = File::create(output).map_err(|e| {
        TraceError::Io(std::io::Error::new(
            e.kind(),
            format!("cannot create {}: {e}", output.display()),
        ))
    })?;
    let mut w = crate::open_writer(std::io::BufWriter::new(file), format, rec.devices())?;
    let deadline = duration.map(|d| Instant::now() + d);
    loop {
        for r in rec.poll()? {
            w.write(&r)?;
        }
        if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (rest, summary) = rec.stop()?;
    for r in &rest {
        w.write(r)?;
    }
    w.finish()?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_6_18_lines() {
        let issue = b"              dd-16044   [001] .....   807.544567: block_rq_issue: 7,0 WS 4096 () 24 + 8 be,0,4 [dd]";
        assert_eq!(
            parse_event(issue),
            Some(Event::Issue {
                t: 807_544_567_000,
                dev: kernel_dev(7, 0),
                sector: 24,
                nr: 8,
                rwbs: b"WS".to_vec()
            })
        );
        let done = b"     ksoftirqd/1-22      [001] ..s..   807.544621: block_rq_complete: 7,0 WS () 24 + 8 be,0,4 [0]";
        assert_eq!(
            parse_event(done),
            Some(Event::Complete {
                t: 807_544_621_000,
                dev: kernel_dev(7, 0),
                sector: 24,
                nr: 8,
                error: 0
            })
        );
    }

    #[test]
    fn parses_older_kernel_lines_and_passthrough_commands() {
        // 4.x: no ioprio field; a SCSI command in parentheses with spaces.
        let issue = b"  kworker/0:1H-300 [000] ....  12.000001: block_rq_issue: 8,0 R 4096 (28 00 00 00 00 08 00 00 08 00) 8 + 8 [kworker/0:1H]";
        match parse_event(issue) {
            Some(Event::Issue { sector, nr, .. }) => assert_eq!((sector, nr), (8, 8)),
            other => panic!("{other:?}"),
        }
        let done = b"  <idle>-0 [000] d.h. 12.000100: block_rq_complete: 8,0 R () 8 + 8 [-5]";
        match parse_event(done) {
            Some(Event::Complete { error, .. }) => assert_eq!(error, -5),
            other => panic!("{other:?}"),
        }
        let marker = b"  x-1 [000] ..... 5.000000: tracing_mark_write: drivelab-record-start";
        assert_eq!(
            parse_event(marker),
            Some(Event::Marker { t: 5_000_000_000 })
        );
        assert_eq!(parse_event(b"# tracer: nop"), None);
        assert_eq!(parse_event(b"garbage: block_rq_issue: x"), None);
    }
}
