//! `drivelab compare ID ID…`: stored results side by side, with the change
//! of every metric against the first. Records of the same kind, the same
//! workload (spec key) and the same drives are repeats: they form a group,
//! shown as median (min..max), and a difference that stays inside a
//! group's spread is said to be noise, in words, rather than a change.
//!
//! The metrics of each kind (IOPS, bandwidth, mean/p50/p99/p99.9 latency per
//! direction for runs; time and rate per drive for erases; rate and latency
//! per step for tests; IOPS and service times for replays) are read from
//! the stored result JSON, so that every record can be compared, however
//! old.

use clap::Args;
use drivelab_store::{Kind, Record, RecordId};
use serde_json::{json, Value};

use crate::output::OutputArgs;

/// `drivelab compare ID ID…`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Record IDs (from 'drivelab history'); the first group is the baseline.
    #[arg(value_name = "ID", num_args = 2.., required = true)]
    pub ids: Vec<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// One figure of a result.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// What it is ("read IOPS", "sdb erase time").
    pub name: String,
    /// Its unit ("IOPS", "MB/s", "µs", "s").
    pub unit: &'static str,
    /// The value.
    pub value: f64,
    /// Whether more is better (IOPS, bandwidth) or worse (latency, time).
    pub higher_is_better: bool,
}

fn num(v: &Value, path: &[&str]) -> Option<f64> {
    let mut at = v;
    for p in path {
        at = at.get(*p)?;
    }
    at.as_f64()
}

fn m(out: &mut Vec<Metric>, name: String, unit: &'static str, value: Option<f64>, up: bool) {
    if let Some(value) = value.filter(|x| x.is_finite()) {
        out.push(Metric {
            name,
            unit,
            value,
            higher_is_better: up,
        });
    }
}

