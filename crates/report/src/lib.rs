//! Results and how they are shown: one serde struct ([`model::RunReport`])
//! and exporters over it (human text shaped like fio's, JSON with fio's
//! field names, a self-contained HTML page with interactive charts, which
//! also shows the other kinds of result: see [`html`]). Nothing here
//! measures anything.

pub mod html;
pub mod jsonplus;
pub mod metrics;
pub mod model;
pub mod stored;
pub mod terse;
pub mod text;
pub mod views;

pub use model::*;

/// An output format over the one result struct.
pub trait Exporter {
    /// Render the report.
    fn render(&self, report: &RunReport) -> String;
}

/// JSON, pretty-printed, with fio's field names (no latency `bins`).
pub struct Json;

fn to_json(report: &RunReport) -> String {
    // Serialising plain data structs with string keys cannot fail.
    let mut s = serde_json::to_string_pretty(report).unwrap_or_else(|e| {
        serde_json::json!({ "error": format!("cannot serialise the report: {e}") }).to_string()
    });
    s.push('\n');
    s
}

impl Exporter for Json {
    fn render(&self, report: &RunReport) -> String {
        to_json(&jsonplus::without_bins(report))
    }
}

/// fio's `json+`: the JSON with each completion latency histogram as
/// `bins` in fio's buckets (see [`jsonplus`]).
pub struct JsonPlus;

impl Exporter for JsonPlus {
    fn render(&self, report: &RunReport) -> String {
        to_json(report)
    }
}

/// fio's terse v3 lines (see [`terse`]).
pub struct Terse;

impl Exporter for Terse {
    fn render(&self, report: &RunReport) -> String {
        terse::render(report)
    }
}

/// Human-readable text shaped like fio's normal output.
pub struct Text;

impl Exporter for Text {
    fn render(&self, report: &RunReport) -> String {
        text::render(report)
    }
}

/// fio's key for a percentile: six decimals ("99.000000").
pub fn percentile_key(p: f64) -> String {
    format!("{p:.6}")
}
