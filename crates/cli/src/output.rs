//! Output options shared by every subcommand: the format and where it goes.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Human-readable text (default).
    #[default]
    Normal,
    /// One JSON document, with fio's field names where fio has one.
    Json,
}

/// `--output-format` and `--output`, flattened into each subcommand.
#[derive(Args, Debug, Clone, Default)]
pub struct OutputArgs {
    /// Output format: normal or json (fio's names).
    #[arg(long = "output-format", value_enum, default_value_t = Format::Normal)]
    pub output_format: Format,
    /// Write the results to FILE instead of standard output.
    #[arg(long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl OutputArgs {
    /// Whether JSON was asked for.
    pub fn json(&self) -> bool {
        self.output_format == Format::Json
    }

    /// Write `text` to the chosen destination (stdout or `--output`).
    pub fn emit(&self, text: &str) -> anyhow::Result<()> {
        match &self.output {
            Some(p) => std::fs::write(p, text)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display())),
            None => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.flush()?;
                Ok(())
            }
        }
    }
}

/// Scan raw arguments for `--output-format json` so that even a parse error
/// is reported as JSON.
pub fn argv_wants_json(argv: &[OsString]) -> bool {
    let mut it = argv.iter().filter_map(|a| a.to_str());
    while let Some(a) = it.next() {
        if a == "--output-format=json" {
            return true;
        }
        if a == "--output-format" && it.next() == Some("json") {
            return true;
        }
    }
    false
}
