//! Everything drivelab knows about block devices, and the only place that
//! issues an ioctl to one.
//!
//! - [`units`]: newtypes for LBAs, block counts, bytes and sector sizes.
//! - [`blockdev`]: discovery from sysfs (size, sector sizes, model, serial,
//!   limits), holders and mounts.
//! - [`diskstats`]: `/proc/diskstats` parsing and sampling.
//! - [`safety`]: the checks that decide whether a device may be written.
//! - [`claim`]: the only way to get a writable device or file: assessment,
//!   consent and an exclusive hold, in one step.
//! - [`input`]: the only way a user's file is read: a regular file, read
//!   up to the bound of its kind (job file, certificate, trace, …).
//! - [`watch`]: every live claim watched for aliases that appear while it
//!   is written (a loop device attached over the same bytes).
//! - [`loopdev`]: loop devices as windows onto a backing file's bytes, so
//!   aliases of one another can be found.
//! - [`output`]: the only way to write a file of drivelab's own (results,
//!   logs, stores, certificates, journals): refuses devices, loop backing
//!   files, swap, locked files and the command's inputs, and replaces a
//!   file atomically.
//! - [`sg`], [`scsi`], [`ata`], [`nvme`]: command passthrough (SG_IO, SAT ATA
//!   PASS-THROUGH, NVMe admin and I/O ioctls), command builders and status
//!   decoders; [`ata_security`]: ATA SECURITY ERASE UNIT with its temporary
//!   password, never left set.
//! - [`health`]: SMART, SCSI log pages, NVMe health and error logs, and
//!   capacity hidden from the host (HPA, AMA, DCO, NVMe namespaces); reads only.
//! - [`caps`]: which commands a device supports, discovered by asking it.
//! - [`passthrough`]: one device command per call (probe, INQUIRY,
//!   IDENTIFY, READ, WRITE SAME, SANITIZE, …) with its answer decoded.
//! - [`nbd`]: the kernel NBD client's ioctls, to back `/dev/nbdN` with a
//!   user-space server over a socket pair.
//! - [`zero`]: `BLKZEROOUT`, the kernel's zero-out of a byte range.
//! - [`zoned`]: zoned block devices: model and limits from sysfs, the zone
//!   report (`BLKREPORTZONE`) and, through a claim, zone reset/open/close/finish.

pub mod ata;
pub mod ata_security;
pub mod blockdev;
pub mod caps;
pub mod claim;
pub mod diskstats;
pub mod health;
pub mod input;
pub mod loopdev;
pub mod nbd;
pub mod nvme;
pub mod output;
pub mod passthrough;
pub mod safety;
pub mod scsi;
pub mod sg;
pub mod units;
pub mod watch;
pub mod zero;
pub mod zoned;
