//! The I/O engines and the job loop that drives them.
//!
//! - [`gen`]: the offset/operation generator (exact sizes and mixes).
//! - [`rng`]: fast seeded random numbers, permutations, Zipf.
//! - [`engine`]: the small engine interface (queue, commit, reap) and its
//!   implementations: io_uring with registered buffers and files, psync,
//!   null.
//! - [`job`]: one job's loop on one thread: generate, queue, submit, reap,
//!   record latencies, keep to the rate, stop on time or bytes.

pub mod buf;
pub mod clock;
pub mod engine;
pub mod gen;
pub mod io;
pub mod ioloop;
pub mod job;
pub mod rng;
