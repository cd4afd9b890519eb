//! The AnalyzeTrace screens of an [`Analysis`] as charts: transfer sizes,
//! queue depth, seek distance, service time (bar charts) and the access
//! map (offset against time, reads, writes and trims as dots). The charts
//! are built once here ([`charts`]) on the shared plot model
//! (`drivelab_plot`); `--plots` writes them as SVG (and PNG) files, and the
//! HTML report draws the same charts interactively. [`audit_charts`] lays
//! the original and its replay side by side for the IPEAK audit.

use std::path::{Path, PathBuf};

use drivelab_device::output::Output;
use drivelab_plot::{Axis, Chart, Series, Unit};

use crate::analyze::Analysis;
use crate::compare::Comparison;
use crate::error::{Result, TraceError};
use crate::model::Op;

fn human_bytes(b: u64) -> String {
    drivelab_plot::format(Unit::Bytes, b as f64)
}

fn human_ns(ns: u64) -> String {
    drivelab_plot::format(Unit::Ns, ns as f64)
}

fn bars(title: String, x_label: &str, bars: Vec<(String, f64)>) -> Chart {
    let (labels, values): (Vec<String>, Vec<f64>) = bars.into_iter().unzip();
    Chart::new(
        title,
        Axis::new(x_label, Unit::Number),
        Axis::new("fraction of requests", Unit::Fraction),
    )
    .categories(labels)
    .with(Series::bars("requests", &values))
}

/// The access map: a scatter of the sampled requests, one series per
/// operation (reads, writes, trims).
pub fn access_map_chart(a: &Analysis) -> Chart {
    let mut c = Chart::new(
        format!(
            "Disk access sequence (offset vs time; {} of {} requests sampled)",
            a.access_map.len(),
            a.requests
        ),
        Axis::new("time", Unit::Seconds),
        Axis::new("offset", Unit::Bytes),
    );
    for (op, label, color) in [
        (Op::Read, "reads", "#2860c0"),
        (Op::Write, "writes", "#c03030"),
        (Op::Trim, "trims", "#30a030"),
    ] {
        let pts: Vec<(f64, f64)> = a
            .access_map
            .iter()
            .filter(|p| p.op == op)
            .map(|p| (p.t_ns as f64 / 1e9, p.offset as f64))
            .collect();
        if !pts.is_empty() {
            c.push(Series::points(label, pts).color(color));
        }
    }
    c
}

/// Every chart as (file stem, chart): sizes, queue_depth, seek_distance,
/// service_time, access_map.
pub fn charts(a: &Analysis) -> Vec<(&'static str, Chart)> {
    let sizes: Vec<(String, f64)> = a
        .sizes
        .iter()
        .map(|b| (human_bytes(b.bytes), b.fraction))
        .collect();
    let depth: Vec<(String, f64)> = a
        .queue_depth
        .iter()
        .map(|b| (b.depth.to_string(), b.fraction))
        .collect();
    let seek: Vec<(String, f64)> = a
        .seek_distance
        .signed
        .iter()
        .map(|b| {
            let label = match b.bucket.signum() {
                0 => "0".to_string(),
                1 => format!("+{}", human_bytes(b.from_sectors * 512)),
                _ => format!("-{}", human_bytes(b.from_sectors * 512)),
            };
            (label, b.fraction)
        })
        .collect();
    let total = a.service_time_ns.count.max(1) as f64;
    let service: Vec<(String, f64)> = a
        .service_time_histogram
        .iter()
        .map(|b| (format!("≥{}", human_ns(b.from_ns)), b.count as f64 / total))
        .collect();
    vec![
        (
            "sizes",
            bars(
                format!(
                    "Distribution of transfer sizes (mean {})",
                    human_bytes(a.mean_size_bytes as u64)
                ),
                "transfer size",
                sizes,
            ),
        ),
        (
            "queue_depth",
            bars(
                "Distribution of queue depth (seen by arriving requests)".into(),
                "queue depth",
                depth,
            ),
        ),
        (
            "seek_distance",
            bars(
                format!(
                    "Distribution of seek distances ({:.1} % sequential)",
                    a.seek_distance.zero_fraction * 100.0
                ),
                "distance from the previous request's end (log2 buckets)",
                seek,
            ),
        ),
        (
            "service_time",
            bars(
                format!(
                    "Distribution of service times (mean {})",
                    a.service_time_ns
                        .mean
                        .map(|m| human_ns(m as u64))
                        .unwrap_or_else(|| "unknown".into())
                ),
                "service time (log2 buckets)",
                service,
            ),
        ),
        ("access_map", access_map_chart(a)),
    ]
}

