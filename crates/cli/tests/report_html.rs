//! `drivelab report --html` in a real browser: real results (a run, an
//! erase, a `test` sequence, a trace replay and a trace audit on loop
//! devices made here, a
//! trace analysis of a sample trace, a two-run comparison) are rendered, each page is loaded
//! by headless Chromium (Debian's `chromium`, installed by tests/run), and
//! the DOM it leaves is checked: no script errors, every chart drawn with
//! the number of points the result holds (counted here from the result
//! JSON, independently of the page). A screenshot of each page at desktop
//! and at phone width is written under
//! `target/tmp/report-screenshots/`.
//!
//! Also here, since it needs a real device: the device's per-second series
//! in a run's JSON (`device_check[].series`) has about one sample per
//! second of runtime and adds up to the device check's byte count.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use drivelab_testkit::{require_root, run, LoopDev, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn drivelab_json(args: &[&str], env: &[(&str, &Path)]) -> Value {
    let mut a: Vec<&str> = args.to_vec();
    a.extend(["--output-format", "json"]);
    let out = Command::new(BIN)
        .args(&a)
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .output()
        .expect("run drivelab");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "drivelab {a:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn save(dir: &TempDir, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    p
}

fn report(inputs: &[&Path], html: &Path) {
    let mut a: Vec<&str> = vec!["report"];
    a.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    a.extend(["--html", html.to_str().unwrap()]);
    let (code, out, err) = run(BIN, &a);
    assert_eq!(code, 0, "drivelab {a:?}: {out}{err}");
}

/// `drivelab report INPUT --html HTML`: (exit status, stdout, stderr).
fn report_of(input: &Path, html: &Path) -> (i32, String, String) {
    run(
        BIN,
        &[
            "report",
            input.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
    )
}

/// Chromium's profile for these tests (not the user's; a fresh one per
/// process, so that parallel runs do not share it).
fn profile() -> String {
    let dir = std::env::temp_dir().join(format!("drivelab-report-chromium-{}", std::process::id()));
    format!("--user-data-dir={}", dir.display())
}

fn chromium() -> &'static str {
    let found = Command::new("chromium").arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "headless Chromium is needed: apt-get install chromium (tests/run installs it)"
    );
    "chromium"
}

const HEADLESS: [&str; 5] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--virtual-time-budget=10000",
];

/// One drawn chart as the DOM shows it.
#[derive(Debug)]
struct Drawn {
    title: String,
    expect: usize,
    points: Option<usize>,
}

/// Load `page` in headless Chromium and return its charts (by title) after
/// the scripts ran. Fails on any script error (in the page's #errors list
/// or on Chromium's console log).
fn load(page: &Path) -> Vec<Drawn> {
    let url = format!("file://{}", page.display());
    let out = Command::new(chromium())
        .args(HEADLESS)
        .arg(profile())
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom", &url])
        .output()
        .expect("run chromium");
    assert!(out.status.success(), "chromium failed on {url}");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "{url}: console messages: {console:#?}");
    assert!(
        !dom.contains("data-errors="),
        "{url}: script errors in the page: {}",
        dom.split("<ul id=\"errors\"")
            .nth(1)
            .unwrap_or("")
            .chars()
            .take(600)
            .collect::<String>()
    );
    let attr = |chunk: &str, name: &str| -> Option<String> {
        let start = chunk.find(&format!("{name}=\""))? + name.len() + 2;
        Some(chunk[start..].split('"').next()?.to_string())
    };
    let mut charts = Vec::new();
    for chunk in dom.split("<div class=\"chart\" id=").skip(1) {
        let tag = chunk.split('>').next().unwrap();
        let json = chunk
            .split("type=\"application/json\">")
            .nth(1)
            .and_then(|r| r.split("</script>").next())
            .unwrap();
        let spec: Value = serde_json::from_str(json).unwrap();
        let title = spec["title"].as_str().unwrap().to_string();
        charts.push(Drawn {
            title,
            expect: attr(tag, "data-expect").unwrap().parse().unwrap(),
            points: attr(tag, "data-points").map(|p| p.parse().unwrap()),
        });
    }
    let drawn_attr = dom
        .split("data-charts=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|n| n.parse::<usize>().ok());
    assert_eq!(
        drawn_attr,
        Some(charts.len()),
        "{url}: charts not all set up"
    );
    for c in &charts {
        assert!(c.expect > 0, "{url}: empty chart {:?}", c.title);
        assert_eq!(
            c.points,
            Some(c.expect),
            "{url}: chart {:?} not drawn with all its points",
            c.title
        );
    }
    charts
}

