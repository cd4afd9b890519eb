//! Everything drivelab knows about block devices, and the only place that
//! issues an ioctl to one.
//!
//! - [`units`]: newtypes for LBAs, block counts, bytes and sector sizes.
//! - [`block`]: the block layer from sysfs, `/proc/diskstats` and block
//!   ioctls: discovery, holders and mounts, I/O counters, zero-out, zones,
//!   the NBD client.
//! - [`claim`]: the only way to get a writable device or file: assessment,
//!   consent and an exclusive hold, in one step; beside it the safety
//!   checks, the alias watch, loop devices, and the only ways a file of
//!   drivelab's own is written ([`output`]) and a user's file is read
//!   ([`input`]).
//! - [`scsi`] (with [`scsi::sg`], the CDB table and sense), [`ata`] (with
//!   [`ata::security`]: ATA SECURITY ERASE UNIT with its temporary
//!   password, never left set), [`nvme`]: command passthrough (SG_IO, SAT
//!   ATA PASS-THROUGH, NVMe admin and I/O ioctls), command builders and
//!   status decoders.
//! - [`health`]: SMART, SCSI log pages, NVMe health and error logs, and
//!   capacity hidden from the host (HPA, AMA, DCO, NVMe namespaces); reads only.
//! - [`caps`]: which commands a device supports, discovered by asking it.
//! - [`bpf`]: the bpf(2) calls a block recorder needs (per-CPU record
//!   rings in mmap'ed arrays, per-CPU counters, raw-tracepoint programs),
//!   no libbpf.
//! - [`passthrough`]: one device command per call (probe, INQUIRY,
//!   IDENTIFY, READ, WRITE SAME, SANITIZE, …) with its answer decoded.

pub mod ata;
pub mod block;
pub mod bpf;
pub mod caps;
pub mod claim;
pub mod health;
pub mod nvme;
pub mod passthrough;
pub mod scsi;
pub mod units;

// The modules under the paths other crates name them by.
pub use ata::security as ata_security;
pub use block::{blockdev, diskstats, nbd, uevent, zero, zoned};
pub use claim::{input, loopdev, output, safety, watch};
pub use scsi::sg;
