//! A [`Chart`] as an interactive chart in a self-contained HTML page.
//!
//! The page carries, once, [`head`]'s style and [`script`]'s code: the
//! vendored uPlot library (MIT, `assets/uplot/`, unmodified) and
//! `assets/charts.js`, which draws every `<div class="chart">` from the
//! JSON inside it (zoom: drag across the plot, double-click to reset;
//! values: hover, shown in the legend), resizes the charts with the
//! window, and writes what happened into the page itself: each chart, once
//! drawn, gets `data-points="N"` (the points it drew), and any script
//! error is listed in the page's `#errors` element (so a test that reads
//! the DOM sees both, and so does a reader).
//!
//! uPlot rather than inline SVG: it is 50 KB, draws on a canvas (a
//! 100,000-point access map stays fast), and has zoom, a live legend and
//! touch-friendly resizing built in; hand-written SVG would need all of
//! those written and tested here.

use crate::Chart;

const UPLOT_JS: &str = include_str!("../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../assets/uplot/uPlot.min.css");
const CHARTS_JS: &str = include_str!("../assets/charts.js");
const CHARTS_CSS: &str = include_str!("../assets/charts.css");

/// The `<style>` element the charts need (put it in `<head>`).
pub fn head() -> String {
    format!("<style>\n{UPLOT_CSS}\n{CHARTS_CSS}\n</style>\n")
}

/// The `<script>` elements that draw the charts (put them at the end of
/// `<body>`, after every chart).
pub fn script() -> String {
    format!("<script>\n{UPLOT_JS}\n</script>\n<script>\n{CHARTS_JS}\n</script>\n")
}

/// Text made safe inside a `<script>` element: no `<` at all (JSON strings
/// spell it `\u003c`), so neither `</script>` nor `<!--` can occur.
fn script_safe_json(v: &serde_json::Value) -> String {
    v.to_string().replace('<', "\\u003c")
}

/// The chart as a `<div class="chart">` holding its data (the page's
/// [`script`] draws it). `id` must be unique in the page.
pub fn chart(chart: &Chart, id: &str) -> String {
    let (xs, ys) = chart.aligned();
    let mut data = vec![serde_json::json!(xs)];
    data.extend(ys.iter().map(|col| serde_json::json!(col)));
    let colors: Vec<String> = (0..chart.series.len()).map(|i| chart.color_of(i)).collect();
    let spec = serde_json::json!({
        "title": chart.title,
        "x": chart.x,
        "x_scale": chart.x_scale,
        "y": chart.y,
        "y2": chart.y2,
        "series": chart.series,
        "colors": colors,
        "data": data,
        "points": chart.point_count(),
    });
    let id = id.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "-");
    format!(
        "<div class=\"chart\" id=\"{id}\" data-expect=\"{}\"><script type=\"application/json\">{}</script></div>\n",
        chart.point_count(),
        script_safe_json(&spec)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Axis, Series, Unit};

    #[test]
    fn chart_data_cannot_close_its_script() {
        let c = Chart::new(
            "</script><script>alert(1)</script>",
            Axis::new("x", Unit::Number),
            Axis::new("y", Unit::Number),
        )
        .with(Series::line("<!--", vec![(0.0, 1.0), (1.0, 2.0)]));
        let h = chart(&c, "c1");
        assert_eq!(h.matches("</script>").count(), 1, "{h}");
        assert!(!h.contains("<!--"));
        assert!(h.contains("data-expect=\"2\""));
        // The JSON inside parses back to the title.
        let json = h
            .split("application/json\">")
            .nth(1)
            .and_then(|r| r.split("</script>").next())
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(v["title"], "</script><script>alert(1)</script>");
        assert_eq!(v["data"][1], serde_json::json!([1.0, 2.0]));
    }

    #[test]
    fn assets_hold_no_closing_script_tag() {
        assert!(!UPLOT_JS.contains("</script"));
        assert!(!CHARTS_JS.contains("</script"));
        assert!(!UPLOT_CSS.contains("</style"));
    }
}
