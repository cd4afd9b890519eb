//! Sequential writes over the drive through the one I/O loop: the fill
//! passes (128 KiB at queue depth 32, random data) and the image restore
//! (the image file's bytes at the same positions on the drive).
//!
//! The driver issues front to back and measures throughput per bucket of
//! bytes completed (the whole-drive write series). Its watermark — every
//! byte below it is written — is the lowest offset still in flight, and is
//! handed to a callback about once a second (the journal) so that an
//! interrupted pass resumes there.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use drivelab_device::claim::Claim;
use drivelab_engine::buf::Fill;
use drivelab_engine::engine::{Target, Uring};
use drivelab_engine::io::{IoDesc, Op};
use drivelab_engine::ioloop::{self, After, Done, Driver, LoopConfig, Next};

use crate::result::WritePoint;
use crate::SeasonError;

/// Where the written bytes come from.
pub enum Source<'a> {
    /// The buffers' random bytes, filled once.
    Random(u64),
    /// This file, byte `i` of it to byte `i` of the drive; the last partial
    /// block padded with zeroes.
    File(&'a File),
}

/// One sequential write.
pub struct SeqJob<'a> {
    /// The claimed drive.
    pub claim: &'a Claim,
    /// First byte (a multiple of the logical block).
    pub start: u64,
    /// End byte (exclusive).
    pub end: u64,
    /// Transfer length, bytes.
    pub xfer: u32,
    /// Queue depth.
    pub depth: u32,
    /// Bucket of the series, bytes.
    pub bucket: u64,
    /// The data.
    pub source: Source<'a>,
    /// Stop flag (Ctrl-C).
    pub stop: &'a AtomicBool,
    /// Bytes completed so far (progress).
    pub done: &'a AtomicU64,
}

/// What a sequential write did.
#[derive(Debug, Clone, Default)]
pub struct SeqOutcome {
    /// Bytes completed.
    pub bytes: u64,
    /// Every byte below this is written.
    pub watermark: u64,
    /// Seconds from the first submission to the last completion.
    pub seconds: f64,
    /// Throughput per bucket.
    pub series: Vec<WritePoint>,
    /// Writes issued.
    pub writes: u64,
    /// Stopped by the flag.
    pub interrupted: bool,
}

/// The shortest span a series point may cover, ns. Completions are reaped
/// in batches that share one timestamp, so a bucket closed within the same
/// reap as the one before it spans no time at all; a span this short says
/// how completions were batched, not how fast the drive writes.
pub const MIN_SPAN_NS: u64 = 10_000_000;

/// The whole-drive write series: a point when at least a bucket of bytes
/// has completed over at least [`MIN_SPAN_NS`] since the last point. Bytes
/// that complete sooner stay in the open point (which then holds more
/// than a bucket); a last point shorter than that is merged into the one
/// before it, or dropped when there is none.
#[derive(Debug, Clone)]
struct Buckets {
    /// Byte of the drive the pass started at.
    start: u64,
    /// Bucket, bytes.
    bucket: u64,
    /// Bytes completed.
    completed: u64,
    /// Bytes and time at the end of the last point (its start at first).
    mark_bytes: u64,
    mark_ns: Option<u64>,
    /// The last point's span: bytes and ns, for merging a short tail.
    last_span: Option<(u64, u64)>,
    /// Time of the last completion.
    now: u64,
    points: Vec<WritePoint>,
}

impl Buckets {
    fn new(start: u64, bucket: u64) -> Buckets {
        Buckets {
            start,
            bucket: bucket.max(1),
            completed: 0,
            mark_bytes: 0,
            mark_ns: None,
            last_span: None,
            now: 0,
            points: Vec::new(),
        }
    }

    /// The first submission, at `now`: the first point's start.
    fn start(&mut self, now: u64) {
        self.mark_ns.get_or_insert(now);
    }

    /// `bytes` completed at `now`.
    fn complete(&mut self, bytes: u64, now: u64) {
        self.completed += bytes;
        self.now = self.now.max(now);
        let t0 = *self.mark_ns.get_or_insert(now);
        let n = self.completed - self.mark_bytes;
        let dt = self.now.saturating_sub(t0);
        if n >= self.bucket && dt >= MIN_SPAN_NS {
            self.push(n, dt);
        }
    }

