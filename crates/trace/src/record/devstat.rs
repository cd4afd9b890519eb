//! The device's own count of finished requests, which a recording is held
//! against: every request the block layer ends is counted in the device's
//! `/proc/diskstats` line (reads, writes, discards and flushes completed,
//! [`DiskStats::finished`]), whatever any tracepoint reader saw.
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

use std::time::Duration;

use drivelab_device::diskstats::DiskStats;

use crate::model::{split_kernel_dev, Device};

/// How long after attaching the first count is taken: longer than a
/// completion takes from its tracepoint to the device's count.
pub(crate) const SETTLE: Duration = Duration::from_millis(2);

/// The devices' finished requests summed, from one read of
/// `/proc/diskstats`; `None` if it cannot be read or lacks a device.
pub(crate) fn finished_all(devs: &[Device]) -> Option<u64> {
    let all = DiskStats::read_all().ok()?;
    devs.iter()
        .map(|d| {
            let (maj, min) = split_kernel_dev(d.id);
            all.iter()
                .find(|s| (s.major, s.minor) == (maj, min))
                .map(DiskStats::finished)
        })
        .sum()
}
