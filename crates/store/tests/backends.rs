//! The store's test-suite, run against both backends: SQLite in a temp dir
//! and a PostgreSQL server of the test's own (initdb into a temp dir, a unix
//! socket, torn down after). Concurrency and crash safety use child
//! processes: this test binary run again with `STORE_CHILD` set.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use drivelab_store::{
    open, open_unmigrated, Artifact, Drive, Filter, FleetTag, Kind, Location, NewRecord, Printed,
    RecordId, SeriesRow, Source, Store, StoreError, SCHEMA_VERSION,
};
use drivelab_testkit::{PgServer, TempDir};

const CHILD: &str = "STORE_CHILD";

/// A record whose every field follows from `tag`, with `seconds` of engine
/// and device series.
fn record(tag: u64, seconds: usize) -> NewRecord {
    let result = serde_json::json!({
        "tag": tag,
        "note": "bytes as printed: tab\there, quote \" and backslash \\, ünïcödé, 🙂",
        "jobs": [{"jobname": "job0", "read": {"iops": 1000.0 + tag as f64}}],
    });
    // Pretty, with a trailing newline and two spaces somewhere: kept byte for byte.
    let result_json = format!("{}\n  \n", serde_json::to_string_pretty(&result).unwrap());
    let mut series = Vec::new();
    for t in 0..seconds {
        series.push(SeriesRow {
            source: Source::Engine,
            name: "job0".into(),
            t_s: t as f64,
            iops: Some(1000.0 + t as f64),
            bw_bytes: Some(4096.0 * (1000.0 + t as f64)),
            lat_mean_ns: Some(25_000.5),
            lat_p99_ns: Some(90_000.0),
            ..SeriesRow::default()
        });
        series.push(SeriesRow {
            source: Source::Device,
            name: "sdz\ttab".into(),
            t_s: t as f64,
            r_iops: Some(700.0),
            w_iops: Some(300.0 + tag as f64),
            r_bw_bytes: Some(1.5e9),
            w_bw_bytes: Some(0.1),
            util_pct: Some(99.9),
            aqu_sz: Some(15.25),
            r_await_ms: Some(0.125),
            w_await_ms: None,
            ..SeriesRow::default()
        });
    }
    NewRecord {
        kind: if tag % 4 == 3 { Kind::Erase } else { Kind::Run },
        time_ms: 1_700_000_000_000 + tag as i64 * 1000,
        host: "bench-7".into(),
        kernel: "6.1.0-test".into(),
        version: "0.1.0".into(),
        spec: serde_json::json!({"command_line": ["drivelab", "run", format!("--bs={}k", 4 << (tag % 2))],
                                 "options": {"bs": format!("{}k", 4 << (tag % 2))}}),
        result_json,
        result_text: (tag % 2 == 0).then(|| format!("text of {tag}\n")),
        printed: if tag % 2 == 0 {
            Printed::Text
        } else {
            Printed::Json
        },
        verdict: "agrees".into(),
        exit_status: (tag % 3) as i32,
        headline: format!("{} IOPS", 1000 + tag),
        drives: vec![Drive {
            path: "/dev/sdz".into(),
            model: Some(format!(
                "LAB MODEL {}",
                ["ALPHA", "BETA"][(tag % 2) as usize]
            )),
            serial: Some(format!("SN{}", tag % 3)),
            firmware: Some("FW1".into()),
            wwn: Some("naa.5000c500a1b2c3d4".into()),
            capacity_bytes: Some(8_001_563_222_016),
            logical_sector: Some(512),
            physical_sector: Some(4096),
            transport: Some("ata".into()),
        }],
        series,
        artifacts: vec![Artifact {
            name: format!("certificate-{tag}.json"),
            content: format!("{{\"tag\": {tag}}}"),
        }],
        fleet: None,
    }
}

