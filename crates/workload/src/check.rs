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

use drivelab_report::DeviceCheck;

/// Tolerance on bytes: 2%.
pub const BYTES_TOLERANCE: f64 = 0.02;

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
    let mut verdict = if agrees {
        "agrees".to_string()
    } else {
        problems.join("; ")
    };
    if agrees && rep.ios > 0 && seen.ios > 0 {
        let r = seen.ios as f64 / rep.ios as f64;
        if (r - 1.0).abs() > BYTES_TOLERANCE {
            verdict.push_str(&format!(
                " (bytes agree; the device completed {} I/Os for drivelab's {}: the block layer {} requests)",
                seen.ios,
                rep.ios,
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
        idle_seconds: idle,
        samples: per_second.len() as u32,
        throughput_cov: cov,
        verdict,
        agrees,
        series: Vec::new(),
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
        }
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
