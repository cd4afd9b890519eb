//! `/proc/diskstats` parsing and sampling: what the device saw.
//!
//! A benchmark's own counters say what the tool submitted; the kernel's
//! per-device counters say what reached the device. drivelab samples them
//! alongside every run (iostat-style, once a second) so a result can be
//! corroborated at the device, and reports `util` the way iostat and fio's
//! `disk_util` do.
//!
//! Field layout (kernel `Documentation/admin-guide/iostats.rst` and
//! `Documentation/block/stat.rst`): after `major minor name` come 11 counters
//! (reads, reads merged, sectors read, ms reading, writes, writes merged,
//! sectors written, ms writing, I/Os in flight, ms doing I/O, weighted ms);
//! Linux 4.18 adds 4 discard counters (ios, merges, sectors, ms) and 5.5
//! adds 2 flush counters (ios, ms). Kernels before 2.6.25 printed only 4
//! counters for partitions (reads, sectors read, writes, sectors written).
//! Further counters a future kernel appends are ignored.
//!
//! Sectors here are always 512 bytes, whatever the device's logical block
//! size: `block/stat.rst` says the sectors counted are "the standard UNIX
//! 512-byte sectors, not any device- or filesystem-specific block size", so
//! [`Delta::bytes_read`] is `sectors * 512` on a 4Kn drive too.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Bytes per diskstats sector, fixed by the kernel (see the module doc).
pub const DISKSTATS_SECTOR: u64 = 512;

const PROC_DISKSTATS: &str = "/proc/diskstats";

/// Errors reading or parsing diskstats.
#[derive(Debug, thiserror::Error)]
pub enum DiskStatsError {
    /// `/proc/diskstats` could not be read.
    #[error("cannot read {path}: {source}; is /proc mounted?")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A line did not have the expected shape.
    #[error("cannot parse diskstats line {line:?}: {why}")]
    Parse {
        /// The offending line.
        line: String,
        /// What was wrong.
        why: &'static str,
    },
    /// The named device has no line in `/proc/diskstats`.
    #[error("no device named {0} in /proc/diskstats; list devices with 'drivelab devices'")]
    NoSuchDevice(String),
}

/// One device's cumulative counters at one moment. Times are milliseconds,
/// sectors are 512 bytes. The discard and flush counters are `None` on
/// kernels too old to report them (before 4.18 and 5.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiskStats {
    /// Major device number.
    pub major: u32,
    /// Minor device number.
    pub minor: u32,
    /// Kernel device name.
    pub name: String,
    /// Reads completed.
    pub reads: u64,
    /// Reads merged with a queued read.
    pub reads_merged: u64,
    /// 512-byte sectors read.
    pub sectors_read: u64,
    /// Milliseconds spent by all reads.
    pub read_ticks_ms: u64,
    /// Writes completed.
    pub writes: u64,
    /// Writes merged with a queued write.
    pub writes_merged: u64,
    /// 512-byte sectors written.
    pub sectors_written: u64,
    /// Milliseconds spent by all writes.
    pub write_ticks_ms: u64,
    /// I/Os in flight right now (a gauge, not a counter).
    pub in_flight: u64,
    /// Milliseconds during which at least one I/O was in flight.
    pub io_ticks_ms: u64,
    /// Weighted milliseconds doing I/O (sum of each I/O's time in queue).
    pub time_in_queue_ms: u64,
    /// Discards completed (4.18+).
    pub discards: Option<u64>,
    /// Discards merged (4.18+).
    pub discards_merged: Option<u64>,
    /// 512-byte sectors discarded (4.18+).
    pub sectors_discarded: Option<u64>,
    /// Milliseconds spent by all discards (4.18+).
    pub discard_ticks_ms: Option<u64>,
    /// Flush requests completed (5.5+; whole disks only).
    pub flushes: Option<u64>,
    /// Milliseconds spent by all flushes (5.5+).
    pub flush_ticks_ms: Option<u64>,
}