    /// The pass ended: the bytes of the open point become a point, merged
    /// into the one before when they span too little time.
    fn finish(&mut self) {
        let n = self.completed - self.mark_bytes;
        if n == 0 {
            return;
        }
        let dt = self.now.saturating_sub(self.mark_ns.unwrap_or(self.now));
        if dt >= MIN_SPAN_NS {
            self.push(n, dt);
        } else if let Some((pb, pns)) = self.last_span {
            self.points.pop();
            self.mark_bytes -= pb;
            self.push(pb + n, pns + dt);
        } else {
            self.mark_bytes = self.completed;
        }
    }

    fn push(&mut self, n: u64, dt: u64) {
        self.mark_bytes += n;
        self.mark_ns = Some(self.now);
        self.last_span = Some((n, dt));
        self.points.push(WritePoint {
            written_bytes: self.start + self.mark_bytes,
            bw_bytes: n as f64 / (dt as f64 / 1e9),
        });
    }
}

struct SeqDriver<'a, 'j> {
    job: &'j SeqJob<'a>,
    lbs: u64,
    next: u64,
    inflight: Vec<u64>,
    completed: u64,
    first: Option<u64>,
    last: u64,
    series: Buckets,
    error: Option<String>,
    writes: u64,
    last_note: u64,
    note: &'j mut dyn FnMut(u64) -> Result<(), SeasonError>,
}

impl SeqDriver<'_, '_> {
    fn watermark(&self) -> u64 {
        self.inflight.iter().copied().min().unwrap_or(self.next)
    }
}

impl Driver for SeqDriver<'_, '_> {
    fn next(&mut self, now: u64, _inflight: u32, buf: &mut [u8]) -> Next {
        if self.error.is_some() || self.next >= self.job.end {
            return Next::Done;
        }
        let len = (self.job.end - self.next).min(u64::from(self.job.xfer));
        // Whole logical blocks (the end is block aligned, so only an image
        // tail can be short: it is padded).
        let len = len.div_ceil(self.lbs) * self.lbs;
        if let Source::File(f) = &self.job.source {
            let b = &mut buf[..len as usize];
            let mut got = 0usize;
            while got < b.len() {
                match f.read_at(&mut b[got..], self.next + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.error = Some(format!("reading the image: {e}"));
                        return Next::Done;
                    }
                }
            }
            b[got..].fill(0);
        }
        let io = IoDesc {
            target: 0,
            op: Op::Write,
            offset: self.next,
            len: len as u32,
        };
        self.first.get_or_insert(now);
        self.series.start(now);
        self.inflight.push(self.next);
        self.next += len;
        self.writes += 1;
        Next::Io {
            io,
            due: None,
            tag: 0,
        }
    }

    fn complete(&mut self, d: &Done, _buf: &[u8]) -> After {
        if let Some(i) = self.inflight.iter().position(|&o| o == d.io.offset) {
            self.inflight.swap_remove(i);
        }
        if !d.is_full() {
            if self.error.is_none() {
                let why = if d.result < 0 {
                    std::io::Error::from_raw_os_error(-d.result).to_string()
                } else {
                    format!("short write ({} of {} bytes)", d.result, d.io.len)
                };
                self.error = Some(format!(
                    "write of {} bytes at byte {} failed: {why}",
                    d.io.len, d.io.offset
                ));
            }
            return After::Release;
        }
        self.completed += u64::from(d.io.len);
        self.job
            .done
            .fetch_add(u64::from(d.io.len), Ordering::Relaxed);
        self.last = d.now;
        self.series.complete(u64::from(d.io.len), d.now);
        After::Release
    }

    fn turn(&mut self, now: u64) -> bool {
        if now.saturating_sub(self.last_note) >= 1_000_000_000 {
            self.last_note = now;
            let w = self.watermark();
            if let Err(e) = (self.note)(w) {
                self.error = Some(e.to_string());
                return true;
            }
        }
        self.error.is_some()
    }
}

