//! The store's speed (issue 13, item 7): fill a store with RUNS runs, then
//! time storing a 1-hour run with its per-second series (engine and device,
//! 3600 seconds each) and `history` over the filled store.
//!
//! Usage: store_bench LOCATION [RUNS] [REPEATS] [FILL_SECONDS]
//!   LOCATION      an SQLite path (a fresh file) or postgres://…
//!   RUNS          runs to fill with (default 100000)
//!   REPEATS       timed repetitions; the median is printed (default 15)
//!   FILL_SECONDS  seconds of series in each filling run (default 10)
//!
//! Prints one `name: value` line per figure, for bench/store to tabulate.

use std::time::Instant;

use drivelab_store::{
    extract, open, Drive, Filter, Kind, NewRecord, Printed, DEFAULT_HISTORY_LIMIT,
    HISTORY_COUNT_LIMIT,
};
use serde_json::json;

fn drive(i: u64) -> Drive {
    Drive {
        path: format!("/dev/sd{}", (b'a' + (i % 24) as u8) as char),
        model: Some(["LAB SSD 960", "LAB HDD 8T"][(i % 2) as usize].into()),
        serial: Some(format!("SN{:05}", i % 200)),
        firmware: Some(format!("FW{}", i % 3)),
        wwn: Some(format!("naa.5000c500{:08x}", i % 200)),
        capacity_bytes: Some(960_197_124_096),
        logical_sector: Some(512),
        physical_sector: Some(4096),
        transport: Some("ata".into()),
    }
}

/// A run's result JSON with `seconds` of engine and device series, shaped
/// as `drivelab run --output-format json` prints it.
fn result(i: u64, seconds: usize) -> String {
    let ts: Vec<_> = (0..seconds)
        .map(|t| {
            json!({"t_s": t as f64, "iops": 90_000.0 + (t % 97) as f64, "bw_bytes": 3.7e8,
                        "lat_mean_ns": 350_000.0 + (t % 13) as f64, "lat_p99_ns": 1_200_000})
        })
        .collect();
    let dev: Vec<_> = (0..seconds)
        .map(|t| {
            json!({"t_s": t as f64, "r_iops": 63_000.0, "w_iops": 27_000.0 + (t % 7) as f64,
                        "r_bw_bytes": 2.6e8, "w_bw_bytes": 1.1e8, "util_pct": 99.5, "aqu_sz": 31.8,
                        "r_await_ms": 0.34, "w_await_ms": 0.37})
        })
        .collect();
    let dir = |iops: f64| {
        json!({"io_bytes": 1u64 << 40, "iops": iops, "bw_bytes": (iops * 4096.0) as u64,
        "total_ios": 1u64 << 28, "clat_ns": {"min": 20_000, "max": 9_000_000, "mean": 350_000.0, "stddev": 80_000.0,
        "N": 1u64 << 28, "percentile": {"50.000000": 320_000, "99.000000": 1_200_000, "99.900000": 2_400_000}}})
    };
    let v = json!({"drivelab version": "drivelab-0.1.0", "timestamp": 1_790_000_000u64 + i,
        "jobs": [{"jobname": "randrw", "job options": {"rw": "randrw", "bs": "4k", "iodepth": "32",
                  "filename": format!("/dev/sd{}", i % 24)}, "read": dir(63_000.0), "write": dir(27_000.0),
                  "timeseries": ts}],
        "device_check": [{"device": "sda", "verdict": "agrees", "agrees": true, "series": dev}],
        "interrupted": false});
    format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
}

fn record(i: u64, seconds: usize) -> NewRecord {
    let result_json = result(i, seconds);
    let v: serde_json::Value = serde_json::from_str(&result_json).unwrap_or_default();
    NewRecord {
        kind: if i % 10 == 9 { Kind::Erase } else { Kind::Run },
        time_ms: 1_700_000_000_000 + i as i64 * 60_000,
        host: format!("bench-{}", i % 4),
        kernel: "6.1.0-28-amd64".into(),
        version: "0.1.0".into(),
        spec: json!({"command_line": ["drivelab", "run", "--rw=randrw", format!("--iodepth={}", 1 << (i % 6))],
                     "options": {"iodepth": 1 << (i % 6)}}),
        result_json,
        result_text: None,
        printed: Printed::Json,
        verdict: "device check agrees".into(),
        exit_status: 0,
        headline: "90.0k IOPS, 369 MB/s".into(),
        drives: vec![drive(i)],
        series: extract::series(&v),
        artifacts: Vec::new(),
        fleet: None,
    }
}

