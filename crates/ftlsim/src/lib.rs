//! A simulated SSD for drivelab's test harness (issue 14): loop devices and
//! zram do not age, so seasoning, steady-state detection and fresh-vs-used
//! comparisons need a device whose performance depends on its history.
//!
//! - [`ftl`]: a page-mapped flash-translation layer with over-provisioning,
//!   greedy or FIFO garbage collection at a free-block watermark, TRIM and
//!   secure erase, counting write amplification;
//! - [`analytic`]: the literature's write amplification for uniform random
//!   writes, which the model is checked against (`tests/wa_literature.rs`);
//! - [`ssd`]: service times from the flash operations (page read/program,
//!   block erase, parallel units) and an optional fast-write cache;
//! - [`wa`]: the steady-state write-amplification measurement the test and
//!   `bench/ftl-wa` share;
//! - [`media`]: the medium the drive emulators (tcmuemu, nvmeemu) keep
//!   beside their data: the map of unmapped blocks and, when chosen, the
//!   FTL their writes, unmaps and erases go through, with its NAND counts;
//! - [`nbd`]: an NBD server (newstyle fixed handshake and transmission)
//!   that serves the timed model as a block device, sleeping until each
//!   command's model completion time; the `drivelab-ftl-nbd` binary runs
//!   it on a socket or attaches it to `/dev/nbdN` through the kernel's
//!   ioctls.

pub mod analytic;
pub mod error;
pub mod ftl;
pub mod media;
pub mod nbd;
pub mod rng;
pub mod ssd;
pub mod wa;

pub use error::ConfigError;
pub use ftl::{Ftl, FtlConfig, FtlStats, Policy, Work};
pub use media::{BlockMedia, MediaKind, MediaStats, Origin};
pub use ssd::{Ssd, SsdStats, Timing};
