//! drivelab's one plotting module: a small chart model ([`Chart`]: series
//! of (x, y) points drawn as lines, bars or points, on a linear, category or
//! "nines" x axis, with an optional right-hand y axis) and two renderers
//! over it:
//!
//! - [`svg`]: a static SVG 1.1 document, for plots written as files
//!   (`trace analyze --plots`);
//! - [`html`]: an interactive chart (zoom by dragging, values on hover) for
//!   the self-contained HTML report, drawn in the browser by the vendored
//!   uPlot library (MIT; `assets/uplot/`), with nothing fetched from the
//!   network.
//!
//! Every report kind builds [`Chart`]s and hands them to one of these, so a
//! plot looks and reads the same wherever it appears.

pub mod html;
pub mod svg;

use serde::Serialize;

/// How values on an axis are written (ticks and hover values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A plain number (counts, queue sizes, IOPS).
    Number,
    /// Bytes, with binary prefixes (KiB, MiB…).
    Bytes,
    /// Bytes per second, with binary prefixes (KiB/s, MiB/s…).
    BytesPerSec,
    /// Nanoseconds, written in the fitting unit (ns, µs, ms, s).
    Ns,
    /// Milliseconds, written in the fitting unit.
    Ms,
    /// Seconds.
    Seconds,
    /// A percentage (0..100).
    Percent,
    /// A fraction (0..1), written as a percentage.
    Fraction,
}

/// One axis: its label and how its values are written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Axis {
    /// The label under (x) or beside (y) the axis.
    pub label: String,
    /// How values are written.
    pub unit: Unit,
}

impl Axis {
    /// An axis labelled `label`, values written as `unit`.
    pub fn new(label: impl Into<String>, unit: Unit) -> Axis {
        Axis {
            label: label.into(),
            unit,
        }
    }
}

/// What the x axis is.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "labels")]
pub enum XScale {
    /// Numbers, linear.
    Linear,
    /// Percentiles placed by their "nines": x = -log10(1 - p/100), so 90,
    /// 99, 99.9 and 99.99 are equally spaced. Points give x as that value
    /// (see [`nines`]); ticks and hover show the percentile.
    Nines,
    /// Named categories at x = 0, 1, 2… (bar charts).
    Categories(Vec<String>),
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// Points joined by a line (gaps in x are spanned).
    Line,
    /// One bar per point, from zero.
    Bars,
    /// Unjoined dots (a scatter plot).
    Points,
}

/// One series of (x, y) points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// The legend label.
    pub label: String,
    /// How it is drawn.
    pub mark: Mark,
    /// Drawn against the right-hand axis ([`Chart::y2`]).
    pub right: bool,
    /// Colour (CSS), or `None` for the next of the palette.
    pub color: Option<String>,
    /// The points; ones with a non-finite coordinate are dropped.
    #[serde(skip)]
    pub points: Vec<(f64, f64)>,
}

impl Series {
    fn new(label: impl Into<String>, mark: Mark, points: Vec<(f64, f64)>) -> Series {
        Series {
            label: label.into(),
            mark,
            right: false,
            color: None,
            points: points
                .into_iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect(),
        }
    }

    /// A line through `points`.
    pub fn line(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series::new(label, Mark::Line, points)
    }

    /// Unjoined dots at `points`.
    pub fn points(label: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series::new(label, Mark::Points, points)
    }

    /// One bar per value, at x = 0, 1, 2… (for [`XScale::Categories`]).
    pub fn bars(label: impl Into<String>, values: &[f64]) -> Series {
        let pts = values
            .iter()
            .enumerate()
            .map(|(i, v)| (i as f64, *v))
            .collect();
        Series::new(label, Mark::Bars, pts)
    }

    /// Draw against the right-hand axis.
    pub fn on_right(mut self) -> Series {
        self.right = true;
        self
    }

    /// Use this colour (CSS colour text).
    pub fn color(mut self, c: &str) -> Series {
        self.color = Some(c.to_string());
        self
    }
}

/// A chart: a title, axes and series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chart {
    /// The title above the plot.
    pub title: String,
    /// The x axis.
    pub x: Axis,
    /// What the x axis is.
    pub x_scale: XScale,
    /// The left-hand y axis.
    pub y: Axis,
    /// The right-hand y axis, for series marked [`Series::on_right`].
    pub y2: Option<Axis>,
    /// The series, drawn in order.
    pub series: Vec<Series>,
}

/// The palette series take colours from, in order (distinguishable, also
/// for the common colour-vision deficiencies: Okabe–Ito's set).
pub const PALETTE: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442",
];

impl Chart {
    /// A chart with a linear x axis and no series yet.
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Chart {
        Chart {
            title: title.into(),
            x,
            x_scale: XScale::Linear,
            y,
            y2: None,
            series: Vec::new(),
        }
    }

    /// Use named categories on the x axis (x = 0, 1, 2…).
    pub fn categories(mut self, labels: Vec<String>) -> Chart {
        self.x_scale = XScale::Categories(labels);
        self
    }

    /// Place percentiles by their nines (see [`XScale::Nines`]).
    pub fn nines(mut self) -> Chart {
        self.x_scale = XScale::Nines;
        self
    }

    /// Add a right-hand y axis.
    pub fn right_axis(mut self, y2: Axis) -> Chart {
        self.y2 = Some(y2);
        self
    }

    /// Add a series.
    pub fn with(mut self, s: Series) -> Chart {
        self.series.push(s);
        self
    }

