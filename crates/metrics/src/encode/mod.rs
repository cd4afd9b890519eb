//! The figures as text, written by the `prometheus-client` crate:
//! OpenMetrics 1.0 (what Prometheus asks for first) or Prometheus's text
//! format 0.0.4 (what `promtool check metrics`, older scrapers and a plain
//! `curl` get). The two differ in how a counter's and an info's family are
//! named (`# TYPE x counter` with samples `x_total` in OpenMetrics,
//! `# TYPE x_total counter` in 0.0.4), in `# UNIT` lines and the closing
//! `# EOF`, which OpenMetrics alone has. The figures reach the crate as
//! one collector over the model's families, built per scrape: a histogram
//! is handed over as the work's own buckets, never observed sample by
//! sample.

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

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

/// The families of one scrape, as the crate's collector.
#[derive(Debug)]
struct Scrape(Arc<Vec<Family>>);

/// The crate's unit for a metric's, and its name without it (the crate
/// writes the unit back as the name's last word).
fn unit_of(name: &'static str, unit: &'static str) -> (&'static str, Option<Unit>) {
    let base = match name.strip_suffix(unit) {
        Some(b) if !unit.is_empty() => b.strip_suffix('_'),
        _ => None,
    };
    let Some(base) = base else {
        return (name, None);
    };
    let u = match unit {
        "bytes" => Unit::Bytes,
        "seconds" => Unit::Seconds,
        "celsius" => Unit::Celsius,
        other => Unit::Other(other.to_string()),
    };
    (base, Some(u))
}

/// Cumulative counts per bound as the crate takes them: each bucket's own,
/// closed by the `+Inf` bucket's (the samples above the last bound).
fn per_bucket(cumulative: &[(f64, u64)], count: u64) -> Vec<(f64, u64)> {
    let mut below = 0;
    let mut out: Vec<(f64, u64)> = cumulative
        .iter()
        .map(|&(le, c)| {
            let own = c.saturating_sub(below);
            below = c;
            (le, own)
        })
        .collect();
    out.push((f64::INFINITY, count.saturating_sub(below)));
    out
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in self.0.iter().filter(|f| !f.samples.is_empty()) {
            let m = f.metric;
            let (name, unit) = unit_of(m.name, m.unit);
            let kind = match m.kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
                Kind::Histogram => MetricType::Histogram,
                Kind::Info => MetricType::Info,
            };
            let mut family = encoder.encode_descriptor(name, m.help, unit.as_ref(), kind)?;
            for s in &f.samples {
                let labels: Vec<(&str, &str)> = m
                    .labels
                    .iter()
                    .copied()
                    .zip(s.labels.iter().map(String::as_str))
                    .collect();
                if m.kind == Kind::Info {
                    family.encode_info(&labels)?;
                    continue;
                }
                let mut sample = family.encode_family(&labels)?;
                match &s.value {
                    Value::Counter(v) => sample.encode_counter::<NoLabelSet, _, u64>(v, None)?,
                    Value::Gauge(v) => sample.encode_gauge(v)?,
                    Value::Histogram {
                        buckets,
                        count,
                        sum,
                    } => sample.encode_histogram::<NoLabelSet>(
                        *sum,
                        *count,
                        &per_bucket(buckets, *count),
                        None,
                    )?,
                }
            }
        }
        Ok(())
    }
}

/// `families` as text in `format`; families with no samples are left out.
pub fn encode(families: Arc<Vec<Family>>, format: Format) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Scrape(families)));
    let mut out = String::new();
    // Writing into a String cannot fail; a collector's error would be the
    // crate's own, and leaves what was written.
    let _ = match format {
        Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
        Format::Text004 => {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
        }
    };
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
        let t = encode(Arc::new(sample_families()), Format::Text004);
        assert!(
            t.contains("# TYPE drivelab_job_io_bytes_total counter\n"),
            "{t}"
        );
        assert!(t.contains(
            "drivelab_job_io_bytes_total{jobname=\"a \\\"q\\\"\\\\\",job_index=\"0\",direction=\"read\"} 4096\n"
        ));
        assert!(t.contains("# TYPE drivelab_build_info gauge\n"));
        assert!(t.contains(
            "drivelab_job_latency_seconds_bucket{jobname=\"a\",job_index=\"0\",direction=\"write\",le=\"1.023e-06\"} 2\n"
        ));
        assert!(t.contains("le=\"+Inf\"} 6\n"));
        assert!(t.contains("drivelab_job_latency_seconds_count{jobname=\"a\",job_index=\"0\",direction=\"write\"} 6\n"));
        assert!(!t.contains("# EOF") && !t.contains("# UNIT"));
    }

    #[test]
    fn openmetrics_names_families_and_units_and_ends_with_eof() {
        let t = encode(Arc::new(sample_families()), Format::OpenMetrics);
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
