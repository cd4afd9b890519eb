//! The device check: every run is its own iostat audit.
//!
//! While the jobs run, /proc/diskstats is sampled once a second for every
//! device under a target. At the end, what drivelab says it moved is put
//! beside what the device says it completed, and the verdict says, in
//! words, whether they agree and if not, why not.
//!
//! Rules: bytes agree when the device's count is within 2% of drivelab's;
//! a 1-second sample in which the device completed nothing is "idle". The
//! verdict is `agrees` when bytes agree and no sample was idle.
//!
//! Depth: beside the depth the run asked for (`iodepth` of the jobs on the
//! device) the check puts the device's own time-weighted mean queue depth,
//! diskstats' weighted time in queue over the window (iostat's `aqu-sz`:
//! by Little's law, the mean number of requests the block layer had in
//! flight). The device holds the depth when it saw at least 90% of it
//! ([`DEPTH_TOLERANCE`]). Why 90%: the window runs from the first sample
//! to the last, so it holds the ramp up of the first I/Os, the drain of
//! the last ones and up to a sampler tick of nothing (about 1% of a 10 s
//! run), and an engine that keeps N outstanding 95% of the time (the
//! bench's target on a device of 1 ms or more) averages at least 0.95 N;
//! below 90% something real keeps the queue short. When it does not hold,
//! the verdict names the likely cause: a rate limit, buffered I/O, merged
//! requests, or the engine's turnaround between a completion and the next
//! submission (visible when the device's service time is under 1 ms).

use drivelab_report::DeviceCheck;

/// Tolerance on bytes: 2%.
pub const BYTES_TOLERANCE: f64 = 0.02;

/// The share of the asked depth the device must see on average to hold
/// it: 90% (see the module doc).
pub const DEPTH_TOLERANCE: f64 = 0.9;

/// What drivelab reported for one device.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reported {
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Bytes trimmed.
    pub trim_bytes: u64,
    /// I/Os (all directions, syncs excluded).
    pub ios: u64,
    /// Whether any job used buffered (non-direct) I/O on it.
    pub buffered: bool,
    /// Whether the target is a file on this device (not the device itself).
    pub via_filesystem: bool,
    /// Requests asked in flight on the device (`iodepth` of its jobs; a
    /// job over several devices counts its share on each).
    pub asked_depth: f64,
    /// Whether a rate limit paced a job on it (the queue is then not asked
    /// to stay full).
    pub paced: bool,
}

/// What the device counted over the window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Seen {
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Bytes discarded.
    pub discard_bytes: u64,
    /// I/Os completed (reads + writes + discards).
    pub ios: u64,
    /// Flushes completed (diskstats' flush counter; 0 on kernels before
    /// 5.5, which lack it).
    pub flushes: u64,
    /// Weighted milliseconds in queue (diskstats field 11 delta).
    pub queue_ms: u64,
    /// Milliseconds the completed I/Os took (read + write + discard ticks).
    pub ticks_ms: u64,
    /// Length of the window, ms.
    pub elapsed_ms: f64,
}