    /// Add a series (by reference).
    pub fn push(&mut self, s: Series) {
        self.series.push(s);
    }

    /// Points over all series: what a renderer draws.
    pub fn point_count(&self) -> usize {
        self.series.iter().map(|s| s.points.len()).sum()
    }

    /// The colour of series `i`: its own, or the palette's.
    pub fn color_of(&self, i: usize) -> String {
        self.series[i]
            .color
            .clone()
            .unwrap_or_else(|| PALETTE[i % PALETTE.len()].to_string())
    }

    /// The series on one shared x: every distinct x of every series in
    /// ascending order, and per series its y at each (None where it has no
    /// point). Two points of one series at the same x keep the last.
    pub fn aligned(&self) -> (Vec<f64>, Vec<Vec<Option<f64>>>) {
        let mut xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        let ys = self
            .series
            .iter()
            .map(|s| {
                let mut col = vec![None; xs.len()];
                for &(x, y) in &s.points {
                    if let Ok(i) = xs.binary_search_by(|v| v.total_cmp(&x)) {
                        col[i] = Some(y);
                    }
                }
                col
            })
            .collect();
        (xs, ys)
    }
}

/// A percentile's position on a [`XScale::Nines`] axis: -log10(1 - p/100)
/// (50 → 0.30, 90 → 1, 99 → 2, 99.9 → 3). 100 is placed at 6 (99.9999).
pub fn nines(p: f64) -> f64 {
    let q = (1.0 - p / 100.0).max(1e-6);
    -q.log10()
}

/// The percentile at a position on a [`XScale::Nines`] axis.
pub fn percentile_at(x: f64) -> f64 {
    100.0 * (1.0 - 10f64.powf(-x))
}

/// A value written for people in `unit` (ticks, hover values, SVG labels).
/// The browser side writes the same (assets/charts.js, `fmt`).
pub fn format(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Number => number(v),
        Unit::Bytes => binary(v, ""),
        Unit::BytesPerSec => binary(v, "/s"),
        Unit::Ns => duration_ns(v),
        Unit::Ms => duration_ns(v * 1e6),
        Unit::Seconds if v != 0.0 && v.abs() < 1.0 => duration_ns(v * 1e9),
        Unit::Seconds => format!("{} s", number(v)),
        Unit::Percent => format!("{}%", number(v)),
        Unit::Fraction => format!("{}%", number(v * 100.0)),
    }
}

fn number(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if a >= 1e9 {
        format!("{:.3}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.3}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 0.01 {
        format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        format!("{v:.2e}")
    }
}

fn binary(v: f64, suffix: &str) -> String {
    const U: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut x = v;
    let mut i = 0;
    while x.abs() >= 1024.0 && i < U.len() - 1 {
        x /= 1024.0;
        i += 1;
    }
    if x.fract() == 0.0 {
        format!("{x:.0} {}{suffix}", U[i])
    } else {
        format!("{x:.1} {}{suffix}", U[i])
    }
}

fn duration_ns(ns: f64) -> String {
    let a = ns.abs();
    if a >= 1e9 {
        format!("{} s", number(ns / 1e9))
    } else if a >= 1e6 {
        format!("{} ms", number(ns / 1e6))
    } else if a >= 1e3 {
        format!("{} µs", number(ns / 1e3))
    } else {
        format!("{} ns", number(ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_merges_the_xs_of_every_series() {
        let c = Chart::new(
            "t",
            Axis::new("s", Unit::Seconds),
            Axis::new("n", Unit::Number),
        )
        .with(Series::line("a", vec![(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]))
        .with(Series::line(
            "b",
            vec![(0.5, 10.0), (2.0, 30.0), (f64::NAN, 1.0)],
        ));
        let (xs, ys) = c.aligned();
        assert_eq!(xs, vec![0.0, 0.5, 1.0, 2.0]);
        assert_eq!(ys[0], vec![Some(1.0), None, Some(2.0), Some(3.0)]);
        assert_eq!(ys[1], vec![None, Some(10.0), None, Some(30.0)]);
        // The NaN point is dropped, not drawn.
        assert_eq!(c.point_count(), 5);
    }

    #[test]
    fn nines_place_percentiles_evenly() {
        assert!((nines(90.0) - 1.0).abs() < 1e-12);
        assert!((nines(99.0) - 2.0).abs() < 1e-12);
        assert!((nines(99.9) - 3.0).abs() < 1e-9);
        assert!((percentile_at(nines(99.99)) - 99.99).abs() < 1e-9);
        assert_eq!(nines(100.0), 6.0);
    }

    #[test]
    fn values_are_written_in_their_unit() {
        assert_eq!(format(Unit::Bytes, 4096.0), "4 KiB");
        assert_eq!(format(Unit::BytesPerSec, 1.5 * 1048576.0), "1.5 MiB/s");
        assert_eq!(format(Unit::Ns, 1500.0), "1.5 µs");
        assert_eq!(format(Unit::Ms, 2.0), "2 ms");
        assert_eq!(format(Unit::Seconds, 0.00958), "9.58 ms");
        assert_eq!(format(Unit::Seconds, 12.5), "12.5 s");
        assert_eq!(format(Unit::Fraction, 0.25), "25%");
        assert_eq!(format(Unit::Number, 12345.0), "12.3k");
        assert_eq!(format(Unit::Number, 0.0), "0");
    }
}
