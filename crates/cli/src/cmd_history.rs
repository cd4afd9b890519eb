//! `drivelab history`, `drivelab show ID` and `drivelab export ID --csv
//! DIR`: reading the result store. `show --output-format json` prints the
//! stored result JSON byte for byte as the command printed it; the text
//! form adds who, where and when before the text the command printed.

use std::path::PathBuf;

use clap::Args;
use drivelab_store::{Filter, Kind, Record, RecordId, HISTORY_COUNT_LIMIT, SERIES_METRICS};
use serde_json::{json, Value};

use crate::cmd_store::{open, store_error};
use crate::error::usage;
use crate::output::OutputArgs;

/// `drivelab history`.
#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Only records of the drive with this serial.
    #[arg(long, value_name = "SERIAL")]
    pub drive: Option<String>,
    /// Only records of drives whose model contains M (any case).
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// Only this kind: run, test, erase, replay, audit or season.
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// Only records since a date (2026-11-01, 2026-11-01T08:00:00, UTC) or
    /// for a duration back from now (90m, 12h, 7d, 2w).
    #[arg(long, value_name = "DATE|DURATION")]
    pub since: Option<String>,
    /// Only records a fleet made on this Kubernetes node.
    #[arg(long, value_name = "NODE")]
    pub node: Option<String>,
    /// Only records of this fleet run (`drivelab fleet`).
    #[arg(long, value_name = "RUN")]
    pub fleet_run: Option<String>,
    /// At most N records, the newest (0 = all); a last line says how many
    /// more match.
    #[arg(long, value_name = "N", default_value_t = drivelab_store::DEFAULT_HISTORY_LIMIT)]
    pub limit: u64,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `drivelab show ID`.
#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The record's ID (from 'drivelab history').
    #[arg(value_name = "ID")]
    pub id: String,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `drivelab export ID --csv DIR`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The record's ID (from 'drivelab history').
    #[arg(value_name = "ID")]
    pub id: String,
    /// Write summary.csv (one metric a row) and series.csv (one second of
    /// one series a row) into DIR, created when missing. Files already
    /// there are not replaced unless --overwrite is given.
    #[arg(long, value_name = "DIR", required = true)]
    pub csv: PathBuf,
    /// Replace summary.csv and series.csv when DIR already holds them.
    #[arg(long)]
    pub overwrite: bool,
}

/// The files `export --csv DIR` writes.
const EXPORT_FILES: [&str; 2] = ["summary.csv", "series.csv"];