/// Screenshots of `page` at desktop width and at phone width (390 px, in
/// a frame of that width: headless Chromium's window is never narrower
/// than 500 px).
fn screenshots(page: &Path, name: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let phone_frame = page.with_extension("phone.html");
    std::fs::write(
        &phone_frame,
        format!(
            "<!DOCTYPE html><html><head><meta name=\"viewport\" content=\"width=device-width\"></head>\
             <body style=\"margin:0\"><iframe src=\"{}\" style=\"width:390px;height:4000px;border:0;display:block\"></iframe></body></html>",
            page.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    let mut shots = Vec::new();
    for (tag, target, size) in [
        ("desktop", page, "1280,2400"),
        ("phone", phone_frame.as_path(), "390,844"),
        ("phone-long", phone_frame.as_path(), "390,4000"),
    ] {
        let png = dir.join(format!("{name}-{tag}.png"));
        let _ = std::fs::remove_file(&png);
        let out = Command::new(chromium())
            .args(HEADLESS)
            .arg(profile())
            .arg(format!("--window-size={size}"))
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", target.display()))
            .output()
            .expect("run chromium");
        assert!(out.status.success(), "screenshot of {name} failed");
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(
            &bytes[..8],
            b"\x89PNG\r\n\x1a\n",
            "{} is not a PNG",
            png.display()
        );
        shots.push(png);
    }
    shots
}

fn chart<'a>(charts: &'a [Drawn], starts: &str) -> &'a Drawn {
    charts
        .iter()
        .find(|c| c.title.starts_with(starts))
        .unwrap_or_else(|| panic!("no chart {starts:?} in {charts:?}"))
}

fn len(v: &Value) -> usize {
    v.as_array().map_or(0, Vec::len)
}

/// The device series: about one sample a second, adding up to the bytes
/// the device check counted.
fn check_device_series(v: &Value) {
    let dc = &v["device_check"][0];
    let series = dc["series"].as_array().expect("device_check[0].series");
    let runtime_s = v["jobs"][0]["job_runtime"].as_f64().unwrap() / 1000.0;
    assert!(
        (series.len() as f64 - runtime_s).abs() <= 1.5,
        "{} samples over {runtime_s} s",
        series.len()
    );
    // Each sample's interval runs to the next one's start; the last to the
    // end of measurement.
    let mut bytes = 0.0;
    for (i, s) in series.iter().enumerate() {
        let t = s["t_s"].as_f64().unwrap();
        let end = series
            .get(i + 1)
            .map_or(runtime_s, |n| n["t_s"].as_f64().unwrap());
        let bw = s["r_bw_bytes"].as_f64().unwrap() + s["w_bw_bytes"].as_f64().unwrap();
        bytes += bw * (end - t).max(0.0);
        for k in [
            "r_iops",
            "w_iops",
            "util_pct",
            "aqu_sz",
            "r_await_ms",
            "w_await_ms",
        ] {
            assert!(s[k].as_f64().unwrap() >= 0.0, "{k}");
        }
        assert!(s["util_pct"].as_f64().unwrap() <= 100.0);
    }
    let device = dc["device_bytes"].as_f64().unwrap();
    assert!(
        (bytes / device - 1.0).abs() < 0.05,
        "series adds up to {bytes} bytes, the device check counted {device}"
    );
}