/// Two distributions over shared categories, as bars side by side: every
/// key of either (ascending), 0 where one has none.
fn overlay(
    title: String,
    x_label: &str,
    a: Vec<(i128, String, f64)>,
    b: Vec<(i128, String, f64)>,
) -> Chart {
    let mut keys: Vec<(i128, String)> = a
        .iter()
        .chain(b.iter())
        .map(|(k, l, _)| (*k, l.clone()))
        .collect();
    keys.sort_by_key(|k| k.0);
    keys.dedup_by_key(|k| k.0);
    let col = |v: &[(i128, String, f64)]| -> Vec<f64> {
        keys.iter()
            .map(|(k, _)| v.iter().find(|x| x.0 == *k).map_or(0.0, |x| x.2))
            .collect()
    };
    Chart::new(
        title,
        Axis::new(x_label, Unit::Number),
        Axis::new("fraction", Unit::Fraction),
    )
    .categories(keys.iter().map(|k| k.1.clone()).collect())
    .with(Series::bars("original", &col(&a)))
    .with(Series::bars("replay", &col(&b)))
}

/// The audit's charts, original (A) against replay (B), as (file stem,
/// chart): queue depth over time, service-time CDF, time-weighted queue
/// depth, transfer sizes, queue depth seen by arrivals, seek distances,
/// service-time histogram. Built from the comparison's bucketed series and
/// the two analyses, so the same charts come from a stored audit result.
pub fn audit_charts(c: &Comparison) -> Vec<(&'static str, Chart)> {
    let depth_line = |p: &crate::compare::PlotSeries| -> Vec<(f64, f64)> {
        p.depth_over_time.iter().map(|d| (d.t_s, d.depth)).collect()
    };
    let over_time = Chart::new(
        format!(
            "Queue depth over time (time-weighted, {} buckets; mean original {:.2}, replay {:.2})",
            drivelab_plot::format(Unit::Seconds, c.plot_a.bucket_s.max(c.plot_b.bucket_s)),
            c.queue_depth_time_a.mean,
            c.queue_depth_time_b.mean
        ),
        Axis::new("time from the first issue", Unit::Seconds),
        Axis::new("requests outstanding", Unit::Number),
    )
    .with(Series::line("original", depth_line(&c.plot_a)))
    .with(Series::line("replay", depth_line(&c.plot_b)));
    let cdf_line = |p: &crate::compare::PlotSeries| -> Vec<(f64, f64)> {
        p.service_time_cdf
            .iter()
            .map(|q| (q.ns as f64, q.fraction))
            .collect()
    };
    let mean = |a: &Analysis| {
        a.service_time_ns
            .mean
            .map(|m| human_ns(m as u64))
            .unwrap_or_else(|| "unknown".into())
    };
    let cdf = Chart::new(
        format!(
            "Service time CDF (mean original {}, replay {})",
            mean(&c.a),
            mean(&c.b)
        ),
        Axis::new("service time (complete − issue)", Unit::Ns),
        Axis::new("share of requests within", Unit::Fraction),
    )
    .with(Series::line("original", cdf_line(&c.plot_a)))
    .with(Series::line("replay", cdf_line(&c.plot_b)));
    let time_depth = |t: &crate::compare::TimeDepth| -> Vec<(i128, String, f64)> {
        t.shares
            .iter()
            .map(|s| (s.depth as i128, s.depth.to_string(), s.fraction))
            .collect()
    };
    let sizes = |a: &Analysis| -> Vec<(i128, String, f64)> {
        a.sizes
            .iter()
            .map(|b| (b.bytes as i128, human_bytes(b.bytes), b.fraction))
            .collect()
    };
    let arrivals = |a: &Analysis| -> Vec<(i128, String, f64)> {
        a.queue_depth
            .iter()
            .map(|b| (b.depth as i128, b.depth.to_string(), b.fraction))
            .collect()
    };
    let seeks = |a: &Analysis| -> Vec<(i128, String, f64)> {
        a.seek_distance
            .signed
            .iter()
            .map(|b| {
                let label = match b.bucket.signum() {
                    0 => "0".to_string(),
                    1 => format!("+{}", human_bytes(b.from_sectors * 512)),
                    _ => format!("-{}", human_bytes(b.from_sectors * 512)),
                };
                (b.bucket as i128, label, b.fraction)
            })
            .collect()
    };
    let service = |a: &Analysis| -> Vec<(i128, String, f64)> {
        let total = a.service_time_ns.count.max(1) as f64;
        a.service_time_histogram
            .iter()
            .map(|b| {
                (
                    b.from_ns as i128,
                    format!("≥{}", human_ns(b.from_ns)),
                    b.count as f64 / total,
                )
            })
            .collect()
    };
    let tvd = |d: Option<f64>| {
        d.map(|v| format!("TV distance {v:.4}"))
            .unwrap_or_else(|| "not compared".into())
    };
    vec![
        ("audit_queue_depth_over_time", over_time),
        ("audit_service_time_cdf", cdf),
        (
            "audit_queue_depth_time",
            overlay(
                format!(
                    "Time-weighted queue depth ({})",
                    tvd(c.distances.queue_depth_time)
                ),
                "requests outstanding",
                time_depth(&c.queue_depth_time_a),
                time_depth(&c.queue_depth_time_b),
            ),
        ),
        (
            "audit_sizes",
            overlay(
                format!("Transfer sizes (TV distance {:.4})", c.distances.sizes),
                "transfer size",
                sizes(&c.a),
                sizes(&c.b),
            ),
        ),
        (
            "audit_queue_depth",
            overlay(
                format!(
                    "Queue depth seen by arriving requests ({})",
                    tvd(c.distances.queue_depth)
                ),
                "queue depth",
                arrivals(&c.a),
                arrivals(&c.b),
            ),
        ),
        (
            "audit_seek_distance",
            overlay(
                format!(
                    "Seek distances (TV distance {:.4})",
                    c.distances.seek_distance
                ),
                "distance from the previous request's end (log2 buckets)",
                seeks(&c.a),
                seeks(&c.b),
            ),
        ),
        (
            "audit_service_time",
            overlay(
                format!("Service times ({})", tvd(c.distances.service_time)),
                "service time (log2 buckets)",
                service(&c.a),
                service(&c.b),
            ),
        ),
    ]
}

