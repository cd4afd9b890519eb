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

struct SeqDriver<'a, 'j> {
    job: &'j SeqJob<'a>,
    lbs: u64,
    next: u64,
    inflight: Vec<u64>,
    completed: u64,
    first: Option<u64>,
    last: u64,
    mark_bytes: u64,
    mark_ns: Option<u64>,
    series: Vec<WritePoint>,
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
        self.mark_ns.get_or_insert(now);
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
        let bucket = self.job.bucket.max(1);
        while self.completed - self.mark_bytes >= bucket
            || (self.job.start + self.completed >= self.job.end && self.completed > self.mark_bytes)
        {
            let n = (self.completed - self.mark_bytes).min(bucket);
            let t0 = self.mark_ns.unwrap_or(d.now);
            let dt = d.now.saturating_sub(t0).max(1) as f64 / 1e9;
            self.mark_bytes += n;
            self.series.push(WritePoint {
                written_bytes: self.job.start + self.mark_bytes,
                bw_bytes: n as f64 / dt,
            });
            self.mark_ns = Some(d.now);
        }
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
        mark_bytes: 0,
        mark_ns: None,
        series: Vec::new(),
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
        series: drv.series,
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

    #[test]
    fn buckets_are_a_gib_or_a_percent() {
        assert_eq!(bucket_for(500 << 30, 128 << 10), 1 << 30);
        // 1 GiB drive: 1 % = 10,737,418 bytes -> 81 whole transfers of 128 KiB.
        assert_eq!(bucket_for(1 << 30, 128 << 10), 81 * (128 << 10));
        assert_eq!(bucket_for(1 << 20, 128 << 10), 128 << 10);
    }
}
