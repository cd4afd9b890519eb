//! The block layer as the kernel shows it: sysfs and `/proc` reads and the
//! block ioctls that need no command passthrough.
//!
//! - [`blockdev`]: discovery from sysfs (size, sector sizes, model, serial,
//!   limits), holders and mounts.
//! - [`diskstats`]: `/proc/diskstats` parsing and sampling.
//! - [`zero`]: `BLKZEROOUT`, the kernel's zero-out of a byte range.
//! - [`zoned`]: zoned block devices: model and limits from sysfs, the zone
//!   report (`BLKREPORTZONE`) and, through a claim, zone reset/open/close/finish.
//! - [`nbd`]: the kernel NBD client's ioctls, to back `/dev/nbdN` with a
//!   user-space server over a socket pair.
//! - [`uevent`]: the kernel's device events from its netlink socket (no
//!   udev daemon needed).
//! - [`uio`]: a UIO device's shared memory map (the target_core_user
//!   command ring the test harness's SCSI emulator serves).

pub mod blockdev;
pub mod diskstats;
pub mod nbd;
pub mod uevent;
pub mod uio;
pub mod zero;
pub mod zoned;