/// Decide the verdict. `per_second` holds the device's bytes+I/O counts of
/// each whole 1-second sample (a last sample shorter than half a second is
/// left out by the caller).
pub fn verdict(
    device: &str,
    rep: &Reported,
    seen: &Seen,
    per_second: &[(u64, u64)],
) -> DeviceCheck {
    let reported = rep.read_bytes + rep.write_bytes + rep.trim_bytes;
    let device_bytes = seen.read_bytes + seen.write_bytes + seen.discard_bytes;
    let ratio = if reported == 0 {
        if device_bytes == 0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        device_bytes as f64 / reported as f64
    };
    let idle = per_second.iter().filter(|(_, ios)| *ios == 0).count() as u32;
    let cov = {
        let n = per_second.len() as f64;
        if n < 2.0 {
            0.0
        } else {
            let mean = per_second.iter().map(|(b, _)| *b as f64).sum::<f64>() / n;
            let var = per_second
                .iter()
                .map(|(b, _)| (*b as f64 - mean).powi(2))
                .sum::<f64>()
                / (n - 1.0);
            if mean > 0.0 {
                var.sqrt() / mean
            } else {
                0.0
            }
        }
    };
    let bytes_ok = (ratio - 1.0).abs() <= BYTES_TOLERANCE;
    let mut problems: Vec<String> = Vec::new();
    if !bytes_ok {
        let pct = ratio * 100.0;
        if ratio < 1.0 {
            let reads_short = seen.read_bytes < rep.read_bytes;
            let writes_short = seen.write_bytes < rep.write_bytes;
            if reads_short && rep.buffered {
                problems.push(format!(
                    "the device delivered only {pct:.1}% of the bytes: the rest of the reads were served from the page cache, not the device (buffered I/O); use --direct=1 to measure the device"
                ));
            } else if writes_short && rep.buffered {
                problems.push(format!(
                    "only {pct:.1}% of the bytes reached the device: writes were still in the page cache when the run ended (buffered I/O); use --direct=1 or --fsync to measure the device"
                ));
            } else if reads_short {
                problems.push(format!(
                    "the device delivered only {pct:.1}% of the bytes drivelab counted: some reads never reached it (a cache above the device, or holes in a sparse file that the filesystem answered itself)"
                ));
            } else {
                problems.push(format!(
                    "the device counted only {pct:.1}% of the bytes drivelab reported: some I/O did not reach it"
                ));
            }
        } else if ratio.is_finite() {
            let extra = if rep.via_filesystem {
                "the filesystem added its own I/O (metadata, journal, read-ahead), or other programs used the device during the run"
            } else {
                "other programs used the device during the run, or the kernel read ahead"
            };
            problems.push(format!(
                "the device moved {pct:.1}% of what drivelab reported: {extra}"
            ));
        } else {
            problems.push(
                "the device moved data while drivelab reported none: other programs used it"
                    .to_string(),
            );
        }
    }
    if idle > 0 {
        problems.push(format!(
            "the device completed nothing in {idle} of {} one-second samples: the load did not reach it for part of the run (dead time)",
            per_second.len()
        ));
    }
    let agrees = problems.is_empty();
    let held = depth_verdict(rep, seen);
    let mut verdict = if agrees {
        "agrees".to_string()
    } else {
        problems.join("; ")
    };
    if agrees && rep.ios > 0 && seen.ios > 0 {
        let data_ios = data_ios(rep.ios, seen);
        let r = data_ios as f64 / rep.ios as f64;
        if (r - 1.0).abs() > BYTES_TOLERANCE {
            verdict.push_str(&format!(
                " (bytes agree; the device completed {data_ios} I/Os for drivelab's {}{}: the block layer {} requests)",
                rep.ios,
                if data_ios == seen.ios {
                    String::new()
                } else {
                    format!(", besides {} flushes", seen.ios - data_ios)
                },
                if r < 1.0 { "merged" } else { "split" }
            ));
        }
    }
    DeviceCheck {
        device: device.to_string(),
        reported_bytes: reported,
        device_bytes,
        ratio: if ratio.is_finite() { ratio } else { 0.0 },
        reported_ios: rep.ios,
        device_ios: seen.ios,
        device_flushes: seen.flushes,
        idle_seconds: idle,
        samples: per_second.len() as u32,
        throughput_cov: cov,
        verdict,
        agrees,
        series: Vec::new(),
        asked_depth: rep.asked_depth,
        device_depth: device_depth(seen),
        holds_depth: held.0,
        depth_verdict: held.1,
    }
}

/// The device's I/Os that moved data, to put beside drivelab's `reported`.
/// A sync reaches a block device as a flush: diskstats counts it among its
/// flushes and, on some drivers (loop, for one), also as an empty write. The
/// flushes are taken out of the device's count when that brings it nearer
/// drivelab's, so `fsync=8` is not "the block layer split requests".
fn data_ios(reported: u64, seen: &Seen) -> u64 {
    let without = seen.ios.saturating_sub(seen.flushes);
    if without.abs_diff(reported) < seen.ios.abs_diff(reported) {
        without
    } else {
        seen.ios
    }
}

/// The device's time-weighted mean queue depth over the window (iostat
/// `aqu-sz`); 0 for an empty window.
pub fn device_depth(seen: &Seen) -> f64 {
    if seen.elapsed_ms > 0.0 {
        seen.queue_ms as f64 / seen.elapsed_ms
    } else {
        0.0
    }
}

