//! The season's charts, on the shared plot model (so the HTML report can
//! draw the same ones): PTS convergence (IOPS per round), the steady-state
//! window with its average, ±20 % band and best-fit slope line, fresh vs
//! used bars, and the whole-drive write series with its cliff. [`write`]
//! renders them as SVG files.

use std::path::{Path, PathBuf};

use drivelab_plot::{Axis, Chart, Series, Unit};

use crate::result::DriveSeason;
use crate::SeasonError;

/// Every chart that a drive's result has data for, each with a file stem.
pub fn charts(d: &DriveSeason) -> Vec<(&'static str, Chart)> {
    let mut out = Vec::new();
    let ios: Vec<(f64, f64)> = d
        .rounds
        .iter()
        .map(|r| (r.round as f64, r.metrics.iops))
        .collect();
    if !ios.is_empty() {
        let mut c = Chart::new(
            format!("{}: PTS convergence", d.identity.device),
            Axis::new("round", Unit::Number),
            Axis::new("IOPS", Unit::Number),
        )
        .with(Series::line("IOPS per round", ios.clone()));
        if let Some(w) = d.steady_state.as_ref().and_then(|v| v.window.as_ref()) {
            let avg = w.average;
            let (a, b) = (w.first_round as f64, w.last_round as f64);
            c.push(Series::line("window average", vec![(a, avg), (b, avg)]).color("#009e73"));
        }
        out.push(("convergence", c));
    }
    if let Some(w) = d.steady_state.as_ref().and_then(|v| v.window.as_ref()) {
        let (a, b) = (w.first_round as f64, w.last_round as f64);
        let pts: Vec<(f64, f64)> = w
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| (a + i as f64, *v))
            .collect();
        let band = w.data_excursion_limit / 2.0;
        let line = |x: f64| w.intercept + w.slope * (x - a);
        let c = Chart::new(
            format!(
                "{}: steady-state window, rounds {}-{}",
                d.identity.device, w.first_round, w.last_round
            ),
            Axis::new("round", Unit::Number),
            Axis::new("IOPS", Unit::Number),
        )
        .with(Series::points("IOPS", pts).color("#0072b2"))
        .with(Series::line("average", vec![(a, w.average), (b, w.average)]).color("#000000"))
        .with(
            Series::line(
                "average +10% (band: 20% of the average)",
                vec![(a, w.average + band), (b, w.average + band)],
            )
            .color("#999999"),
        )
        .with(
            Series::line(
                "average -10%",
                vec![(a, w.average - band), (b, w.average - band)],
            )
            .color("#999999"),
        )
        .with(Series::line("best-fit slope", vec![(a, line(a)), (b, line(b))]).color("#d55e00"));
        out.push(("steady-window", c));
    }
    if let Some(cmp) = &d.compare {
        if !cmp.change.is_empty() {
            let labels: Vec<String> = cmp.change.iter().map(|c| c.metric.clone()).collect();
            let fresh: Vec<f64> = cmp.change.iter().map(|_| 100.0).collect();
            let used: Vec<f64> = cmp.change.iter().map(|c| 100.0 + c.change_pct).collect();
            let c = Chart::new(
                format!("{}: fresh vs used ({})", d.identity.device, cmp.workload),
                Axis::new("metric", Unit::Number),
                Axis::new("% of fresh", Unit::Percent),
            )
            .categories(labels)
            .with(Series::bars("fresh", &fresh))
            .with(Series::bars("used", &used));
            out.push(("fresh-vs-used", c));
        }
    }
    if let Some(ws) = &d.write_series {
        if !ws.points.is_empty() {
            let pts: Vec<(f64, f64)> = ws
                .points
                .iter()
                .map(|p| (p.written_bytes as f64, p.bw_bytes))
                .collect();
            let mut c = Chart::new(
                format!("{}: whole-drive sequential write", d.identity.device),
                Axis::new("written", Unit::Bytes),
                Axis::new("throughput", Unit::BytesPerSec),
            )
            .with(Series::line("throughput per bucket", pts));
            if let Some(cl) = &ws.cliff {
                let top = ws.points.iter().map(|p| p.bw_bytes).fold(0.0, f64::max);
                let x = cl.at_bytes as f64;
                c.push(Series::line("cliff", vec![(x, 0.0), (x, top)]).color("#d55e00"));
            }
            out.push(("write-series", c));
        }
    }
    out
}

/// Write every chart of `d` as `DIR/season-<drive>-<chart>.svg`.
pub fn write(dir: &Path, d: &DriveSeason) -> Result<Vec<PathBuf>, SeasonError> {
    let key = drivelab_erase::journal::file_key(
        d.identity.serial.as_deref(),
        Path::new(&d.identity.device),
    );
    let mut files = Vec::new();
    for (stem, chart) in charts(d) {
        let p = dir.join(format!("season-{key}-{stem}.svg"));
        drivelab_device::output::Output::new(&p)
            .option("plot")
            .write(drivelab_plot::svg::render(&chart).as_bytes())
            .map_err(|e| SeasonError::Plot {
                path: p.clone(),
                why: e.to_string(),
            })?;
        files.push(p);
    }
    Ok(files)
}