fn list(v: &Value, key: &str) -> Vec<Value> {
    v.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The figures of a result, in a fixed order.
pub fn metrics(kind: Kind, v: &Value) -> Vec<Metric> {
    let mut out = Vec::new();
    match kind {
        Kind::Run => {
            let jobs = list(v, "jobs");
            let many = jobs.len() > 1;
            for j in &jobs {
                let prefix = if many {
                    format!(
                        "{} ",
                        j.get("jobname").and_then(Value::as_str).unwrap_or("job")
                    )
                } else {
                    String::new()
                };
                for dir in ["read", "write", "trim"] {
                    let Some(d) = j.get(dir) else { continue };
                    if num(d, &["total_ios"]).unwrap_or(0.0) <= 0.0 {
                        continue;
                    }
                    let p = format!("{prefix}{dir}");
                    m(
                        &mut out,
                        format!("{p} IOPS"),
                        "IOPS",
                        num(d, &["iops"]),
                        true,
                    );
                    m(
                        &mut out,
                        format!("{p} bandwidth"),
                        "MB/s",
                        num(d, &["bw_bytes"]).map(|b| b / 1e6),
                        true,
                    );
                    let us = |path: &[&str]| num(d, path).map(|ns| ns / 1e3);
                    m(
                        &mut out,
                        format!("{p} mean latency"),
                        "µs",
                        us(&["clat_ns", "mean"]),
                        false,
                    );
                    for (key, label) in [
                        ("50.000000", "p50"),
                        ("99.000000", "p99"),
                        ("99.900000", "p99.9"),
                    ] {
                        m(
                            &mut out,
                            format!("{p} {label} latency"),
                            "µs",
                            us(&["clat_ns", "percentile", key]),
                            false,
                        );
                    }
                }
            }
        }
        Kind::Test => {
            for s in list(v, "steps") {
                let p = format!(
                    "step {} {}",
                    num(&s, &["index"]).map(|i| i as u64 + 1).unwrap_or(0),
                    s.get("kind").and_then(Value::as_str).unwrap_or("")
                );
                m(
                    &mut out,
                    format!("{p} rate"),
                    "MB/s",
                    num(&s, &["bw_bytes"]).map(|b| b / 1e6),
                    true,
                );
                m(
                    &mut out,
                    format!("{p} IOPS"),
                    "IOPS",
                    num(&s, &["iops"]),
                    true,
                );
                m(
                    &mut out,
                    format!("{p} mean latency"),
                    "µs",
                    num(&s, &["clat_ns", "mean"]).map(|ns| ns / 1e3),
                    false,
                );
                m(
                    &mut out,
                    format!("{p} duration"),
                    "s",
                    num(&s, &["runtime_ns"]).map(|ns| ns / 1e9),
                    false,
                );
            }
        }
        Kind::Erase => {
            for d in list(v, "drives") {
                let dev = d.get("device").and_then(Value::as_str).unwrap_or("drive");
                let secs = num(&d, &["erase_seconds"]);
                m(&mut out, format!("{dev} erase time"), "s", secs, false);
                let rate = match (num(&d, &["bytes"]), secs) {
                    (Some(b), Some(s)) if s > 0.0 => Some(b / s / 1e6),
                    _ => None,
                };
                m(&mut out, format!("{dev} erase rate"), "MB/s", rate, true);
                m(
                    &mut out,
                    format!("{dev} verify time"),
                    "s",
                    num(&d, &["verify_seconds"]),
                    false,
                );
            }
            m(
                &mut out,
                "complete time".into(),
                "s",
                num(v, &["complete_seconds"]),
                false,
            );
            m(
                &mut out,
                "aggregate rate".into(),
                "MB/s",
                num(v, &["aggregate_mb_per_s"]),
                true,
            );
        }
        Kind::Season => {
            for d in list(v, "drives") {
                let dev = d
                    .pointer("/identity/device")
                    .and_then(Value::as_str)
                    .unwrap_or("drive");
                for p in d
                    .pointer("/fill/pass_results")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
                {
                    let n = num(&p, &["pass"]).unwrap_or(0.0);
                    let rate = num(&p, &["bw_bytes"]).map(|b| b / 1e6);
                    m(
                        &mut out,
                        format!("{dev} fill pass {n} rate"),
                        "MB/s",
                        rate,
                        true,
                    );
                }
                let last = list(&d, "rounds").last().cloned();
                let iops = last.as_ref().and_then(|r| num(r, &["iops"]));
                m(
                    &mut out,
                    format!("{dev} last round IOPS"),
                    "IOPS",
                    iops,
                    true,
                );
            }
            m(
                &mut out,
                "complete time".into(),
                "s",
                num(v, &["complete_seconds"]),
                false,
            );
        }
        Kind::Replay => replay_metrics(&mut out, v),
        Kind::Audit => replay_metrics(&mut out, v.get("replay").unwrap_or(&Value::Null)),
    }
    out
}

/// A replay's figures (an audit's are under `replay`).
fn replay_metrics(out: &mut Vec<Metric>, v: &Value) {
    m(out, "IOPS".into(), "IOPS", num(v, &["score", "iops"]), true);
    m(out, "duration".into(), "s", num(v, &["duration_s"]), false);
    let us = |k: &str| num(v, &["service_time_ns", k]).map(|ns| ns / 1e3);
    for (k, label) in [
        ("mean", "mean"),
        ("p50", "p50"),
        ("p99", "p99"),
        ("p999", "p99.9"),
    ] {
        m(out, format!("{label} service time"), "µs", us(k), false);
    }
}

/// A number in a few significant digits: 12.3k, 1.25M, 0.125.
pub fn short(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// One line of figures for `history`.
pub fn headline(kind: Kind, v: &Value) -> String {
    match kind {
        Kind::Run => {
            let (mut iops, mut bw) = (0.0, 0.0);
            for j in list(v, "jobs") {
                for dir in ["read", "write", "trim"] {
                    iops += num(&j, &[dir, "iops"]).unwrap_or(0.0);
                    bw += num(&j, &[dir, "bw_bytes"]).unwrap_or(0.0);
                }
            }
            format!("{} IOPS, {} MB/s", short(iops), short(bw / 1e6))
        }
        Kind::Test => {
            let steps = list(v, "steps");
            let rates: Vec<String> = steps
                .iter()
                .filter_map(|s| num(s, &["bw_bytes"]))
                .map(|b| format!("{} MB/s", short(b / 1e6)))
                .collect();
            format!("{} step(s): {}", steps.len(), rates.join(", "))
        }
        Kind::Erase => format!(
            "{} drive(s), {} B in {} s, {} MB/s",
            list(v, "drives").len(),
            short(num(v, &["total_bytes"]).unwrap_or(0.0)),
            short(num(v, &["complete_seconds"]).unwrap_or(0.0)),
            short(num(v, &["aggregate_mb_per_s"]).unwrap_or(0.0))
        ),
        Kind::Season => {
            let bytes = season_bytes(v);
            let secs = num(v, &["complete_seconds"]).unwrap_or(0.0);
            let rate = if secs > 0.0 { bytes / secs / 1e6 } else { 0.0 };
            format!(
                "{} drive(s), {} B in {} s, {} MB/s",
                list(v, "drives").len(),
                short(bytes),
                short(secs),
                short(rate)
            )
        }
        Kind::Replay => replay_headline(v),
        Kind::Audit => replay_headline(v.get("replay").unwrap_or(&Value::Null)),
    }
}

/// A replay's figures (an audit's are under `replay`).
fn replay_headline(r: &Value) -> String {
    let bytes = num(r, &["bytes_read"]).unwrap_or(0.0) + num(r, &["bytes_written"]).unwrap_or(0.0);
    format!(
        "{} IOPS, {} B over {} s, {} errors",
        short(num(r, &["score", "iops"]).unwrap_or(0.0)),
        short(bytes),
        short(num(r, &["duration_s"]).unwrap_or(0.0)),
        num(r, &["errors"]).unwrap_or(0.0)
    )
}

/// Bytes a season wrote: every drive's fill passes, image and rounds.
pub fn season_bytes(v: &Value) -> f64 {
    list(v, "drives")
        .iter()
        .map(|d| {
            let fill: f64 = d
                .pointer("/fill/pass_results")
                .and_then(Value::as_array)
                .map(|ps| ps.iter().filter_map(|p| num(p, &["bytes"])).sum())
                .unwrap_or(0.0);
            let rounds: f64 = list(d, "rounds")
                .iter()
                .filter_map(|r| num(r, &["bytes_written"]))
                .sum();
            fill + num(d, &["image", "bytes"]).unwrap_or(0.0) + rounds
        })
        .sum()
}

/// Median, min and max of some values (at least one).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Middle value (the mean of the two middle ones for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// How many.
    pub n: usize,
}

impl Spread {
    /// The spread of `xs`; `None` when empty.
    pub fn of(xs: &[f64]) -> Option<Spread> {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n == 0 {
            return None;
        }
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }

    fn overlaps(&self, o: &Spread) -> bool {
        self.min <= o.max && o.min <= self.max
    }
}

/// How one group's figure stands against the baseline's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judgement {
    /// Inside the spread of repeated runs.
    Noise,
    /// Beyond the spread, in the better direction.
    Better,
    /// Beyond the spread, in the worse direction.
    Worse,
    /// Exactly the same value.
    Same,
    /// Neither side was repeated: no spread to judge by.
    Unknown,
}