impl DiskStats {
    /// Parse one line of `/proc/diskstats`.
    pub fn parse_line(line: &str) -> Result<DiskStats, DiskStatsError> {
        let bad = |why| DiskStatsError::Parse {
            line: line.to_string(),
            why,
        };
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            return Err(bad("fewer than 3 fields"));
        }
        let major = f[0].parse().map_err(|_| bad("major is not a number"))?;
        let minor = f[1].parse().map_err(|_| bad("minor is not a number"))?;
        let name = f[2].to_string();
        let mut n = Vec::with_capacity(f.len() - 3);
        for w in &f[3..] {
            n.push(
                w.parse::<u64>()
                    .map_err(|_| bad("a counter is not a number"))?,
            );
        }
        let opt = |i: usize| n.get(i).copied();
        let mut s = DiskStats {
            major,
            minor,
            name,
            reads: 0,
            reads_merged: 0,
            sectors_read: 0,
            read_ticks_ms: 0,
            writes: 0,
            writes_merged: 0,
            sectors_written: 0,
            write_ticks_ms: 0,
            in_flight: 0,
            io_ticks_ms: 0,
            time_in_queue_ms: 0,
            discards: None,
            discards_merged: None,
            sectors_discarded: None,
            discard_ticks_ms: None,
            flushes: None,
            flush_ticks_ms: None,
        };
        match n.len() {
            // Pre-2.6.25 partition line: reads, sectors read, writes, sectors written.
            4 => {
                s.reads = n[0];
                s.sectors_read = n[1];
                s.writes = n[2];
                s.sectors_written = n[3];
            }
            k if k >= 11 => {
                s.reads = n[0];
                s.reads_merged = n[1];
                s.sectors_read = n[2];
                s.read_ticks_ms = n[3];
                s.writes = n[4];
                s.writes_merged = n[5];
                s.sectors_written = n[6];
                s.write_ticks_ms = n[7];
                s.in_flight = n[8];
                s.io_ticks_ms = n[9];
                s.time_in_queue_ms = n[10];
                if k >= 15 {
                    s.discards = opt(11);
                    s.discards_merged = opt(12);
                    s.sectors_discarded = opt(13);
                    s.discard_ticks_ms = opt(14);
                }
                if k >= 17 {
                    s.flushes = opt(15);
                    s.flush_ticks_ms = opt(16);
                }
            }
            _ => return Err(bad("expected 4, 11, 15, 17 or more counters")),
        }
        Ok(s)
    }

    /// Parse the whole text of `/proc/diskstats`; blank lines are skipped.
    pub fn parse_all(text: &str) -> Result<Vec<DiskStats>, DiskStatsError> {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(DiskStats::parse_line)
            .collect()
    }

    /// Every device's counters, now.
    pub fn read_all() -> Result<Vec<DiskStats>, DiskStatsError> {
        DiskStats::parse_all(&read_proc()?)
    }

    /// One device's counters, now (`name` is the kernel name, e.g. `sda1`).
    pub fn read(name: &str) -> Result<DiskStats, DiskStatsError> {
        DiskStats::read_all()?
            .into_iter()
            .find(|s| s.name == name)
            .ok_or_else(|| DiskStatsError::NoSuchDevice(name.to_string()))
    }

    /// Requests the device has finished: reads, writes, discards and
    /// flushes completed (the last two where the kernel counts them).
    pub fn finished(&self) -> u64 {
        self.reads + self.writes + self.discards.unwrap_or(0) + self.flushes.unwrap_or(0)
    }

    /// What happened between `earlier` and this sample, `elapsed` apart.
    /// Counters that went backwards are treated as a 32-bit wrap when the
    /// earlier value fits in 32 bits (a 32-bit kernel's `unsigned long`),
    /// otherwise as a reset (the delta is the later value).
    pub fn delta_since(&self, earlier: &DiskStats, elapsed: Duration) -> Delta {
        let d = |later: u64, before: u64| counter_delta(before, later);
        let od = |later: Option<u64>, before: Option<u64>| match (later, before) {
            (Some(l), Some(b)) => counter_delta(b, l),
            _ => 0,
        };
        Delta {
            name: self.name.clone(),
            elapsed,
            read_ios: d(self.reads, earlier.reads),
            read_merges: d(self.reads_merged, earlier.reads_merged),
            bytes_read: d(self.sectors_read, earlier.sectors_read) * DISKSTATS_SECTOR,
            read_ticks_ms: d(self.read_ticks_ms, earlier.read_ticks_ms),
            write_ios: d(self.writes, earlier.writes),
            write_merges: d(self.writes_merged, earlier.writes_merged),
            bytes_written: d(self.sectors_written, earlier.sectors_written) * DISKSTATS_SECTOR,
            write_ticks_ms: d(self.write_ticks_ms, earlier.write_ticks_ms),
            discard_ios: od(self.discards, earlier.discards),
            discard_merges: od(self.discards_merged, earlier.discards_merged),
            bytes_discarded: od(self.sectors_discarded, earlier.sectors_discarded)
                * DISKSTATS_SECTOR,
            discard_ticks_ms: od(self.discard_ticks_ms, earlier.discard_ticks_ms),
            flush_ios: od(self.flushes, earlier.flushes),
            flush_ticks_ms: od(self.flush_ticks_ms, earlier.flush_ticks_ms),
            io_ticks_ms: d(self.io_ticks_ms, earlier.io_ticks_ms),
            time_in_queue_ms: d(self.time_in_queue_ms, earlier.time_in_queue_ms),
            in_flight: self.in_flight,
        }
    }
}

