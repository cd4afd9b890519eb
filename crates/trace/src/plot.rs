//! Hand-written SVG plots of an [`Analysis`], the AnalyzeTrace screens:
//! transfer sizes, queue depth, seek distance, service time (bar charts)
//! and the access map (offset against time, reads blue, writes red). Plain
//! SVG 1.1 text with no dependencies; any browser shows it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::analyze::Analysis;
use crate::error::{Result, TraceError};
use crate::model::Op;

const W: f64 = 800.0;
const H: f64 = 400.0;
const ML: f64 = 70.0;
const MR: f64 = 20.0;
const MT: f64 = 40.0;
const MB: f64 = 90.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn header(title: &str) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">
<rect width="{W}" height="{H}" fill="white"/>
<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>
"#,
        W / 2.0,
        esc(title)
    );
    s
}

/// A bar chart of (label, value) with `y_label` on the axis.
pub fn bar_chart(title: &str, x_label: &str, y_label: &str, bars: &[(String, f64)]) -> String {
    let mut s = header(title);
    let pw = W - ML - MR;
    let ph = H - MT - MB;
    let max = bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
    let max = if max > 0.0 { max } else { 1.0 };
    let _ = writeln!(
        s,
        r##"<line x1="{ML}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{ML}" y1="{MT}" x2="{ML}" y2="{}" stroke="black"/>"##,
        MT + ph,
        ML + pw,
        MT + ph,
        MT + ph
    );
    for i in 0..=4 {
        let v = max * f64::from(i) / 4.0;
        let y = MT + ph - ph * f64::from(i) / 4.0;
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" text-anchor="end">{}</text><line x1="{ML}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/>"##,
            ML - 5.0,
            y + 4.0,
            fmt_num(v),
            ML + pw
        );
    }
    let n = bars.len().max(1) as f64;
    let bw = pw / n;
    let label_every = (bars.len() / 40).max(1);
    for (i, (label, v)) in bars.iter().enumerate() {
        let h = ph * v / max;
        let x = ML + bw * i as f64;
        let _ = writeln!(
            s,
            r##"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="#4a78b5"><title>{}: {}</title></rect>"##,
            x + bw * 0.1,
            MT + ph - h,
            bw * 0.8,
            h,
            esc(label),
            fmt_num(*v)
        );
        if i % label_every == 0 {
            let lx = x + bw / 2.0;
            let ly = MT + ph + 12.0;
            let _ = writeln!(
                s,
                r##"<text x="{lx:.2}" y="{ly:.2}" text-anchor="end" transform="rotate(-45 {lx:.2} {ly:.2})">{}</text>"##,
                esc(label)
            );
        }
    }
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" text-anchor="middle">{}</text><text x="16" y="{}" text-anchor="middle" transform="rotate(-90 16 {})">{}</text>"##,
        ML + pw / 2.0,
        H - 8.0,
        esc(x_label),
        MT + ph / 2.0,
        MT + ph / 2.0,
        esc(y_label)
    );
    s.push_str("</svg>\n");
    s
}

fn fmt_num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e6 || v.abs() < 1e-2 {
        format!("{v:.2e}")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

fn human_bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", U[i])
    } else {
        format!("{v:.1} {}", U[i])
    }
}