/// Every plot as (file name, SVG text).
pub fn all_plots(a: &Analysis) -> Vec<(String, String)> {
    charts(a)
        .into_iter()
        .map(|(stem, c)| (format!("{stem}.svg"), drivelab_plot::svg::render(&c)))
        .collect()
}

/// Write every plot into `dir` (created if missing); returns the paths.
pub fn write_plots(a: &Analysis, dir: &Path) -> Result<Vec<PathBuf>> {
    write_plots_as(a, dir, false)
}

/// Whether this build renders PNG plots (the `png` cargo feature).
pub const PNG_BUILT: bool = cfg!(feature = "png");

/// What to say when PNG plots are asked of a build without them.
pub const PNG_MISSING: &str = "--png: this drivelab is built without PNG plots (the SVG files are written); to get them, build with `cargo build --release --features png`";

/// As [`write_plots`], and with `png` also a PNG beside each SVG (rendered
/// from the same SVG, 2× scale, with the system's fonts for the labels).
/// PNGs need the `png` feature; without it `png` is an error
/// ([`PNG_MISSING`]) and nothing is written.
pub fn write_plots_as(a: &Analysis, dir: &Path, png: bool) -> Result<Vec<PathBuf>> {
    let to_png = if png { Some(png_renderer()?) } else { None };
    std::fs::create_dir_all(dir).map_err(|e| {
        TraceError::Io(std::io::Error::new(
            e.kind(),
            format!("cannot create {}: {e}", dir.display()),
        ))
    })?;
    let plots = all_plots(a);
    let file = |name: &Path| Output::new(dir.join(name)).option("--plots");
    // Every name is checked before the first file is written.
    for (name, _) in &plots {
        file(Path::new(name)).check()?;
        if to_png.is_some() {
            file(&Path::new(name).with_extension("png")).check()?;
        }
    }
    let mut out = Vec::new();
    for (name, svg) in plots {
        let p = dir.join(&name);
        file(Path::new(&name)).write(svg.as_bytes())?;
        out.push(p.clone());
        if let Some(to_png) = &to_png {
            let pp = p.with_extension("png");
            file(&Path::new(&name).with_extension("png")).write(&to_png(&svg)?)?;
            out.push(pp);
        }
    }
    Ok(out)
}

/// SVG text to PNG bytes.
type PngRenderer = Box<dyn Fn(&str) -> Result<Vec<u8>>>;

/// The PNG renderer: resvg at 2× scale with the system's fonts.
#[cfg(feature = "png")]
fn png_renderer() -> Result<PngRenderer> {
    let fonts = system_fonts();
    Ok(Box::new(move |svg| svg_to_png(svg, &fonts, 2.0)))
}

