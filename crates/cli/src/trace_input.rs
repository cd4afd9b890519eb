//! How a trace is read: the flags `trace analyze` and `trace replay` share,
//! and the format names every trace subcommand takes.

use clap::Args;
use drivelab_trace::{Format, ReadOptions};

use crate::error::usage;

/// Input options shared by the commands that read traces.
#[derive(Args, Debug, Clone)]
pub struct InputArgs {
    /// Trace format: auto (detect from content), native, blkparse, fio,
    /// msr, spc, mqsim, vscsi1, vscsi2.
    #[arg(long, value_name = "FMT", default_value = "auto")]
    pub format: String,
    /// Skip and count malformed lines instead of stopping at the first.
    #[arg(long)]
    pub lenient: bool,
    /// blkparse: build requests from Q (queue) events instead of D (issue).
    #[arg(long)]
    pub use_queue: bool,
}

impl InputArgs {
    /// The reader options these flags ask for.
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions {
            lenient: self.lenient,
            use_queue: self.use_queue,
        }
    }
}

/// A format name: `None` for "auto" (detect from the content).
pub fn parse_format(s: &str) -> anyhow::Result<Option<Format>> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    Format::from_name(s)
        .map(Some)
        .map_err(|e| usage(e.to_string()))
}