fn counter_delta(before: u64, later: u64) -> u64 {
    if later >= before {
        later - before
    } else if before <= u64::from(u32::MAX) {
        (later + (1u64 << 32)) - before
    } else {
        later
    }
}

fn read_proc() -> Result<String, DiskStatsError> {
    std::fs::read_to_string(Path::new(PROC_DISKSTATS)).map_err(|e| DiskStatsError::Io {
        path: PROC_DISKSTATS.to_string(),
        source: e,
    })
}

/// The change in one device's counters over an interval. Bytes are
/// `sectors * 512` (see the module doc); times are milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delta {
    /// Kernel device name.
    pub name: String,
    /// Wall time between the two samples (serialised as `elapsed_ns`).
    #[serde(rename = "elapsed_ns", serialize_with = "duration_ns")]
    pub elapsed: Duration,
    /// Reads completed.
    pub read_ios: u64,
    /// Reads merged.
    pub read_merges: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Milliseconds spent by reads.
    pub read_ticks_ms: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// Writes merged.
    pub write_merges: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Milliseconds spent by writes.
    pub write_ticks_ms: u64,
    /// Discards completed (0 on kernels without the counter).
    pub discard_ios: u64,
    /// Discards merged.
    pub discard_merges: u64,
    /// Bytes discarded.
    pub bytes_discarded: u64,
    /// Milliseconds spent by discards.
    pub discard_ticks_ms: u64,
    /// Flushes completed (0 on kernels without the counter).
    pub flush_ios: u64,
    /// Milliseconds spent by flushes.
    pub flush_ticks_ms: u64,
    /// Milliseconds the device was busy (at least one I/O in flight).
    pub io_ticks_ms: u64,
    /// Weighted milliseconds (sum over I/Os of their time in flight).
    pub time_in_queue_ms: u64,
    /// I/Os in flight at the later sample.
    pub in_flight: u64,
}