pub fn parse_id(s: &str) -> anyhow::Result<RecordId> {
    s.parse::<RecordId>().map_err(usage)
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `--since`: a date or a duration back from `now_ms`; Unix ms.
pub fn parse_since(s: &str, now_ms: i64) -> Result<i64, String> {
    let bad = || {
        format!("--since '{s}': give a date (2026-11-01 or 2026-11-01T08:00:00, UTC) or a duration (90m, 12h, 7d, 2w)")
    };
    let t = s.trim();
    if let Some(unit) = t.chars().last().filter(|c| c.is_ascii_alphabetic()) {
        if let Ok(n) = t[..t.len() - 1].parse::<u32>() {
            let secs: i64 = match unit {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86_400,
                'w' => 7 * 86_400,
                _ => return Err(bad()),
            };
            return Ok(now_ms - i64::from(n) * secs * 1000);
        }
    }
    let (date, time) = match t.split_once(['T', ' ']) {
        Some((d, tm)) => (d, Some(tm)),
        None => (t, None),
    };
    let parts: Vec<&str> = date.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return Err(bad());
    };
    let (y, m, d) = match (y.parse::<i64>(), m.parse::<u32>(), d.parse::<u32>()) {
        (Ok(y), Ok(m), Ok(d)) if (1..=12).contains(&m) && (1..=31).contains(&d) => (y, m, d),
        _ => return Err(bad()),
    };
    let mut secs = days_from_civil(y, m, d) * 86_400;
    if let Some(tm) = time {
        let tm = tm.trim_end_matches('Z');
        let hms: Vec<&str> = tm.split(':').collect();
        if hms.len() < 2 || hms.len() > 3 {
            return Err(bad());
        }
        let mut mul = 3600;
        for (i, p) in hms.iter().enumerate() {
            let v: i64 = p.parse().map_err(|_| bad())?;
            let max = if i == 0 { 23 } else { 59 };
            if !(0..=max).contains(&v) {
                return Err(bad());
            }
            secs += v * mul;
            mul /= 60;
        }
    }
    Ok(secs * 1000)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// "2026-11-22 04:05:06 UTC" from Unix ms.
pub fn utc(ms: i64) -> String {
    drivelab_workload::run::execute::format_utc(u64::try_from(ms / 1000).unwrap_or(0))
}

/// Run `drivelab history`.
pub fn history(a: HistoryArgs) -> anyhow::Result<u8> {
    let kind = match &a.kind {
        Some(k) => Some(
            k.parse::<Kind>()
                .map_err(|e| usage(format!("--kind: {e}")))?,
        ),
        None => None,
    };
    let since_ms = match &a.since {
        Some(s) => Some(parse_since(s, now_ms()).map_err(usage)?),
        None => None,
    };
    a.out.check()?;
    let filter = Filter {
        serial: a.drive.clone(),
        model: a.model.clone(),
        kind,
        since_ms,
        spec_key: None,
        node: a.node.clone(),
        fleet_run: a.fleet_run.clone(),
        limit: (a.limit > 0).then_some(a.limit),
    };
    let mut store = open()?;
    let rows = store.history(&filter).map_err(store_error)?;
    let text = if a.out.json() {
        let v: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({"id": r.id.0, "kind": r.kind.as_str(), "time_ms": r.time_ms, "time": utc(r.time_ms),
                       "host": r.host, "drives": r.drives, "verdict": r.verdict,
                       "exit_status": r.exit_status, "headline": r.headline, "spec_key": r.spec_key,
                       "node": r.fleet.as_ref().map(|f| &f.node),
                       "fleet_run": r.fleet.as_ref().map(|f| &f.run_id)})
            })
            .collect();
        format!("{}\n", serde_json::to_string_pretty(&Value::Array(v))?)
    } else {
        let mut s = String::new();
        if rows.is_empty() {
            s.push_str(&format!("no records in {} match\n", store.location()));
        } else {
            // The node column only when a listed record came from a fleet.
            let nodes = rows.iter().any(|r| r.fleet.is_some());
            let node = |n: &str| {
                if nodes {
                    format!("{:<16}  ", clip(n, 16))
                } else {
                    String::new()
                }
            };
            s.push_str(&format!(
                "{:>6}  {:<6}  {:<23}  {}{:<28}  {:<24}  {}\n",
                "ID",
                "KIND",
                "TIME",
                node("NODE"),
                "DRIVE",
                "VERDICT",
                "FIGURES"
            ));
            for r in &rows {
                s.push_str(&format!(
                    "{:>6}  {:<6}  {:<23}  {}{:<28}  {:<24}  {}\n",
                    r.id.0,
                    r.kind.as_str(),
                    utc(r.time_ms),
                    node(r.fleet.as_ref().map_or("-", |f| f.node.as_str())),
                    clip(if r.drives.is_empty() { "-" } else { &r.drives }, 28),
                    clip(&r.verdict, 24),
                    r.headline
                ));
            }
            if a.limit > 0 && rows.len() as u64 == a.limit {
                // Counted only when the listing was cut: one more query.
                let cap = a.limit.saturating_add(HISTORY_COUNT_LIMIT);
                let total = store.count(&filter, cap).map_err(store_error)?;
                let more = total.saturating_sub(a.limit);
                if total >= cap {
                    s.push_str(&format!(
                        "(at least {more} more match, older; --limit N lists more, --limit 0 all)\n"
                    ));
                } else if more > 0 {
                    s.push_str(&format!(
                        "({more} more match, older; --limit N lists more, --limit 0 all {total})\n"
                    ));
                }
            }
        }
        s
    };
    a.out.emit(&text)?;
    Ok(0)
}

/// At most `n` characters, with "…" when cut.
fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// Run `drivelab show ID`.
pub fn show(a: ShowArgs) -> anyhow::Result<u8> {
    let id = parse_id(&a.id)?;
    a.out.check()?;
    let mut store = open()?;
    let r = store.get(id).map_err(store_error)?;
    if a.out.json() {
        // Exactly what the command printed in JSON mode.
        a.out.emit(&r.result_json)?;
    } else {
        a.out.emit(&describe(&r))?;
    }
    Ok(0)
}

