//! The device's own count of finished requests, which a recording is held
//! against: every request the block layer ends is counted in
//! `/sys/dev/block/MAJ:MIN/stat` (reads, writes, discards and flushes
//! completed: fields 1, 5, 12 and 15, the last two on kernels that have
//! them), whatever any tracepoint reader saw.
//!
//! The recorder reads the count once its readers are live and again when
//! it is asked to stop, before it detaches. Every request the device
//! counted in between ended while the recorder was attached (the kernel
//! fires the completion tracepoint before it counts a request, or within
//! microseconds after, and the recorder waits [`SETTLE`] past attaching
//! before its first read), so a recording that saw fewer completions than
//! the device counted in that window missed that many. Completions seen
//! outside the window only make the recording's side larger: the check
//! can miss a loss at the edges, never report one that did not happen.

use std::path::PathBuf;
use std::time::Duration;

use crate::model::{split_kernel_dev, Device};

/// How long after attaching the first count is taken: longer than a
/// completion takes from its tracepoint to the device's count.
pub(crate) const SETTLE: Duration = Duration::from_millis(2);

/// Requests the device `maj:min` has finished since boot (reads, writes,
/// discards, flushes); `None` when its `stat` cannot be read or parsed.
pub(crate) fn finished(maj: u32, min: u32) -> Option<u64> {
    let p = PathBuf::from(format!("/sys/dev/block/{maj}:{min}/stat"));
    parse(&std::fs::read_to_string(p).ok()?)
}

/// The finished requests in one `stat` line (`Documentation/block/stat.rst`:
/// read I/Os first, write I/Os fifth, discard I/Os twelfth, flush I/Os
/// fifteenth).
fn parse(line: &str) -> Option<u64> {
    let f: Vec<u64> = line
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    if f.len() < 11 {
        return None;
    }
    Some([0, 4, 11, 14].iter().filter_map(|&i| f.get(i)).sum())
}

/// The devices' finished requests summed; `None` if any cannot be read.
pub(crate) fn finished_all(devs: &[Device]) -> Option<u64> {
    devs.iter()
        .map(|d| {
            let (maj, min) = split_kernel_dev(d.id);
            finished(maj, min)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_counts_reads_writes_discards_and_flushes() {
        // 17 fields (5.5 and later): 10 reads, 20 writes, 3 discards, 4 flushes.
        let l = "10 0 80 5 20 0 160 9 0 12 14 3 0 24 4 1 2\n";
        assert_eq!(parse(l), Some(10 + 20 + 3 + 4));
        // 11 fields (before 4.18): reads and writes only.
        assert_eq!(parse("7 0 56 1 9 0 72 2 0 3 3"), Some(16));
        assert_eq!(parse("7 0 56"), None);
        assert_eq!(parse("not a stat line at all, eleven words long ok"), None);
    }

    #[test]
    fn the_running_kernels_devices_have_counts() {
        // Every machine has a block device or none at all; any it has
        // must parse (the format is the kernel's, not ours).
        let Ok(rd) = std::fs::read_dir("/sys/dev/block") else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some((maj, min)) = name.split_once(':') else {
                continue;
            };
            let (maj, min) = (maj.parse().unwrap(), min.parse().unwrap());
            assert!(finished(maj, min).is_some(), "{name}: stat unreadable");
        }
    }
}