impl Judgement {
    fn word(self) -> &'static str {
        match self {
            Judgement::Noise => "noise",
            Judgement::Better => "better",
            Judgement::Worse => "worse",
            Judgement::Same => "same",
            Judgement::Unknown => "unknown",
        }
    }
}

/// Judge `g` against the baseline `a`.
pub fn judge(a: &Spread, g: &Spread, higher_is_better: bool) -> Judgement {
    if a.n < 2 && g.n < 2 {
        return if a.median == g.median {
            Judgement::Same
        } else {
            Judgement::Unknown
        };
    }
    if a.overlaps(g) {
        return Judgement::Noise;
    }
    if (g.median > a.median) == higher_is_better {
        Judgement::Better
    } else {
        Judgement::Worse
    }
}

/// The change from `a` to `b`, percent (`None` from zero).
fn change_pct(a: f64, b: f64) -> Option<f64> {
    (a != 0.0).then(|| (b - a) / a.abs() * 100.0)
}

/// A group of repeats.
struct Group {
    label: String,
    records: Vec<Record>,
    metrics: Vec<Vec<Metric>>,
}

fn group_key(r: &Record) -> (Kind, String, Vec<String>) {
    let mut drives: Vec<String> = r
        .drives
        .iter()
        .map(|d| d.serial.clone().unwrap_or_else(|| d.path.clone()))
        .collect();
    drives.sort();
    (r.kind, r.spec_key.clone(), drives)
}

