//! Data patterns for drivelab's DMM-style test steps: generation and
//! verification, per logical block.
//!
//! A test step writes a named pattern (`allzeros`, `incrementing`,
//! `random`, …, as DMM names them; plus `fixed:0xHH…`, `file:PATH` and the
//! self-describing `stamped`) and later reads it back and checks it. This
//! crate is that pattern logic and nothing else: no device I/O (it reads a
//! file only for `file:PATH`), no allocation on the hot path, and fill and
//! verify at several GB/s per core so the pattern never limits the drive.
//!
//! ```
//! use drivelab_patterns::{Generator, Pattern};
//!
//! let pattern: Pattern = "stamped".parse()?;
//! let g = Generator::builder(pattern, 4096).seed(42).run_id(1).sequence(1).build()?;
//! let mut buf = vec![0u8; 8 * 4096];
//! g.fill(&mut buf, 1000); // blocks 1000..1008
//! assert!(g.verify(&buf, 1000).is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod generator;
mod miscompare;
mod pattern;
pub mod prng;
mod rng;
pub mod stamp;

pub use error::PatternError;
pub use generator::{Generator, GeneratorBuilder};
pub use miscompare::{Miscompare, MiscompareKind, VerifySummary, WINDOW_LEN};
pub use pattern::{Pattern, MAX_FILE_BYTES, MAX_FIXED_BYTES};
