//! The I/O engines and the job loop that drives them.
//!
//! - [`gen`]: the offset/operation generator (exact sizes and mixes).
//! - [`rng`]: fast seeded random numbers, permutations, Zipf.
//! - [`engine`]: the small engine interface (queue, commit, reap) and its
//!   implementations: io_uring with registered buffers and files, psync,
//!   null.
//! - [`job`]: one job's loop on one thread: generate, queue, submit, reap,
//!   record latencies, keep to the rate, stop on time or bytes.
//! - [`buf`]: the page-aligned buffer pool the engines do I/O from.
//! - [`clock`]: the monotonic clock and absolute sleeps; calendar dates.
//! - [`sys`]: the other system calls the bench needs (thread CPU time,
//!   timer slack, stop signals), as safe functions.
//!
//! This crate and `drivelab-device` are the only ones allowed `unsafe`;
//! every other crate reaches the system through them.

pub mod buf;
pub mod clock;
pub mod engine;
pub mod gen;
pub mod job;
pub mod rng;
pub mod sys;