/// Without the `png` feature there is no renderer: say how to get one.
#[cfg(not(feature = "png"))]
fn png_renderer() -> Result<PngRenderer> {
    Err(TraceError::BadFormat(PNG_MISSING.to_string()))
}

/// The system's fonts, loaded once for rendering labels.
#[cfg(feature = "png")]
pub fn system_fonts() -> std::sync::Arc<resvg::usvg::fontdb::Database> {
    let mut db = resvg::usvg::fontdb::Database::new();
    db.load_system_fonts();
    // The plots ask for the generic "sans-serif"; map it to a sans family
    // this system has (fontdb's default, Arial, is rarely installed).
    let families: Vec<String> = db
        .faces()
        .flat_map(|f| f.families.iter().map(|(n, _)| n.clone()))
        .collect();
    let pick = [
        "DejaVu Sans",
        "Liberation Sans",
        "Noto Sans",
        "FreeSans",
        "Arial",
    ]
    .iter()
    .find(|want| families.iter().any(|f| f == *want))
    .map(|s| s.to_string())
    .or_else(|| families.iter().find(|f| f.contains("Sans")).cloned())
    .or_else(|| families.first().cloned());
    if let Some(f) = pick {
        db.set_sans_serif_family(f);
    }
    std::sync::Arc::new(db)
}

/// Render an SVG document to PNG bytes at `scale`.
#[cfg(feature = "png")]
pub fn svg_to_png(
    svg: &str,
    fonts: &std::sync::Arc<resvg::usvg::fontdb::Database>,
    scale: f32,
) -> Result<Vec<u8>> {
    use resvg::{tiny_skia, usvg};
    let opt = usvg::Options {
        fontdb: fonts.clone(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &opt)
        .map_err(|e| TraceError::BadFormat(format!("cannot render a plot: {e}")))?;
    let size =
        tree.size().to_int_size().scale_by(scale).ok_or_else(|| {
            TraceError::BadFormat("cannot render a plot: it has no size".to_string())
        })?;
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| TraceError::BadFormat("cannot render a plot: empty image".to_string()))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| TraceError::BadFormat(format!("cannot encode a PNG: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "png")]
    #[test]
    fn png_renders_shapes_and_text() {
        let svg = r##"<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect x="0" y="0" width="10" height="20" fill="#000000"/><text x="14" y="15" font-family="sans-serif" font-size="14">Hi</text></svg>"##;
        let png = svg_to_png(svg, &system_fonts(), 2.0).unwrap();
        let pm = resvg::tiny_skia::Pixmap::decode_png(&png).unwrap();
        assert_eq!((pm.width(), pm.height()), (80, 40));
        let px = |x: u32, y: u32| pm.pixel(x, y).unwrap();
        assert_eq!(px(5, 20).red(), 0, "the black bar");
        assert_eq!(px(79, 0).red(), 255, "white background");
        // The label was drawn: some dark pixels right of the bar. Without a
        // usable font resvg silently drops text, which this catches.
        let dark = (24..80)
            .flat_map(|x| (0..40).map(move |y| (x, y)))
            .filter(|&(x, y)| px(x, y).red() < 128)
            .count();
        assert!(
            dark > 20,
            "no text rendered ({dark} dark pixels): install a font such as fonts-dejavu-core"
        );
    }
    use crate::analyze::Analyzer;
    use crate::model::Request;

    #[test]
    fn plots_are_wellformed_svg_with_one_bar_per_bucket() {
        let mut an = Analyzer::new();
        for i in 0..50u64 {
            let mut r = Request::new(
                i * 1000,
                if i % 3 == 0 { Op::Write } else { Op::Read },
                (i % 7) * 65536,
                4096 << (i % 3),
            );
            r.complete_ns = Some(i * 1000 + 500 + i * 10);
            an.add(&r);
        }
        let a = an.finish();
        for (name, svg) in all_plots(&a) {
            assert!(svg.starts_with("<?xml"), "{name}");
            assert!(svg.trim_end().ends_with("</svg>"), "{name}");
            assert_eq!(svg.matches("<svg").count(), 1);
        }
        let sizes = &all_plots(&a)[0].1;
        // one <rect> background + one per size bucket
        assert_eq!(sizes.matches("<rect").count(), 1 + a.sizes.len());
        let map = &all_plots(&a)[4].1;
        // one <rect> background + one per sampled request
        assert_eq!(map.matches("<rect").count(), 1 + a.access_map.len());
        // The charts survive the analysis' JSON (as the HTML report reads it).
        let back: Analysis = serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
        assert_eq!(charts(&back), charts(&a));
    }
}
