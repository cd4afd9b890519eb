//! `drivelab run` against real loop devices and files: bytes moved checked
//! against /proc/diskstats (parsed here independently) and against the
//! backing file; JSON shape; safety refusals that write nothing.

use drivelab_testkit::{
    digest, diskstats, make_image, read_all, require_root, run, LoopDev, TempDir,
};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// What the safety probe of a writing run may read before the run starts
/// (signature areas at the start and the end of the device).
const PROBE_READ_MAX: u64 = 1 << 20;

fn json_run(args: &[&str]) -> Value {
    let mut a: Vec<&str> = vec!["run"];
    a.extend_from_slice(args);
    a.push("--output-format=json");
    let (code, out, err) = run(BIN, &a);
    assert_eq!(code, 0, "drivelab {a:?} exited {code}: {err}\n{out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn dir_bytes(v: &Value, dir: &str) -> u64 {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j[dir]["io_bytes"].as_u64().unwrap())
        .sum()
}

#[test]
fn sequential_write_moves_exactly_size_bytes_and_lands_in_the_backing_file() {
    require_root();
    let dir = TempDir::new("run-write");
    let lo = LoopDev::new_in(&dir, 64 << 20);
    let before = diskstats(&lo.name);
    let v = json_run(&[
        "--filename",
        lo.dev(),
        "--rw=write",
        "--bs=64k",
        "--offset=8m",
        "--size=16m",
        "--iodepth=8",
    ]);
    let after = diskstats(&lo.name);
    assert_eq!(dir_bytes(&v, "write"), 16 << 20);
    assert_eq!(dir_bytes(&v, "read"), 0);
    // The device saw exactly those bytes written. Reads outside the run's
    // window come only from the safety probe (signatures at both ends).
    assert_eq!((after.3 - before.3) * 512, 16 << 20);
    assert!(
        (after.1 - before.1) * 512 <= PROBE_READ_MAX,
        "unexpected reads"
    );
    assert_eq!(
        v["disk_util"][0]["read_ios"].as_u64(),
        Some(0),
        "reads during the run"
    );
    // The backing file: zeros outside [8 MiB, 24 MiB), data inside.
    let img = read_all(&lo.backing);
    assert!(
        img[..8 << 20].iter().all(|&b| b == 0),
        "bytes before the region changed"
    );
    assert!(
        img[24 << 20..].iter().all(|&b| b == 0),
        "bytes after the region changed"
    );
    for blk in img[8 << 20..24 << 20].chunks(65536) {
        assert!(
            blk.iter().any(|&b| b != 0),
            "a 64 KiB block inside the region was not written"
        );
    }
    let dc = &v["device_check"][0];
    assert_eq!(dc["device"], lo.name.as_str());
    assert_eq!(dc["device_bytes"].as_u64(), Some(16 << 20));
    assert_eq!(dc["reported_bytes"].as_u64(), Some(16 << 20));
}

#[test]
fn each_read_mode_reads_exactly_its_bytes() {
    require_root();
    let dir = TempDir::new("run-read");
    let lo = LoopDev::new_in(&dir, 32 << 20);
    for (rw, bs) in [("read", "128k"), ("randread", "4k")] {
        let before = diskstats(&lo.name);
        let v = json_run(&[
            "--filename",
            lo.dev(),
            &format!("--rw={rw}"),
            &format!("--bs={bs}"),
            "--size=8m",
            "--iodepth=16",
        ]);
        let after = diskstats(&lo.name);
        assert_eq!(dir_bytes(&v, "read"), 8 << 20, "{rw}");
        assert_eq!(
            (after.1 - before.1) * 512,
            8 << 20,
            "{rw}: device read bytes"
        );
        assert_eq!(after.3 - before.3, 0, "{rw}: a read mode wrote");
    }
}

#[test]
fn mixed_modes_split_the_io_size_and_hold_rwmixread() {
    require_root();
    let dir = TempDir::new("run-mixed");
    let lo = LoopDev::new_in(&dir, 32 << 20);
    for rw in ["rw", "randrw"] {
        let before = diskstats(&lo.name);
        let v = json_run(&[
            "--filename",
            lo.dev(),
            &format!("--rw={rw}"),
            "--bs=4k",
            "--rwmixread=70",
            "--size=16m",
            "--io_size=40m",
            "--iodepth=8",
        ]);
        let after = diskstats(&lo.name);
        let r = dir_bytes(&v, "read");
        let w = dir_bytes(&v, "write");
        assert_eq!(r + w, 40 << 20, "{rw}");
        let dev_r = (after.1 - before.1) * 512;
        let dev_w = (after.3 - before.3) * 512;
        assert!(
            dev_r >= r && dev_r - r <= PROBE_READ_MAX,
            "{rw}: device read {dev_r}, reported {r}"
        );
        let dc = &v["device_check"][0];
        assert_eq!(dc["device_bytes"].as_u64(), Some(r + w), "{rw}: {dc}");
        assert_eq!(dev_w, w, "{rw}: device write bytes");
        let share = r as f64 / (r + w) as f64;
        assert!((share - 0.70).abs() < 0.01, "{rw}: read share {share}");
    }
}

#[test]
fn trim_discards_the_region() {
    require_root();
    let dir = TempDir::new("run-trim");
    let img = dir.join("t.img");
    // A file full of 0xAB so a discard (hole punch in the backing file) shows.
    make_image(&img, 16 << 20, &[(0, &vec![0xABu8; 16 << 20])]);
    let lo = LoopDev::attach(&img, &[]);
    let before = diskstats(&lo.name);
    let v = json_run(&[
        "--filename",
        lo.dev(),
        "--rw=trim",
        "--bs=1m",
        "--offset=4m",
        "--size=4m",
        "--force",
    ]);
    let after = diskstats(&lo.name);
    assert_eq!(dir_bytes(&v, "trim"), 4 << 20);
    assert_eq!((after.5 - before.5) * 512, 4 << 20, "device discard bytes");
    let data = read_all(&img);
    assert!(
        data[4 << 20..8 << 20].iter().all(|&b| b == 0),
        "trimmed range still holds data"
    );
    assert!(
        data[..4 << 20].iter().all(|&b| b == 0xAB) && data[8 << 20..].iter().all(|&b| b == 0xAB)
    );
}

#[test]
fn random_write_io_size_reaches_the_device() {
    require_root();
    let dir = TempDir::new("run-randwrite");
    let lo = LoopDev::new_in(&dir, 32 << 20);
    let before = diskstats(&lo.name);
    let v = json_run(&[
        "--filename",
        lo.dev(),
        "--rw=randwrite",
        "--bs=8k",
        "--io_size=12m",
        "--iodepth=32",
    ]);
    let after = diskstats(&lo.name);
    assert_eq!(dir_bytes(&v, "write"), 12 << 20);
    assert_eq!((after.3 - before.3) * 512, 12 << 20);
    assert_eq!(
        v["jobs"][0]["write"]["total_ios"].as_u64(),
        Some(12 * 1024 / 8)
    );
}

#[test]
fn json_has_fio_fields_and_device_check() {
    require_root();
    let dir = TempDir::new("run-json");
    let lo = LoopDev::new_in(&dir, 16 << 20);
    let v = json_run(&[
        "--filename",
        lo.dev(),
        "--rw=randread",
        "--bs=4k",
        "--runtime=2",
        "--iodepth=4",
        "--name=probe",
    ]);
    let j = &v["jobs"][0];
    assert_eq!(j["jobname"], "probe");
    for d in ["read", "write", "trim"] {
        for k in ["io_bytes", "bw_bytes", "bw", "iops", "runtime", "total_ios"] {
            assert!(j[d][k].is_number(), "jobs[0].{d}.{k} missing");
        }
    }
    let clat = &j["read"]["clat_ns"];
    for k in ["min", "max", "mean", "stddev"] {
        assert!(clat[k].is_number(), "clat_ns.{k}");
    }
    let p99 = clat["percentile"]["99.000000"].as_u64().unwrap();
    let p50 = clat["percentile"]["50.000000"].as_u64().unwrap();
    assert!(p50 <= p99 && p99 <= clat["max"].as_u64().unwrap());
    assert!(j["lat_ns"].is_null() && j["read"]["lat_ns"]["mean"].is_number());
    // A 2 s time-based run.
    let rt = j["read"]["runtime"].as_u64().unwrap();
    assert!((1900..2500).contains(&rt), "runtime {rt} ms");
    // bw (KiB/s) and bw_bytes agree; iops × runtime ≈ total_ios.
    let bw_bytes = j["read"]["bw_bytes"].as_u64().unwrap();
    assert_eq!(j["read"]["bw"].as_u64().unwrap(), bw_bytes / 1024);
    let ios = j["read"]["total_ios"].as_f64().unwrap();
    let iops = j["read"]["iops"].as_f64().unwrap();
    assert!((iops * rt as f64 / 1000.0 - ios).abs() / ios < 0.01);
    let du = &v["disk_util"][0];
    assert_eq!(du["name"], lo.name.as_str());
    for k in [
        "read_ios",
        "write_ios",
        "read_merges",
        "write_merges",
        "read_ticks",
        "write_ticks",
        "in_queue",
        "util",
    ] {
        assert!(du[k].is_number(), "disk_util.{k}");
    }
    let dc = &v["device_check"][0];
    for k in [
        "device",
        "reported_bytes",
        "device_bytes",
        "ratio",
        "reported_ios",
        "device_ios",
        "idle_seconds",
        "throughput_cov",
        "verdict",
    ] {
        assert!(!dc[k].is_null(), "device_check.{k}");
    }
    assert_eq!(dc["verdict"], "agrees", "{dc}");
    let ts = j["timeseries"].as_array().unwrap();
    assert!(ts.len() >= 2, "timeseries {ts:?}");
    assert!(ts[0]["iops"].as_f64().unwrap() > 0.0 && ts[0]["lat_p99_ns"].as_u64().unwrap() > 0);
}

#[test]
fn errors_in_json_mode_are_json_with_exit_2() {
    let (code, out, err) = run(
        BIN,
        &[
            "run",
            "--output-format=json",
            "--filename=/nonexistent-dir/x",
            "--bs=4q",
        ],
    );
    assert_eq!(code, 2, "{err}");
    let v: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("stdout not JSON ({e}): {out}"));
    assert!(v["error"].as_str().unwrap().contains("bs"), "{v}");
    let (code, out, _) = run(BIN, &["run", "--output-format", "json", "--frobnicate=1"]);
    assert_eq!(code, 2);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["error"].as_str().unwrap().contains("frobnicate"));
}

