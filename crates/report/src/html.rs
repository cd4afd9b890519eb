//! The HTML report: one self-contained page (every script and style
//! inline, nothing fetched; it opens from a USB stick and reads on a
//! phone) over one or more results, each a result JSON as drivelab printed
//! it (`run`, `test`, `erase`, `trace analyze`, `trace replay`, `trace
//! audit`). Each result
//! gets its tables and interactive charts; two or more runs also get
//! comparison charts.
//!
//! Each result comes read into its type ([`Body`]): a run and a trace
//! analysis as their structs, a test, an erase, a replay and an audit as
//! the views of [`crate::views`] that their owning crates fill, so the page
//! reads no field by name.
//!
//! Charts come from the shared plot model (`drivelab_plot`); trace charts
//! are `drivelab_trace::plot::charts`, the same ones `trace analyze --plots`
//! writes as SVG. Markup is written with maud, which escapes every
//! interpolated value unless it is marked pre-escaped: only the chart
//! divisions (escaped by `drivelab_plot::html`) and the fixed style are.

use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde_json::Value;

use drivelab_plot::{format as fmt, nines, Axis, Chart, Series, Unit};

use crate::views::{AuditView, EraseView, ReplayView, StepView, TestView};
use crate::{Exporter, RunReport};

/// The kind of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `drivelab run`.
    Run,
    /// `drivelab test`.
    Test,
    /// `drivelab erase`.
    Erase,
    /// `drivelab trace analyze`.
    TraceAnalyze,
    /// `drivelab trace replay`.
    Replay,
    /// `drivelab trace audit`.
    Audit,
}

impl Kind {
    /// Every kind, in the order named in messages.
    pub const ALL: [Kind; 6] = [
        Kind::Run,
        Kind::Test,
        Kind::Erase,
        Kind::TraceAnalyze,
        Kind::Replay,
        Kind::Audit,
    ];

    /// The kind's name: "run", "test", "erase", "trace-analyze", "replay",
    /// "audit".
    pub fn name(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Test => "test",
            Kind::Erase => "erase",
            Kind::TraceAnalyze => "trace-analyze",
            Kind::Replay => "replay",
            Kind::Audit => "audit",
        }
    }

    /// The kind named `name` (as [`Kind::name`]; "trace analyze",
    /// "analyze", "trace-replay", "trace replay" and "trace audit" are
    /// accepted too).
    pub fn from_name(name: &str) -> Option<Kind> {
        match name
            .trim()
            .to_ascii_lowercase()
            .replace(['_', ' '], "-")
            .as_str()
        {
            "run" => Some(Kind::Run),
            "test" => Some(Kind::Test),
            "erase" => Some(Kind::Erase),
            "trace-analyze" | "analyze" => Some(Kind::TraceAnalyze),
            "replay" | "trace-replay" => Some(Kind::Replay),
            "audit" | "trace-audit" => Some(Kind::Audit),
            _ => None,
        }
    }

    /// Recognise a result JSON by the fields only its kind has.
    pub fn detect(v: &Value) -> Option<Kind> {
        let has = |k: &str| v.get(k).is_some();
        if has("jobs") && has("device_check") {
            Some(Kind::Run)
        } else if has("steps") && has("target") {
            Some(Kind::Test)
        } else if has("drives") && has("strategy") {
            Some(Kind::Erase)
        } else if has("sizes") && has("seek_distance") {
            Some(Kind::TraceAnalyze)
        } else if has("criteria") && has("comparison") && has("replay") {
            Some(Kind::Audit)
        } else if has("score") && has("lateness_ns") {
            Some(Kind::Replay)
        } else {
            None
        }
    }
}

/// A result, read into its type: runs and trace analyses as the structs
/// this crate and the trace crate own, the other kinds as the views of
/// [`crate::views`] that the crates owning them fill.
#[derive(Debug, Clone)]
pub enum Body {
    /// `drivelab run`.
    Run(Box<RunReport>),
    /// `drivelab trace analyze`.
    TraceAnalyze(Box<drivelab_trace::analyze::Analysis>),
    /// `drivelab test`.
    Test(TestView),
    /// `drivelab erase`.
    Erase(EraseView),
    /// `drivelab trace replay`.
    Replay(ReplayView),
    /// `drivelab trace audit`.
    Audit(Box<AuditView>),
}

impl Body {
    /// The kind of result it is.
    pub fn kind(&self) -> Kind {
        match self {
            Body::Run(_) => Kind::Run,
            Body::TraceAnalyze(_) => Kind::TraceAnalyze,
            Body::Test(_) => Kind::Test,
            Body::Erase(_) => Kind::Erase,
            Body::Replay(_) => Kind::Replay,
            Body::Audit(_) => Kind::Audit,
        }
    }
}

