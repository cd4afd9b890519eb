//! `drivelab report`: one self-contained HTML page (interactive charts,
//! no network) from stored results (by ID, see `drivelab history`) or
//! result JSON files as `drivelab run|test|erase|trace analyze|trace
//! replay --output-format json` printed them. Two or more runs are also
//! compared. The page is `drivelab_report::html`'s; this
//! module reads the inputs and writes the file.

use std::path::{Path, PathBuf};

use clap::Args;
use drivelab_erase::outcome::Summary;
use drivelab_replay::session::{AuditReport, SessionReport};
use drivelab_report::html::{self, Body, Input, Kind};
use drivelab_report::views::{AuditView, EraseView, ReplayView, TestView};
use drivelab_report::RunReport;
use drivelab_steps::result::TestReport;
use serde_json::Value;

use crate::error::usage;
use crate::output::check_file_inputs;

/// Arguments of `drivelab report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Stored result IDs (`17` or `#17`, from `drivelab history`) or result
    /// JSON files (from `--output-format json` of run, test, erase, trace
    /// analyze or trace replay). An existing file wins over an ID.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,
    /// The HTML file to write.
    #[arg(long, value_name = "FILE", required = true)]
    pub html: PathBuf,
}

/// Read one result file: (label, kind, JSON). Bad input names the file and
/// says what was expected.
fn read_input(path: &Path) -> anyhow::Result<Input> {
    let text = drivelab_device::input::read_string(path, drivelab_device::input::Kind::Result)
        .map_err(|e| usage(e.to_string()))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "{} is not JSON ({e}); give a result saved from --output-format json",
            path.display()
        ))
    })?;
    let kind = Kind::detect(&value).ok_or_else(|| {
        usage(format!(
            "{} is not a drivelab result: expected the JSON of run, test, erase, trace analyze, trace replay or trace audit (--output-format json)",
            path.display()
        ))
    })?;
    let body = body(kind, &value).map_err(|why| {
        usage(format!(
            "{} is not a readable {} result: {why}; give a result saved from --output-format json, unchanged",
            path.display(),
            kind.name()
        ))
    })?;
    let label = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    Ok(Input { label, body })
}

/// A result JSON of `kind` read into its type: a run and a trace analysis
/// as their structs (a field that does not fit refuses it), the other
/// kinds through their owners' structs into the page's views, once the
/// owner's `check_stored` finds every field the page draws. The error is
/// one line naming the field.
fn body(kind: Kind, v: &Value) -> Result<Body, String> {
    Ok(match kind {
        Kind::Run => Body::Run(Box::new(
            serde_json::from_value::<RunReport>(v.clone()).map_err(|e| e.to_string())?,
        )),
        Kind::TraceAnalyze => Body::TraceAnalyze(Box::new(
            serde_json::from_value::<drivelab_trace::analyze::Analysis>(v.clone())
                .map_err(|e| e.to_string())?,
        )),
        Kind::Test => {
            TestReport::check_stored(v)?;
            Body::Test(TestView::from(&TestReport::from_stored(v)))
        }
        Kind::Erase => {
            Summary::check_stored(v)?;
            Body::Erase(EraseView::from(&Summary::from_stored(v)))
        }
        Kind::Replay => {
            SessionReport::check_stored(v)?;
            Body::Replay(ReplayView::from(&SessionReport::from_stored(v)))
        }
        Kind::Audit => {
            AuditReport::check_stored(v)?;
            Body::Audit(Box::new(AuditView::from(&AuditReport::from_stored(v))))
        }
    })
}

/// Read one stored result by its ID: its JSON exactly as printed.
fn read_stored(
    store: &mut Option<Box<dyn drivelab_store::Store>>,
    arg: &str,
) -> anyhow::Result<Input> {
    let id = crate::cmd_history::parse_id(arg).map_err(|_| {
        usage(format!(
            "{arg} is neither a file nor a stored result ID: give a result JSON file, or an ID from drivelab history"
        ))
    })?;
    if store.is_none() {
        *store = Some(crate::cmd_store::open()?);
    }
    let Some(s) = store.as_mut() else {
        unreachable!("opened just above")
    };
    let r = s.get(id).map_err(crate::cmd_store::store_error)?;
    let value: Value = serde_json::from_str(&r.result_json)
        .map_err(|e| anyhow::anyhow!("stored result {id} holds no JSON ({e})"))?;
    let kind = Kind::detect(&value)
        .or_else(|| Kind::from_name(r.kind.as_str()))
        .ok_or_else(|| {
            usage(format!(
                "stored result {id} is a {}, which the HTML report does not draw yet",
                r.kind
            ))
        })?;
    let body = body(kind, &value).map_err(|why| {
        anyhow::anyhow!(
            "stored result {id} is not a readable {} result: {why}",
            kind.name()
        )
    })?;
    let label = format!(
        "#{} {} {}",
        r.id,
        r.kind,
        crate::cmd_history::utc(r.time_ms)
    );
    Ok(Input { label, body })
}

/// Run `drivelab report`.
pub fn run(a: ReportArgs) -> anyhow::Result<u8> {
    // The inputs that are files (the others are store IDs) are never the page.
    let files: Vec<&Path> = a
        .inputs
        .iter()
        .map(Path::new)
        .filter(|p| p.exists())
        .collect();
    check_file_inputs(&a.html, "--html", &files)?;
    let mut store = None;
    let inputs = a
        .inputs
        .iter()
        .map(|arg| {
            let p = Path::new(arg);
            if p.exists() {
                read_input(p)
            } else {
                read_stored(&mut store, arg)
            }
        })
        .collect::<anyhow::Result<Vec<Input>>>()?;
    let page = html::render(&inputs);
    drivelab_device::output::Output::new(&a.html)
        .option("--html")
        .inputs(files)
        .write(page.as_bytes())?;
    Ok(0)
}
