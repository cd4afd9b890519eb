//! `drivelab trace …` run as the real binary: analyze, convert, compare and
//! record, with exit statuses and JSON checked against figures computed here
//! from the raw inputs.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use drivelab_testkit::{require_root, LoopDev, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");
/// The sample traces kept in the repository (see tests/data/traces/README.md).
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/traces");

fn drivelab(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// (requests, reads, bytes_read, bytes_written) of an MQSim trace, by a
/// plain parse.
fn mqsim_counts(path: &Path) -> (u64, u64, u64, u64) {
    let text = std::fs::read_to_string(path).unwrap();
    let (mut n, mut r, mut br, mut bw) = (0, 0, 0, 0);
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
        n += 1;
        if f[4] == 1 {
            r += 1;
            br += f[3] * 512;
        } else {
            bw += f[3] * 512;
        }
    }
    (n, r, br, bw)
}

#[test]
fn analyze_json_has_the_documented_keys_and_right_numbers() {
    let t = Path::new(SAMPLES).join("wsrch-small.trace");
    let out = drivelab(&["trace", "analyze", s(&t), "--output-format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let (n, r, br, bw) = mqsim_counts(&t);
    assert_eq!(v["requests"], n);
    assert_eq!(v["reads"], r);
    assert_eq!(v["writes"], n - r);
    assert_eq!(v["bytes_read"], br);
    assert_eq!(v["bytes_written"], bw);
    assert_eq!(v["format"], "mqsim");
    for k in ["duration_s", "read_fraction", "sizes", "queue_depth"] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert!(v["seek_distance"]["zero_fraction"].is_number());
    assert!(v["service_time_ns"].get("mean").is_some());
    assert!(v["interarrival_ns"]["mean"].is_number());
}

#[test]
fn analyze_reads_standard_input_as_it_reads_the_file() {
    // `-` streams a trace from a pipe (generated or decompressed on the
    // fly, too long to store): the same figures as from the file.
    let t = Path::new(SAMPLES).join("wsrch-small.trace");
    let from_file = json(&drivelab(&[
        "trace",
        "analyze",
        s(&t),
        "--format",
        "mqsim",
        "--output-format",
        "json",
    ]));
    let mut child = Command::new(BIN)
        .args([
            "trace",
            "analyze",
            "-",
            "--format",
            "mqsim",
            "--output-format",
            "json",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let text = std::fs::read(&t).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(&text).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_pipe = json(&out);
    let (n, r, _, _) = mqsim_counts(&t);
    assert_eq!(from_pipe["requests"], n);
    assert_eq!(from_pipe["reads"], r);
    for k in [
        "requests",
        "bytes_read",
        "bytes_written",
        "sizes",
        "queue_depth",
        "service_time_ns",
    ] {
        assert_eq!(from_pipe[k], from_file[k], "{k}");
    }
    assert_eq!(from_pipe["trace"], "-");
}

#[test]
fn analyze_writes_five_svg_plots() {
    let d = TempDir::new("plots");
    let t = Path::new(SAMPLES).join("apress_blktrace.txt");
    let plots = d.join("plots");
    let out = drivelab(&["trace", "analyze", s(&t), "--plots", s(&plots)]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [
        "sizes.svg",
        "queue_depth.svg",
        "seek_distance.svg",
        "service_time.svg",
        "access_map.svg",
    ] {
        let text = std::fs::read_to_string(plots.join(f)).unwrap();
        assert!(
            text.starts_with("<?xml") && text.trim_end().ends_with("</svg>"),
            "{f}"
        );
    }
}

#[cfg(not(feature = "png"))]
#[test]
fn png_without_the_feature_says_how_to_get_it_and_writes_nothing() {
    let d = TempDir::new("nopng");
    let t = Path::new(SAMPLES).join("wsrch-small.trace");
    let plots = d.join("plots");
    let out = drivelab(&["trace", "analyze", s(&t), "--plots", s(&plots), "--png"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--features png"), "{err}");
    assert!(!plots.exists(), "nothing written");
}

#[cfg(feature = "png")]
#[test]
fn analyze_writes_png_plots_when_asked() {
    let d = TempDir::new("png");
    let t = Path::new(SAMPLES).join("wsrch-small.trace");
    let plots = d.join("plots");
    let out = drivelab(&["trace", "analyze", s(&t), "--plots", s(&plots), "--png"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [
        "sizes",
        "queue_depth",
        "seek_distance",
        "service_time",
        "access_map",
    ] {
        let png = std::fs::read(plots.join(format!("{f}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{f}.png is not a PNG");
        // IHDR: width and height, big-endian, at bytes 16..24; twice the SVG's.
        let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let svg = std::fs::read_to_string(plots.join(format!("{f}.svg"))).unwrap();
        let svg_w: u32 = svg
            .split("width=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|v| v.parse().ok())
            .unwrap();
        assert_eq!(w, 2 * svg_w, "{f}");
    }
    let out = drivelab(&["trace", "analyze", s(&t), "--png"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "--png without --plots is a usage error"
    );
}

#[test]
fn convert_roundtrip_preserves_the_analysis() {
    let d = TempDir::new("convert");
    let src = Path::new(SAMPLES).join("tpcc-small.trace");
    let native = d.join("t.dlt");
    let csv = d.join("t.csv");
    let out = drivelab(&["trace", "convert", s(&src), s(&native)]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = drivelab(&[
        "trace",
        "convert",
        s(&native),
        s(&csv),
        "--output-format",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(
        (v["from"].as_str(), v["to"].as_str()),
        (Some("native"), Some("msr"))
    );
    let a = json(&drivelab(&[
        "trace",
        "analyze",
        s(&src),
        "--output-format",
        "json",
    ]));
    let b = json(&drivelab(&[
        "trace",
        "analyze",
        s(&native),
        "--output-format",
        "json",
    ]));
    let c = json(&drivelab(&[
        "trace",
        "analyze",
        s(&csv),
        "--output-format",
        "json",
    ]));
    assert_eq!(c["format"], "msr");
    for k in [
        "requests",
        "reads",
        "writes",
        "bytes_read",
        "bytes_written",
        "sizes",
        "seek_distance",
    ] {
        assert_eq!(a[k], b[k], "{k} native");
        assert_eq!(a[k], c[k], "{k} msr");
    }
    // MSR times are relative to the first request; durations agree.
    assert_eq!(a["duration_s"], b["duration_s"]);
    // An output name that says nothing, without --to: usage error.
    let out = drivelab(&["trace", "convert", s(&src), s(&d.join("t.unknown"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--to"));
}

#[test]
fn compare_exit_status_follows_the_verdict() {
    let d = TempDir::new("compare");
    let src = Path::new(SAMPLES).join("wsrch-small.trace");
    let out = drivelab(&["trace", "compare", s(&src), s(&src), "--tolerance", "0"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Drop every 10th request: 90 % match.
    let text = std::fs::read_to_string(&src).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let kept: Vec<&str> = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 10 != 0)
        .map(|(_, l)| *l)
        .collect();
    let b = d.join("b.trace");
    std::fs::write(&b, kept.join("\n")).unwrap();
    let out = drivelab(&[
        "trace",
        "compare",
        s(&src),
        s(&b),
        "--output-format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    let want = kept.len() as f64 / lines.len() as f64;
    assert!((v["match_fraction"].as_f64().unwrap() - want).abs() < 1e-12);
    assert_eq!(v["differs"], true);
    assert_eq!(v["extra_in_b"], 0);
    // The tolerance loosens the distances, never the counts: a missing
    // access fails the seed's audit at any tolerance, with its figure.
    let out = drivelab(&["trace", "compare", s(&src), s(&b), "--tolerance", "0.5"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let missing = lines.len() - kept.len();
    assert!(
        text.contains(&format!(
            "FAIL missing accesses (in A, not in B)  {missing}  (limit: 0)"
        )),
        "{text}"
    );
    assert!(text.contains("PASS stray accesses"), "{text}");
}

#[test]
fn malformed_trace_is_a_usage_error_naming_the_line() {
    let d = TempDir::new("bad");
    let t = d.join("bad.csv");
    std::fs::write(
        &t,
        "1,h,0,Read,0,512,1\n2,h,0,Read,0,512,1\n3,h,0,Erase,0,512,1\n",
    )
    .unwrap();
    let out = drivelab(&[
        "trace",
        "analyze",
        s(&t),
        "--format",
        "msr",
        "--output-format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let v = json(&out);
    assert!(v["error"].as_str().unwrap().contains("line 3"), "{v}");
    let out = drivelab(&[
        "trace",
        "analyze",
        s(&t),
        "--format",
        "msr",
        "--lenient",
        "--output-format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["requests"], 2);
    assert_eq!(v["reader"]["skipped"], 1);
    let out = drivelab(&["trace", "analyze", s(&t), "--format", "nope"]);
    assert_eq!(out.status.code(), Some(2));
}

fn instances_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n == &format!("drivelab-{pid}") || n.starts_with(&format!("drivelab-{pid}-")))
        .collect()
}

#[test]
fn record_then_analyze_sees_the_writes_and_ctrl_c_cleans_up() {
    require_root();
    // (recorder, its reader, tracefs instances while it runs): `auto`
    // takes tracefs on a loop device, which is request-based.
    for (recorder, reader, instances) in
        [("tracefs", "raw", 1), ("bpf", "bpf", 0), ("auto", "raw", 1)]
    {
        record_then_analyze(recorder, reader, instances);
    }
}

/// A recording whose completions never reach the trace, with no loss
/// reported by the reader, fails against the device's own count: the
/// tracefs instance's completion event is switched off once recording
/// (as a reader that silently misses completions would be), 20 reads go
/// by, and `trace record` must exit non-zero naming the missed
/// completions, the trace still written.
#[test]
fn a_recording_that_misses_completions_the_device_counted_fails() {
    require_root();
    let d = TempDir::new("missed");
    let lo = scratch_loop(&d);
    let trace = d.join("rec.dlt");
    let child = start_recording(&lo.path, &trace, "tracefs");
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(700));
    let inst = instances_of(pid);
    assert_eq!(inst.len(), 1, "{inst:?}");
    std::fs::write(
        format!(
            "/sys/kernel/tracing/instances/{}/events/block/block_rq_complete/enable",
            inst[0]
        ),
        "0",
    )
    .unwrap();
    let st = Command::new("dd")
        .args([
            &format!("if={}", s(&lo.path)),
            "of=/dev/null",
            "bs=4096",
            "count=20",
        ])
        .args(["iflag=direct", "skip=64"])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let out = interrupt(child);
    assert_ne!(out.status.code(), Some(0));
    let v = json(&out);
    let err = v["error"].as_str().unwrap_or_default();
    assert!(
        err.contains("completions never reached the trace")
            && err.contains("the raw reader reported no loss"),
        "{v}"
    );
    assert!(trace.exists(), "the trace is written all the same");
    assert!(instances_of(pid).is_empty(), "tracefs instance left behind");
}

/// A 32 MiB loop device over a file in `d`, once udev has probed it.
fn scratch_loop(d: &TempDir) -> LoopDev {
    let img = d.join("disk.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let lo = LoopDev::attach(&img, &[]);
    let _ = Command::new("udevadm").args(["settle", "-t", "5"]).status();
    lo
}

/// `drivelab trace record DEV` into `trace` with `recorder`, JSON summary,
/// no --duration: stopped by [`interrupt`], as Ctrl-C would.
fn start_recording(dev: &Path, trace: &Path, recorder: &str) -> std::process::Child {
    Command::new(BIN)
        .args(["trace", "record", s(dev), "--output", s(trace)])
        .args(["--output-format", "json", "--recorder", recorder])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// SIGINT to a recorder 300 ms after the last I/O; its output.
fn interrupt(child: std::process::Child) -> Output {
    std::thread::sleep(Duration::from_millis(300));
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    child.wait_with_output().unwrap()
}

fn record_then_analyze(recorder: &str, reader: &str, instances: usize) {
    let d = TempDir::new("record");
    let lo = scratch_loop(&d);
    let trace = d.join("rec.dlt");
    let child = start_recording(&lo.path, &trace, recorder);
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        instances_of(pid).len(),
        instances,
        "{recorder}: tracefs instances"
    );
    // 5 writes of 8 KiB at 2 MiB + i*1 MiB.
    for i in 0..5u64 {
        let st = Command::new("dd")
            .args([
                "if=/dev/zero",
                &format!("of={}", s(&lo.path)),
                "bs=8192",
                "count=1",
                "oflag=direct",
            ])
            .arg(format!(
                "seek={}",
                (2 * 1024 * 1024 + i * 1024 * 1024) / 8192
            ))
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
    }
    let out = interrupt(child);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        instances_of(pid).is_empty(),
        "tracefs instance left behind after SIGINT"
    );
    let summary = json(&out);
    assert_eq!(summary["lost_events"], 0);
    assert_eq!(summary["reader"], reader);
    assert_eq!(summary["missed_completions"], 0, "{summary}");
    assert!(summary["device_finished"].as_u64() >= Some(5), "{summary}");
    if recorder == "auto" {
        assert!(
            summary["bpf_unavailable"]
                .as_str()
                .is_some_and(|w| w.contains("request-based")),
            "{summary}"
        );
    }

    let out = drivelab(&["trace", "convert", s(&trace), s(&d.join("rec.iolog"))]);
    assert_eq!(out.status.code(), Some(0));
    let log = std::fs::read_to_string(d.join("rec.iolog")).unwrap();
    let writes: Vec<(u64, u64)> = log
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5 && f[2] == "write")
                .then(|| (f[3].parse().unwrap(), f[4].parse().unwrap()))
        })
        .filter(|(off, _)| *off >= 2 << 20)
        .collect();
    let want: Vec<(u64, u64)> = (0..5u64)
        .map(|i| ((2 << 20) + i * (1 << 20), 8192))
        .collect();
    assert_eq!(writes, want, "{log}");
    let v = json(&drivelab(&[
        "trace",
        "analyze",
        s(&trace),
        "--output-format",
        "json",
    ]));
    assert!(v["service_time_ns"]["count"].as_u64().unwrap() >= 5);
}

#[test]
fn record_with_duration_stops_by_itself() {
    require_root();
    let d = TempDir::new("record-dur");
    let img = d.join("disk.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let lo = LoopDev::attach(&img, &[]);
    let trace = d.join("rec.csv");
    let t0 = std::time::Instant::now();
    let out = drivelab(&[
        "trace",
        "record",
        s(&lo.path),
        "--output",
        s(&trace),
        "--duration",
        "0.5",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t0.elapsed() >= Duration::from_millis(500));
    assert!(String::from_utf8_lossy(&out.stdout).contains("recorded"));
    assert!(trace.exists());
    // Not a block device: usage error, exit 2.
    let out = drivelab(&[
        "trace",
        "record",
        "/etc/hostname",
        "--output",
        s(&d.join("x.dlt")),
        "--duration",
        "0.1",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
