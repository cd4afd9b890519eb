//! Truth checks: results that must say what happened (issue 24, items 7
//! to 10), each case the issue's own, run against the real binary on loop
//! devices and files this test makes. One table; every case runs, and the
//! failures are reported together by name.
//!
//! - a season's write series holds no point over ~0 s (655 TB/s points and
//!   a false write cliff), and its store record has its drive and bytes;
//! - an audit's store record has its drive and bytes;
//! - `verify=` reads count in the device check; `fsync=` flushes are not
//!   "split requests";
//! - a replay onto a target whose writes fail moves no bytes for them,
//!   has no score and exits 1;
//! - converting a fio iolog keeps its file names;
//! - a certificate with a key held twice or an unsigned field is INVALID;
//! - an erase under a low `--bus-limit` keeps little in flight and stops at
//!   SIGTERM at once; `--crypto` with zeroout is refused, nothing written;
//! - store errors are one line; a full disk under the store says ENOSPC;
//! - `report` refuses a mangled result; `--resume` without a journal is
//!   refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use drivelab_testkit::{digest, diskstats, require_root, run, LoopDev, TempDir, Tmpfs};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// Run drivelab (its config, the signing key, is the test's: see
/// [`results_say_what_happened`]).
fn dl(_dir: &TempDir, args: &[&str]) -> (i32, String, String) {
    run(BIN, args)
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Writes and sectors written of a device (reads are left out: probing
/// and udev read a device).
fn writes(name: &str) -> (u64, u64) {
    let (_, _, w, ws, _, _) = diskstats(name);
    (w, ws)
}

/// Exit status 2 and one line on stderr.
fn refused(code: i32, err: &str, needle: &str) {
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{needle:?} not in {err}");
}

/// `erase D --yes --confirm-serial D` and `extra`.
fn erase_args<'a>(d: &'a LoopDev, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["erase", d.dev(), "--yes", "--confirm-serial", d.dev()];
    a.extend(extra);
    a
}

/// A fio iolog of `n` 4 KiB writes to one file, front to back.
fn write_log(path: &Path, n: u64) {
    let mut t = String::from("fio version 2 iolog\n/x/a.bin add\n/x/a.bin open\n");
    for i in 0..n {
        t.push_str(&format!("/x/a.bin write {} 4096\n", i * 4096));
    }
    t.push_str("/x/a.bin close\n");
    std::fs::write(path, t).unwrap();
}

/// The newest stored record of `kind`, as `history` lists it.
fn newest(dir: &TempDir, kind: &str) -> Value {
    let (code, out, err) = dl(
        dir,
        &[
            "history",
            "--kind",
            kind,
            "--limit",
            "1",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    json(&out)[0].clone()
}

fn season_series_and_record(dir: &TempDir) {
    let d = LoopDev::new_in(dir, 64 << 20);
    let st = dir.join("state");
    std::fs::create_dir_all(&st).unwrap();
    let (code, out, err) = dl(
        dir,
        &[
            "season",
            d.dev(),
            "--yes",
            "--confirm-serial",
            d.dev(),
            "--stages",
            "fill",
            "--fill-passes",
            "1",
            "--state-dir",
            s(&st),
            "--output-format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let w = &v["drives"][0]["write_series"];
    let pts = w["points"].as_array().unwrap();
    assert_eq!(pts.last().unwrap()["written_bytes"], 64u64 << 20);
    let mut prev = 0;
    for p in pts {
        let at = p["written_bytes"].as_u64().unwrap();
        let span = (at - prev) as f64 / p["bw_bytes"].as_f64().unwrap();
        assert!(span >= 0.00999, "a point over {span} s: {p}");
        prev = at;
    }
    if let Some(c) = w["cliff"].as_object() {
        // A cliff, if any, is between real rates (under 100 GB/s).
        assert!(c["plateau"].as_f64().unwrap() < 1e11, "{w}");
    }
    // The store keeps the drive and the bytes.
    let r = newest(dir, "season");
    assert!(r["drives"].as_str().unwrap().contains(d.dev()), "{r}");
    assert!(
        r["headline"]
            .as_str()
            .unwrap()
            .starts_with("1 drive(s), 67.11M B"),
        "{r}"
    );
    let id = r["id"].as_i64().unwrap().to_string();
    let (code, shown, err) = dl(dir, &["show", &id]);
    assert_eq!(code, 0, "{err}");
    assert!(shown.contains(&format!("drive {}", d.dev())), "{shown}");
    assert_eq!(r["verdict"], "done");
}

fn audit_record(dir: &TempDir) {
    let d = LoopDev::new_in(dir, 16 << 20);
    let log = dir.join("audit.log");
    write_log(&log, 256);
    let rec = dir.join("audit.dlt");
    let (code, out, err) = dl(
        dir,
        &[
            "trace",
            "audit",
            s(&log),
            "--target",
            d.dev(),
            "--record",
            s(&rec),
            "--force",
            "--output-format",
            "json",
        ],
    );
    assert!(code == 0 || code == 1, "{err}");
    let v = json(&out);
    assert_eq!(v["replay"]["bytes_written"], 256 * 4096, "{v}");
    let r = newest(dir, "audit");
    assert!(r["drives"].as_str().unwrap().contains(d.dev()), "{r}");
    assert!(r["headline"].as_str().unwrap().contains("1.05M B"), "{r}");
    assert_eq!(
        r["verdict"].as_str().unwrap(),
        if code == 0 { "pass" } else { "fail" }
    );
}

/// `run` on a fresh 64 MiB loop with `extra`; its JSON.
fn run_on_loop(dir: &TempDir, extra: &[&str]) -> Value {
    let d = LoopDev::new_in(dir, 64 << 20);
    let mut args = vec![
        "run",
        "--filename",
        d.dev(),
        "--size",
        "8m",
        "--rw",
        "write",
        "--bs",
        "64k",
        "--direct",
        "1",
        "--force",
        "--output-format",
        "json",
    ];
    args.extend(extra);
    let (code, out, err) = dl(dir, &args);
    assert_eq!(code, 0, "{err}");
    json(&out)
}

fn verify_reads_count_in_the_device_check(dir: &TempDir) {
    let v = run_on_loop(dir, &["--verify", "crc32c"]);
    let c = &v["device_check"][0];
    assert_eq!(c["agrees"], true, "{c}");
    assert_eq!(
        c["reported_bytes"],
        16u64 << 20,
        "writes and their verify reads: {c}"
    );
    assert_eq!(c["device_bytes"], 16u64 << 20, "{c}");
    assert_eq!(newest(dir, "run")["verdict"], "device check agrees");
}

fn fsync_flushes_are_not_split_requests(dir: &TempDir) {
    let v = run_on_loop(dir, &["--fsync", "8"]);
    let c = &v["device_check"][0];
    assert_eq!(c["verdict"], "agrees", "{c}");
    assert_eq!(c["reported_ios"], 128, "{c}");
    // Kernels from 5.5 count the 15 flushes (128 writes, a sync every 8,
    // none after the last: fio 3.33's count).
    let flushes = c["device_flushes"].as_u64().unwrap();
    assert!(flushes == 0 || flushes >= 15, "{c}");
}

fn replay_onto_failing_writes(dir: &TempDir) {
    // A 64 MiB loop over a sparse file on a 256 KiB tmpfs: the writes past
    // what the tmpfs holds fail with ENOSPC.
    let fs = Tmpfs::mount_in(dir, "tiny", 256 << 10);
    let img = fs.join("e.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let d = LoopDev::attach(&img, &[]);
    let log = dir.join("replay.log");
    write_log(&log, 1023);
    let (w0, ws0) = writes(&d.name);
    let args = [
        "trace",
        "replay",
        s(&log),
        "--target",
        d.dev(),
        "--force",
        "--mode",
        "afap",
    ];
    let (code, out, err) = dl(dir, &[&args[..], &["--output-format", "json"]].concat());
    assert_eq!(code, 1, "{err}");
    let v = json(&out);
    let (done, errors) = (
        v["completed"].as_u64().unwrap(),
        v["errors"].as_u64().unwrap(),
    );
    assert!(errors > 0 && done + errors == 1023, "{v}");
    assert_eq!(v["bytes_written"], done * 4096, "{v}");
    assert_eq!(v["score"]["iops"], 0.0, "{v}");
    assert!(
        v["score"]["withheld"]
            .as_str()
            .unwrap()
            .contains("requests failed"),
        "{v}"
    );
    let (w1, ws1) = writes(&d.name);
    assert!(w1 > w0 && ws1 > ws0, "the writes reached the device");
    let (code, text, _) = dl(dir, &args);
    assert_eq!(code, 1);
    assert!(
        text.contains("score: none: ") && !text.contains("IO/s"),
        "{text}"
    );
    drop(d);
}

fn convert_keeps_iolog_file_names(dir: &TempDir) {
    let log = dir.join("two.log");
    std::fs::write(
        &log,
        "fio version 2 iolog\n/x/a.bin add\n/x/b.bin add\n/x/a.bin open\n/x/b.bin open\n\
         /x/a.bin write 0 4096\n/x/b.bin read 4096 4096\n/x/a.bin close\n/x/b.bin close\n",
    )
    .unwrap();
    let out = dir.join("two.out.log");
    let (code, _, err) = dl(dir, &["trace", "convert", s(&log), s(&out), "--to", "fio"]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains(" /x/a.bin write 0 4096") && text.contains(" /x/b.bin read 4096 4096"),
        "{text}"
    );
    assert!(!text.contains("dev0") && !text.contains("dev1"), "{text}");
}

fn tampered_certificates_are_invalid(dir: &TempDir) {
    let d = LoopDev::new_in(dir, 16 << 20);
    let certs = dir.join("certs");
    let (code, out, err) = dl(
        dir,
        &erase_args(
            &d,
            &["--certificate-dir", s(&certs), "--output-format", "json"],
        ),
    );
    assert_eq!(code, 0, "{err}");
    let file = PathBuf::from(json(&out)["drives"][0]["certificate"].as_str().unwrap());
    let text = std::fs::read_to_string(&file).unwrap();
    let signed = "\"result\": \"erased\"";
    assert!(text.contains(signed));
    let cases = [
        ("valid", text.clone(), 0, "valid signature"),
        (
            "forged result first, signed second",
            text.replacen(signed, &format!("\"result\": \"failed\",\n    {signed}"), 1),
            1,
            "appears twice",
        ),
        (
            "top-level note outside the signed body",
            text.replacen('{', "{\n  \"note\": \"VERIFIED BY ACME\",", 1),
            1,
            "not covered by the signature",
        ),
    ];
    for (name, body, want, needle) in cases {
        let f = dir.join("case.json");
        std::fs::write(&f, body).unwrap();
        let (code, out, err) = dl(dir, &["erase", "verify-cert", s(&f)]);
        assert_eq!(code, want, "{name}: {out}{err}");
        assert!(format!("{out}{err}").contains(needle), "{name}: {out}{err}");
        if want != 0 {
            assert!(
                err.contains("INVALID") && err.trim().lines().count() == 1,
                "{name}: {err}"
            );
        }
    }
}

fn bus_limited_erase_stops_at_sigterm(dir: &TempDir) {
    let d = LoopDev::new_in(dir, 64 << 20);
    let certs = dir.join("bus-certs");
    let child = Command::new(BIN)
        .args(erase_args(
            &d,
            &[
                "--method",
                "stream",
                "--bus-limit",
                "64k",
                "--certificate-dir",
                s(&certs),
                "--output-format",
                "json",
            ],
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let t = Instant::now();
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let out = child.wait_with_output().unwrap();
    let took = t.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "stopped {took:?} after SIGTERM"
    );
    let v = json(&String::from_utf8_lossy(&out.stdout));
    let dr = &v["drives"][0];
    assert_eq!(dr["result"], "stopped", "{dr}");
    // In flight: what 64 KiB/s carries in a quarter second.
    let inflight =
        dr["stream_transfer_bytes"].as_u64().unwrap() * dr["stream_queue_depth"].as_u64().unwrap();
    assert!(inflight <= 16 << 10, "{inflight} bytes in flight: {dr}");
    // It wrote about what the limit allows in 1.5 s, not 32 MiB.
    assert!(dr["bytes"].as_u64().unwrap() <= 256 << 10, "{dr}");
}

fn crypto_with_zeroout_is_refused(dir: &TempDir) {
    let d = LoopDev::new_in(dir, 16 << 20);
    let before = (digest(&d.backing), writes(&d.name));
    let certs = dir.join("crypto-certs");
    let (code, _, err) = dl(
        dir,
        &erase_args(
            &d,
            &[
                "--method",
                "zeroout",
                "--crypto",
                "--certificate-dir",
                s(&certs),
            ],
        ),
    );
    refused(code, &err, "--crypto does not apply to --method zeroout");
    assert_eq!((digest(&d.backing), writes(&d.name)), before);
    assert!(!certs.exists() || std::fs::read_dir(&certs).unwrap().next().is_none());
}

fn store_errors_are_one_line(dir: &TempDir) {
    // An SQLite file of another program holding a table named like ours.
    let other = dir.join("other.db");
    let c = rusqlite::Connection::open(&other).unwrap();
    c.execute_batch("CREATE TABLE records (x)").unwrap();
    drop(c);
    let (code, _, err) = dl(dir, &["history", "--store", s(&other)]);
    refused(code, &err, "not a drivelab store");
    assert!(!err.contains("CREATE"), "{err}");
    // A full disk under the store.
    let fs = Tmpfs::mount_in(dir, "full", 64 << 10);
    let store = fs.join("r.db");
    let (code, _, err) = small_run(dir, &["--store", s(&store)]);
    assert_eq!(code, 0, "the result does not depend on the store: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("ENOSPC") && err.contains("no space left"),
        "{err}"
    );
    assert_eq!(err.matches("database or disk is full").count(), 1, "{err}");
    let (code, _, err) = dl(dir, &["history", "--store", s(&store)]);
    assert_ne!(code, 0);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("ENOSPC"), "{err}");
}

/// A 1 MiB write to a file in `dir`, JSON out, with `extra`.
fn small_run(dir: &TempDir, extra: &[&str]) -> (i32, String, String) {
    let f = dir.join("small.bin");
    let mut args = vec![
        "run",
        "--filename",
        s(&f),
        "--size",
        "1m",
        "--rw",
        "write",
        "--output-format",
        "json",
    ];
    args.extend(extra);
    dl(dir, &args)
}

fn report_refuses_a_mangled_result(dir: &TempDir) {
    let (code, out, err) = small_run(dir, &[]);
    assert_eq!(code, 0, "{err}");
    let good = json(&out);
    let mut wrong_type = good.clone();
    wrong_type["jobs"][0]["write"]["iops"] = Value::from("fast");
    let mut no_jobs = good.clone();
    no_jobs["jobs"] = Value::from("nope");
    for (name, v, needle) in [
        ("wrong type", wrong_type, "invalid type"),
        ("jobs not a list", no_jobs, "invalid type"),
    ] {
        let input = dir.join("mangled.json");
        std::fs::write(&input, v.to_string()).unwrap();
        let html = dir.join("mangled.html");
        let (code, _, err) = dl(dir, &["report", s(&input), "--html", s(&html)]);
        refused(code, &err, needle);
        assert!(err.contains(s(&input)), "{name}: {err}");
        assert!(!html.exists(), "{name}: a page was written");
    }
}

fn resume_without_a_journal_is_refused(dir: &TempDir) {
    let d = LoopDev::new_in(dir, 16 << 20);
    let j = dir.join("journals");
    std::fs::create_dir_all(&j).unwrap();
    let before = (digest(&d.backing), writes(&d.name));
    let (code, _, err) = dl(
        dir,
        &erase_args(&d, &["--resume", "--certificate-dir", s(&j)]),
    );
    refused(code, &err, "--resume: no journal");
    let (code, _, err) = dl(
        dir,
        &[
            "season",
            d.dev(),
            "--yes",
            "--confirm-serial",
            d.dev(),
            "--resume",
            "--state-dir",
            s(&j),
        ],
    );
    refused(code, &err, "--resume: no season journal");
    assert_eq!((digest(&d.backing), writes(&d.name)), before);
    assert!(
        std::fs::read_dir(&j).unwrap().next().is_none(),
        "a journal was left"
    );
}

type Case = (&'static str, fn(&TempDir));

const CASES: &[Case] = &[
    ("season series and record", season_series_and_record),
    ("audit record", audit_record),
    (
        "verify reads count in the device check",
        verify_reads_count_in_the_device_check,
    ),
    (
        "fsync flushes are not split requests",
        fsync_flushes_are_not_split_requests,
    ),
    ("replay onto failing writes", replay_onto_failing_writes),
    (
        "convert keeps iolog file names",
        convert_keeps_iolog_file_names,
    ),
    (
        "tampered certificates are invalid",
        tampered_certificates_are_invalid,
    ),
    (
        "bus-limited erase stops at SIGTERM",
        bus_limited_erase_stops_at_sigterm,
    ),
    (
        "crypto with zeroout is refused",
        crypto_with_zeroout_is_refused,
    ),
    ("store errors are one line", store_errors_are_one_line),
    (
        "report refuses a mangled result",
        report_refuses_a_mangled_result,
    ),
    (
        "resume without a journal is refused",
        resume_without_a_journal_is_refused,
    ),
];

#[test]
fn results_say_what_happened() {
    require_root();
    // The signing key of the erases is made in the test's own config dir.
    let config = TempDir::new("truth-config");
    std::env::set_var("XDG_CONFIG_HOME", config.path());
    let mut failed = Vec::new();
    for (name, case) in CASES {
        let dir = TempDir::new("truth");
        let t = Instant::now();
        let ok = std::panic::catch_unwind(|| case(&dir)).is_ok();
        eprintln!(
            "{name}: {} in {:?}",
            if ok { "ok" } else { "FAILED" },
            t.elapsed()
        );
        if !ok {
            failed.push(*name);
        }
    }
    assert!(failed.is_empty(), "failed: {failed:?}");
}