/// One result to show.
#[derive(Debug, Clone)]
pub struct Input {
    /// How the page names it (a file name, a store ID).
    pub label: String,
    /// The result, read by its type.
    pub body: Body,
}

/// The page's own style: a single column that narrows to a phone's width,
/// tables that scroll sideways rather than overflow.
const STYLE: &str = r#"<style>
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d1d1d; margin: 0 auto; max-width: 1100px; padding: 0 14px 3em; line-height: 1.4; }
h1 { font-size: 1.6em; margin: 0.8em 0 0.2em; }
h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 2px solid #0072b2; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin: 1.4em 0 0.4em; }
.meta { color: #555; font-size: 0.9em; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.4em 0; }
th, td { padding: 0.25em 0.6em; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
th:first-child, td:first-child, th.text { text-align: left; }
td.text { text-align: left; white-space: normal; min-width: 12em; overflow-wrap: anywhere; }
th { background: #f3f6f9; }
.ok { color: #06702c; font-weight: 600; }
.bad { color: #a00000; font-weight: 600; }
.charts { display: grid; grid-template-columns: minmax(0, 1fr); gap: 0 1.2em; }
.charts > div { min-width: 0; }
@media (min-width: 1000px) { .charts.two { grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); } }
@media (max-width: 600px) { body { padding: 0 8px 2em; } table { font-size: 0.8em; } h1 { font-size: 1.3em; } }
</style>
"#;

/// Render the page for `inputs` (at least one).
pub fn render(inputs: &[Input]) -> String {
    let mut ids = 0usize;
    let mut next_id = move || {
        ids += 1;
        format!("chart-{ids}")
    };
    let runs: Vec<(&str, &RunReport)> = inputs
        .iter()
        .filter_map(|i| match &i.body {
            Body::Run(r) => Some((i.label.as_str(), &**r)),
            _ => None,
        })
        .collect();
    let compare = if runs.len() >= 2 {
        Some(comparison(&runs, &mut next_id))
    } else {
        None
    };
    let sections: Vec<Markup> = inputs.iter().map(|i| section(i, &mut next_id)).collect();
    let title = match inputs {
        [one] => format!("drivelab {} report: {}", one.body.kind().name(), one.label),
        _ => format!("drivelab report: {} results", inputs.len()),
    };
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                (PreEscaped(STYLE))
                (PreEscaped(drivelab_plot::html::head()))
            }
            body {
                ul #errors hidden {}
                h1 { (title) }
                p.meta {
                    "Made by drivelab " (env!("CARGO_PKG_VERSION"))
                    ". Charts: drag across a chart to zoom in, double-click to zoom out; hover (or touch) for values."
                }
                ul {
                    @for i in inputs {
                        li { (i.body.kind().name()) ": " (i.label) @if let Some(t) = when(i) { " — " (t) } }
                    }
                }
                @if let Some(c) = compare { (c) }
                @for s in sections { (s) }
                (PreEscaped(drivelab_plot::html::script()))
            }
        }
    };
    page.into_string()
}

/// The HTML page of one run, as an [`Exporter`].
pub struct Html;

impl Exporter for Html {
    fn render(&self, report: &RunReport) -> String {
        render(&[Input {
            label: "run".into(),
            body: Body::Run(Box::new(report.clone())),
        }])
    }
}

/// When the result was made: a run's time, a test's first step's start.
fn when(i: &Input) -> Option<String> {
    match &i.body {
        Body::Run(r) => Some(r.time.clone()),
        Body::Test(t) => t.steps.first().map(|s| s.started.clone()),
        _ => None,
    }
}

fn chart(c: &Chart, next_id: &mut impl FnMut() -> String) -> Markup {
    PreEscaped(drivelab_plot::html::chart(c, &next_id()))
}

fn section(i: &Input, next_id: &mut impl FnMut() -> String) -> Markup {
    let body = match &i.body {
        Body::Run(r) => run_section(r, next_id),
        Body::TraceAnalyze(a) => trace_section(a, next_id),
        Body::Test(t) => test_section(t, next_id),
        Body::Erase(e) => erase_section(e, next_id),
        Body::Replay(r) => replay_section(r, next_id),
        Body::Audit(a) => audit_section(a, next_id),
    };
    html! {
        section {
            h2 { (i.label) " (" (i.body.kind().name()) ")" }
            (body)
        }
    }
}

// ---------------------------------------------------------------- runs

fn p99(l: &crate::LatReport) -> Option<u64> {
    l.percentile.get(&crate::percentile_key(99.0)).copied()
}

/// The directions of a job that did I/O, named.
fn dirs(j: &crate::JobReport) -> Vec<(&'static str, &crate::DirReport)> {
    j.directions()
        .into_iter()
        .filter(|(_, d)| d.total_ios > 0)
        .collect()
}

/// Each job's and direction's completion latency percentiles.
fn percentile_chart(r: &RunReport) -> Chart {
    let mut pct = Chart::new(
        "Completion latency percentiles",
        Axis::new("percentile", Unit::Number),
        Axis::new("latency", Unit::Ns),
    )
    .nines();
    for j in &r.jobs {
        for (n, d) in dirs(j) {
            let pts: Vec<(f64, f64)> = d
                .clat_ns
                .percentile
                .iter()
                .filter_map(|(k, v)| Some((nines(k.parse::<f64>().ok()?), *v as f64)))
                .collect();
            pct.push(Series::line(format!("{} {n}", j.jobname), pts));
        }
    }
    pct
}

fn run_section(r: &RunReport, next_id: &mut impl FnMut() -> String) -> Markup {
    let mut iops = Chart::new(
        "IOPS per second (drivelab's jobs and the device's own count)",
        Axis::new("time", Unit::Seconds),
        Axis::new("IOPS", Unit::Number),
    );
    let mut bw = Chart::new(
        "Bandwidth per second (drivelab's jobs and the device's own count)",
        Axis::new("time", Unit::Seconds),
        Axis::new("bandwidth", Unit::BytesPerSec),
    );
    let mut lat = Chart::new(
        "Latency per second: mean and 99th percentile (the device's await beside)",
        Axis::new("time", Unit::Seconds),
        Axis::new("latency", Unit::Ns),
    );
    for j in &r.jobs {
        let ts = &j.timeseries;
        iops.push(Series::line(
            format!("{} IOPS", j.jobname),
            ts.iter().map(|p| (p.t_s, p.iops)).collect(),
        ));
        bw.push(Series::line(
            format!("{} bandwidth", j.jobname),
            ts.iter().map(|p| (p.t_s, p.bw_bytes)).collect(),
        ));
        lat.push(Series::line(
            format!("{} mean", j.jobname),
            ts.iter().map(|p| (p.t_s, p.lat_mean_ns)).collect(),
        ));
        lat.push(Series::line(
            format!("{} p99", j.jobname),
            ts.iter().map(|p| (p.t_s, p.lat_p99_ns as f64)).collect(),
        ));
    }
    let mut util = Chart::new(
        "Device utilisation and queue (iostat %util, aqu-sz)",
        Axis::new("time", Unit::Seconds),
        Axis::new("utilisation", Unit::Percent),
    )
    .right_axis(Axis::new("average queue size", Unit::Number));
    for c in &r.device_check {
        let s = &c.series;
        iops.push(Series::line(
            format!("{} (device) IOPS", c.device),
            s.iter().map(|d| (d.t_s, d.r_iops + d.w_iops)).collect(),
        ));
        bw.push(Series::line(
            format!("{} (device) bandwidth", c.device),
            s.iter()
                .map(|d| (d.t_s, d.r_bw_bytes + d.w_bw_bytes))
                .collect(),
        ));
        lat.push(Series::line(
            format!("{} (device) await", c.device),
            s.iter()
                .filter(|d| d.r_iops + d.w_iops > 0.0)
                .map(|d| {
                    let w =
                        (d.r_await_ms * d.r_iops + d.w_await_ms * d.w_iops) / (d.r_iops + d.w_iops);
                    (d.t_s, w * 1e6)
                })
                .collect(),
        ));
        util.push(Series::line(
            format!("{} %util", c.device),
            s.iter().map(|d| (d.t_s, d.util_pct)).collect(),
        ));
        util.push(
            Series::line(
                format!("{} aqu-sz", c.device),
                s.iter().map(|d| (d.t_s, d.aqu_sz)).collect(),
            )
            .on_right(),
        );
    }
    let pct = percentile_chart(r);
    let has = |c: &Chart| c.point_count() > 0;
    html! {
        p.meta {
            (r.time) @if r.interrupted { " — " span.bad { "interrupted" } }
            @if let Some(e) = &r.error { " — " span.bad { (e) } }
        }
        h3 { "Jobs" }
        div.scroll { table {
            tr { th { "job" } th { "dir" } th { "IOPS" } th { "bandwidth" } th { "I/Os" } th { "clat mean" } th { "clat p99" } th { "clat max" } th { "runtime" } th { "engine" } }
            @for j in &r.jobs {
                @for (n, d) in dirs(j) {
                    tr {
                        td { (j.jobname) } td { (n) }
                        td { (fmt(Unit::Number, d.iops)) }
                        td { (fmt(Unit::BytesPerSec, d.bw_bytes as f64)) }
                        td { (d.total_ios) }
                        td { (fmt(Unit::Ns, d.clat_ns.mean)) }
                        td { (p99(&d.clat_ns).map(|v| fmt(Unit::Ns, v as f64)).unwrap_or_default()) }
                        td { (fmt(Unit::Ns, d.clat_ns.max as f64)) }
                        td { (fmt(Unit::Ms, d.runtime as f64)) }
                        td { (j.ioengine) }
                    }
                }
                @if let Some(e) = &j.error_detail { tr { td.text.bad colspan="10" { (j.jobname) ": " (e) } } }
            }
        } }
        h3 { "Device check" }
        @if r.device_check.is_empty() {
            p { "No device was sampled (the targets are not block devices or files on one)." }
        } @else {
            div.scroll { table {
                tr { th { "device" } th.text { "verdict" } th { "reported" } th { "device saw" } th { "ratio" } th { "I/Os reported" } th { "device I/Os" } th { "idle s" } th { "samples" } th { "throughput CoV" } }
                @for c in &r.device_check {
                    tr {
                        td { (c.device) }
                        td.text.ok[c.agrees].bad[!c.agrees] { (c.verdict) }
                        td { (fmt(Unit::Bytes, c.reported_bytes as f64)) }
                        td { (fmt(Unit::Bytes, c.device_bytes as f64)) }
                        td { (format!("{:.4}", c.ratio)) }
                        td { (c.reported_ios) } td { (c.device_ios) }
                        td { (c.idle_seconds) } td { (c.samples) }
                        td { (format!("{:.3}", c.throughput_cov)) }
                    }
                }
            } }
        }
        div.charts.two {
            @if has(&iops) { (chart(&iops, next_id)) }
            @if has(&bw) { (chart(&bw, next_id)) }
            @if has(&lat) { (chart(&lat, next_id)) }
            @if has(&util) { (chart(&util, next_id)) }
            @if has(&pct) { (chart(&pct, next_id)) }
        }
    }
}

fn comparison(runs: &[(&str, &RunReport)], next_id: &mut impl FnMut() -> String) -> Markup {
    let labels: Vec<String> = runs.iter().map(|(l, _)| l.to_string()).collect();
    // Sum over jobs (and directions where it is a rate); latency over the
    // run's I/Os of both directions (mean weighted by I/Os, p99 the larger).
    let sum = |f: &dyn Fn(&RunReport) -> f64| runs.iter().map(|(_, r)| f(r)).collect::<Vec<f64>>();
    let total = |r: &RunReport, g: &dyn Fn(&crate::DirReport) -> f64| {
        r.jobs
            .iter()
            .map(|j| g(&j.read) + g(&j.write) + g(&j.trim))
            .sum::<f64>()
    };
    let metrics: Vec<(&str, &str, Unit, Vec<f64>)> = vec![
        (
            "read IOPS",
            "IOPS",
            Unit::Number,
            sum(&|r| r.jobs.iter().map(|j| j.read.iops).sum()),
        ),
        (
            "write IOPS",
            "IOPS",
            Unit::Number,
            sum(&|r| r.jobs.iter().map(|j| j.write.iops).sum()),
        ),
        (
            "read bandwidth",
            "bandwidth",
            Unit::BytesPerSec,
            sum(&|r| r.jobs.iter().map(|j| j.read.bw_bytes as f64).sum()),
        ),
        (
            "write bandwidth",
            "bandwidth",
            Unit::BytesPerSec,
            sum(&|r| r.jobs.iter().map(|j| j.write.bw_bytes as f64).sum()),
        ),
        (
            "mean completion latency",
            "latency",
            Unit::Ns,
            sum(&|r| {
                let n = total(r, &|d| d.total_ios as f64);
                if n > 0.0 {
                    total(r, &|d| d.clat_ns.mean * d.total_ios as f64) / n
                } else {
                    0.0
                }
            }),
        ),
        (
            "99th percentile completion latency",
            "latency",
            Unit::Ns,
            sum(&|r| {
                r.jobs
                    .iter()
                    .flat_map(|j| [&j.read, &j.write, &j.trim])
                    .filter_map(|d| p99(&d.clat_ns))
                    .max()
                    .unwrap_or(0) as f64
            }),
        ),
    ];
    let bars: Vec<Chart> = metrics
        .into_iter()
        .filter(|(_, _, _, v)| v.iter().any(|x| *x > 0.0))
        .map(|(name, y, unit, v)| {
            Chart::new(name, Axis::new("run", Unit::Number), Axis::new(y, unit))
                .categories(labels.clone())
                .with(Series::bars(name, &v))
        })
        .collect();
    let mut over_iops = Chart::new(
        "IOPS per second, runs overlaid",
        Axis::new("time", Unit::Seconds),
        Axis::new("IOPS", Unit::Number),
    );
    let mut over_p99 = Chart::new(
        "99th percentile latency per second, runs overlaid",
        Axis::new("time", Unit::Seconds),
        Axis::new("latency", Unit::Ns),
    );
    for (l, r) in runs {
        for j in &r.jobs {
            over_iops.push(Series::line(
                format!("{l}: {}", j.jobname),
                j.timeseries.iter().map(|p| (p.t_s, p.iops)).collect(),
            ));
            over_p99.push(Series::line(
                format!("{l}: {}", j.jobname),
                j.timeseries
                    .iter()
                    .map(|p| (p.t_s, p.lat_p99_ns as f64))
                    .collect(),
            ));
        }
    }
    html! {
        section {
            h2 { "Comparison of " (runs.len()) " runs" }
            div.charts.two {
                @for b in &bars { (chart(b, next_id)) }
                @if over_iops.point_count() > 0 { (chart(&over_iops, next_id)) }
                @if over_p99.point_count() > 0 { (chart(&over_p99, next_id)) }
            }
        }
    }
}

// ---------------------------------------------------------------- tests

fn test_section(t: &TestView, next_id: &mut impl FnMut() -> String) -> Markup {
    let steps = &t.steps;
    let step_label = |s: &StepView| format!("{} {}", s.index, s.kind);
    let labels: Vec<String> = steps.iter().map(step_label).collect();
    let thr = Chart::new(
        "Throughput per step",
        Axis::new("step", Unit::Number),
        Axis::new("throughput", Unit::BytesPerSec),
    )
    .categories(labels.clone())
    .with(Series::bars(
        "throughput",
        &steps.iter().map(|s| s.bw_bytes).collect::<Vec<_>>(),
    ));
    let iops = Chart::new(
        "IOPS per step",
        Axis::new("step", Unit::Number),
        Axis::new("IOPS", Unit::Number),
    )
    .categories(labels)
    .with(Series::bars(
        "IOPS",
        &steps.iter().map(|s| s.iops).collect::<Vec<_>>(),
    ));
    let mut pass_labels = Vec::new();
    let mut pass_bw = Vec::new();
    for s in steps {
        for (op, bw) in &s.passes {
            pass_labels.push(format!("{} {op}", s.index));
            pass_bw.push(*bw);
        }
    }
    let passes = Chart::new(
        "Throughput per pass (step, direction)",
        Axis::new("pass", Unit::Number),
        Axis::new("throughput", Unit::BytesPerSec),
    )
    .categories(pass_labels)
    .with(Series::bars("throughput", &pass_bw));
    html! {
        p {
            "Target " b { (t.target) } ", block size " (t.block_size) " B, "
            (t.capacity_blocks) " blocks. Result: "
            @if t.passed { span.ok { "passed" } } @else { span.bad { "failed" } }
        }
        div.scroll { table {
            tr { th { "step" } th { "kind" } th { "type" } th { "order" } th { "pattern" } th { "blocks" } th { "status" } th { "throughput" } th { "IOPS" } th { "clat mean" } th { "I/O errors" } th { "miscompares" } th { "runtime" } }
            @for s in steps {
                @let status = s.status.as_str();
                tr {
                    td { (s.index) "/" (s.of) }
                    td { (s.kind) } td { (s.test_type) } td { (s.order) }
                    td { (s.pattern) } td { (s.block_count) }
                    td.ok[status.eq_ignore_ascii_case("passed")].bad[status.eq_ignore_ascii_case("failed")] { (status) }
                    td { (fmt(Unit::BytesPerSec, s.bw_bytes)) }
                    td { (fmt(Unit::Number, s.iops)) }
                    td { (fmt(Unit::Ns, s.clat_mean_ns)) }
                    td { (s.io_errors) } td { (s.miscompares) }
                    td { (fmt(Unit::Ns, s.runtime_ns as f64)) }
                }
                @if let Some(e) = &s.error { tr { td.text.bad colspan="13" { (e) } } }
            }
        } }
        div.charts.two {
            @if thr.point_count() > 0 { (chart(&thr, next_id)) }
            @if iops.point_count() > 0 { (chart(&iops, next_id)) }
            @if passes.point_count() > 0 { (chart(&passes, next_id)) }
        }
    }
}

// ---------------------------------------------------------------- erase

fn erase_section(e: &EraseView, next_id: &mut impl FnMut() -> String) -> Markup {
    let mut timeline = Chart::new(
        "Per-drive timeline: bytes done in each phase",
        Axis::new("time since the erase started", Unit::Seconds),
        Axis::new("bytes done", Unit::Bytes),
    );
    for d in &e.drives {
        let mut phases: Vec<&str> = Vec::new();
        for (ph, _, _) in &d.timeline {
            let ph = ph.as_str();
            if (ph == "erasing" || ph == "verifying") && !phases.contains(&ph) {
                phases.push(ph);
            }
        }
        for ph in phases {
            timeline.push(Series::line(
                format!("{} {ph}", d.device),
                d.timeline
                    .iter()
                    .filter(|(p, _, _)| p == ph)
                    .map(|(_, t_s, done)| (*t_s, *done as f64))
                    .collect(),
            ));
        }
    }
    html! {
        p {
            "Strategy " (e.strategy) ", pattern " (e.pattern) ", verification " (e.verify)
            ": " (fmt(Unit::Bytes, e.total_bytes as f64)) " in " (fmt(Unit::Seconds, e.complete_seconds))
            " (" (format!("{:.1}", e.aggregate_mb_per_s)) " MB/s over all drives)."
        }
        h3 { "Certificates" }
        div.scroll { table {
            tr { th { "device" } th { "serial" } th { "method" } th { "result" } th { "bytes" } th { "MB/s" } th { "erase" } th { "verify" } th.text { "verification" } th { "exceptions" } th.text { "certificate" } }
            @for d in &e.drives {
                @let result = d.result.as_str();
                tr {
                    td { (d.device) }
                    td { (d.serial) }
                    td { (d.method) }
                    td.ok[result == "erased"].bad[result == "failed" || result == "stopped"] { (result) }
                    td { (fmt(Unit::Bytes, d.bytes as f64)) }
                    td { (format!("{:.1}", d.mb_per_s)) }
                    td { (fmt(Unit::Seconds, d.erase_seconds)) }
                    td { (fmt(Unit::Seconds, d.verify_seconds)) }
                    td.text { (d.verification) }
                    td { (d.exceptions) }
                    td.text { (d.certificate) }
                }
                @if let Some(err) = &d.error { tr { td.text.bad colspan="11" { (err) } } }
            }
        } }
        @if timeline.point_count() > 0 { div.charts { (chart(&timeline, next_id)) } }
        @else { p.meta { "This erase result has no per-drive timeline (made by an older drivelab)." } }
    }
}

// ---------------------------------------------------------------- traces

fn trace_section(
    a: &drivelab_trace::analyze::Analysis,
    next_id: &mut impl FnMut() -> String,
) -> Markup {
    let charts: Vec<Chart> = drivelab_trace::plot::charts(a)
        .into_iter()
        .map(|(_, c)| c)
        .filter(|c| c.point_count() > 0)
        .collect();
    let thr = Chart::new(
        format!(
            "Throughput over time ({} s intervals)",
            a.throughput.interval_s
        ),
        Axis::new("time", Unit::Seconds),
        Axis::new("throughput", Unit::BytesPerSec),
    )
    .with(Series::line(
        "read",
        a.throughput
            .points
            .iter()
            .map(|p| {
                (
                    p.t_s,
                    p.bytes_read as f64 / a.throughput.interval_s.max(1) as f64,
                )
            })
            .collect(),
    ))
    .with(Series::line(
        "write",
        a.throughput
            .points
            .iter()
            .map(|p| {
                (
                    p.t_s,
                    p.bytes_written as f64 / a.throughput.interval_s.max(1) as f64,
                )
            })
            .collect(),
    ));
    let st = &a.service_time_ns;
    let ns = |v: Option<u64>| {
        v.map(|x| fmt(Unit::Ns, x as f64))
            .unwrap_or_else(|| "–".into())
    };
    html! {
        div.scroll { table {
            tr { th { "requests" } th { "reads" } th { "writes" } th { "trims" } th { "flushes" } th { "read" } th { "written" } th { "duration" } th { "IOPS" } th { "mean size" } th { "mean queue depth" } }
            tr {
                td { (a.requests) } td { (a.reads) } td { (a.writes) } td { (a.trims) } td { (a.flushes) }
                td { (fmt(Unit::Bytes, a.bytes_read as f64)) } td { (fmt(Unit::Bytes, a.bytes_written as f64)) }
                td { (fmt(Unit::Seconds, a.duration_s)) } td { (fmt(Unit::Number, a.iops)) }
                td { (fmt(Unit::Bytes, a.mean_size_bytes)) }
                td { (a.queue_depth_mean.map(|q| fmt(Unit::Number, q)).unwrap_or_else(|| "–".into())) }
            }
        } }
        div.scroll { table {
            tr { th { "service time" } th { "count" } th { "mean" } th { "min" } th { "p50" } th { "p90" } th { "p99" } th { "max" } }
            tr {
                td { "complete − issue" } td { (st.count) }
                td { (st.mean.map(|m| fmt(Unit::Ns, m)).unwrap_or_else(|| "–".into())) }
                td { (ns(st.min)) } td { (ns(st.p50)) } td { (ns(st.p90)) } td { (ns(st.p99)) } td { (ns(st.max)) }
            }
        } }
        @if st.count == 0 { p.meta { "The trace has no completion times: no queue-depth or service-time distributions." } }
        div.charts.two {
            @for c in &charts { (chart(c, next_id)) }
            @if thr.point_count() > 0 { (chart(&thr, next_id)) }
        }
    }
}

// ---------------------------------------------------------------- replay

fn replay_section(r: &ReplayView, next_id: &mut impl FnMut() -> String) -> Markup {
    let mut pct = Chart::new(
        "Service time and lateness percentiles",
        Axis::new("percentile", Unit::Number),
        Axis::new("time", Unit::Ns),
    )
    .nines();
    for (d, label) in [
        (&r.service_time_ns, "service time"),
        (&r.lateness_ns, "lateness"),
    ] {
        let pts: Vec<(f64, f64)> = [(50.0, d.p50), (90.0, d.p90), (99.0, d.p99), (99.9, d.p999)]
            .iter()
            .filter(|_| d.count > 0)
            .map(|(p, ns)| (nines(*p), *ns as f64))
            .collect();
        pct.push(Series::line(label, pts));
    }
    html! {
        div.scroll { table {
            @for (k, x) in &r.fields {
                tr { td { (k) } td.text { (x) } }
            }
            tr { td { "score (head-to-head)" } td.text { (match &r.score_withheld {
                Some(why) => format!("none: {why}"),
                None => format!("{:.3} ms, {:.1} IOPS", r.head_to_head_ms, r.iops),
            }) } }
        } }
        @if pct.point_count() > 0 { div.charts { (chart(&pct, next_id)) } }
    }
}

// ---------------------------------------------------------------- audit

/// A `trace audit`: the verdict, each criterion with its figure, the
/// replay's own figures, and the original against the replay in charts
/// (queue depth over time, service-time CDF, the distributions).
fn audit_section(a: &AuditView, next_id: &mut impl FnMut() -> String) -> Markup {
    let original = a
        .original_iops
        .map(|x| format!("{x:.2} IO/s ({})", a.original_iops_from))
        .unwrap_or_else(|| "unknown".into());
    html! {
        p {
            "Verdict: "
            @if a.pass { span.ok { "PASS" } } @else { span.bad { "FAIL" } }
            " — the recording of the replay of " (a.replay.trace) " on " (a.replay.target)
            " against the trace (original: " (original) ")."
        }
        div.scroll { table {
            tr { th { "verdict" } th.text { "criterion" } th.text { "figure" } th.text { "limit" } }
            @for c in &a.criteria {
                tr {
                    td {
                        @match c.pass {
                            Some(true) => span.ok { "PASS" },
                            Some(false) => span.bad { "FAIL" },
                            None => span { "n/a" },
                        }
                    }
                    td.text { (c.name) } td.text { (c.figure) } td.text { (c.limit) }
                }
            }
        } }
        h3 { "The replay" }
        (replay_section(&a.replay, next_id))
        h3 { "Original against replay" }
        div.charts.two {
            @for (_, ch) in drivelab_trace::plot::audit_charts(&a.comparison) {
                @if ch.point_count() > 0 { (chart(&ch, next_id)) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DeviceCheck, DeviceSecond, JobReport, SeriesPoint};

    fn run(label: &str, jobname: &str, iops: f64) -> Input {
        let mut j = JobReport {
            jobname: jobname.into(),
            ..Default::default()
        };
        j.read.total_ios = 100;
        j.read.iops = iops;
        j.read
            .clat_ns
            .percentile
            .insert(crate::percentile_key(50.0), 1000);
        j.read
            .clat_ns
            .percentile
            .insert(crate::percentile_key(99.0), 5000);
        j.timeseries = (0..3)
            .map(|i| SeriesPoint {
                t_s: f64::from(i),
                iops,
                bw_bytes: iops * 4096.0,
                lat_mean_ns: 900.0,
                lat_p99_ns: 5000,
            })
            .collect();
        let r = RunReport {
            time: "<b>now</b>".into(),
            jobs: vec![j],
            device_check: vec![DeviceCheck {
                device: "loop9".into(),
                verdict: "agrees".into(),
                agrees: true,
                series: (0..3)
                    .map(|i| DeviceSecond {
                        t_s: f64::from(i) + 0.01,
                        r_iops: iops,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let value = serde_json::to_value(&r).unwrap();
        assert_eq!(Kind::detect(&value), Some(Kind::Run));
        Input {
            label: label.into(),
            body: Body::Run(Box::new(r)),
        }
    }

    /// The step status is worded as the result JSON holds it ("PASSED"):
    /// a passed step is marked ok and a failed one bad.
    #[test]
    fn a_test_steps_status_is_coloured_as_passed_or_failed() {
        let step = |status: &str| crate::views::StepView {
            index: 1,
            of: 2,
            status: status.into(),
            ..Default::default()
        };
        let page = render(&[Input {
            label: "t".into(),
            body: Body::Test(TestView {
                target: "loop9".into(),
                steps: vec![step("PASSED"), step("FAILED")],
                ..Default::default()
            }),
        }]);
        assert!(page.contains("ok\">PASSED</td>"), "PASSED not marked ok");
        assert!(page.contains("bad\">FAILED</td>"), "FAILED not marked bad");
    }

    #[test]
    fn every_string_from_a_result_is_escaped() {
        let page = render(&[run(
            "<script>x</script>",
            "<img src=x onerror=alert(1)>",
            10.0,
        )]);
        assert!(!page.contains("could not be read"));
        assert!(!page.contains("<img src=x"), "job name not escaped");
        assert!(!page.contains("<script>x</script>"), "label not escaped");
        assert!(!page.contains("<b>now</b>"));
        assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
        // Self-contained: nothing is loaded from elsewhere.
        assert!(!page.contains("src=\"http") && !page.contains("href=\"http"));
        assert!(page.contains("name=\"viewport\""));
    }

    #[test]
    fn a_run_has_its_series_overlaid_and_two_runs_are_compared() {
        let page = render(&[run("a", "j", 10.0)]);
        // IOPS, bandwidth, latency, utilisation, percentiles.
        assert_eq!(page.matches(" data-expect=").count(), 5);
        // IOPS: 3 engine points and 3 device points.
        assert!(page.contains("data-expect=\"6\""));
        let two = render(&[run("a", "j", 10.0), run("b", "j", 20.0)]);
        assert!(two.contains("Comparison of 2 runs"));
        // read IOPS bars, mean (0) left out, p99 bars, two overlays; then 5 per run.
        assert_eq!(two.matches(" data-expect=").count(), 4 + 10);
    }

    #[test]
    fn kinds_are_recognised_by_their_fields_and_names() {
        assert_eq!(
            Kind::detect(&serde_json::json!({"steps": [], "target": "x"})),
            Some(Kind::Test)
        );
        assert_eq!(
            Kind::detect(&serde_json::json!({"drives": [], "strategy": "parallel"})),
            Some(Kind::Erase)
        );
        assert_eq!(
            Kind::detect(&serde_json::json!({"sizes": [], "seek_distance": {}})),
            Some(Kind::TraceAnalyze)
        );
        assert_eq!(
            Kind::detect(&serde_json::json!({"score": {}, "lateness_ns": {}})),
            Some(Kind::Replay)
        );
        // An audit carries a replay (with its score) under "replay".
        assert_eq!(
            Kind::detect(
                &serde_json::json!({"criteria": [], "comparison": {}, "replay": {"score": {}, "lateness_ns": {}}})
            ),
            Some(Kind::Audit)
        );
        assert_eq!(Kind::from_name("trace audit"), Some(Kind::Audit));
        assert_eq!(Kind::detect(&serde_json::json!({"what": 1})), None);
        for k in Kind::ALL {
            assert_eq!(Kind::from_name(k.name()), Some(k));
        }
        assert_eq!(Kind::from_name("trace analyze"), Some(Kind::TraceAnalyze));
    }
}