/// Whether the device held the asked depth, and the verdict in words.
pub fn depth_verdict(rep: &Reported, seen: &Seen) -> (bool, String) {
    let asked = rep.asked_depth;
    let held = device_depth(seen);
    if asked <= 0.0 || rep.ios == 0 {
        return (true, String::new());
    }
    let asked_s = depth_words(asked);
    if held >= asked * DEPTH_TOLERANCE {
        let mut v = format!("holds depth {held:.1} of {asked_s}");
        if held > asked * (1.0 + DEPTH_TOLERANCE_ABOVE) {
            v.push_str(": more than asked, so other programs used the device, or the block layer split requests");
        }
        return (true, v);
    }
    let mut v = format!("device saw only {held:.1} of {asked_s} asked: ");
    let service_ms = if seen.ios > 0 {
        seen.ticks_ms as f64 / seen.ios as f64
    } else {
        0.0
    };
    if rep.paced {
        v.push_str("a rate limit paces the run, so the queue is not kept full");
    } else if rep.buffered {
        v.push_str("buffered I/O: the page cache, not the engine, decides what reaches the device");
    } else if seen.ios > 0 && (seen.ios as f64) < rep.ios as f64 * (1.0 - BYTES_TOLERANCE) {
        v.push_str("the block layer merged requests, so fewer, larger ones were in flight");
    } else {
        v.push_str("the engine does not keep the queue full");
        if service_ms < 1.0 {
            v.push_str(
                " (the device serves an I/O in under 1 ms, so the time from a completion to the next submission is a visible share of each I/O's)",
            );
        }
    }
    (false, v)
}

/// How far above the asked depth the device may go before the verdict
/// says something else used it: 10%.
const DEPTH_TOLERANCE_ABOVE: f64 = 0.1;