/// A record in text: its facts, then what the command printed (or, when it
/// printed JSON, that JSON).
fn describe(r: &Record) -> String {
    let spec: Value = serde_json::from_str(&r.spec_json).unwrap_or(Value::Null);
    let cmd = spec["command_line"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let mut s = format!(
        "record {} ({}), {}\nhost {}, kernel {}, drivelab {}\ncommand: {}\nverdict: {}; exit status {}\nfigures: {}\n",
        r.id,
        r.kind,
        utc(r.time_ms),
        r.host,
        r.kernel,
        r.version,
        cmd,
        r.verdict,
        r.exit_status,
        r.headline
    );
    for d in &r.drives {
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
        s.push_str(&format!(
            "drive {}: model {}, serial {}, firmware {}, WWN {}, {} bytes, sectors {}/{} B, {}\n",
            d.path,
            opt(&d.model),
            opt(&d.serial),
            opt(&d.firmware),
            opt(&d.wwn),
            d.capacity_bytes
                .map(|c| c.to_string())
                .unwrap_or("-".into()),
            d.logical_sector
                .map(|c| c.to_string())
                .unwrap_or("-".into()),
            d.physical_sector
                .map(|c| c.to_string())
                .unwrap_or("-".into()),
            opt(&d.transport)
        ));
    }
    for a in &r.artifacts {
        s.push_str(&format!(
            "kept with it: {} ({} bytes)\n",
            a.name,
            a.content.len()
        ));
    }
    s.push('\n');
    s.push_str(r.result_text.as_deref().unwrap_or(&r.result_json));
    s
}

/// A CSV field, quoted when it needs to be.
fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Run `drivelab export ID --csv DIR`.
pub fn export(a: ExportArgs) -> anyhow::Result<u8> {
    let id = parse_id(&a.id)?;
    crate::output::check_dir(&a.csv, "--csv")?;
    for name in EXPORT_FILES {
        let p = a.csv.join(name);
        if !a.overwrite && std::fs::symlink_metadata(&p).is_ok() {
            return Err(usage(format!(
                "refusing to write to {} (--csv): it exists; pass --overwrite to replace it, or give another directory; nothing was written",
                p.display()
            )));
        }
        if a.csv.is_dir() {
            crate::output::check_file(&p, "--csv")?;
        }
    }
    let mut store = open()?;
    let r = store.get(id).map_err(store_error)?;
    let series = store.series(id).map_err(store_error)?;
    let v: Value = serde_json::from_str(&r.result_json).unwrap_or(Value::Null);
    let drives = r
        .drives
        .iter()
        .map(|d| d.label())
        .collect::<Vec<_>>()
        .join("; ");
    let mut summary = String::from("record,kind,time_utc,host,drives,verdict,metric,unit,value\n");
    for m in crate::results::metrics(r.kind, &v) {
        summary.push_str(&format!(
            "{},{},{},{},{},{},{},{},{}\n",
            r.id,
            r.kind,
            csv(&utc(r.time_ms)),
            csv(&r.host),
            csv(&drives),
            csv(&r.verdict),
            csv(&m.name),
            csv(m.unit),
            m.value
        ));
    }
    let mut out = format!("record,source,name,t_s,{}\n", SERIES_METRICS.join(","));
    for row in &series {
        out.push_str(&format!(
            "{},{},{},{}",
            r.id,
            row.source.as_str(),
            csv(&row.name),
            row.t_s
        ));
        for m in row.metrics() {
            out.push(',');
            if let Some(x) = m {
                out.push_str(&x.to_string());
            }
        }
        out.push('\n');
    }
    std::fs::create_dir_all(&a.csv).map_err(|e| {
        usage(format!(
            "--csv {}: cannot be created ({e})",
            a.csv.display()
        ))
    })?;
    for (name, text) in EXPORT_FILES.into_iter().zip([&summary, &out]) {
        crate::output::write_file(&a.csv.join(name), "--csv", text.as_bytes())?;
    }
    println!(
        "record {id}: {} metric(s) to {}, {} series row(s) to {}",
        summary.lines().count() - 1,
        a.csv.join("summary.csv").display(),
        series.len(),
        a.csv.join("series.csv").display()
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_dates_and_durations() {
        let now = 1_700_000_000_000;
        assert_eq!(parse_since("7d", now).unwrap(), now - 7 * 86_400_000);
        assert_eq!(parse_since("90m", now).unwrap(), now - 90 * 60_000);
        assert_eq!(parse_since("1970-01-02", now).unwrap(), 86_400_000);
        assert_eq!(parse_since("2023-11-14T22:13:20", now).unwrap(), now);
        assert_eq!(parse_since("2023-11-14 22:13", now).unwrap(), now - 20_000);
        for bad in ["yesterday", "7y", "2023-13-01", "2023-11-14T25:00", "-1d"] {
            assert!(parse_since(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv("plain"), "plain");
        assert_eq!(csv("a,b"), "\"a,b\"");
        assert_eq!(csv("say \"x\""), "\"say \"\"x\"\"\"");
    }
}