/// Records of two fleet runs on two nodes and one made outside a fleet:
/// each run's are listed with their nodes, in order, and nothing else.
fn check_fleet(s: &mut dyn Store) {
    let tag = |node: &str, run: &str| FleetTag {
        node: node.into(),
        run_id: run.into(),
    };
    let mut put = |t: u64, f: Option<FleetTag>| {
        let mut r = record(t, 1);
        r.fleet = f;
        s.put(&r).unwrap()
    };
    let a1 = put(40, Some(tag("node-a", "run-1")));
    let b1 = put(43, Some(tag("node-b", "run-1")));
    let a2 = put(41, Some(tag("node-a", "run-2")));
    let none = put(44, None);
    let run1 = s.fleet(Some("run-1")).unwrap();
    let got: Vec<(RecordId, &str)> = run1.iter().map(|r| (r.id, r.tag.node.as_str())).collect();
    assert_eq!(got, [(a1, "node-a"), (b1, "node-b")]);
    assert_eq!(run1[1].kind, Kind::Erase, "tag 43 is an erase");
    let all: Vec<RecordId> = s.fleet(None).unwrap().iter().map(|r| r.id).collect();
    assert!(
        all.contains(&a2) && all.contains(&b1) && !all.contains(&none),
        "{all:?}"
    );
    assert!(s.fleet(Some("run-3")).unwrap().is_empty());
}

fn check_roundtrip(s: &mut dyn Store) {
    let want = record(2, 90);
    let id = s.put(&want).unwrap();
    let got = s.get(id).unwrap();
    assert_eq!(got.id, id);
    assert_eq!(
        got.result_json.as_bytes(),
        want.result_json.as_bytes(),
        "lossless result JSON"
    );
    assert_eq!(got.result_text, want.result_text);
    assert_eq!(got.printed, want.printed);
    assert_eq!(got.kind, want.kind);
    assert_eq!(got.time_ms, want.time_ms);
    assert_eq!(
        (got.host.as_str(), got.kernel.as_str()),
        ("bench-7", "6.1.0-test")
    );
    assert_eq!(got.drives, want.drives);
    assert_eq!(got.artifacts, want.artifacts);
    assert_eq!(got.spec_key, want.spec_key());
    let spec: serde_json::Value = serde_json::from_str(&got.spec_json).unwrap();
    assert_eq!(spec, want.spec);
    let mut series = s.series(id).unwrap();
    let mut expect = want.series.clone();
    let key = |r: &SeriesRow| (r.source.as_str(), r.name.clone(), r.t_s.to_bits());
    series.sort_by_key(key);
    expect.sort_by_key(key);
    assert_eq!(series, expect, "series rows come back as stored");
    match s.get(RecordId(id.0 + 1000)) {
        Err(e @ StoreError::NotFound(_)) => assert!(e.is_bad_input()),
        other => panic!("an unknown id gave {other:?}"),
    }
}