fn median_ms(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed().as_secs_f64() * 1e3)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(loc) = args.get(1) else {
        eprintln!("usage: store_bench LOCATION [RUNS] [REPEATS]");
        std::process::exit(2);
    };
    let runs: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let repeats: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(15);
    let fill_seconds: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(10);
    let mut s = match open(Some(loc)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("store_bench: {e}");
            std::process::exit(2);
        }
    };
    let fail = |e: drivelab_store::StoreError| -> ! {
        eprintln!("store_bench: {e}");
        std::process::exit(1)
    };
    // Fill, 1000 records a transaction.
    let t = Instant::now();
    let mut i = 0;
    while i < runs {
        let batch: Vec<NewRecord> = (i..(i + 1000).min(runs))
            .map(|k| record(k, fill_seconds))
            .collect();
        s.put_all(&batch).unwrap_or_else(|e| fail(e));
        i += batch.len() as u64;
    }
    println!("fill_runs: {runs}");
    println!("fill_s: {:.1}", t.elapsed().as_secs_f64());

    // A 1-hour run: 3600 s of engine and device series (7200 rows).
    let hour = record(runs + 1, 3600);
    println!("hour_result_json_bytes: {}", hour.result_json.len());
    println!("hour_series_rows: {}", hour.series.len());
    let mut puts = Vec::new();
    for _ in 0..repeats {
        let (r, ms) = time(|| s.put(&hour));
        r.unwrap_or_else(|e| fail(e));
        puts.push(ms);
    }
    println!("store_1h_run_ms: {:.1}", median_ms(puts));
    // As the command does it: open, then put.
    let mut opens = Vec::new();
    for _ in 0..repeats {
        let (r, ms) = time(|| open(Some(loc)).and_then(|mut st| st.put(&hour)));
        r.unwrap_or_else(|e| fail(e));
        opens.push(ms);
    }
    println!("open_and_store_1h_run_ms: {:.1}", median_ms(opens));

    // As `drivelab history` lists: the newest DEFAULT_HISTORY_LIMIT, and
    // when cut, the count of all that match (its "N more" line).
    let limit = Some(DEFAULT_HISTORY_LIMIT);
    let cases: [(&str, Filter); 4] = [
        (
            "history_default_ms",
            Filter {
                limit,
                ..Filter::default()
            },
        ),
        (
            "history_drive_ms",
            Filter {
                serial: Some("SN00042".into()),
                limit,
                ..Filter::default()
            },
        ),
        (
            "history_model_kind_since_ms",
            Filter {
                model: Some("hdd".into()),
                kind: Some(Kind::Run),
                since_ms: Some(1_700_000_000_000 + (runs as i64 / 2) * 60_000),
                limit,
                ..Filter::default()
            },
        ),
        // --limit 0: every record, unbounded (not a default listing).
        ("history_all_ms", Filter::default()),
    ];
    for (name, f) in cases {
        let mut xs = Vec::new();
        let (mut n, mut total) = (0, 0);
        for _ in 0..repeats {
            let (r, ms) = time(|| {
                let rows = s.history(&f)?;
                let total = match f.limit {
                    Some(l) if rows.len() as u64 == l => s.count(&f, l + HISTORY_COUNT_LIMIT)?,
                    _ => rows.len() as u64,
                };
                Ok::<_, drivelab_store::StoreError>((rows.len(), total))
            });
            (n, total) = r.unwrap_or_else(|e| fail(e));
            xs.push(ms);
        }
        println!("{name}: {:.1} ({n} rows of {total})", median_ms(xs));
    }
}