#[test]
fn bad_input_is_one_line_exit_2() {
    let cases: &[&[&str]] = &[
        &["run", "--bs=4q", "--filename=/tmp/x"],
        &["run", "--rw=randomread", "--filename=/tmp/x"],
        &["run", "--iodeth=4", "--filename=/tmp/x"],
        &["run", "--filename=/nonexistent-dir/file", "--size=1m"],
        &["run", "--filename=/dev/does-not-exist", "--rw=read"],
        &["run", "--preset=mailserver"],
        &["run", "/nonexistent/job.fio"],
    ];
    for c in cases {
        let (code, out, err) = run(BIN, c);
        assert_eq!(code, 2, "{c:?}: {err}{out}");
        assert_eq!(
            err.trim().lines().count(),
            1,
            "{c:?} printed more than one line: {err}"
        );
        assert!(out.is_empty(), "{c:?} printed on stdout: {out}");
    }
}

#[test]
fn block_size_not_a_multiple_of_the_logical_block_is_refused_with_direct_io() {
    require_root();
    let dir = TempDir::new("run-bs");
    let img = dir.join("4k.img");
    make_image(&img, 8 << 20, &[]);
    let lo = LoopDev::attach(&img, &["--sector-size", "4096"]);
    let (code, _, err) = run(
        BIN,
        &["run", "--filename", lo.dev(), "--rw=randread", "--bs=512"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("multiple of the logical block size 4096"),
        "{err}"
    );
    let (code, _, err) = run(
        BIN,
        &[
            "run",
            "--filename",
            lo.dev(),
            "--rw=randread",
            "--bs=4k",
            "--size=2k",
        ],
    );
    assert_eq!(code, 2, "{err}");
}

#[test]
fn refused_write_leaves_the_device_unchanged() {
    require_root();
    let dir = TempDir::new("run-refuse");
    let img = dir.join("fs.img");
    // An ext4 superblock magic (0xEF53 at byte 1080) makes it look like a filesystem.
    make_image(&img, 16 << 20, &[(1080, &[0x53, 0xEF])]);
    let lo = LoopDev::attach(&img, &[]);
    let before = digest(&lo.path);
    let ds_before = diskstats(&lo.name);
    let (code, out, err) = run(
        BIN,
        &[
            "run",
            "--filename",
            lo.dev(),
            "--rw=write",
            "--bs=4k",
            "--size=1m",
        ],
    );
    assert_eq!(code, 2, "{err}{out}");
    assert!(
        err.contains("ext"),
        "refusal should name the signature: {err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert_eq!(diskstats(&lo.name).3, ds_before.3, "sectors were written");
    assert_eq!(digest(&lo.path), before);
    // Reads are always allowed.
    let (code, _, err) = run(
        BIN,
        &[
            "run",
            "--filename",
            lo.dev(),
            "--rw=read",
            "--bs=4k",
            "--size=1m",
        ],
    );
    assert_eq!(code, 0, "{err}");
    // --force overrides.
    let (code, _, err) = run(
        BIN,
        &[
            "run",
            "--filename",
            lo.dev(),
            "--rw=write",
            "--bs=4k",
            "--size=1m",
            "--force",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_ne!(digest(&lo.path), before);
}

#[test]
fn running_system_device_is_refused_even_with_force() {
    require_root();
    // The device under / backs the running system. Only the refusal path is
    // exercised: the plan fails before anything is opened for writing.
    let root_dev = drivelab_testkit::root_device();
    let (code, _, err) = run(
        BIN,
        &[
            "run",
            "--filename",
            &root_dev,
            "--rw=write",
            "--size=1m",
            "--force",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("running system") || err.contains("mounted"),
        "{err}"
    );
}

#[test]
fn job_file_runs_each_job_and_rejects_unknown_keys() {
    require_root();
    let dir = TempDir::new("run-jobfile");
    let lo = LoopDev::new_in(&dir, 16 << 20);
    let job = dir.join("two.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nfilename={}\nbs=4k\nsize=4m\n\n[reader]\nrw=read\n\n[writer]\nstonewall\nrw=write\nbs=64k\n",
            lo.dev()
        ),
    )
    .unwrap();
    let v = json_run(&[job.to_str().unwrap()]);
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["jobname"], "reader");
    assert_eq!(jobs[0]["read"]["io_bytes"].as_u64(), Some(4 << 20));
    assert_eq!(jobs[1]["write"]["io_bytes"].as_u64(), Some(4 << 20));
    assert_eq!(jobs[1]["write"]["total_ios"].as_u64(), Some(64));
    let bad = dir.join("bad.fio");
    std::fs::write(&bad, format!("[j]\nfilename={}\nverify=crc99\n", lo.dev())).unwrap();
    let (code, _, err) = run(BIN, &["run", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.fio:3") && err.contains("verify"), "{err}");
}

#[test]
fn files_are_created_laid_out_and_read() {
    let dir = TempDir::new("run-file");
    let f = dir.join("data.bin");
    let v = json_run(&[
        "--filename",
        f.to_str().unwrap(),
        "--rw=randread",
        "--bs=4k",
        "--size=4m",
        "--iodepth=4",
    ]);
    assert_eq!(dir_bytes(&v, "read"), 4 << 20);
    let md = std::fs::metadata(&f).unwrap();
    assert_eq!(md.len(), 4 << 20);
    // Laid out with data, not a sparse hole: every 4 KiB block holds bytes.
    let data = read_all(&f);
    assert!(data.chunks(4096).all(|c| c.iter().any(|&b| b != 0)));
}

#[test]
fn null_engine_needs_no_target_and_moves_the_asked_bytes() {
    let v = json_run(&[
        "--ioengine=null",
        "--filename=nothing",
        "--rw=randrw",
        "--bs=4k",
        "--size=64m",
        "--iodepth=32",
    ]);
    assert_eq!(dir_bytes(&v, "read") + dir_bytes(&v, "write"), 64 << 20);
    assert!(v["device_check"].as_array().unwrap().is_empty());
    assert!(!std::path::Path::new("nothing").exists());
}

#[test]
fn rate_limited_run_holds_the_rate_and_reports_intended_latency() {
    let v = json_run(&[
        "--ioengine=null",
        "--filename=x",
        "--rw=randread",
        "--rate_iops=2000",
        "--runtime=2",
        "--iodepth=4",
    ]);
    let r = &v["jobs"][0]["read"];
    let iops = r["iops"].as_f64().unwrap();
    assert!((iops - 2000.0).abs() < 60.0, "iops {iops}");
    assert!(r["lat_from_intended_ns"]["mean"].is_number(), "{r}");
    // The spread is measured, not left at 0 (it was: histogram only).
    let l = &r["lat_from_intended_ns"];
    let (sd, min, max) = (
        l["stddev"].as_f64().unwrap(),
        l["min"].as_u64().unwrap(),
        l["max"].as_u64().unwrap(),
    );
    assert!(max > min && sd > 0.0 && sd <= (max - min) as f64, "{l}");
}

#[test]
fn ctrl_c_stops_cleanly_and_still_reports() {
    require_root();
    let dir = TempDir::new("run-sigint");
    let lo = LoopDev::new_in(&dir, 16 << 20);
    let out_file = dir.join("r.json");
    let child = std::process::Command::new(BIN)
        .args([
            "run",
            "--filename",
            lo.dev(),
            "--rw=randread",
            "--bs=4k",
            "--runtime=30",
            "--output-format=json",
            "--output",
        ])
        .arg(&out_file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    drivelab_engine::sys::interrupt(child.id()).unwrap();
    let t = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed().as_secs() < 5, "did not stop promptly");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(v["interrupted"], true);
    let rt = v["jobs"][0]["read"]["runtime"].as_u64().unwrap();
    assert!((1500..4000).contains(&rt), "runtime {rt}");
    assert!(v["jobs"][0]["read"]["io_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn psync_numjobs_and_several_targets() {
    require_root();
    let dir = TempDir::new("run-psync");
    let a = LoopDev::new_in(&dir, 16 << 20);
    let b = LoopDev::new_in(&dir, 16 << 20);
    let (ba, bb) = (diskstats(&a.name), diskstats(&b.name));
    let targets = format!("{}:{}", a.dev(), b.dev());
    let v = json_run(&[
        "--filename",
        &targets,
        "--ioengine=psync",
        "--rw=read",
        "--bs=4k",
        "--size=8m",
        "--numjobs=2",
    ]);
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    for j in jobs {
        assert_eq!(j["ioengine"], "psync");
        // size is split over the two targets: 4 MiB each, per job.
        assert_eq!(j["read"]["io_bytes"].as_u64(), Some(8 << 20));
    }
    let (aa, ab) = (diskstats(&a.name), diskstats(&b.name));
    assert_eq!(
        (aa.1 - ba.1) * 512,
        8 << 20,
        "each device gets half of each job"
    );
    assert_eq!((ab.1 - bb.1) * 512, 8 << 20);
    let checks = v["device_check"].as_array().unwrap();
    assert_eq!(checks.len(), 2);
    assert!(
        checks
            .iter()
            .all(|c| c["reported_bytes"].as_u64() == Some(8 << 20)),
        "{checks:?}"
    );
}

#[test]
fn fsync_and_fua_reach_the_device() {
    require_root();
    let dir = TempDir::new("run-fsync");
    let lo = LoopDev::new_in(&dir, 16 << 20);
    let v = json_run(&[
        "--filename",
        lo.dev(),
        "--rw=write",
        "--bs=4k",
        "--size=1m",
        "--fsync=16",
        "--force",
    ]);
    assert_eq!(
        v["jobs"][0]["sync"]["total_ios"].as_u64(),
        Some(15),
        "256 writes, an fsync every 16 but none after the last (as fio 3.33)"
    );
    let trace = drivelab_testkit::IssueTrace::start(&lo.path);
    let (code, _, err) = run(
        BIN,
        &[
            "run",
            "--filename",
            lo.dev(),
            "--rw=write",
            "--bs=4k",
            "--size=256k",
            "--fua",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let reqs: Vec<_> = trace
        .stop()
        .into_iter()
        .filter(|r| r.comm.starts_with("job-"))
        .collect();
    let writes: Vec<_> = reqs.iter().filter(|r| r.rwbs.contains('W')).collect();
    assert_eq!(writes.len(), 64);
    assert!(
        writes
            .iter()
            .all(|r| r.rwbs.contains('F') || r.rwbs.contains('S')),
        "writes without FUA/sync: {:?}",
        &writes[..2]
    );
}

#[test]
fn zram_random_read_agrees_at_the_device() {
    let Some(z) = drivelab_testkit::Zram::new(64 << 20) else {
        panic!("zram is not available (no /sys/class/zram-control): load the zram module");
    };
    let dev = z.path.to_str().unwrap();
    // Fill it, so reads return data rather than zero pages.
    let v = json_run(&["--filename", dev, "--rw=write", "--bs=1m", "--force"]);
    assert_eq!(dir_bytes(&v, "write"), 64 << 20);
    let v = json_run(&[
        "--filename",
        dev,
        "--rw=randread",
        "--bs=4k",
        "--iodepth=32",
        "--runtime=2",
    ]);
    let dc = &v["device_check"][0];
    assert_eq!(dc["verdict"], "agrees", "{dc}");
    assert!(v["jobs"][0]["read"]["iops"].as_f64().unwrap() > 1000.0);
}