fn check_history(s: &mut dyn Store) {
    let ids: Vec<RecordId> = (10..22).map(|t| s.put(&record(t, 2)).unwrap()).collect();
    let all = s.history(&Filter::default()).unwrap();
    assert!(all.len() >= ids.len());
    assert!(all.windows(2).all(|w| w[0].id > w[1].id), "newest first");
    let mut mine = |f: Filter| -> Vec<RecordId> {
        s.history(&f)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .filter(|id| ids.contains(id))
            .collect()
    };
    let by_tag = |pred: &dyn Fn(u64) -> bool| -> Vec<RecordId> {
        let mut v: Vec<RecordId> = (10..22)
            .zip(&ids)
            .filter(|(t, _)| pred(*t))
            .map(|(_, id)| *id)
            .collect();
        v.reverse();
        v
    };
    assert_eq!(
        mine(Filter {
            serial: Some("SN1".into()),
            ..Filter::default()
        }),
        by_tag(&|t| t % 3 == 1)
    );
    assert_eq!(
        mine(Filter {
            model: Some("model beta".into()),
            ..Filter::default()
        }),
        by_tag(&|t| t % 2 == 1),
        "a part of the model, any case"
    );
    assert_eq!(
        mine(Filter {
            kind: Some(Kind::Erase),
            ..Filter::default()
        }),
        by_tag(&|t| t % 4 == 3)
    );
    assert_eq!(
        mine(Filter {
            since_ms: Some(1_700_000_000_000 + 18_000),
            ..Filter::default()
        }),
        by_tag(&|t| t >= 18)
    );
    let key = record(10, 0).spec_key();
    assert_eq!(
        mine(Filter {
            spec_key: Some(key),
            ..Filter::default()
        }),
        by_tag(&|t| t % 2 == 0 && t % 4 != 3)
    );
    let newest = s
        .history(&Filter {
            limit: Some(3),
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(newest.len(), 3);
    assert_eq!(newest[0].id, *ids.last().unwrap());
    let row = s
        .history(&Filter {
            serial: Some("SN2".into()),
            limit: Some(1),
            ..Filter::default()
        })
        .unwrap();
    assert_eq!(row[0].drives, "LAB MODEL ALPHA SN2");
    assert_eq!(row[0].headline, "1020 IOPS");
    // count: what history would list without its limit.
    for f in [
        Filter::default(),
        Filter {
            serial: Some("SN2".into()),
            limit: Some(1),
            ..Filter::default()
        },
        Filter {
            model: Some("BETA".into()),
            kind: Some(Kind::Run),
            since_ms: Some(1_700_000_000_000 + 13_000),
            limit: Some(2),
            ..Filter::default()
        },
    ] {
        let all = s
            .history(&Filter {
                limit: None,
                ..f.clone()
            })
            .unwrap();
        let n = all.len() as u64;
        assert_eq!(s.count(&f, 1000).unwrap(), n, "{f:?}");
        assert_eq!(
            s.count(&f, n.saturating_sub(1)).unwrap(),
            n.saturating_sub(1),
            "{f:?}, at most"
        );
    }
}

/// The SQL with which drivelab before schema version 3 stored a record's
/// series: one row a second in `series`.
fn legacy_series_sql(id: RecordId, rows: &[SeriesRow]) -> String {
    let num = |v: Option<f64>| v.map_or("NULL".to_string(), |x| format!("{x:?}"));
    let mut sql = String::new();
    for r in rows {
        let m: Vec<String> = r.metrics().into_iter().map(num).collect();
        sql.push_str(&format!(
            "INSERT INTO series (record_id, source, name, t_s, iops, bw_bytes, lat_mean_ns, lat_p99_ns, \
             r_iops, w_iops, r_bw_bytes, w_bw_bytes, util_pct, aqu_sz, r_await_ms, w_await_ms) \
             VALUES ({id}, '{}', '{}', {:?}, {});\n",
            r.source.as_str(),
            r.name.replace('\'', "''"),
            r.t_s,
            m.join(", ")
        ));
    }
    sql
}

/// Bring a store at schema version `from` (1 or 2), holding a record made
/// as that version stored it, up to date; `exec` runs SQL on the store.
fn check_upgrade_from(loc: &Location, from: u32, exec: &dyn Fn(&str)) {
    drivelab_store::migrate_to(loc, from).unwrap();
    let mut old = open_unmigrated(loc).unwrap();
    assert_eq!(old.schema_version().unwrap(), from);
    let mut rec = record(5, 3);
    if from < 2 {
        rec.artifacts.clear();
    }
    let series = std::mem::take(&mut rec.series);
    let id = old.put(&rec).unwrap();
    drop(old);
    exec(&legacy_series_sql(id, &series));
    let mut s = open(Some(&loc_text(loc))).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    const {
        assert!(
            SCHEMA_VERSION >= 3,
            "migrations after versions 1 and 2 exist to test"
        )
    };
    let got = s.get(id).unwrap();
    assert_eq!(got.result_json, rec.result_json);
    let mut expect = series.clone();
    expect.sort_by(|a, b| {
        (a.source.as_str(), &a.name, a.t_s.to_bits()).cmp(&(
            b.source.as_str(),
            &b.name,
            b.t_s.to_bits(),
        ))
    });
    assert_eq!(
        s.series(id).unwrap(),
        expect,
        "the old record's rows, in order"
    );
    // What versions 2 and 3 added works on the upgraded store.
    let new = record(6, 4);
    let id2 = s.put(&new).unwrap();
    assert_eq!(s.get(id2).unwrap().artifacts.len(), 1);
    assert_eq!(s.series(id2).unwrap().len(), new.series.len());
    assert_eq!(
        s.series(id).unwrap().len(),
        series.len(),
        "old rows unmixed"
    );
    // Opening again changes nothing.
    let m = s.migrate().unwrap();
    assert_eq!((m.from, m.to), (SCHEMA_VERSION, SCHEMA_VERSION));
}

fn loc_text(loc: &Location) -> String {
    match loc {
        Location::Sqlite(p) => p.display().to_string(),
        Location::Postgres(c) => c.clone(),
    }
}

fn check_newer_refused(loc: &Location, mark_newer: impl FnOnce()) {
    open(Some(&loc_text(loc))).unwrap();
    mark_newer();
    let e = open(Some(&loc_text(loc)))
        .err()
        .expect("a newer store was opened");
    let msg = e.to_string();
    assert!(matches!(e, StoreError::TooNew { found: 99, .. }), "{msg}");
    assert!(e.is_bad_input());
    assert!(
        msg.contains("99")
            && msg.contains(&SCHEMA_VERSION.to_string())
            && msg.contains("upgrade drivelab"),
        "{msg}"
    );
    assert_eq!(msg.lines().count(), 1);
}

/// The child side: write `STORE_N` records tagged from `STORE_BASE` into
/// `STORE_CHILD`, printing each ID once committed.
#[test]
fn child_writer() {
    let Ok(loc) = std::env::var(CHILD) else {
        return;
    };
    let n: u64 = std::env::var("STORE_N").unwrap().parse().unwrap();
    let base: u64 = std::env::var("STORE_BASE").unwrap().parse().unwrap();
    let seconds: usize = std::env::var("STORE_SECONDS").unwrap().parse().unwrap();
    let mut s = open(Some(&loc)).unwrap();
    let out = std::io::stdout();
    for i in 0..n {
        let id = s.put(&record(base + i, seconds)).unwrap();
        let mut o = out.lock();
        writeln!(o, "stored {} {id}", base + i).unwrap();
        o.flush().unwrap();
    }
}

/// A child's "stored TAG ID" line (the test harness may print its own
/// words before the first one on the same line).
fn parse_stored(line: &str) -> Option<(u64, RecordId)> {
    let rest = &line[line.find("stored ")? + 7..];
    let (tag, id) = rest.trim().split_once(' ')?;
    Some((tag.parse().ok()?, RecordId(id.parse().ok()?)))
}

fn child(loc: &str, base: u64, n: u64, seconds: usize) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
        .env(CHILD, loc)
        .env("STORE_N", n.to_string())
        .env("STORE_BASE", base.to_string())
        .env("STORE_SECONDS", seconds.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// 16 processes write 100 records each at once: all 1600 are there, each
/// whole.
fn check_concurrent_writers(loc: &Location) {
    let text = loc_text(loc);
    let mut s = open(Some(&text)).unwrap();
    let before = s.history(&Filter::default()).unwrap().len();
    let kids: Vec<_> = (0..16u64)
        .map(|p| child(&text, 100_000 + p * 1000, 100, 2).spawn().unwrap())
        .collect();
    let mut stored = Vec::new();
    for k in kids {
        let out = k.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a writer failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            stored.extend(parse_stored(l));
        }
    }
    assert_eq!(stored.len(), 1600);
    let all = s.history(&Filter::default()).unwrap();
    assert_eq!(all.len(), before + 1600, "every record present");
    let mut ids: Vec<RecordId> = stored.iter().map(|(_, id)| *id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 1600, "1600 distinct IDs");
    for (tag, id) in &stored {
        let want = record(*tag, 2);
        let got = s.get(*id).unwrap();
        assert_eq!(
            got.result_json, want.result_json,
            "record {id} is the one written as {tag}"
        );
        assert_eq!(got.headline, want.headline);
        assert_eq!(got.drives, want.drives);
        assert_eq!(s.series(*id).unwrap().len(), 4, "record {id}'s series");
    }
}

#[test]
fn sqlite_suite() {
    let dir = TempDir::new("store-sqlite");
    let loc = Location::Sqlite(dir.join("sub/dir/results.db"));
    {
        let mut s = open(Some(&loc_text(&loc))).unwrap();
        assert_eq!(
            s.schema_version().unwrap(),
            SCHEMA_VERSION,
            "created on first use"
        );
        check_roundtrip(s.as_mut());
        check_history(s.as_mut());
        check_fleet(s.as_mut());
    }
    check_concurrent_writers(&loc);
    for from in [1, 2] {
        let path = dir.join(&format!("v{from}.db"));
        let exec = |sql: &str| {
            rusqlite::Connection::open(&path)
                .unwrap()
                .execute_batch(sql)
                .unwrap()
        };
        check_upgrade_from(&Location::Sqlite(path.clone()), from, &exec);
    }
    let newer = dir.join("newer.db");
    check_newer_refused(&Location::Sqlite(newer.clone()), || {
        let c = rusqlite::Connection::open(&newer).unwrap();
        c.execute(
            "INSERT INTO schema_version (version, applied_ms) VALUES (99, 0)",
            [],
        )
        .unwrap();
    });
}

#[test]
fn postgres_suite() {
    let pg = PgServer::start();
    let main = pg.database("suite");
    {
        let mut s = open(Some(&main)).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        check_roundtrip(s.as_mut());
        check_history(s.as_mut());
        check_fleet(s.as_mut());
    }
    check_concurrent_writers(&Location::parse(&main).unwrap());
    for from in [1, 2] {
        let db = format!("v{from}");
        let exec = |sql: &str| {
            pg.psql(&db, sql);
        };
        check_upgrade_from(&Location::parse(&pg.database(&db)).unwrap(), from, &exec);
    }
    let newer = pg.database("newer");
    check_newer_refused(&Location::parse(&newer).unwrap(), || {
        pg.psql(
            "newer",
            "INSERT INTO schema_version (version, applied_ms) VALUES (99, 0)",
        );
    });
    // A server that does not answer is bad input, one line.
    let gone = format!(
        "postgresql:///x?host={}/nowhere&user=drivelab",
        std::env::temp_dir().display()
    );
    let e = open(Some(&gone)).err().expect("opened a missing server");
    assert!(matches!(e, StoreError::Unreachable { .. }), "{e}");
    assert!(
        e.is_bad_input() && e.to_string().lines().count() == 1,
        "{e}"
    );
}

/// kill -9 during writes: the file passes `PRAGMA integrity_check`, and
/// every record the writer saw committed is there, whole; at most the one
/// in flight is lost.
#[test]
fn sqlite_survives_kill_9_mid_write() {
    let dir = TempDir::new("store-crash");
    let path = dir.join("results.db");
    let text = path.display().to_string();
    open(Some(&text)).unwrap();
    let mut committed = Vec::new();
    let (mut before, mut committed_before) = (0usize, 0usize);
    for round in 0..6u64 {
        // Long records (an hour of seconds each) so that a kill lands mid-write.
        let mut k = child(&text, round * 10_000, 10_000, 3600).spawn().unwrap();
        let mut lines = BufReader::new(k.stdout.take().unwrap()).lines();
        // Let it commit a few, then kill it between two reads.
        let wait_for = 2 + round as usize;
        let mut seen = 0;
        for l in lines.by_ref() {
            let l = l.unwrap();
            if let Some(st) = parse_stored(&l) {
                committed.push(st);
                seen += 1;
                if seen == wait_for {
                    break;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(7 * round));
        Command::new("kill")
            .args(["-KILL", &k.id().to_string()])
            .status()
            .unwrap();
        // Lines written before the kill are records committed too.
        for l in lines.map_while(Result::ok) {
            committed.extend(parse_stored(&l));
        }
        let _ = k.wait();
        let c = rusqlite::Connection::open(&path).unwrap();
        let check: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok", "after kill -9 in round {round}");
        let n: i64 = c
            .query_row("SELECT COUNT(*) FROM records", [], |r| r.get(0))
            .unwrap();
        let n = n as usize;
        let unreported = n - before - (committed.len() - committed_before);
        assert!(
            unreported <= 1,
            "round {round}: {n} records, {} seen committed: more than the one in flight",
            committed.len()
        );
        before = n;
        committed_before = committed.len();
        drop(c);
        let mut s = open(Some(&text)).unwrap();
        for (tag, id) in &committed {
            let got = s.get(*id).unwrap();
            assert_eq!(got.result_json, record(*tag, 0).result_json);
            assert_eq!(s.series(*id).unwrap().len(), 7200, "record {id} whole");
        }
        // A record the writer had not reported may be there: whole, or not at all.
        for h in s.history(&Filter::default()).unwrap() {
            assert_eq!(s.series(h.id).unwrap().len(), 7200, "record {} whole", h.id);
        }
    }
}