fn label(i: usize) -> String {
    let letters = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    if i < letters.len() {
        (letters[i] as char).to_string()
    } else {
        format!("G{}", i + 1)
    }
}

/// Run `drivelab compare`.
pub fn run(a: CompareArgs) -> anyhow::Result<u8> {
    let ids = a
        .ids
        .iter()
        .map(|s| s.parse::<RecordId>().map_err(crate::error::usage))
        .collect::<anyhow::Result<Vec<_>>>()?;
    a.out.check()?;
    let mut store = crate::cmd_store::open()?;
    let mut groups: Vec<Group> = Vec::new();
    let mut keys = Vec::new();
    for id in ids {
        let r = store.get(id).map_err(crate::cmd_store::store_error)?;
        let v: Value = serde_json::from_str(&r.result_json).unwrap_or(Value::Null);
        let ms = metrics(r.kind, &v);
        let k = group_key(&r);
        match keys.iter().position(|x| *x == k) {
            Some(i) => {
                groups[i].records.push(r);
                groups[i].metrics.push(ms);
            }
            None => {
                keys.push(k);
                groups.push(Group {
                    label: label(groups.len()),
                    records: vec![r],
                    metrics: vec![ms],
                });
            }
        }
    }
    let kinds: Vec<Kind> = groups.iter().map(|g| g.records[0].kind).collect();
    if kinds.iter().any(|k| *k != kinds[0]) {
        return Err(crate::error::usage(format!(
            "these records are of different kinds ({}); compare runs with runs, erases with erases",
            kinds
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let report = build(&groups);
    let text = if a.out.json() {
        format!("{}\n", serde_json::to_string_pretty(&report)?)
    } else {
        render(&report)
    };
    a.out.emit(&text)?;
    Ok(0)
}

/// The comparison as JSON (what `--output-format json` prints and the
/// text is drawn from).
fn build(groups: &[Group]) -> Value {
    // Metric names in order of first appearance.
    let mut names: Vec<(String, &'static str, bool)> = Vec::new();
    for g in groups {
        for ms in &g.metrics {
            for m in ms {
                if !names.iter().any(|(n, _, _)| *n == m.name) {
                    names.push((m.name.clone(), m.unit, m.higher_is_better));
                }
            }
        }
    }
    let gjson: Vec<Value> = groups
        .iter()
        .map(|g| {
            let r = &g.records[0];
            json!({
                "label": g.label,
                "ids": g.records.iter().map(|r| r.id.0).collect::<Vec<_>>(),
                "kind": r.kind.as_str(),
                "spec_key": r.spec_key,
                "drives": r.drives.iter().map(|d| d.label()).collect::<Vec<_>>(),
                "repeats": g.records.len(),
            })
        })
        .collect();
    let mut mjson = Vec::new();
    for (name, unit, up) in &names {
        let spreads: Vec<Option<Spread>> = groups
            .iter()
            .map(|g| {
                let xs: Vec<f64> = g
                    .metrics
                    .iter()
                    .filter_map(|ms| ms.iter().find(|m| m.name == *name).map(|m| m.value))
                    .collect();
                Spread::of(&xs)
            })
            .collect();
        let base = spreads[0];
        let per: Vec<Value> = spreads
            .iter()
            .enumerate()
            .map(|(i, s)| match s {
                None => Value::Null,
                Some(s) => {
                    let (change, judgement) = match (i, base) {
                        (0, _) | (_, None) => (None, None),
                        (_, Some(b)) => (
                            change_pct(b.median, s.median),
                            Some(judge(&b, s, *up).word()),
                        ),
                    };
                    json!({"median": s.median, "min": s.min, "max": s.max, "n": s.n,
                           "change_pct": change, "judgement": judgement})
                }
            })
            .collect();
        mjson.push(json!({"metric": name, "unit": unit, "higher_is_better": up, "groups": per}));
    }
    json!({"groups": gjson, "metrics": mjson})
}

fn cell(s: &Value) -> String {
    let f = |k: &str| s.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    if s.get("n").and_then(Value::as_u64).unwrap_or(0) >= 2 {
        format!(
            "{} ({}..{})",
            short(f("median")),
            short(f("min")),
            short(f("max"))
        )
    } else {
        short(f("median"))
    }
}

/// The comparison as text: who is in each group, a table, and the verdict
/// per group in words.
fn render(r: &Value) -> String {
    let groups = r["groups"].as_array().cloned().unwrap_or_default();
    let metrics = r["metrics"].as_array().cloned().unwrap_or_default();
    let mut s = String::new();
    s.push_str(&format!(
        "Comparing {} group(s); A is the baseline. Repeats (same kind, spec and drives) are shown as median (min..max).\n",
        groups.len()
    ));
    for g in &groups {
        let ids: Vec<String> = g["ids"]
            .as_array()
            .map(|a| a.iter().map(|x| format!("#{x}")).collect())
            .unwrap_or_default();
        let drives: Vec<String> = g["drives"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let n = g["repeats"].as_u64().unwrap_or(1);
        s.push_str(&format!(
            "  {}: {} — {} on {}{}\n",
            g["label"].as_str().unwrap_or("?"),
            ids.join(" "),
            g["kind"].as_str().unwrap_or("?"),
            if drives.is_empty() {
                "-".into()
            } else {
                drives.join(", ")
            },
            if n >= 2 {
                format!(", {n} repeats of one spec")
            } else {
                String::new()
            }
        ));
    }
    let w = metrics
        .iter()
        .map(|m| {
            m["metric"].as_str().unwrap_or("").chars().count()
                + m["unit"].as_str().unwrap_or("").chars().count()
                + 3
        })
        .max()
        .unwrap_or(6)
        .max(6);
    s.push('\n');
    s.push_str(&format!("{:<w$}", "METRIC"));
    for g in &groups {
        s.push_str(&format!("  {:<24}", g["label"].as_str().unwrap_or("?")));
    }
    s.push('\n');
    // Per group: (judgement, metric, change %).
    let mut words: Vec<Vec<(String, String, f64)>> = vec![Vec::new(); groups.len()];
    for m in &metrics {
        let name = format!(
            "{} ({})",
            m["metric"].as_str().unwrap_or(""),
            m["unit"].as_str().unwrap_or("")
        );
        s.push_str(&format!("{name:<w$}"));
        for (i, g) in m["groups"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let mut c = if g.is_null() {
                "-".to_string()
            } else {
                cell(g)
            };
            if let Some(p) = g.get("change_pct").and_then(Value::as_f64) {
                c.push_str(&format!(" {p:+.1}%"));
            }
            if let Some(j) = g.get("judgement").and_then(Value::as_str) {
                if j != "same" {
                    c.push_str(&format!(" {j}"));
                }
                words[i].push((
                    j.to_string(),
                    m["metric"].as_str().unwrap_or("").to_string(),
                    g.get("change_pct").and_then(Value::as_f64).unwrap_or(0.0),
                ));
            }
            s.push_str(&format!("  {c:<24}"));
        }
        s.push('\n');
    }
    s.push('\n');
    for (i, g) in groups.iter().enumerate().skip(1) {
        let l = g["label"].as_str().unwrap_or("?");
        let js = &words[i];
        let count = |j: &str| js.iter().filter(|x| x.0 == j).count();
        let beyond: Vec<String> = js
            .iter()
            .filter(|x| x.0 == "better" || x.0 == "worse")
            .map(|x| format!("{} {:+.1}% ({})", x.1, x.2, x.0))
            .collect();
        let mut line = format!("{l} against A: ");
        if count("unknown") > 0 && count("noise") + beyond.len() == 0 {
            line.push_str("neither side was repeated, so the noise is unknown: the changes above may be noise; run the same spec again on the same drive and compare all the runs.");
        } else {
            if count("noise") > 0 {
                line.push_str(&format!(
                    "{} of {} metrics differ by no more than the repeated runs differ among themselves: that is noise, not a change",
                    count("noise"),
                    js.len()
                ));
            }
            if !beyond.is_empty() {
                if count("noise") > 0 {
                    line.push_str("; ");
                }
                line.push_str(&format!("beyond the spread: {}", beyond.join(", ")));
            }
            if count("noise") == 0 && beyond.is_empty() {
                line.push_str("the same figures");
            }
            line.push('.');
        }
        s.push_str(&line);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(xs: &[f64]) -> Spread {
        Spread::of(xs).unwrap()
    }

    #[test]
    fn spread_is_median_min_max() {
        assert_eq!(
            sp(&[3.0, 1.0, 2.0]),
            Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0,
                n: 3
            }
        );
        assert_eq!(sp(&[4.0, 1.0, 2.0, 3.0]).median, 2.5);
        assert!(Spread::of(&[]).is_none());
    }

    #[test]
    fn a_three_percent_difference_inside_the_spread_is_noise() {
        // Repeats of A vary by ±5%; B is 3% above A's median.
        let a = sp(&[95_000.0, 100_000.0, 105_000.0]);
        let b = sp(&[103_000.0]);
        assert_eq!(judge(&a, &b, true), Judgement::Noise);
        // 20% above: beyond the spread, better for IOPS, worse for latency.
        let c = sp(&[120_000.0]);
        assert_eq!(judge(&a, &c, true), Judgement::Better);
        assert_eq!(judge(&a, &c, false), Judgement::Worse);
        // Nothing repeated: no spread to judge by.
        assert_eq!(judge(&sp(&[1.0]), &sp(&[1.03]), true), Judgement::Unknown);
        assert_eq!(judge(&sp(&[1.0]), &sp(&[1.0]), true), Judgement::Same);
    }

    #[test]
    fn run_metrics_per_direction() {
        let v = json!({"jobs": [{"jobname": "j", "read": {"total_ios": 10, "iops": 1000.0, "bw_bytes": 4096000,
            "clat_ns": {"mean": 2500.0, "percentile": {"50.000000": 2000, "99.000000": 9000, "99.900000": 12000}}},
            "write": {"total_ios": 0, "iops": 0.0}}]});
        let ms = metrics(Kind::Run, &v);
        let names: Vec<&str> = ms.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "read IOPS",
                "read bandwidth",
                "read mean latency",
                "read p50 latency",
                "read p99 latency",
                "read p99.9 latency"
            ]
        );
        assert_eq!(ms[1].value, 4.096);
        assert_eq!(ms[4].value, 9.0);
        assert!(!ms[4].higher_is_better && ms[0].higher_is_better);
    }
}
