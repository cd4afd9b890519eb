//! The result store from the command line: every run lands in it (unless
//! --no-store), `show` gives back exactly what was printed, `history`
//! filters, `compare` calls a difference inside the spread of repeats
//! noise, `export` writes CSV, erases keep their certificates, PostgreSQL
//! works as SQLite does, and bad input is one line with exit status 2.

use std::process::Command;

use drivelab_store::{Drive, Kind, NewRecord, Printed};
use drivelab_testkit::{require_root, LoopDev, PgServer, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// Run drivelab with `store` as $DRIVELAB_STORE, in `dir`.
fn dl(dir: &TempDir, store: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir.path())
        .env("DRIVELAB_STORE", store)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .output()
        .expect("run drivelab");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The newest record's ID (what the last command stored), from `history`.
fn newest(dir: &TempDir, store: &str) -> String {
    let (code, out, err) = dl(
        dir,
        store,
        &["history", "--limit", "1", "--output-format", "json"],
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    v[0]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("nothing stored: {out}"))
        .to_string()
}

/// How many records the store holds.
fn count(dir: &TempDir, store: &str) -> usize {
    let (_, out, _) = dl(
        dir,
        store,
        &["history", "--limit", "0", "--output-format", "json"],
    );
    serde_json::from_str::<Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .len()
}

const QUICK: &[&str] = &[
    "run",
    "--ioengine=null",
    "--filename=data.bin",
    "--size=4m",
    "--runtime=1",
    "--time_based",
];

fn quick(extra: &[&str]) -> Vec<String> {
    QUICK.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Show gives back the JSON a run printed byte for byte, and the text a run
/// printed with its JSON rendering beside it; --no-store stores nothing.
fn lossless_show_and_no_store(dir: &TempDir, store: &str) {
    let (code, json_out, err) = dl(dir, store, &refs(&quick(&["--output-format", "json"])));
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "nothing on stderr but warnings: {err}");
    let id = newest(dir, store);
    let json_id = id.clone();
    let (code, shown, err) = dl(dir, store, &["show", &id, "--output-format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        shown.as_bytes(),
        json_out.as_bytes(),
        "show gives back what was printed"
    );

    let (code, text_out, err) = dl(dir, store, &refs(&quick(&[])));
    assert_eq!(code, 0, "{err}");
    let id = newest(dir, store);
    assert_ne!(id, json_id, "the text run was stored");
    let (_, shown, _) = dl(dir, store, &["show", &id, "--output-format", "text"]);
    assert!(
        shown.ends_with(&text_out),
        "the text printed, after the record's facts:\n{shown}"
    );
    let (_, shown_json, _) = dl(dir, store, &["show", &id, "--output-format", "json"]);
    let v: Value = serde_json::from_str(&shown_json).expect("the JSON rendering of a text run");
    assert!(v["jobs"][0]["timeseries"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));

    let n = count(dir, store);
    let (code, _, err) = dl(dir, store, &refs(&quick(&["--no-store"])));
    assert_eq!(code, 0, "{err}");
    let mut global = vec!["--no-store".to_string()];
    global.extend(quick(&[]));
    let (code, _, err) = dl(dir, store, &refs(&global));
    assert_eq!(code, 0, "{err}");
    assert_eq!(count(dir, store), n, "--no-store stored nothing");
}

#[test]
fn runs_are_stored_and_shown_as_printed() {
    let dir = TempDir::new("store-cli");
    let store = dir.join("results.db").display().to_string();
    lossless_show_and_no_store(&dir, &store);
    // Series of a stored run are in the series table, exported as CSV.
    let (_, out, _) = dl(
        &dir,
        &store,
        &[
            "history",
            "--kind",
            "run",
            "--limit",
            "1",
            "--output-format",
            "json",
        ],
    );
    let id = serde_json::from_str::<Value>(&out).unwrap()[0]["id"].to_string();
    let (code, out, err) = dl(&dir, &store, &["export", &id, "--csv", "csv/out"]);
    assert_eq!(code, 0, "{out}{err}");
    let series = std::fs::read_to_string(dir.join("csv/out/series.csv")).unwrap();
    let summary = std::fs::read_to_string(dir.join("csv/out/summary.csv")).unwrap();
    assert!(series.starts_with("record,source,name,t_s,iops,bw_bytes,lat_mean_ns,lat_p99_ns,"));
    assert!(series
        .lines()
        .skip(1)
        .all(|l| l.starts_with(&format!("{id},engine,"))));
    let (_, shown, _) = dl(&dir, &store, &["show", &id, "--output-format", "json"]);
    let v: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(
        series.lines().count() - 1,
        v["jobs"][0]["timeseries"].as_array().unwrap().len(),
        "one CSV row per second"
    );
    assert!(summary.starts_with("record,kind,time_utc,host,drives,verdict,metric,unit,value\n"));
    assert!(
        summary.contains(",read IOPS,IOPS,") && summary.contains(",read p99.9 latency,µs,"),
        "{summary}"
    );
}

#[test]
fn a_store_that_fails_does_not_lose_the_result() {
    let dir = TempDir::new("store-fail");
    std::fs::write(dir.join("file"), b"x").unwrap();
    // A store path under a regular file cannot be created.
    let bad = dir.join("file/results.db").display().to_string();
    let (code, out, err) = dl(&dir, &bad, &refs(&quick(&["--output-format", "json"])));
    assert_eq!(code, 0, "the run's own status: {err}");
    serde_json::from_str::<Value>(&out).expect("the result is printed");
    assert!(err.contains("warning: the result was not stored"), "{err}");
    assert_eq!(err.lines().filter(|l| l.contains("not stored")).count(), 1);
}

#[test]
fn bad_store_input_is_one_line_and_exit_2() {
    let dir = TempDir::new("store-bad");
    let store = dir.join("r.db").display().to_string();
    let unreachable = format!(
        "postgresql:///x?host={}&user=drivelab",
        dir.join("nosocket").display()
    );
    for args in [
        vec!["show", "12345"],
        vec!["show", "abc"],
        vec!["compare", "1", "2"],
        vec!["export", "7", "--csv", "out"],
        vec!["history", "--kind", "runs"],
        vec!["history", "--since", "last tuesday"],
        vec!["--store", &unreachable, "history"],
        vec!["--store", "mysql://db/x", "history"],
    ] {
        let (code, out, err) = dl(&dir, &store, &args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    // A store written by a newer drivelab is refused by name and version.
    let (code, _, _) = dl(&dir, &store, &["history"]);
    assert_eq!(code, 0);
    let c = rusqlite_free_version_bump(&store);
    let (code, _, err) = dl(&dir, &store, &["history"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("schema version {c}")) && err.contains("upgrade drivelab"),
        "{err}"
    );
}

/// Mark the store as written by a newer drivelab (a version above this
/// build's), through the store's own SQL route; returns the version set.
fn rusqlite_free_version_bump(store: &str) -> u32 {
    let newer = drivelab_store::SCHEMA_VERSION + 7;
    let out = Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('INSERT INTO schema_version VALUES (?, 0)', (int(sys.argv[2]),)); c.commit()",
            store,
            &newer.to_string(),
        ])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    newer
}

fn synthetic(iops: f64, serial: &str, bs: &str) -> NewRecord {
    let result = serde_json::json!({"jobs": [{"jobname": "j", "read": {"total_ios": 1000, "iops": iops,
        "bw_bytes": iops * 4096.0, "clat_ns": {"mean": 1e9 / iops, "percentile": {"99.000000": 90_000}}}}]});
    NewRecord {
        kind: Kind::Run,
        time_ms: 1_790_000_000_000,
        host: "lab".into(),
        kernel: "6.1".into(),
        version: "0.1.0".into(),
        spec: serde_json::json!({"options": {"bs": bs}}),
        result_json: serde_json::to_string_pretty(&result).unwrap(),
        result_text: None,
        printed: Printed::Json,
        verdict: "device check agrees".into(),
        exit_status: 0,
        headline: String::new(),
        drives: vec![Drive {
            path: "/dev/sdq".into(),
            model: Some("LAB SSD".into()),
            serial: Some(serial.into()),
            ..Drive::default()
        }],
        series: Vec::new(),
        artifacts: Vec::new(),
        fleet: None,
    }
}

#[test]
fn compare_calls_a_difference_inside_the_spread_noise() {
    let dir = TempDir::new("store-compare");
    let store = dir.join("r.db").display().to_string();
    let mut s = drivelab_store::open(Some(&store)).unwrap();
    // Three repeats at ±5%, then one 3% above their median, one 20% above.
    let a: Vec<String> = [95_000.0, 100_000.0, 105_000.0]
        .iter()
        .map(|x| s.put(&synthetic(*x, "S1", "4k")).unwrap().to_string())
        .collect();
    let b = s
        .put(&synthetic(103_000.0, "S2", "4k"))
        .unwrap()
        .to_string();
    let c = s
        .put(&synthetic(120_000.0, "S3", "4k"))
        .unwrap()
        .to_string();
    drop(s);
    let (code, out, err) = dl(&dir, &store, &["compare", &a[0], &a[1], &a[2], &b, &c]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("3 repeats of one spec"), "{out}");
    assert!(
        out.contains("100.0k (95.0k..105.0k)"),
        "median (min..max): {out}"
    );
    let line_b = out.lines().find(|l| l.starts_with("B against A")).unwrap();
    assert!(
        line_b.contains("that is noise, not a change") && !line_b.contains("beyond"),
        "{line_b}"
    );
    let line_c = out.lines().find(|l| l.starts_with("C against A")).unwrap();
    assert!(
        line_c.contains("beyond the spread: read IOPS +20.0% (better)"),
        "{line_c}"
    );
    let iops = out.lines().find(|l| l.starts_with("read IOPS")).unwrap();
    assert!(
        iops.contains("+3.0% noise") && iops.contains("+20.0% better"),
        "{iops}"
    );
    // JSON: the same judgement per metric and group.
    let (_, out, _) = dl(
        &dir,
        &store,
        &[
            "compare",
            &a[0],
            &a[1],
            &a[2],
            &b,
            "--output-format",
            "json",
        ],
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let m = &v["metrics"][0];
    assert_eq!(m["metric"], "read IOPS");
    assert_eq!(m["groups"][0]["n"], 3);
    assert_eq!(m["groups"][1]["judgement"], "noise");
    // Two single runs: the noise is unknown, and said so.
    let (_, out, _) = dl(&dir, &store, &["compare", &b, &c]);
    assert!(out.contains("neither side was repeated"), "{out}");
}

#[test]
fn history_filters_by_drive_model_kind_and_date() {
    let dir = TempDir::new("store-history");
    let store = dir.join("r.db").display().to_string();
    let mut s = drivelab_store::open(Some(&store)).unwrap();
    let mut old = synthetic(1000.0, "OLD1", "4k");
    old.time_ms = 1_000_000_000_000; // 2001
    let old = s.put(&old).unwrap().0;
    let mut erase = synthetic(1000.0, "E1", "4k");
    erase.kind = Kind::Erase;
    erase.drives[0].model = Some("OTHER HDD".into());
    let erase = s.put(&erase).unwrap().0;
    let recent = s.put(&synthetic(1000.0, "R1", "4k")).unwrap().0;
    drop(s);
    let ids = |args: &[&str]| -> Vec<i64> {
        let mut a = vec!["history", "--output-format", "json"];
        a.extend(args);
        let (code, out, err) = dl(&dir, &store, &a);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<Value>(&out)
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(ids(&[]), [recent, erase, old]);
    assert_eq!(ids(&["--drive", "OLD1"]), [old]);
    assert_eq!(ids(&["--model", "hdd"]), [erase]);
    assert_eq!(ids(&["--kind", "erase"]), [erase]);
    assert_eq!(ids(&["--since", "2010-01-01"]), [recent, erase]);
    assert_eq!(ids(&["--limit", "1"]), [recent]);
    let (_, text, _) = dl(&dir, &store, &["history", "--drive", "R1"]);
    assert!(
        text.contains("LAB SSD R1") && text.contains("device check agrees"),
        "{text}"
    );
}

#[test]
fn an_erase_is_stored_with_its_certificate() {
    require_root();
    let dir = TempDir::new("store-erase");
    let store = dir.join("r.db").display().to_string();
    let d = LoopDev::new_in(&dir, 8 << 20);
    let certs = dir.join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    let certs = certs.display().to_string();
    let (code, out, err) = dl(
        &dir,
        &store,
        &[
            "erase",
            d.dev(),
            "--yes",
            "--confirm-serial",
            d.dev(),
            "--certificate-dir",
            &certs,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let id = newest(&dir, &store);
    let (_, shown, _) = dl(&dir, &store, &["show", &id]);
    assert!(
        shown.contains("record") && shown.contains("erase") && shown.ends_with(&out),
        "{shown}"
    );
    assert!(
        shown.contains("kept with it: ") && shown.contains(".json"),
        "{shown}"
    );
    let (_, json, _) = dl(&dir, &store, &["show", &id, "--output-format", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let cert_path = v["drives"][0]["certificate"].as_str().unwrap();
    let cert = std::fs::read_to_string(cert_path).unwrap();
    let mut s = drivelab_store::open(Some(&store)).unwrap();
    let rec = s.get(id.parse().unwrap()).unwrap();
    assert!(
        rec.artifacts.iter().any(|a| a.content == cert),
        "the certificate, byte for byte"
    );
    assert_eq!(rec.drives[0].path, d.dev());
    assert_eq!(rec.drives[0].transport.as_deref(), Some("loop"));
    let (_, cmp, _) = dl(&dir, &store, &["compare", &id, &id]);
    assert!(
        cmp.contains("erase time") && cmp.contains("erase rate"),
        "{cmp}"
    );
}

#[test]
fn postgres_store_from_the_command_line() {
    let pg = PgServer::start();
    let url = pg.database("cli");
    let dir = TempDir::new("store-pg-cli");
    lossless_show_and_no_store(&dir, &url);
    // --store wins over the environment.
    let (code, _, err) = dl(&dir, "/nonexistent/dir/x.db", &["--store", &url, "history"]);
    assert_eq!(code, 0, "{err}");
    let n: i64 = pg
        .psql("cli", "SELECT COUNT(*) FROM records")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(n, 2);
    // Each series is one row, its seconds packed (schema version 3).
    let rows: i64 = pg
        .psql("cli", "SELECT COALESCE(SUM(points), 0) FROM series_columns")
        .trim()
        .parse()
        .unwrap();
    assert!(rows >= 2, "series seconds in PostgreSQL: {rows}");
}

/// `drivelab report` takes stored IDs as well as files: the page of a stored
/// run holds its charts; an ID the store lacks is one line, exit 2, and no
/// file is written.
#[test]
fn report_draws_stored_results_by_id() {
    let dir = TempDir::new("store-report");
    let store = dir.join("s.db");
    let store = store.to_str().unwrap();
    let (code, _, err) = dl(&dir, store, &refs(&quick(&[])));
    assert_eq!(code, 0, "{err}");
    let first = newest(&dir, store);
    let (code, _, err) = dl(&dir, store, &refs(&quick(&[])));
    assert_eq!(code, 0, "{err}");
    let second = newest(&dir, store);
    let page = dir.join("r.html");
    let (code, _, err) = dl(
        &dir,
        store,
        &[
            "report",
            &first,
            &format!("#{second}"),
            "--html",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(&format!("#{first} run")), "labelled by ID");
    assert!(html.contains(&format!("#{second} run")), "labelled by ID");
    assert!(html.contains("data-points"), "charts in the page");

    let missing = dir.join("m.html");
    let (code, out, err) = dl(
        &dir,
        store,
        &["report", "999999", "--html", missing.to_str().unwrap()],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!missing.exists());
}
