//! `drivelab compare ID ID…`: stored results side by side, with the change
//! of every metric against the first. Records of the same kind, the same
//! workload (spec key) and the same drives are repeats: they form a group,
//! shown as median (min..max), and a difference that stays inside a
//! group's spread is said to be noise, in words, rather than a change.
//!
//! The metrics of each kind are defined by `drivelab_report::metrics` and
//! read through [`crate::results`]; this command groups, judges and prints
//! them.

use clap::Args;
use drivelab_report::metrics::{short, Metric};
use drivelab_store::{Kind, Record, RecordId};
use serde_json::{json, Value};

use crate::output::OutputArgs;
use crate::results::metrics;

/// `drivelab compare ID ID…`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Record IDs (from 'drivelab history'); the first group is the baseline.
    #[arg(value_name = "ID", num_args = 2.., required = true)]
    pub ids: Vec<String>,
    #[command(flatten)]
    pub out: OutputArgs,
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
