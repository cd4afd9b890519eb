//! fio's own tools read drivelab's output unchanged: `fio_generate_plots`
//! and `fio2gnuplot` (Debian's fio package, with gnuplot) and fio-plot
//! (pip) plot its log files, and `fio_jsonplus_clat2csv` converts its
//! `json+` and validates the CSV against it. tests/run installs them all;
//! fio-plot is found on PATH or at `$FIO_PLOT`.

use std::path::{Path, PathBuf};
use std::process::Command;

use drivelab_testkit::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// Run `prog` in `dir`; (exit code, stdout + stderr).
fn run_in(dir: &Path, prog: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(prog)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{prog} runs (tests/run installs it): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// A 1 s random read/write job on a file in `dir`, writing fio's three
/// logs named `prefix` (averaged over `avg_ms`, 0 = every I/O).
fn run_with_logs(dir: &TempDir, prefix: &str, avg_ms: u32, rw: &str) {
    let file = dir.join("data.bin");
    let (code, out) = run_in(
        dir.path(),
        BIN,
        &[
            "run",
            "--name=job",
            &format!("--filename={}", file.display()),
            "--size=8m",
            &format!("--rw={rw}"),
            "--bs=4k",
            "--runtime=1",
            "--time_based",
            "--iodepth=1",
            &format!("--write_bw_log={prefix}"),
            &format!("--write_lat_log={prefix}"),
            &format!("--write_iops_log={prefix}"),
            &format!("--log_avg_msec={avg_ms}"),
            "--output-format=json",
        ],
    );
    assert_eq!(code, 0, "{out}");
}

fn is_png(p: &Path) -> bool {
    std::fs::read(p).is_ok_and(|b| b.starts_with(b"\x89PNG\r\n\x1a\n") && b.len() > 1000)
}

#[test]
fn fio_generate_plots_draws_drivelab_logs() {
    let dir = TempDir::new("consumer-gen-plots");
    run_with_logs(&dir, "dl", 0, "randrw");
    let (code, out) = run_in(dir.path(), "fio_generate_plots", &["drivelab"]);
    assert_eq!(code, 0, "{out}");
    for kind in ["bw", "lat", "clat", "iops"] {
        let svg = std::fs::read_to_string(dir.join(&format!("drivelab-{kind}.svg")))
            .unwrap_or_else(|e| panic!("drivelab-{kind}.svg: {e}\n{out}"));
        // One series per log found (fio_generate_plots titles each
        // "Queue depth …" after its file name), drawn as a path.
        assert!(
            svg.contains("Queue depth"),
            "{kind}: no series from dl_{kind}.1.log"
        );
        assert!(svg.contains("<path"), "{kind}: nothing drawn");
    }
}

#[test]
fn fio2gnuplot_renders_drivelab_bandwidth_and_iops_logs() {
    let dir = TempDir::new("consumer-fio2gnuplot");
    run_with_logs(&dir, "dl", 100, "randread");
    for (flag, kind) in [("-b", "bw"), ("-i", "iops")] {
        let out_dir = dir.join(kind);
        std::fs::create_dir(&out_dir).unwrap();
        let od = out_dir.display().to_string();
        let (code, out) = run_in(dir.path(), "fio2gnuplot", &[flag, "-g", "-d", &od]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains(&format!("dl_{kind}.1.log")), "{out}");
        let raw = out_dir.join(format!("dl_{kind}.1-2Draw.png"));
        assert!(is_png(&raw), "{} missing or empty\n{out}", raw.display());
    }
}

#[test]
fn fio_jsonplus_clat2csv_converts_and_validates_drivelab_json_plus() {
    let dir = TempDir::new("consumer-clat2csv");
    let file = dir.join("data.bin");
    let json = dir.join("out.json");
    let (code, out) = run_in(
        dir.path(),
        BIN,
        &[
            "run",
            &format!("--filename={}", file.display()),
            "--size=8m",
            "--rw=randrw",
            "--runtime=1",
            "--time_based",
            "--output-format=json+",
            &format!("--output={}", json.display()),
        ],
    );
    assert_eq!(code, 0, "{out}");
    let stub = dir.join("lat.csv").display().to_string();
    let src = json.display().to_string();
    let (code, out) = run_in(dir.path(), "fio_jsonplus_clat2csv", &[&src, &stub]);
    assert_eq!(code, 0, "{out}");
    let csv = std::fs::read_to_string(dir.join("lat_job0.csv")).expect("CSV");
    // A header and one line per latency bucket holding I/Os.
    assert!(csv.lines().count() > 2, "{csv}");
    let (code, out) = run_in(
        dir.path(),
        "fio_jsonplus_clat2csv",
        &["--validate", &src, &stub],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("validated"), "{out}");
}

fn fio_plot() -> PathBuf {
    std::env::var_os("FIO_PLOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("fio-plot"))
}

#[test]
fn fio_plot_graphs_drivelab_logs() {
    let dir = TempDir::new("consumer-fio-plot");
    // fio-plot finds logs by fio-plot's bench naming: RW-iodepth-D-numjobs-N.
    run_with_logs(&dir, "randread-iodepth-1-numjobs-1", 100, "randread");
    let png = dir.join("graph.png");
    let fp = fio_plot();
    let (code, out) = run_in(
        dir.path(),
        &fp.display().to_string(),
        &[
            "-i",
            &dir.path().display().to_string(),
            "-T",
            "drivelab",
            "-g",
            "-r",
            "randread",
            "-d",
            "1",
            "-n",
            "1",
            "-t",
            "bw",
            "iops",
            "lat",
            "-o",
            &png.display().to_string(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(is_png(&png), "{out}");
}

#[test]
fn fio_plot_draws_drivelab_json_beside_fio_json() {
    let dir = TempDir::new("consumer-fio-plot-json");
    let data = dir.join("data.bin");
    let fp = fio_plot().display().to_string();
    let mut drawn = Vec::new();
    for (tool, prog) in [("fio", "fio"), ("drivelab", BIN)] {
        let sub = dir.join(tool);
        std::fs::create_dir(&sub).unwrap();
        // fio-plot reads every JSON of the folder and picks the jobs by
        // their `job options` (rw, iodepth, numjobs).
        let json = sub.join("randread-1-1.json");
        let mut args = vec![
            "--name=job".to_string(),
            format!("--filename={}", data.display()),
            "--size=1m".to_string(),
            "--rw=randread".to_string(),
            "--bs=4k".to_string(),
            "--iodepth=1".to_string(),
            "--numjobs=1".to_string(),
            "--output-format=json".to_string(),
            format!("--output={}", json.display()),
        ];
        if tool == "drivelab" {
            args.insert(0, "run".to_string());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out) = run_in(dir.path(), prog, &args);
        assert_eq!(code, 0, "{tool}: {out}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let version = v["fio version"].as_str().unwrap_or("").to_string();
        let png = dir.join(&format!("{tool}.png"));
        let (code, out) = run_in(
            dir.path(),
            &fp,
            &[
                "-i",
                &sub.display().to_string(),
                "-T",
                tool,
                "-l",
                "-r",
                "randread",
                "-o",
                &png.display().to_string(),
            ],
        );
        assert_eq!(code, 0, "{tool}: {out}");
        assert!(is_png(&png), "{tool}: no graph\n{out}");
        drawn.push(version);
    }
    // Each file says which program wrote it.
    assert!(drawn[0].starts_with("fio-"), "{drawn:?}");
    assert_eq!(
        drawn[1],
        format!("drivelab-{}", env!("CARGO_PKG_VERSION")),
        "{drawn:?}"
    );
}
