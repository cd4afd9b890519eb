//! `--metrics-listen` without Prometheus: the last scrape of a run equals
//! its final JSON result (I/Os, bytes and errors per job and direction,
//! the latency histogram's count), the endpoint's text passes `promtool
//! check metrics`, and an address that cannot be bound is refused before
//! any I/O.

mod metrics_common;

use std::net::TcpListener;

use drivelab_testkit::{
    digest, diskstats, make_image, require_root, require_tools, run, LoopDev, TempDir,
};
use metrics_common::*;
use serde_json::Value;

/// The figure `name{jobname="J",job_index="I",direction="D"}` in `text`.
fn job_figure(text: &str, name: &str, job: &Value, index: usize, dir: &str) -> u64 {
    let jobname = job["jobname"].as_str().unwrap();
    let line = format!("{name}{{jobname=\"{jobname}\",job_index=\"{index}\",direction=\"{dir}\"}}");
    sample(text, &line).unwrap_or_else(|| panic!("{line} not served:\n{text}")) as u64
}

#[test]
fn the_last_scrape_equals_the_final_result() {
    require_tools(&["/usr/bin/promtool"]);
    let dir = TempDir::new("metrics-truth");
    let port = free_port();
    let file = dir.join("target.bin");
    let jobfile = dir.join("mixed.fio");
    let port_s = port.to_string();
    // Two psync jobs on a file and one null-engine job of trims, mixed
    // directions; paced so that several snapshots are served on the way.
    std::fs::write(
        &jobfile,
        format!(
            "[global]\nbs=4k\nsize=8m\n\n[mixed]\nfilename={}\nrw=randrw\nrwmixread=60\nioengine=psync\nrate_iops=800\nnumjobs=2\n\n[trims]\nfilename=null\nioengine=null\nrw=randtrim\nrate_iops=1000\n",
            file.display()
        ),
    )
    .unwrap();
    let args = [
        "run",
        jobfile.to_str().unwrap(),
        "--output-format=json",
        "--metrics-listen",
        &port_s,
        "--metrics-linger=300",
    ];
    let (text, r) = Drivelab::start(&args).finish(port, || {});
    let jobs = r["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3, "{r}");
    let mut ios_seen = 0;
    for (i, j) in jobs.iter().enumerate() {
        for dir in ["read", "write", "trim"] {
            let d = &j[dir];
            let ios = job_figure(&text, "drivelab_job_ios_total", j, i, dir);
            assert_eq!(ios, d["total_ios"].as_u64().unwrap(), "job {i} {dir}");
            let bytes = job_figure(&text, "drivelab_job_io_bytes_total", j, i, dir);
            assert_eq!(bytes, d["io_bytes"].as_u64().unwrap(), "job {i} {dir}");
            let n = job_figure(&text, "drivelab_job_latency_seconds_count", j, i, dir);
            assert_eq!(n, d["clat_ns"]["N"].as_u64().unwrap(), "job {i} {dir}");
            ios_seen += ios;
            let errors = j["errors"]
                .as_array()
                .map_or(0, |e| e.iter().filter(|e| e["op"] == dir).count() as u64);
            assert_eq!(
                job_figure(&text, "drivelab_job_errors_total", j, i, dir),
                errors
            );
        }
    }
    // 2048 blocks per psync job, 2048 trims of the null job's 8 MiB.
    assert_eq!(ios_seen, 3 * 2048);
    promtool_check(&text, dir.path());
}

#[test]
fn an_address_in_use_is_refused_before_any_io() {
    let dir = TempDir::new("metrics-in-use");
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let file = dir.join("never.bin");
    let f = format!("--filename={}", file.display());
    for args in [
        vec![
            "run",
            &f,
            "--size=1m",
            "--rw=write",
            "--metrics-listen",
            &port,
        ],
        vec!["run", &f, "--size=1m", "--metrics-listen", "not-an-address"],
        vec!["run", &f, "--size=1m", "--metrics-linger=5"],
    ] {
        let (code, out, err) = run(BIN, &args);
        assert_eq!(code, 2, "{args:?}: {out} {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains("--metrics-l"), "{args:?}: {err}");
        assert!(!file.exists(), "{args:?}: the target was created");
    }
    // A test's write step on an existing file: refused before it is opened.
    let kept = dir.join("kept.bin");
    std::fs::write(&kept, vec![0x5au8; 1 << 20]).unwrap();
    let before = digest(&kept);
    let k = kept.to_str().unwrap();
    let trace = dir.join("w.iolog");
    std::fs::write(
        &trace,
        "fio version 2 iolog\ndev add\ndev open\ndev write 0 4096\ndev close\n",
    )
    .unwrap();
    let t = trace.to_str().unwrap();
    for args in [
        vec!["test", k, "--step", "write", "--metrics-listen", &port],
        vec!["test", k, "--step", "write", "--metrics-linger=5"],
        vec![
            "trace",
            "replay",
            t,
            "--target",
            k,
            "--metrics-listen",
            &port,
        ],
    ] {
        let (code, out, err) = run(BIN, &args);
        assert_eq!(code, 2, "{args:?}: {out} {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains("--metrics-l"), "{args:?}: {err}");
        assert_eq!(digest(&kept), before, "{args:?}: the file was written");
    }
}

#[test]
fn an_erase_with_an_address_in_use_writes_nothing() {
    require_root();
    let dir = TempDir::new("metrics-erase-in-use");
    let img = dir.join("disk.img");
    make_image(&img, 8 << 20, &[(0, b"old data that must stay")]);
    let dev = LoopDev::attach(&img, &[]);
    let before = (digest(&img), diskstats(&dev.name));
    let held = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let certs = dir.join("certs");
    let d = dev.path.to_str().unwrap();
    let (code, out, err) = run(
        BIN,
        &[
            "erase",
            d,
            "--yes",
            "--confirm-serial",
            d,
            "--certificate-dir",
            certs.to_str().unwrap(),
            "--metrics-listen",
            &port,
        ],
    );
    assert_eq!(code, 2, "{out} {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert_eq!(
        (digest(&img), diskstats(&dev.name)),
        before,
        "the drive was touched"
    );
}

/// The JSON objects one after another in `s`.
fn objects(s: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(s)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("not a sequence of JSON objects ({e}):\n{s}"))
}

#[test]
fn the_users_status_interval_keeps_its_times_beside_the_metrics() {
    let dir = TempDir::new("metrics-status");
    let port = free_port();
    let file = dir.join("t.bin");
    let port_s = port.to_string();
    let filename = format!("--filename={}", file.display());
    // 6656 reads at 1000 a second: about 6.7 s; the user asks for a
    // snapshot every 3 s, the metrics are refreshed every second.
    let args = [
        "run",
        "--name=both",
        &filename,
        "--size=26m",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=psync",
        "--rate_iops=1000",
        "--output-format=json",
        "--status-interval=3",
        "--metrics-listen",
        &port_s,
        "--metrics-linger=300",
    ];
    let mut d = Drivelab::start(&args);
    // While it runs, the figures are refreshed between the user's snapshots.
    let mut seen = std::collections::BTreeSet::new();
    let t0 = std::time::Instant::now();
    while seen.len() < 4 && t0.elapsed() < DEADLINE {
        if let Some((_, _, body)) = get(port, "/metrics", None) {
            let l = "drivelab_job_ios_total{jobname=\"both\",job_index=\"0\",direction=\"read\"}";
            if let Some(v) = sample(&body, l) {
                if v > 0.0 && v < 6656.0 {
                    seen.insert(v as u64);
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(150));
    }
    assert!(
        seen.len() >= 4,
        "figures refreshed only {} times",
        seen.len()
    );
    d.final_figures(port);
    let (code, out, err) = d.stop();
    assert_eq!(code, 0, "{err}");
    let objs = objects(&out);
    let runtime_s = objs.last().unwrap()["jobs"][0]["job_runtime"]
        .as_f64()
        .unwrap()
        / 1e3;
    // The user's snapshots at 3 s and 6 s (one more or less as the run's
    // start and end fall), never one a second.
    let snapshots = objs.len() - 1;
    let due = (runtime_s / 3.0).floor() as usize;
    assert!(
        snapshots + 1 >= due && snapshots <= due + 1 && snapshots < 4,
        "{snapshots} snapshots in {runtime_s} s with --status-interval=3"
    );
    assert_eq!(objs.last().unwrap()["jobs"][0]["read"]["total_ios"], 6656);
}

#[test]
fn a_season_is_served_stage_by_stage_to_its_last_round() {
    require_root();
    let dir = TempDir::new("metrics-season");
    let dev = LoopDev::new_in(&dir, 64 << 20);
    let port = free_port();
    let port_s = port.to_string();
    let d = dev.dev();
    let args = [
        "season",
        d,
        "--yes",
        "--confirm-serial",
        d,
        "--state-dir",
        dir.path().to_str().unwrap(),
        "--stages",
        "fill,rounds",
        // Two passes over 64 MiB: a fill long enough to be scraped on a
        // fast disk (the stage is a gauge: one shorter than the scrape
        // interval is not seen).
        "--fill-passes",
        "2",
        "--workload",
        "rw=randwrite bs=4k iodepth=8 rate_iops=1000",
        "--round-time",
        "1",
        "--max-rounds",
        "6",
        "--output-format",
        "json",
        "--metrics-listen",
        &port_s,
        "--metrics-linger=300",
    ];
    let child = Drivelab::start(&args);
    // The stages as they are served, in the order first seen.
    let name = dev.name.clone();
    let mut stages: Vec<String> = Vec::new();
    let t0 = std::time::Instant::now();
    let text = loop {
        let Some((_, _, body)) = get(port, "/metrics", None) else {
            assert!(t0.elapsed() < DEADLINE, "no metrics within {DEADLINE:?}");
            std::thread::sleep(std::time::Duration::from_millis(100));
            continue;
        };
        let prefix = format!("drivelab_season_stage{{device=\"{name}\",stage=\"");
        for l in body.lines() {
            if let Some(st) = l.strip_prefix(&prefix).and_then(|r| r.split('"').next()) {
                if !stages.iter().any(|s| s == st) {
                    stages.push(st.to_string());
                }
            }
        }
        if sample(&body, "drivelab_work_finished") == Some(1.0) {
            break body;
        }
        assert!(
            t0.elapsed() < DEADLINE,
            "season not finished within {DEADLINE:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (code, out, err) = child.stop();
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let rounds = r["drives"][0]["rounds"].as_array().unwrap().len();
    assert!(rounds >= 1, "{out}");
    // Fill, then the rounds, as the season ran them.
    let fill = stages.iter().position(|s| s == "fill");
    let rounds_at = stages.iter().position(|s| s == "rounds");
    assert!(
        matches!((fill, rounds_at), (Some(f), Some(r)) if f < r),
        "stages served: {stages:?}"
    );
    // The last round served is the result's last.
    let line = format!("drivelab_season_round{{device=\"{name}\"}}");
    assert_eq!(sample(&text, &line), Some(rounds as f64), "{text}");
}

/// The figure `name{step="S",kind="K"...}` in `text`.
fn step_figure(text: &str, name: &str, labels: &str) -> f64 {
    let line = format!("{name}{{{labels}}}");
    sample(text, &line).unwrap_or_else(|| panic!("{line} not served:\n{text}"))
}

#[test]
fn a_test_sequence_is_served_step_by_step_and_ends_equal_to_its_result() {
    require_tools(&["/usr/bin/promtool"]);
    let dir = TempDir::new("metrics-test-steps");
    let file = dir.join("target.bin");
    std::fs::write(&file, vec![0u8; 8 << 20]).unwrap();
    let seq = dir.join("steps.toml");
    // A write-verify that passes, a verify of the wrong pattern that fails
    // on every block and goes on, and a read.
    std::fs::write(
        &seq,
        "seed = 7\n[[step]]\nkind = \"write-verify\"\npattern = \"incrementing\"\nbs = \"4k\"\n\
         [[step]]\nkind = \"verify\"\npattern = \"allzeros\"\nbs = \"64k\"\non_error = \"continue\"\n\
         [[step]]\nkind = \"read\"\nbs = \"64k\"\n",
    )
    .unwrap();
    let port = free_port();
    let port_s = port.to_string();
    let args = [
        "test",
        file.to_str().unwrap(),
        "--sequence",
        seq.to_str().unwrap(),
        "--output-format=json",
        "--metrics-listen",
        &port_s,
        "--metrics-linger=300",
    ];
    let mut child = Drivelab::start(&args);
    let text = child.final_figures(port);
    let (code, out, err) = child.stop();
    assert_eq!(code, 1, "a step failed: {err}");
    let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{out}");
    for s in steps {
        let step = s["index"].as_u64().unwrap();
        let kind = s["kind"].as_str().unwrap();
        let l = format!("step=\"{step}\",kind=\"{kind}\"");
        let status = s["status"].as_str().unwrap().to_ascii_lowercase();
        for state in ["waiting", "running", "passed", "failed", "skipped"] {
            let v = step_figure(
                &text,
                "drivelab_test_step_state",
                &format!("{l},state=\"{state}\""),
            );
            assert_eq!(
                v,
                f64::from(u8::from(state == status)),
                "step {step} {state}"
            );
        }
        let bs = s["block_size"].as_u64().unwrap();
        let blocks = s["blocks_transferred"].as_u64().unwrap();
        assert_eq!(
            step_figure(&text, "drivelab_test_step_done_bytes", &l),
            (blocks * bs) as f64,
            "step {step}"
        );
        for p in s["passes"].as_array().unwrap() {
            let lo = format!("{l},op=\"{}\"", p["op"].as_str().unwrap());
            assert_eq!(
                step_figure(&text, "drivelab_test_ios_total", &lo),
                p["ios"].as_u64().unwrap() as f64
            );
            assert_eq!(
                step_figure(&text, "drivelab_test_io_bytes_total", &lo),
                p["bytes"].as_u64().unwrap() as f64
            );
        }
        assert_eq!(
            step_figure(&text, "drivelab_test_miscompared_blocks_total", &l),
            s["miscompares"].as_u64().unwrap() as f64
        );
        assert_eq!(
            step_figure(&text, "drivelab_test_io_errors_total", &l),
            s["io_errors"].as_u64().unwrap() as f64
        );
    }
    // The write-verify did both passes over the whole 8 MiB; the verify
    // of the wrong pattern miscompared every block.
    let wv = "step=\"1\",kind=\"write-verify\"";
    assert_eq!(
        step_figure(&text, "drivelab_test_step_planned_bytes", wv),
        f64::from(16u32 << 20)
    );
    assert_eq!(steps[1]["miscompares"].as_u64(), Some(16384), "{out}");
    promtool_check(&text, dir.path());
}

#[test]
fn a_replay_is_served_as_it_plays_and_ends_equal_to_its_result() {
    require_tools(&["/usr/bin/promtool"]);
    let dir = TempDir::new("metrics-replay");
    let trace = dir.join("t.iolog");
    let target = dir.join("target.img");
    std::fs::write(&target, vec![0u8; 8 << 20]).unwrap();
    // 3000 requests a millisecond apart (the timestamps are µs; original
    // timing: about 3 s),
    // reads and writes of 4 KiB over the first 8 MiB.
    let n = 3000u64;
    let mut s = String::from("fio version 3 iolog\n0 dev add\n0 dev open\n");
    for i in 0..n {
        let op = if i % 3 == 0 { "write" } else { "read" };
        s += &format!(
            "{} dev {op} {} 4096\n",
            i * 1000,
            (i * 4096 * 7) % (8 << 20)
        );
    }
    s += &format!("{} dev close\n", n * 1000);
    std::fs::write(&trace, s).unwrap();
    let port = free_port();
    let port_s = port.to_string();
    let args = [
        "trace",
        "replay",
        trace.to_str().unwrap(),
        "--target",
        target.to_str().unwrap(),
        "--mode",
        "original",
        "--output-format=json",
        "--metrics-listen",
        &port_s,
        "--metrics-linger=300",
    ];
    let mut child = Drivelab::start(&args);
    // Scrape as it plays: some scrape sees it part way.
    let t0 = std::time::Instant::now();
    let mut part_way = false;
    let text = loop {
        if let Some((_, _, body)) = get(port, "/metrics", None) {
            let issued = sample(&body, "drivelab_replay_issued_requests_total").unwrap_or(0.0);
            part_way |= issued > 0.0 && issued < n as f64;
            if sample(&body, "drivelab_work_finished") == Some(1.0) {
                break body;
            }
        }
        assert!(
            t0.elapsed() < DEADLINE,
            "no final figures within {DEADLINE:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let _ = child.final_figures(port);
    let (code, out, err) = child.stop();
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(part_way, "no scrape saw the replay part way:\n{text}");
    let served = |name: &str| sample(&text, name).unwrap_or_else(|| panic!("{name}:\n{text}"));
    assert_eq!(served("drivelab_replay_planned_requests"), n as f64);
    assert_eq!(
        served("drivelab_replay_issued_requests_total"),
        r["requests"].as_f64().unwrap()
    );
    assert_eq!(
        served("drivelab_replay_completed_requests_total"),
        r["completed"].as_f64().unwrap()
    );
    assert_eq!(
        served("drivelab_replay_failed_requests_total"),
        r["errors"].as_f64().unwrap()
    );
    assert_eq!(
        served("drivelab_replay_io_bytes_total{direction=\"read\"}"),
        r["bytes_read"].as_f64().unwrap()
    );
    assert_eq!(
        served("drivelab_replay_io_bytes_total{direction=\"write\"}"),
        r["bytes_written"].as_f64().unwrap()
    );
    assert_eq!(r["requests"].as_u64(), Some(n), "{out}");
    assert_eq!(r["bytes_written"].as_u64(), Some(1000 * 4096), "{out}");
    promtool_check(&text, dir.path());
}
