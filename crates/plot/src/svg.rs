//! A [`Chart`] as a static SVG 1.1 document (800 × 400), for plots written
//! as files. Bars and points are one `<rect>` each (a bar carries its value
//! in a `<title>`, which browsers show on hover); lines are `<polyline>`s;
//! the only other `<rect>` is the white background.

use std::fmt::Write as _;

use crate::{format, percentile_at, Chart, Mark, Unit, XScale};

const W: f64 = 800.0;
const H: f64 = 400.0;
const ML: f64 = 70.0;
const MR: f64 = 20.0;
const MT: f64 = 40.0;
const MB: f64 = 90.0;

/// Escape text for SVG/XML content and attribute values.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The value range [lo, hi] of `vals`, widened to include zero for bars
/// and never empty.
fn range(vals: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    if hi <= lo {
        hi = lo + 1.0;
    }
    (lo, hi)
}

/// Render `chart` as an SVG document.
pub fn render(chart: &Chart) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">
<rect width="{W}" height="{H}" fill="white"/>
<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>
"#,
        W / 2.0,
        esc(&chart.title)
    );
    let pw = W - ML - MR;
    let ph = H - MT - MB;
    let cats = match &chart.x_scale {
        XScale::Categories(l) => Some(l),
        _ => None,
    };
    let (x0, x1) = match cats {
        Some(l) => (-0.5, l.len().max(1) as f64 - 0.5),
        None => range(
            chart
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0)),
            false,
        ),
    };
    let y_of = |right: bool| {
        let bars = chart
            .series
            .iter()
            .any(|s| s.right == right && s.mark == Mark::Bars);
        range(
            chart
                .series
                .iter()
                .filter(|s| s.right == right)
                .flat_map(|s| s.points.iter().map(|p| p.1)),
            bars || chart.series.iter().all(|s| s.mark != Mark::Points),
        )
    };
    let yl = y_of(false);
    let yr = y_of(true);
    let px = |x: f64| ML + pw * (x - x0) / (x1 - x0);
    let py = |y: f64, (lo, hi): (f64, f64)| MT + ph - ph * (y - lo) / (hi - lo);
    // Axes and grid.
    let _ = writeln!(
        s,
        r##"<line x1="{ML}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{ML}" y1="{MT}" x2="{ML}" y2="{}" stroke="black"/>"##,
        MT + ph,
        ML + pw,
        MT + ph,
        MT + ph
    );
    for i in 0..=4 {
        let v = yl.0 + (yl.1 - yl.0) * f64::from(i) / 4.0;
        let y = py(v, yl);
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{:.2}" text-anchor="end">{}</text><line x1="{ML}" y1="{y:.2}" x2="{}" y2="{y:.2}" stroke="#ddd"/>"##,
            ML - 5.0,
            y + 4.0,
            esc(&format(chart.y.unit, v)),
            ML + pw
        );
        if let Some(a2) = &chart.y2 {
            let v2 = yr.0 + (yr.1 - yr.0) * f64::from(i) / 4.0;
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{:.2}" text-anchor="end">{}</text>"##,
                W - 2.0,
                y - 2.0,
                esc(&format(a2.unit, v2))
            );
        }
    }
    x_ticks(&mut s, chart, cats, (x0, x1), ph, px);
    // Marks.
    let n_bar_series = chart
        .series
        .iter()
        .filter(|s| s.mark == Mark::Bars)
        .count()
        .max(1) as f64;
    let slot = pw / (x1 - x0).max(1e-9);
    let mut bar_k = 0.0;
    for (i, ser) in chart.series.iter().enumerate() {
        let color = esc(&chart.color_of(i));
        let yr_ = if ser.right { yr } else { yl };
        let unit = if ser.right {
            chart.y2.as_ref().map(|a| a.unit).unwrap_or(chart.y.unit)
        } else {
            chart.y.unit
        };
        match ser.mark {
            Mark::Bars => {
                let bw = slot * 0.8 / n_bar_series;
                for &(x, y) in &ser.points {
                    let left = px(x) - slot * 0.4 + bw * bar_k;
                    let (top, bottom) = (py(y.max(0.0), yr_), py(y.min(0.0), yr_));
                    let label = match cats {
                        Some(l) => l.get(x as usize).cloned().unwrap_or_default(),
                        None => format(chart.x.unit, x),
                    };
                    let _ = writeln!(
                        s,
                        r##"<rect x="{left:.2}" y="{top:.2}" width="{bw:.2}" height="{:.2}" fill="{color}"><title>{}: {}</title></rect>"##,
                        bottom - top,
                        esc(&label),
                        esc(&format(unit, y))
                    );
                }
                bar_k += 1.0;
            }
            Mark::Points => {
                for &(x, y) in &ser.points {
                    let _ = writeln!(
                        s,
                        r#"<rect x="{:.1}" y="{:.1}" width="1.5" height="1.5" fill="{color}"/>"#,
                        px(x),
                        py(y, yr_)
                    );
                }
            }
            Mark::Line => {
                let pts: Vec<String> = ser
                    .points
                    .iter()
                    .map(|&(x, y)| format!("{:.2},{:.2}", px(x), py(y, yr_)))
                    .collect();
                let _ = writeln!(
                    s,
                    r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.5"/>"#,
                    pts.join(" ")
                );
            }
        }
    }
    legend_and_titles(&mut s, chart, pw, ph);
    s.push_str("</svg>\n");
    s
}