/// Write `job` front to back. `note` gets the watermark about once a
/// second (and once at the end).
pub fn write(
    job: &SeqJob<'_>,
    note: &mut dyn FnMut(u64) -> Result<(), SeasonError>,
) -> Result<SeqOutcome, SeasonError> {
    let dev = job.claim.path().display().to_string();
    let io_err = |what: &str, e: std::io::Error| SeasonError::Io {
        device: dev.clone(),
        what: what.to_string(),
        source: e,
    };
    let lbs = u64::from(job.claim.logical_block().max(512));
    let target = Target::claimed(job.claim, true).map_err(|e| io_err("open for writing", e))?;
    let fill = match job.source {
        Source::Random(seed) => Fill::Random(seed),
        Source::File(_) => Fill::Zeroed,
    };
    let mut engine = Uring::new(vec![target], job.depth, job.xfer as usize, false, fill)
        .map_err(|e| io_err("set up io_uring", e))?;
    let mut drv = SeqDriver {
        job,
        lbs,
        next: job.start,
        inflight: Vec::with_capacity(job.depth as usize),
        completed: 0,
        first: None,
        last: 0,
        series: Buckets::new(job.start, job.bucket),
        error: None,
        writes: 0,
        last_note: drivelab_engine::clock::now_ns(),
        note,
    };
    let cfg = LoopConfig {
        stop: Some(job.stop),
        ..LoopConfig::default()
    };
    let st = ioloop::run(&mut engine, &mut drv, &cfg).map_err(|e| io_err("io_uring", e))?;
    drv.series.finish();
    let watermark = drv.watermark().min(job.end);
    if let Some(e) = drv.error.take() {
        return Err(SeasonError::Command {
            device: dev,
            what: "sequential write".into(),
            why: e,
        });
    }
    job.claim.sync().map_err(|e| io_err("flush", e))?;
    (drv.note)(watermark)?;
    let seconds = match drv.first {
        Some(f) => drv.last.saturating_sub(f) as f64 / 1e9,
        None => 0.0,
    };
    Ok(SeqOutcome {
        bytes: drv.completed,
        watermark,
        seconds,
        series: drv.series.points,
        writes: drv.writes,
        interrupted: st.interrupted,
    })
}

/// The series bucket for a drive of `capacity` bytes: 1 GiB, or 1 % of
/// the capacity (in whole `xfer` units) on drives under 100 GiB.
pub fn bucket_for(capacity: u64, xfer: u64) -> u64 {
    const GIB: u64 = 1 << 30;
    if capacity >= 100 * GIB {
        GIB
    } else {
        ((capacity / 100) / xfer).max(1) * xfer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Completions reaped in batches of `batch` sharing one timestamp,
    /// `gap` ns apart, `xfer` bytes each.
    fn batched(b: &mut Buckets, ios: u64, batch: u64, gap: u64, xfer: u64) {
        b.start(0);
        for i in 0..ios {
            b.complete(xfer, (i / batch + 1) * gap);
        }
        b.finish();
    }

    #[test]
    fn a_point_never_spans_less_than_the_minimum_and_bytes_all_count() {
        // The case: a 64 MiB drive, 640 KiB buckets, 128 KiB
        // writes reaped 32 at a time. Buckets closed in one reap gave points
        // over 1 ns (655 TB/s) and a false cliff.
        const X: u64 = 128 << 10;
        for (gap, batch) in [(1_000_000, 32), (20_000_000, 32), (3_000_000, 1), (1, 512)] {
            let mut b = Buckets::new(0, 5 * X);
            batched(&mut b, 512, batch, gap, X);
            let mut prev = 0u64;
            let mut secs = 0.0;
            for p in &b.points {
                let n = p.written_bytes - prev;
                assert!(n >= 5 * X, "{gap} {batch}: {p:?}");
                let span = n as f64 / p.bw_bytes;
                assert!(
                    span >= MIN_SPAN_NS as f64 / 1e9 * 0.999,
                    "{gap} {batch}: {p:?}"
                );
                secs += span;
                prev = p.written_bytes;
            }
            let total = (512u64.div_ceil(batch) * gap) as f64 / 1e9;
            if total >= MIN_SPAN_NS as f64 / 1e9 {
                // Every byte is in the series, over the pass's whole time.
                assert_eq!(prev, 512 * X, "{gap} {batch}");
                assert!(
                    (secs - total).abs() < 1e-9,
                    "{gap} {batch}: {secs} vs {total}"
                );
                let rate = (512 * X) as f64 / total;
                for p in &b.points {
                    assert!(p.bw_bytes <= rate * 2.0, "{gap} {batch}: {p:?}");
                }
            } else {
                assert!(b.points.is_empty(), "{gap} {batch}: {:?}", b.points);
            }
            let tput: Vec<f64> = b.points.iter().map(|p| p.bw_bytes).collect();
            assert_eq!(crate::cliff::detect(&tput), None, "{gap} {batch}: {tput:?}");
        }
    }

    #[test]
    fn buckets_are_a_gib_or_a_percent() {
        assert_eq!(bucket_for(500 << 30, 128 << 10), 1 << 30);
        // 1 GiB drive: 1 % = 10,737,418 bytes -> 81 whole transfers of 128 KiB.
        assert_eq!(bucket_for(1 << 30, 128 << 10), 81 * (128 << 10));
        assert_eq!(bucket_for(1 << 20, 128 << 10), 128 << 10);
    }
}
