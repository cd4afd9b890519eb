//! The I/O engines, their buffers, the clock, and the one I/O loop that
//! every data-moving subcommand runs through.
//!
//! - [`io`]: what one I/O is ([`io::IoDesc`], [`io::Op`]).
//! - [`engine`]: the small engine interface (queue, commit, reap) and its
//!   implementations: io_uring with registered buffers and files, psync,
//!   null; targets built only from a device claim or a read-only open.
//! - [`fileops`]: fio's filesystem engines (filecreate, filestat,
//!   filedelete, their directory twins, ftruncate, falloc): one file
//!   operation per I/O.
//! - [`e4defrag`]: fio's e4defrag engine: each write an ext4
//!   `EXT4_IOC_MOVE_EXT` moving a donor file's blocks under the target.
//! - [`oneshot`]: the engine shape of the synchronous engines above (and
//!   the net engine): one operation per I/O, at depth 1, written once.
//! - [`openset`]: fio's `openfiles`: a job's files opened and closed as
//!   its open set moves, through their claimed file set.
//! - [`buf`]: page-aligned buffer pools, allocated once.
//! - [`ioloop`]: the submission loop: slots, batching, clock reads,
//!   deadlines, rate limits, stall accounting; callers are drivers.
//! - [`clock`]: the monotonic clock, absolute sleeps, civil dates.
//! - [`narrow`]: narrowing a failed command down to its failing blocks
//!   (exact LBAs of medium errors), with aligned scratch for O_DIRECT.
//! - [`sg`]: fio's `sg` engine: each I/O one SCSI command through SG_IO,
//!   with fio's `sg_write_mode`s (WRITE SAME, VERIFY with BYTCHK, ...).
//! - [`ucmd`]: fio's `io_uring_cmd` engine: each I/O one NVMe Read or
//!   Write sent through io_uring passthrough to /dev/ngXnY.
//! - [`sys`]: the other system calls the bench needs (thread CPU time,
//!   timer slack, stop signals), as safe functions.
//!
//! This crate and `drivelab-device` are the only ones allowed `unsafe`;
//! every other crate reaches the system through them.

pub mod buf;
pub mod clock;
pub mod e4defrag;
pub mod engine;
pub mod fileops;
pub mod io;
pub mod ioloop;
pub mod narrow;
pub mod oneshot;
pub mod openset;
pub mod sched;
pub mod sg;
pub mod sys;
pub mod ucmd;
