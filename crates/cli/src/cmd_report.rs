//! `drivelab report`: one self-contained HTML page (interactive charts,
//! no network) from result JSON files as `drivelab run|test|erase|trace
//! analyze|trace replay --output-format json` printed them. Two or more
//! runs are also compared. The page is `drivelab_report::html`'s; this
//! module reads the inputs and writes the file.

use std::path::{Path, PathBuf};

use clap::Args;
use drivelab_report::html::{self, Input, Kind};
use serde_json::Value;

use crate::error::usage;
use crate::output::check_file;

/// Arguments of `drivelab report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Result JSON files (from `--output-format json` of run, test, erase,
    /// trace analyze or trace replay).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(long, value_name = "FILE", required = true)]
    pub html: PathBuf,
}

/// Read one result file: (label, kind, JSON). Bad input names the file and
/// says what was expected.
fn read_input(path: &Path) -> anyhow::Result<Input> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "{} is not JSON ({e}); give a result saved from --output-format json",
            path.display()
        ))
    })?;
    let kind = Kind::detect(&value).ok_or_else(|| {
        usage(format!(
            "{} is not a drivelab result: expected the JSON of run, test, erase, trace analyze or trace replay (--output-format json)",
            path.display()
        ))
    })?;
    let label = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    Ok(Input { label, kind, value })
}

/// Run `drivelab report`.
pub fn run(a: ReportArgs) -> anyhow::Result<u8> {
    check_file(&a.html, "--html")?;
    let inputs = a
        .inputs
        .iter()
        .map(|p| read_input(p))
        .collect::<anyhow::Result<Vec<Input>>>()?;
    let page = html::render(&inputs);
    std::fs::write(&a.html, page)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", a.html.display()))?;
    Ok(0)
}