fn human_ns(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        format!("{:.3} s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else if ns >= 1_000 {
        format!("{:.3} µs", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// The access map: a scatter of sampled requests.
pub fn access_map(a: &Analysis) -> String {
    let mut s = header("Disk access sequence (offset vs time)");
    let pw = W - ML - MR;
    let ph = H - MT - MB;
    let tmax = a.access_map.last().map(|p| p.t_ns).unwrap_or(0).max(1) as f64;
    let omax = a.max_offset.max(1) as f64;
    let _ = writeln!(
        s,
        r##"<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"##
    );
    for p in &a.access_map {
        let x = ML + pw * p.t_ns as f64 / tmax;
        let y = MT + ph - ph * p.offset as f64 / omax;
        let color = match p.op {
            Op::Read => "#2860c0",
            Op::Write => "#c03030",
            _ => "#30a030",
        };
        let _ = writeln!(
            s,
            r#"<rect x="{x:.1}" y="{y:.1}" width="1.5" height="1.5" fill="{color}"/>"#
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{ML}" y="{}">0</text><text x="{}" y="{}" text-anchor="end">{:.3} s</text><text x="{}" y="{}" text-anchor="end">{}</text><text x="{}" y="{}" text-anchor="middle">time (reads blue, writes red, trims green; {} of {} requests sampled)</text>"##,
        MT + ph + 14.0,
        ML + pw,
        MT + ph + 14.0,
        tmax / 1e9,
        ML - 4.0,
        MT + 10.0,
        human_bytes(a.max_offset),
        ML + pw / 2.0,
        H - 30.0,
        a.access_map.len(),
        a.requests
    );
    s.push_str("</svg>\n");
    s
}

/// Every plot as (file name, SVG text).
pub fn all_plots(a: &Analysis) -> Vec<(&'static str, String)> {
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
            "sizes.svg",
            bar_chart(
                &format!(
                    "Distribution of transfer sizes (mean {})",
                    human_bytes(a.mean_size_bytes as u64)
                ),
                "transfer size",
                "fraction of requests",
                &sizes,
            ),
        ),
        (
            "queue_depth.svg",
            bar_chart(
                "Distribution of queue depth (seen by arriving requests)",
                "queue depth",
                "fraction of requests",
                &depth,
            ),
        ),
        (
            "seek_distance.svg",
            bar_chart(
                &format!(
                    "Distribution of seek distances ({:.1} % sequential)",
                    a.seek_distance.zero_fraction * 100.0
                ),
                "distance from the previous request's end (log2 buckets)",
                "fraction of requests",
                &seek,
            ),
        ),
        (
            "service_time.svg",
            bar_chart(
                &format!(
                    "Distribution of service times (mean {})",
                    a.service_time_ns
                        .mean
                        .map(|m| human_ns(m as u64))
                        .unwrap_or_else(|| "unknown".into())
                ),
                "service time (log2 buckets)",
                "fraction of requests",
                &service,
            ),
        ),
        ("access_map.svg", access_map(a)),
    ]
}

/// Write every plot into `dir` (created if missing); returns the paths.
pub fn write_plots(a: &Analysis, dir: &Path) -> Result<Vec<PathBuf>> {
    write_plots_as(a, dir, false)
}

/// As [`write_plots`], and with `png` also a PNG beside each SVG (rendered
/// from the same SVG, 2× scale, with the system's fonts for the labels).
pub fn write_plots_as(a: &Analysis, dir: &Path, png: bool) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| {
        TraceError::Io(std::io::Error::new(
            e.kind(),
            format!("cannot create {}: {e}", dir.display()),
        ))
    })?;
    let fonts = if png { Some(system_fonts()) } else { None };
    let mut out = Vec::new();
    for (name, svg) in all_plots(a) {
        let p = dir.join(name);
        std::fs::write(&p, &svg).map_err(|e| {
            TraceError::Io(std::io::Error::new(
                e.kind(),
                format!("cannot write {}: {e}", p.display()),
            ))
        })?;
        out.push(p.clone());
        if let Some(fonts) = &fonts {
            let pp = p.with_extension("png");
            std::fs::write(&pp, svg_to_png(&svg, fonts, 2.0)?).map_err(|e| {
                TraceError::Io(std::io::Error::new(
                    e.kind(),
                    format!("cannot write {}: {e}", pp.display()),
                ))
            })?;
            out.push(pp);
        }
    }
    Ok(out)
}

/// The system's fonts, loaded once for rendering labels.
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
        assert_eq!(map.matches("<rect").count(), 2 + a.access_map.len());
    }
}