fn duration_ns<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl Delta {
    /// Add a later interval's counts to this one (elapsed times add too;
    /// `in_flight` takes the later value), so per-second deltas sum to the
    /// run's total.
    pub fn accumulate(&mut self, later: &Delta) {
        self.elapsed += later.elapsed;
        self.read_ios += later.read_ios;
        self.read_merges += later.read_merges;
        self.bytes_read += later.bytes_read;
        self.read_ticks_ms += later.read_ticks_ms;
        self.write_ios += later.write_ios;
        self.write_merges += later.write_merges;
        self.bytes_written += later.bytes_written;
        self.write_ticks_ms += later.write_ticks_ms;
        self.discard_ios += later.discard_ios;
        self.discard_merges += later.discard_merges;
        self.bytes_discarded += later.bytes_discarded;
        self.discard_ticks_ms += later.discard_ticks_ms;
        self.flush_ios += later.flush_ios;
        self.flush_ticks_ms += later.flush_ticks_ms;
        self.io_ticks_ms += later.io_ticks_ms;
        self.time_in_queue_ms += later.time_in_queue_ms;
        self.in_flight = later.in_flight;
    }

    /// Fraction of the interval the device was busy, 0.0..=1.0: `io_ticks`
    /// delta over elapsed time, clamped at 1 as iostat's `%util` is (fio's
    /// `disk_util[].util` is this times 100). 0 when no time elapsed.
    pub fn util(&self) -> f64 {
        let ms = self.elapsed.as_secs_f64() * 1000.0;
        if ms <= 0.0 {
            return 0.0;
        }
        (self.io_ticks_ms as f64 / ms).min(1.0)
    }

    /// Average number of requests in flight (iostat `aqu-sz`):
    /// `time_in_queue` delta over elapsed time.
    pub fn avg_queue_size(&self) -> f64 {
        let ms = self.elapsed.as_secs_f64() * 1000.0;
        if ms <= 0.0 {
            0.0
        } else {
            self.time_in_queue_ms as f64 / ms
        }
    }

    /// Mean read latency in ms (iostat `r_await`); 0 with no reads.
    pub fn read_await_ms(&self) -> f64 {
        ratio(self.read_ticks_ms, self.read_ios)
    }

    /// Mean write latency in ms (iostat `w_await`); 0 with no writes.
    pub fn write_await_ms(&self) -> f64 {
        ratio(self.write_ticks_ms, self.write_ios)
    }

    /// Read bandwidth over the interval, bytes per second.
    pub fn read_bytes_per_sec(&self) -> f64 {
        per_sec(self.bytes_read, self.elapsed)
    }

    /// Write bandwidth over the interval, bytes per second.
    pub fn write_bytes_per_sec(&self) -> f64 {
        per_sec(self.bytes_written, self.elapsed)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn per_sec(n: u64, d: Duration) -> f64 {
    let s = d.as_secs_f64();
    if s <= 0.0 {
        0.0
    } else {
        n as f64 / s
    }
}

/// Snapshots a fixed set of devices and yields what changed since the last
/// call. Holds two samples per device (constant memory); runs no thread: the
/// caller calls [`Sampler::sample`] on its own schedule (drivelab: once a
/// second from the run's monitor thread).
#[derive(Debug, Clone)]
pub struct Sampler {
    names: Vec<String>,
    first: Vec<DiskStats>,
    last: Vec<DiskStats>,
    started: Instant,
    last_at: Instant,
}

impl Sampler {
    /// Take the first snapshot of these devices (kernel names, e.g. `sda`,
    /// `nvme0n1p1`). Fails if any has no diskstats line.
    pub fn new<I, S>(names: I) -> Result<Sampler, DiskStatsError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        let now = Instant::now();
        let snap = snapshot(&names, &read_proc()?)?;
        Ok(Sampler {
            names,
            first: snap.clone(),
            last: snap,
            started: now,
            last_at: now,
        })
    }

    /// The devices sampled, in the order deltas are returned.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Wait (at most `max`) until the devices are settled: nothing in
    /// flight and every counter unchanged over a millisecond; say whether
    /// that was reached. The kernel completes a request's bios (an io_uring
    /// completion) before it counts the request in diskstats, so a final
    /// sample taken the moment the last completion arrives can miss it.
    pub fn wait_idle(&self, max: Duration) -> bool {
        let until = Instant::now() + max;
        let mut prev: Option<Vec<DiskStats>> = None;
        loop {
            let snap = read_proc()
                .ok()
                .and_then(|t| snapshot(&self.names, &t).ok());
            if let Some(snap) = snap {
                let idle = snap.iter().all(|d| d.in_flight == 0);
                if idle && prev.as_ref() == Some(&snap) {
                    return true;
                }
                prev = idle.then_some(snap);
            }
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Read `/proc/diskstats` once and return, per device (in [`names`]
    /// order), what changed since the previous call (or since [`new`]).
    ///
    /// [`names`]: Sampler::names
    /// [`new`]: Sampler::new
    pub fn sample(&mut self) -> Result<Vec<Delta>, DiskStatsError> {
        let text = read_proc()?;
        self.sample_from(&text, Instant::now())
    }

    /// As [`Sampler::sample`], from diskstats text read at `now` (lets a
    /// caller that already read the file, or a test, supply it).
    pub fn sample_from(&mut self, text: &str, now: Instant) -> Result<Vec<Delta>, DiskStatsError> {
        let snap = snapshot(&self.names, text)?;
        let elapsed = now.saturating_duration_since(self.last_at);
        let deltas = snap
            .iter()
            .zip(&self.last)
            .map(|(later, before)| later.delta_since(before, elapsed))
            .collect();
        self.last = snap;
        self.last_at = now;
        Ok(deltas)
    }

    /// Totals from [`Sampler::new`] to the most recent sample.
    pub fn since_start(&self) -> Vec<Delta> {
        let elapsed = self.last_at.saturating_duration_since(self.started);
        self.last
            .iter()
            .zip(&self.first)
            .map(|(later, before)| later.delta_since(before, elapsed))
            .collect()
    }
}

fn snapshot(names: &[String], text: &str) -> Result<Vec<DiskStats>, DiskStatsError> {
    let all = DiskStats::parse_all(text)?;
    names
        .iter()
        .map(|n| {
            all.iter()
                .find(|s| &s.name == n)
                .cloned()
                .ok_or_else(|| DiskStatsError::NoSuchDevice(n.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 17-counter example from the kernel's iostats.rst.
    const LINE_5_5: &str =
        " 259       0 nvme0n1 255999 814 12369153 47919 996852 81 36123024 425995 0 301795 580470 0 0 0 0 60602 106555";
    /// 15 counters: a 4.18 .. 5.4 kernel with discard fields.
    const LINE_4_18: &str = "   8       0 sda 11 12 13 14 21 22 23 24 3 31 32 41 42 43 44";
    /// 11 counters: a kernel before 4.18.
    const LINE_OLD: &str = "   8       1 sda1 101 102 103 104 105 106 107 108 109 110 111";
    /// 4 counters: a partition on a kernel before 2.6.25.
    const LINE_ANCIENT_PART: &str = "   3    1 hda1 446216 784926 9550688 4382310";

    #[test]
    fn parses_flush_fields_of_5_5() {
        let s = DiskStats::parse_line(LINE_5_5).unwrap();
        assert_eq!((s.major, s.minor, s.name.as_str()), (259, 0, "nvme0n1"));
        assert_eq!(s.reads, 255999);
        assert_eq!(s.reads_merged, 814);
        assert_eq!(s.sectors_read, 12369153);
        assert_eq!(s.read_ticks_ms, 47919);
        assert_eq!(s.writes, 996852);
        assert_eq!(s.writes_merged, 81);
        assert_eq!(s.sectors_written, 36123024);
        assert_eq!(s.write_ticks_ms, 425995);
        assert_eq!(s.in_flight, 0);
        assert_eq!(s.io_ticks_ms, 301795);
        assert_eq!(s.time_in_queue_ms, 580470);
        assert_eq!(s.discards, Some(0));
        assert_eq!(s.sectors_discarded, Some(0));
        assert_eq!(s.flushes, Some(60602));
        assert_eq!(s.flush_ticks_ms, Some(106555));
    }

    #[test]
    fn finished_counts_reads_writes_discards_and_flushes() {
        // 17 counters: 10 reads, 20 writes, 3 discards (7 ms), 4 flushes.
        let l = "7 0 loop0 10 0 80 5 20 0 160 9 0 12 14 3 0 24 7 4 2";
        assert_eq!(
            DiskStats::parse_line(l).unwrap().finished(),
            10 + 20 + 3 + 4
        );
        // 11 counters (before 4.18): reads and writes only.
        let l = "7 0 loop0 7 0 56 1 9 0 72 2 0 3 3";
        assert_eq!(DiskStats::parse_line(l).unwrap().finished(), 16);
    }

    #[test]
    fn parses_discard_fields_of_4_18_without_flush() {
        let s = DiskStats::parse_line(LINE_4_18).unwrap();
        assert_eq!(s.reads, 11);
        assert_eq!(s.write_ticks_ms, 24);
        assert_eq!(s.in_flight, 3);
        assert_eq!(s.io_ticks_ms, 31);
        assert_eq!(s.time_in_queue_ms, 32);
        assert_eq!(s.discards, Some(41));
        assert_eq!(s.discards_merged, Some(42));
        assert_eq!(s.sectors_discarded, Some(43));
        assert_eq!(s.discard_ticks_ms, Some(44));
        assert_eq!(s.flushes, None);
        assert_eq!(s.flush_ticks_ms, None);
    }

    #[test]
    fn parses_old_11_counter_line() {
        let s = DiskStats::parse_line(LINE_OLD).unwrap();
        let got = [
            s.reads,
            s.reads_merged,
            s.sectors_read,
            s.read_ticks_ms,
            s.writes,
            s.writes_merged,
            s.sectors_written,
            s.write_ticks_ms,
            s.in_flight,
            s.io_ticks_ms,
            s.time_in_queue_ms,
        ];
        assert_eq!(got, [101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111]);
        assert_eq!(s.discards, None);
        assert_eq!(s.flushes, None);
    }

    #[test]
    fn parses_ancient_partition_line() {
        let s = DiskStats::parse_line(LINE_ANCIENT_PART).unwrap();
        assert_eq!(s.reads, 446216);
        assert_eq!(s.sectors_read, 784926);
        assert_eq!(s.writes, 9550688);
        assert_eq!(s.sectors_written, 4382310);
        assert_eq!(s.reads_merged, 0);
    }

    #[test]
    fn tolerates_extra_future_counters_and_rejects_garbage() {
        let line = format!("{LINE_5_5} 7 8 9");
        let s = DiskStats::parse_line(&line).unwrap();
        assert_eq!(s.flush_ticks_ms, Some(106555));
        assert!(DiskStats::parse_line("8 0 sda 1 2 3").is_err());
        assert!(DiskStats::parse_line("8 0 sda 1 2 x 4").is_err());
        assert!(DiskStats::parse_line("8 0").is_err());
    }

    #[test]
    fn delta_counts_512_byte_sectors_and_util() {
        let a = DiskStats::parse_line("8 0 sda 10 0 80 5 20 0 160 7 0 100 12 0 0 0 0 0 0").unwrap();
        let b =
            DiskStats::parse_line("8 0 sda 14 1 112 9 30 2 400 17 2 600 40 1 0 8 2 3 4").unwrap();
        let d = b.delta_since(&a, Duration::from_secs(1));
        assert_eq!(d.read_ios, 4);
        assert_eq!(d.read_merges, 1);
        assert_eq!(d.bytes_read, (112 - 80) * 512);
        assert_eq!(d.write_ios, 10);
        assert_eq!(d.write_merges, 2);
        assert_eq!(d.bytes_written, (400 - 160) * 512);
        assert_eq!(d.write_ticks_ms, 10);
        assert_eq!(d.discard_ios, 1);
        assert_eq!(d.bytes_discarded, 8 * 512);
        assert_eq!(d.flush_ios, 3);
        assert_eq!(d.io_ticks_ms, 500);
        assert_eq!(d.time_in_queue_ms, 28);
        assert_eq!(d.in_flight, 2);
        assert!((d.util() - 0.5).abs() < 1e-12);
        assert!((d.avg_queue_size() - 0.028).abs() < 1e-12);
        assert!((d.write_await_ms() - 1.0).abs() < 1e-12);
        assert!((d.read_await_ms() - 1.0).abs() < 1e-12);
        assert!((d.write_bytes_per_sec() - 240.0 * 512.0).abs() < 1e-9);
        // Busy longer than the interval (clock skew between samples): clamp.
        let d2 = b.delta_since(&a, Duration::from_millis(250));
        assert_eq!(d2.util(), 1.0);
        assert_eq!(b.delta_since(&a, Duration::ZERO).util(), 0.0);
    }

    #[test]
    fn counter_wrap_at_32_bits() {
        assert_eq!(counter_delta(u64::from(u32::MAX) - 1, 3), 5);
        assert_eq!(counter_delta(1 << 40, 7), 7);
        assert_eq!(counter_delta(5, 9), 4);
    }

    #[test]
    fn sampler_yields_interval_deltas_and_totals() {
        let t0 =
            "8 0 sda 10 0 80 5 20 0 160 7 0 100 12 0 0 0 0 0 0\n8 16 sdb 0 0 0 0 0 0 0 0 0 0 0\n";
        let t1 =
            "8 0 sda 11 0 88 5 20 0 160 7 0 150 12 0 0 0 0 0 0\n8 16 sdb 0 0 0 0 5 0 40 0 0 9 9\n";
        let t2 =
            "8 0 sda 13 0 104 5 20 0 160 7 0 150 12 0 0 0 0 0 0\n8 16 sdb 0 0 0 0 6 0 48 0 0 9 9\n";
        let start = Instant::now();
        let snap = snapshot(&["sda".into(), "sdb".into()], t0).unwrap();
        let mut s = Sampler {
            names: vec!["sda".into(), "sdb".into()],
            first: snap.clone(),
            last: snap,
            started: start,
            last_at: start,
        };
        let d1 = s.sample_from(t1, start + Duration::from_secs(1)).unwrap();
        assert_eq!(d1[0].name, "sda");
        assert_eq!(d1[0].read_ios, 1);
        assert_eq!(d1[0].bytes_read, 8 * 512);
        assert_eq!(d1[1].write_ios, 5);
        assert_eq!(d1[1].bytes_written, 40 * 512);
        assert_eq!(d1[0].elapsed, Duration::from_secs(1));
        let d2 = s.sample_from(t2, start + Duration::from_secs(2)).unwrap();
        assert_eq!(d2[0].read_ios, 2);
        assert_eq!(d2[1].write_ios, 1);
        // Summing the interval deltas gives the same as the total.
        let mut acc = d1[1].clone();
        acc.accumulate(&d2[1]);
        let tot = s.since_start();
        assert_eq!(acc, tot[1]);
        assert_eq!(tot[0].read_ios, 3);
        assert_eq!(tot[1].bytes_written, 48 * 512);
        assert_eq!(tot[0].elapsed, Duration::from_secs(2));
        assert!(matches!(
            s.sample_from("8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n", start),
            Err(DiskStatsError::NoSuchDevice(n)) if n == "sdb"
        ));
    }
}
