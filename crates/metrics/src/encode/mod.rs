//! The figures as text: OpenMetrics 1.0 (what Prometheus asks for first)
//! or Prometheus's text format 0.0.4 (what `promtool check metrics`, older
//! scrapers and a plain `curl` get). The two differ in how a counter's and
//! an info's family are named (`# TYPE x counter` with samples `x_total`
//! in OpenMetrics, `# TYPE x_total counter` in 0.0.4), in `# UNIT` lines
//! and the closing `# EOF`, which OpenMetrics alone has.

use std::fmt::Write;

use crate::model::{Family, Kind, Value};

/// A text format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0 text.
    OpenMetrics,
    /// Prometheus text exposition format 0.0.4.
    Text004,
}

impl Format {
    /// The format a scraper's `Accept` header asks for: OpenMetrics when it
    /// names it, else text 0.0.4.
    pub fn negotiate(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Text004,
        }
    }

    /// The response's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text004 => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A number as both formats write it.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

/// `{a="1",b="2"}` from names and values, plus `extra` (e.g. `le`); empty
/// when there are no labels.
fn labels(names: &[&str], values: &[String], extra: Option<(&str, &str)>) -> String {
    let mut parts: Vec<String> = names
        .iter()
        .zip(values)
        .map(|(n, v)| format!("{n}=\"{}\"", label_value(v)))
        .collect();
    if let Some((n, v)) = extra {
        parts.push(format!("{n}=\"{v}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

/// `families` as text in `format`; families with no samples are left out.
pub fn encode(families: &[Family], format: Format) -> String {
    let mut out = String::new();
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        let m = f.metric;
        let sample_name = m.sample_name();
        let (type_name, type_word) = match format {
            Format::OpenMetrics => (m.name.to_string(), m.kind.openmetrics()),
            Format::Text004 => (
                match m.kind {
                    Kind::Counter | Kind::Info => sample_name.clone(),
                    _ => m.name.to_string(),
                },
                m.kind.text004(),
            ),
        };
        let help = m.help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(out, "# HELP {type_name} {help}");
        let _ = writeln!(out, "# TYPE {type_name} {type_word}");
        if format == Format::OpenMetrics && !m.unit.is_empty() {
            let _ = writeln!(out, "# UNIT {type_name} {}", m.unit);
        }
        for s in &f.samples {
            match &s.value {
                Value::Counter(v) => {
                    let l = labels(m.labels, &s.labels, None);
                    let _ = writeln!(out, "{sample_name}{l} {v}");
                }
                Value::Gauge(v) => {
                    let l = labels(m.labels, &s.labels, None);
                    let _ = writeln!(out, "{sample_name}{l} {}", number(*v));
                }
                Value::Histogram {
                    buckets,
                    count,
                    sum,
                } => {
                    for (le, c) in buckets {
                        let le = number(*le);
                        let l = labels(m.labels, &s.labels, Some(("le", &le)));
                        let _ = writeln!(out, "{}_bucket{l} {c}", m.name);
                    }
                    let l = labels(m.labels, &s.labels, Some(("le", "+Inf")));
                    let _ = writeln!(out, "{}_bucket{l} {count}", m.name);
                    let l = labels(m.labels, &s.labels, None);
                    let _ = writeln!(out, "{}_count{l} {count}", m.name);
                    let _ = writeln!(out, "{}_sum{l} {}", m.name, number(*sum));
                }
            }
        }
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::catalog::{BUILD, JOB_BYTES, JOB_LATENCY};

    fn sample_families() -> Vec<Family> {
        let mut bytes = Family::of(&JOB_BYTES);
        bytes.push(&["a \"q\"\\", "0", "read"], Value::Counter(4096));
        let mut lat = Family::of(&JOB_LATENCY);
        lat.push(
            &["a", "0", "write"],
            Value::Histogram {
                buckets: vec![(0.000001023, 2), (0.000002047, 5)],
                count: 6,
                sum: 0.5,
            },
        );
        let mut build = Family::of(&BUILD);
        build.push(&["1.0", "h", "run"], Value::Gauge(1.0));
        vec![build, bytes, lat]
    }

    #[test]
    fn text_004_names_counters_by_their_samples() {
        let t = encode(&sample_families(), Format::Text004);
        assert!(
            t.contains("# TYPE drivelab_job_io_bytes_total counter\n"),
            "{t}"
        );
        assert!(t.contains(
            "drivelab_job_io_bytes_total{jobname=\"a \\\"q\\\"\\\\\",job_index=\"0\",direction=\"read\"} 4096\n"
        ));
        assert!(t.contains("# TYPE drivelab_build_info gauge\n"));
        assert!(t.contains(
            "drivelab_job_latency_seconds_bucket{jobname=\"a\",job_index=\"0\",direction=\"write\",le=\"0.000001023\"} 2\n"
        ));
        assert!(t.contains("le=\"+Inf\"} 6\n"));
        assert!(t.contains("drivelab_job_latency_seconds_count{jobname=\"a\",job_index=\"0\",direction=\"write\"} 6\n"));
        assert!(!t.contains("# EOF") && !t.contains("# UNIT"));
    }

    #[test]
    fn openmetrics_names_families_and_units_and_ends_with_eof() {
        let t = encode(&sample_families(), Format::OpenMetrics);
        assert!(
            t.contains(
                "# TYPE drivelab_job_io_bytes counter\n# UNIT drivelab_job_io_bytes bytes\n"
            ),
            "{t}"
        );
        assert!(t.contains("\ndrivelab_job_io_bytes_total{"));
        assert!(t.contains("# TYPE drivelab_build info\n"));
        assert!(t.contains("\ndrivelab_build_info{version=\"1.0\",host=\"h\",command=\"run\"} 1\n"));
        assert!(t.ends_with("# EOF\n"));
    }

    #[test]
    fn scrapers_get_the_format_they_ask_for() {
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate(Some(prom)), Format::OpenMetrics);
        assert_eq!(Format::negotiate(Some("*/*")), Format::Text004);
        assert_eq!(Format::negotiate(None), Format::Text004);
    }
}
