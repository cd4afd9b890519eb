//! DMM-style test steps on drivelab's I/O engine: write, read, verify and
//! write-verify over all blocks or a range, in sequential, random or
//! butterfly order, with a data pattern, queue depth, FUA, a stop-on-error
//! policy and retries; run one at a time or as a sequence, each ending in a
//! log entry a DMM user recognises ("TEST 1 of 3 … PASSED").
//!
//! - [`spec`]: the step as the user states it, and the sequence file;
//! - [`target`]: the device or file, its block size, the safety check;
//! - [`layout`]: which transfers, in which order (constant memory);
//! - [`run`]: the step loop on the engine (fill before write, verify after
//!   read, in the registered slot buffers);
//! - [`narrow`]: the exact bad LBAs of a failed command (re-issued in
//!   halves down to single blocks);
//! - [`same`]: the write-same step (SCSI WRITE SAME, SATA SCT Write Same);
//! - [`result`]: the result model (JSON) and the text log;
//! - [`figures`]: a stored result read back, its figures and headline.
//!
//! # Sequence files
//!
//! A sequence file is TOML: an optional top-level `seed` (for every step
//! that sets none; default: chosen at start and printed), then one
//! `[[step]]` table per step, run in order. Keys of a step, all optional
//! except `kind`:
//!
//! | key | values | default |
//! |---|---|---|
//! | `kind` | `write`, `read`, `verify`, `write-verify`, `write-same` | — |
//! | `pattern` | a DMM name (`allzeros`, `incrementing`, …), `random`, `stamped`, `fixed:0xHH…`, `file:PATH` | `incrementing` |
//! | `bs` | transfer length, `64k`, or a range `4k-128k` (k = 1024; whole logical blocks) | `64k` |
//! | `order` | `sequential`, `random`, `butterfly` | `sequential` |
//! | `start` | first LBA (logical blocks) | `0` |
//! | `count` | blocks, or `"all"` (to the end) | `"all"` |
//! | `qd` | queue depth, 1–1024 | `1` |
//! | `fua` | `true` / `false` | `false` |
//! | `on_error` | `stop-test`, `stop-sequence`, `continue` | `stop-test` |
//! | `retries` | retries per failed command | `0` |
//! | `seed` | seed of data, order and lengths | the file's |
//! | `pass` | sequence number written into `stamped` blocks | `1` |
//!
//! ```toml
//! seed = 42
//!
//! [[step]]
//! kind = "write"
//! pattern = "random"
//! bs = "64k"
//!
//! [[step]]
//! kind = "verify"
//! pattern = "random"
//! bs = "4k-128k"
//! order = "butterfly"
//! qd = 8
//!
//! [[step]]
//! kind = "write-verify"
//! pattern = "stamped"
//! order = "random"
//! on_error = "continue"
//! ```

pub mod error;
pub mod figures;
pub mod layout;
pub mod narrow;
pub mod result;
pub mod run;
pub mod same;
pub mod spec;
pub mod target;

pub use error::StepError;
pub use result::{BadRange, Failure, PassResult, Status, StepResult, TestReport};
pub use run::{plan_steps, run_sequence, run_step, StepPlan};
pub use spec::{parse_sequence, Count, OnError, Order, Sequence, StepKind, StepSpec, Transfer};
pub use target::TestTarget;
