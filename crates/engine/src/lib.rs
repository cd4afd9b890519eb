//! The I/O engines, their buffers, the clock, and the one I/O loop that
//! every data-moving subcommand runs through.
//!
//! - [`io`]: what one I/O is ([`io::IoDesc`], [`io::Op`]).
//! - [`engine`]: the small engine interface (queue, commit, reap), the
//!   [`target::Target`] an engine does I/O on (built only from a device
//!   claim or a read-only open), under the names other crates use.
//! - [`engines`]: the engines, one file each: io_uring with registered
//!   buffers and files, psync, null, fio's sg, io_uring_cmd, filesystem
//!   and e4defrag engines, and the one-operation-per-I/O shape they share.
//! - [`openset`]: fio's `openfiles`: a job's files opened and closed as
//!   its open set moves, through their claimed file set.
//! - [`buf`]: page-aligned buffer pools, allocated once.
//! - [`ioloop`]: the submission loop: slots, batching, clock reads,
//!   deadlines, rate limits, stall accounting; callers are drivers.
//! - [`clock`]: the monotonic clock, absolute sleeps, civil dates.
//! - [`narrow`]: narrowing a failed command down to its failing blocks
//!   (exact LBAs of medium errors), with aligned scratch for O_DIRECT.
//! - [`sys`]: the other system calls the bench needs (thread CPU time,
//!   timer slack, stop signals), as safe functions.
//!
//! This crate and `drivelab-device` are the only ones allowed `unsafe`;
//! every other crate reaches the system through them.

pub mod buf;
pub mod clock;
pub mod engine;
pub mod engines;
pub mod io;
pub mod ioloop;
pub mod narrow;
pub mod openset;
pub mod sched;
pub mod sys;
pub mod target;

// The engines' modules under the paths other crates name them by.
pub use engines::{e4defrag, fileops, oneshot, sg, ucmd};