/// The x axis's tick labels: every category (thinned to about 40), or
/// five values across `x0..x1`.
fn x_ticks(
    s: &mut String,
    chart: &Chart,
    cats: Option<&Vec<String>>,
    (x0, x1): (f64, f64),
    ph: f64,
    px: impl Fn(f64) -> f64,
) {
    match cats {
        Some(labels) => {
            let every = (labels.len() / 40).max(1);
            for (i, l) in labels.iter().enumerate().step_by(every) {
                let lx = px(i as f64);
                let ly = MT + ph + 12.0;
                let _ = writeln!(
                    s,
                    r##"<text x="{lx:.2}" y="{ly:.2}" text-anchor="end" transform="rotate(-45 {lx:.2} {ly:.2})">{}</text>"##,
                    esc(l)
                );
            }
        }
        None => {
            for i in 0..=4 {
                let v = x0 + (x1 - x0) * f64::from(i) / 4.0;
                let label = match chart.x_scale {
                    XScale::Nines => format(Unit::Number, percentile_at(v)),
                    _ => format(chart.x.unit, v),
                };
                let anchor = match i {
                    0 => "start",
                    4 => "end",
                    _ => "middle",
                };
                let _ = writeln!(
                    s,
                    r##"<text x="{:.2}" y="{}" text-anchor="{anchor}">{}</text>"##,
                    px(v),
                    MT + ph + 14.0,
                    esc(&label)
                );
            }
        }
    }
}

/// The legend (text in each series' colour, when there is more than one)
/// and the axis titles.
fn legend_and_titles(s: &mut String, chart: &Chart, pw: f64, ph: f64) {
    // Legend (text in the series' colour) when more than one series.
    if chart.series.len() > 1 {
        let mut x = ML;
        for (i, ser) in chart.series.iter().enumerate() {
            let _ = writeln!(
                s,
                r##"<text x="{x:.1}" y="{}" fill="{}">■ {}</text>"##,
                MT - 6.0,
                esc(&chart.color_of(i)),
                esc(&ser.label)
            );
            x += 20.0 + 6.5 * ser.label.chars().count() as f64;
        }
    }
    let y_label = match &chart.y2 {
        Some(a) => format!("{} (left); {} (right)", chart.y.label, a.label),
        None => chart.y.label.clone(),
    };
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" text-anchor="middle">{}</text><text x="16" y="{}" text-anchor="middle" transform="rotate(-90 16 {})">{}</text>"##,
        ML + pw / 2.0,
        H - 8.0,
        esc(&chart.x.label),
        MT + ph / 2.0,
        MT + ph / 2.0,
        esc(&y_label)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Axis, Series};

    #[test]
    fn one_rect_per_bar_and_point_and_escaped_labels() {
        let c = Chart::new(
            "a <b> & c",
            Axis::new("size", Unit::Bytes),
            Axis::new("share", Unit::Fraction),
        )
        .categories(vec!["4 KiB".into(), "<8>".into(), "16 KiB".into()])
        .with(Series::bars("share", &[0.5, 0.25, 0.25]));
        let svg = render(&c);
        assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<rect").count(), 1 + 3);
        assert!(svg.contains("a &lt;b&gt; &amp; c"));
        assert!(svg.contains("&lt;8&gt;: 25%"));
        assert!(!svg.contains("<8>"));
        let p = Chart::new(
            "m",
            Axis::new("t", Unit::Seconds),
            Axis::new("o", Unit::Bytes),
        )
        .with(Series::points("reads", vec![(0.0, 1.0), (1.0, 2.0)]))
        .with(Series::line("l", vec![(0.0, 1.0), (1.0, 2.0)]));
        let svg = render(&p);
        assert_eq!(svg.matches("<rect").count(), 1 + 2);
        assert_eq!(svg.matches("<polyline").count(), 1);
    }

    #[test]
    fn bars_scale_to_the_tallest() {
        let c = Chart::new(
            "t",
            Axis::new("x", Unit::Number),
            Axis::new("y", Unit::Number),
        )
        .categories(vec!["a".into(), "b".into()])
        .with(Series::bars("v", &[1.0, 2.0]));
        let svg = render(&c);
        let heights: Vec<f64> = svg
            .split("height=\"")
            .skip(3)
            .filter_map(|r| r.split('"').next()?.parse().ok())
            .collect();
        assert_eq!(heights.len(), 2);
        assert!((heights[1] / heights[0] - 2.0).abs() < 1e-3, "{heights:?}");
        assert!((heights[1] - (H - MT - MB)).abs() < 1e-3);
    }
}