#[test]
fn every_report_kind_draws_all_its_points_in_chromium() {
    require_root();
    let dir = TempDir::new("report-html");
    let mut shots = Vec::new();

    // Two runs on one loop device.
    let lo = LoopDev::new_in(&dir, 64 << 20);
    let run1 = drivelab_json(
        &[
            "run",
            "--filename",
            lo.dev(),
            "--rw=randrw",
            "--bs=4k",
            "--iodepth=4",
            "--runtime=3",
            "--time_based",
            "--name=mixed",
        ],
        &[],
    );
    check_device_series(&run1);
    let run2 = drivelab_json(
        &[
            "run",
            "--filename",
            lo.dev(),
            "--rw=randread",
            "--bs=16k",
            "--iodepth=8",
            "--runtime=2",
            "--time_based",
            "--name=reads",
        ],
        &[],
    );
    let run1_path = save(&dir, "run-randrw.json", &run1);
    let run2_path = save(&dir, "run-randread.json", &run2);
    let page = dir.join("run.html");
    report(&[&run1_path], &page);
    let charts = load(&page);
    let engine: usize = run1["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| len(&j["timeseries"]))
        .sum();
    let device: usize = run1["device_check"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| len(&c["series"]))
        .sum();
    assert!(engine > 0 && device > 0);
    assert_eq!(chart(&charts, "IOPS per second").expect, engine + device);
    assert_eq!(
        chart(&charts, "Bandwidth per second").expect,
        engine + device
    );
    assert_eq!(chart(&charts, "Device utilisation").expect, 2 * device);
    let percentiles: usize = run1["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| {
            ["read", "write"].map(|d| {
                j[d]["clat_ns"]["percentile"]
                    .as_object()
                    .map_or(0, |m| m.len())
            })
        })
        .sum();
    assert_eq!(
        chart(&charts, "Completion latency percentiles").expect,
        percentiles
    );
    shots.extend(screenshots(&page, "run"));

    // The comparison of the two runs.
    let page = dir.join("compare.html");
    report(&[&run1_path, &run2_path], &page);
    let charts = load(&page);
    let both: usize = [&run1, &run2]
        .iter()
        .flat_map(|r| {
            r["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|j| len(&j["timeseries"]))
        })
        .sum();
    assert_eq!(
        chart(&charts, "IOPS per second, runs overlaid").expect,
        both
    );
    assert_eq!(chart(&charts, "read IOPS").expect, 2);
    shots.extend(screenshots(&page, "compare"));
    drop(lo);

    // An erase of another loop device.
    let lo = LoopDev::new_in(&dir, 96 << 20);
    let cfg = dir.join("config");
    let certs = dir.join("certs");
    let erase = drivelab_json(
        &[
            "erase",
            lo.dev(),
            "--yes",
            "--confirm-serial",
            lo.dev(),
            "--certificate-dir",
            certs.to_str().unwrap(),
            "--method",
            "stream",
            "--pattern",
            "random",
            "--verify",
            "full",
            "--bus-limit",
            "96m",
        ],
        &[("XDG_CONFIG_HOME", &cfg)],
    );
    let timeline = erase["drives"][0]["timeline"].as_array().expect("timeline");
    let plotted = timeline
        .iter()
        .filter(|p| ["erasing", "verifying"].contains(&p["phase"].as_str().unwrap()))
        .count();
    assert!(plotted > 0, "{timeline:?}");
    let erase_path = save(&dir, "erase.json", &erase);
    let page = dir.join("erase.html");
    report(&[&erase_path], &page);
    let charts = load(&page);
    assert_eq!(chart(&charts, "Per-drive timeline").expect, plotted);
    let html = std::fs::read_to_string(&page).unwrap();
    let cert = erase["drives"][0]["certificate"].as_str().unwrap();
    assert!(html.contains(cert), "the certificate is not named");
    shots.extend(screenshots(&page, "erase"));
    drop(lo);

    // A test sequence of three steps.
    let lo = LoopDev::new_in(&dir, 16 << 20);
    let seq = dir.join("steps.toml");
    std::fs::write(
        &seq,
        "seed = 7\n[[step]]\nkind = \"write\"\npattern = \"random\"\n\
         [[step]]\nkind = \"read\"\nbs = \"16k\"\n[[step]]\nkind = \"write-verify\"\norder = \"random\"\nqd = 4\n",
    )
    .unwrap();
    let test = drivelab_json(
        &["test", lo.dev(), "--sequence", seq.to_str().unwrap()],
        &[],
    );
    let test_path = save(&dir, "test.json", &test);
    let page = dir.join("test.html");
    report(&[&test_path], &page);
    let charts = load(&page);
    assert_eq!(chart(&charts, "Throughput per step").expect, 3);
    let passes: usize = test["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| len(&s["passes"]))
        .sum();
    assert_eq!(chart(&charts, "Throughput per pass").expect, passes);
    shots.extend(screenshots(&page, "test"));
    drop(lo);

    // A trace analysis (a trace with completions: every distribution).
    let trace =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/traces/apress_blktrace.txt");
    let ta = drivelab_json(&["trace", "analyze", trace.to_str().unwrap()], &[]);
    let ta_path = save(&dir, "trace-analyze.json", &ta);
    let page = dir.join("trace.html");
    report(&[&ta_path], &page);
    let charts = load(&page);
    // Requests at the same time and of the same op share one dot.
    let dots: HashSet<(u64, String)> = ta["access_map"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap(), p[2].as_str().unwrap().to_string()))
        .collect();
    assert!(!dots.is_empty());
    assert_eq!(chart(&charts, "Disk access sequence").expect, dots.len());
    assert_eq!(
        chart(&charts, "Distribution of transfer sizes").expect,
        len(&ta["sizes"])
    );
    assert_eq!(
        chart(&charts, "Distribution of queue depth").expect,
        len(&ta["queue_depth"])
    );
    assert_eq!(
        chart(&charts, "Distribution of service times").expect,
        len(&ta["service_time_histogram"])
    );
    shots.extend(screenshots(&page, "trace"));

    // A replay of the same trace onto a loop device.
    let lo = LoopDev::new_in(&dir, 64 << 20);
    let replay = drivelab_json(
        &[
            "trace",
            "replay",
            trace.to_str().unwrap(),
            "--target",
            lo.dev(),
            "--remap",
            "wrap",
            "--speed",
            "10",
        ],
        &[],
    );
    let replay_path = save(&dir, "replay.json", &replay);
    let page = dir.join("replay.html");
    report(&[&replay_path], &page);
    let charts = load(&page);
    // p50, p90, p99, p99.9 of service time and of lateness.
    assert_eq!(
        chart(&charts, "Service time and lateness percentiles").expect,
        8
    );
    shots.extend(screenshots(&page, "replay"));

    // An audit: record a replay of the trace on the loop device (offsets
    // then fit it), and audit that recording on the same device. Whether
    // the timing criteria pass does not matter here (exit status 0 or 1);
    // the page draws the original against the replay.
    let recorded = dir.join("recorded.dlt");
    let (code, out, err) = run(
        BIN,
        &[
            "trace",
            "replay",
            trace.to_str().unwrap(),
            "--target",
            lo.dev(),
            "--remap",
            "wrap",
            "--speed",
            "10",
            "--record",
            recorded.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let out = Command::new(BIN)
        .args([
            "trace",
            "audit",
            recorded.to_str().unwrap(),
            "--target",
            lo.dev(),
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let audit: Value = serde_json::from_slice(&out.stdout).unwrap();
    let audit_path = save(&dir, "audit.json", &audit);
    let page = dir.join("audit.html");
    report(&[&audit_path], &page);
    let charts = load(&page);
    let c = &audit["comparison"];
    let both = |k: &str| len(&c["plot_a"][k]) + len(&c["plot_b"][k]);
    assert!(both("depth_over_time") > 2 && both("service_time_cdf") > 2);
    assert_eq!(
        chart(&charts, "Queue depth over time").expect,
        both("depth_over_time")
    );
    assert_eq!(
        chart(&charts, "Service time CDF").expect,
        both("service_time_cdf")
    );
    // Distributions: one bar per category of either trace, for each.
    let union = |a: &Value, b: &Value, key: &str| -> usize {
        let keys: HashSet<String> = [a, b]
            .iter()
            .flat_map(|v| v.as_array().unwrap().iter().map(|x| x[key].to_string()))
            .collect();
        2 * keys.len()
    };
    assert_eq!(
        chart(&charts, "Time-weighted queue depth").expect,
        union(
            &c["queue_depth_time_a"]["shares"],
            &c["queue_depth_time_b"]["shares"],
            "depth"
        )
    );
    assert_eq!(
        chart(&charts, "Transfer sizes").expect,
        union(&c["a"]["sizes"], &c["b"]["sizes"], "bytes")
    );
    assert_eq!(
        chart(&charts, "Queue depth seen by arriving requests").expect,
        union(&c["a"]["queue_depth"], &c["b"]["queue_depth"], "depth")
    );
    assert_eq!(
        chart(&charts, "Seek distances").expect,
        union(
            &c["a"]["seek_distance"]["signed"],
            &c["b"]["seek_distance"]["signed"],
            "bucket"
        )
    );
    assert_eq!(
        chart(&charts, "Service times").expect,
        union(
            &c["a"]["service_time_histogram"],
            &c["b"]["service_time_histogram"],
            "from_ns"
        )
    );
    // The verdict and every criterion, with its figure, are on the page.
    let html = std::fs::read_to_string(&page).unwrap();
    for k in audit["criteria"].as_array().unwrap() {
        let figure = k["figure"].as_str().unwrap();
        assert!(
            html.contains(&figure.replace('&', "&amp;")),
            "criterion figure {figure:?} not on the page"
        );
    }
    shots.extend(screenshots(&page, "audit"));
    drop(lo);

    for s in &shots {
        eprintln!("screenshot: {}", s.display());
    }
    let _ = std::fs::remove_dir_all(profile().trim_start_matches("--user-data-dir="));
}

#[test]
fn bad_inputs_write_nothing_and_say_what_to_give() {
    let dir = TempDir::new("report-bad");
    let html = dir.join("out.html");
    let not_json = dir.join("notes.txt");
    std::fs::write(&not_json, "hello").unwrap();
    let other = dir.join("other.json");
    std::fs::write(&other, "{\"name\": 1}").unwrap();
    for input in [&not_json, &other, &dir.join("missing.json")] {
        let (code, out, err) = report_of(input, &html);
        assert_eq!(code, 2, "{input:?}: {out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!html.exists(), "{input:?}: wrote the page anyway");
    }
}

#[test]
fn a_result_missing_a_field_its_page_draws_is_refused_naming_it() {
    let dir = TempDir::new("report-mangled");
    let html = dir.join("out.html");
    let replay = serde_json::json!({"requests": 4, "completed": 4, "errors": 0,
        "duration_s": 1.0, "score": {"iops": 4.0, "head_to_head_ms": 250.0},
        "service_time_ns": {"count": 4}, "lateness_ns": {}});
    let cases = [
        (
            "test",
            serde_json::json!({"target": "/dev/loop9", "passed": true,
                "steps": [{"index": 1, "kind": "write"}]}),
            "steps[0].bw_bytes is missing",
        ),
        (
            "erase",
            serde_json::json!({"strategy": "parallel",
                "drives": [{"device": "/dev/loop9", "result": "erased", "bytes": 1.5}]}),
            "drives[0].bytes is not a whole number",
        ),
        ("replay", replay.clone(), "lateness_ns.count is missing"),
        (
            "audit",
            serde_json::json!({"pass": "yes", "criteria": [], "comparison": {},
                "replay": replay}),
            "pass is not true or false",
        ),
    ];
    for (kind, v, why) in cases {
        let input = dir.join(&format!("{kind}.json"));
        std::fs::write(&input, v.to_string()).unwrap();
        let (code, out, err) = report_of(&input, &html);
        assert_eq!(code, 2, "{kind}: {out}{err}");
        assert_eq!(
            err.trim(),
            format!(
                "drivelab: error: {} is not a readable {kind} result: {why}; give a result saved from --output-format json, unchanged",
                input.display()
            ),
            "{kind}"
        );
        assert!(!html.exists(), "{kind}: wrote the page anyway");
    }
}