/// "32" for a whole depth, "2.5" for a share.
fn depth_words(d: f64) -> String {
    if (d - d.round()).abs() < 1e-9 {
        format!("{}", d.round() as u64)
    } else {
        format!("{d:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(read: u64, write: u64, ios: u64, buffered: bool) -> Reported {
        Reported {
            read_bytes: read,
            write_bytes: write,
            trim_bytes: 0,
            ios,
            buffered,
            via_filesystem: false,
            asked_depth: 0.0,
            paced: false,
        }
    }

    /// A device that completed `ios` I/Os taking `ticks` ms, with `queue`
    /// weighted ms over a 10 s window.
    fn seen_q(ios: u64, ticks: u64, queue: u64) -> Seen {
        Seen {
            read_bytes: ios * 4096,
            ios,
            queue_ms: queue,
            ticks_ms: ticks,
            elapsed_ms: 10_000.0,
            ..Default::default()
        }
    }

    #[test]
    fn flushes_of_fsync_are_not_split_requests() {
        // fsync=8 over 128 writes of 64 KiB: 16 flushes, which the loop
        // driver also counts as empty writes (144 write I/Os).
        let r = rep(0, 128 << 16, 128, false);
        let seen = |ios, flushes| Seen {
            write_bytes: 128 << 16,
            ios,
            flushes,
            ..Default::default()
        };
        for (ios, flushes, want) in [
            (144, 16, "agrees"),
            (128, 16, "agrees"),
            (128, 0, "agrees"),
            (
                144,
                0,
                "agrees (bytes agree; the device completed 144 I/Os for drivelab's 128: the block layer split requests)",
            ),
            (
                176,
                16,
                "agrees (bytes agree; the device completed 160 I/Os for drivelab's 128, besides 16 flushes: the block layer split requests)",
            ),
        ] {
            let c = verdict("loop0", &r, &seen(ios, flushes), &[]);
            assert_eq!(c.verdict, want, "{ios} {flushes}");
            assert_eq!((c.device_ios, c.device_flushes), (ios, flushes));
        }
    }

    #[test]
    fn a_full_queue_holds_depth() {
        let mut r = rep(1000 * 4096, 0, 1000, false);
        r.asked_depth = 32.0;
        let c = verdict("sdb", &r, &seen_q(1000, 316_000, 316_000), &[]);
        assert!((c.device_depth - 31.6).abs() < 1e-9);
        assert_eq!(c.asked_depth, 32.0);
        assert!(c.holds_depth);
        assert_eq!(c.depth_verdict, "holds depth 31.6 of 32");
        // The bytes verdict is unchanged by depth.
        assert!(c.agrees, "{}", c.verdict);
    }

    #[test]
    fn a_short_queue_on_a_fast_device_blames_the_engine() {
        let mut r = rep(100_000 * 4096, 0, 100_000, false);
        r.asked_depth = 4.0;
        // 26,000 weighted ms in 10 s: 2.6 deep; 100k I/Os in 26 s of ticks.
        let c = verdict("loop0", &r, &seen_q(100_000, 26_000, 26_000), &[]);
        assert!(!c.holds_depth);
        assert!(
            c.depth_verdict.starts_with(
                "device saw only 2.6 of 4 asked: the engine does not keep the queue full"
            ),
            "{}",
            c.depth_verdict
        );
        assert!(
            c.depth_verdict.contains("under 1 ms"),
            "{}",
            c.depth_verdict
        );
    }

    #[test]
    fn a_short_queue_under_a_rate_limit_is_the_limit() {
        let mut r = rep(100 * 4096, 0, 100, false);
        r.asked_depth = 8.0;
        r.paced = true;
        let c = verdict("loop0", &r, &seen_q(100, 1000, 1000), &[]);
        assert!(!c.holds_depth);
        assert!(
            c.depth_verdict.contains("rate limit"),
            "{}",
            c.depth_verdict
        );
    }

    #[test]
    fn no_depth_asked_gives_no_depth_verdict() {
        let c = verdict("loop0", &rep(0, 0, 0, false), &Seen::default(), &[]);
        assert_eq!(c.device_depth, 0.0);
        assert!(c.depth_verdict.is_empty());
        assert!(c.holds_depth);
    }

    #[test]
    fn exact_bytes_and_busy_seconds_agree() {
        let c = verdict(
            "loop0",
            &rep(1000, 0, 10, false),
            &Seen {
                read_bytes: 1010,
                ios: 10,
                ..Default::default()
            },
            &[(500, 5), (510, 5)],
        );
        assert!(c.agrees, "{}", c.verdict);
        assert_eq!(c.verdict, "agrees");
        assert!((c.ratio - 1.01).abs() < 1e-9);
    }

    #[test]
    fn page_cache_reads_are_named() {
        let c = verdict(
            "vda",
            &rep(1000, 0, 10, true),
            &Seen {
                read_bytes: 100,
                ios: 1,
                ..Default::default()
            },
            &[(100, 1)],
        );
        assert!(!c.agrees);
        assert!(c.verdict.contains("page cache"), "{}", c.verdict);
    }

    #[test]
    fn idle_seconds_are_dead_time() {
        let c = verdict(
            "loop0",
            &rep(1000, 0, 10, false),
            &Seen {
                read_bytes: 1000,
                ios: 10,
                ..Default::default()
            },
            &[(1000, 10), (0, 0)],
        );
        assert!(!c.agrees);
        assert_eq!(c.idle_seconds, 1);
        assert!(c.verdict.contains("dead time"), "{}", c.verdict);
    }

    #[test]
    fn merging_is_noted_but_bytes_still_agree() {
        let c = verdict(
            "loop0",
            &rep(0, 1 << 20, 256, false),
            &Seen {
                write_bytes: 1 << 20,
                ios: 8,
                ..Default::default()
            },
            &[(1 << 20, 8)],
        );
        assert!(c.agrees);
        assert!(
            c.verdict.starts_with("agrees") && c.verdict.contains("merged"),
            "{}",
            c.verdict
        );
    }

    #[test]
    fn extra_device_traffic_is_explained() {
        let mut r = rep(1000, 0, 10, false);
        r.via_filesystem = true;
        let c = verdict(
            "vda",
            &r,
            &Seen {
                read_bytes: 2000,
                ios: 20,
                ..Default::default()
            },
            &[(2000, 20)],
        );
        assert!(
            !c.agrees && c.verdict.contains("filesystem"),
            "{}",
            c.verdict
        );
    }

    #[test]
    fn cov_of_steady_throughput_is_zero() {
        let c = verdict(
            "d",
            &rep(300, 0, 3, false),
            &Seen {
                read_bytes: 300,
                ios: 3,
                ..Default::default()
            },
            &[(100, 1), (100, 1), (100, 1)],
        );
        assert_eq!(c.throughput_cov, 0.0);
    }
}
