//! A real Prometheus (Debian's `prometheus`) scrapes drivelab every second
//! on loopback: during a paced run on a loop device and during an erase of
//! one. What Prometheus answers through its HTTP API (the rate of bytes,
//! latency quantiles, the counters' last values, a drive's state) is checked
//! against drivelab's own JSON result.

mod metrics_common;

use drivelab_testkit::{require_root, LoopDev, TempDir};
use metrics_common::*;

/// The power-of-two group `(2^m - 1, 2^(m+1) - 1]` ns holding `ns`, in
/// seconds: the histogram bucket a latency of `ns` is counted in.
fn group_of(ns: f64) -> (f64, f64) {
    let mut hi = 127.0;
    while ns > hi {
        hi = hi * 2.0 + 1.0;
    }
    (((hi + 1.0) / 2.0 - 1.0) / 1e9, hi / 1e9)
}

#[test]
fn prometheus_sees_a_paced_run_as_its_result_reports_it() {
    require_root();
    let dir = TempDir::new("metrics-prom-run");
    let dev = LoopDev::new_in(&dir, 64 << 20);
    let port = free_port();
    let port_s = port.to_string();
    let filename = format!("--filename={}", dev.dev());
    let prom = Prometheus::start("run", port);
    // 400 I/Os a second for 16 s, 70 % reads, direct, on the loop device.
    let args = [
        "run",
        "--output-format=json",
        "--metrics-listen",
        &port_s,
        "--metrics-linger=600",
        "--name=paced",
        &filename,
        "--rw=randrw",
        "--rwmixread=70",
        "--bs=4k",
        "--direct=1",
        "--ioengine=psync",
        "--rate_iops=400",
        "--runtime=16",
        "--time_based",
    ];
    let (text, r) = Drivelab::start(&args).finish(port, || prom.await_final());
    let job = &r["jobs"][0];
    let sel = |dir: &str| format!("{{jobname=\"paced\",direction=\"{dir}\"}}");
    for dir in ["read", "write"] {
        let d = &job[dir];
        // The counters' last values are the result's.
        let bytes = prom.value(&format!("drivelab_job_io_bytes_total{}", sel(dir)), None);
        assert_eq!(bytes as u64, d["io_bytes"].as_u64().unwrap(), "{dir}");
        let n = prom.value(
            &format!("drivelab_job_latency_seconds_count{}", sel(dir)),
            None,
        );
        assert_eq!(n as u64, d["clat_ns"]["N"].as_u64().unwrap(), "{dir}");
        // The rate of bytes over the 8 s before the run's last 2 s is the
        // result's bandwidth (the run is paced: steady). The window lies
        // wholly among the samples (Prometheus's rate of a window only
        // partly covered is lower, not wrong).
        let t0 = r["timestamp_ms"].as_f64().unwrap() / 1e3;
        let runtime = job["job_runtime"].as_f64().unwrap() / 1e3;
        let at = t0 + runtime - 2.0;
        let metric = format!("drivelab_job_io_bytes_total{}", sel(dir));
        let held = prom.value(&format!("count_over_time({metric}[8s])"), Some(at));
        assert!(held >= 6.0, "{dir}: only {held} samples in the 8 s window");
        let rate = prom.value(&format!("rate({metric}[8s])"), Some(at));
        let bw = d["bw_bytes"].as_f64().unwrap();
        assert!(
            (rate - bw).abs() <= 0.25 * bw,
            "{dir}: Prometheus's rate {rate} B/s, the result's {bw} B/s"
        );
        // The median from Prometheus's buckets lies in the group of the
        // result's own median.
        let p50 = d["clat_ns"]["percentile"]["50.000000"].as_f64().unwrap();
        let q = prom.value(
            &format!(
                "histogram_quantile(0.5, drivelab_job_latency_seconds_bucket{})",
                sel(dir)
            ),
            None,
        );
        let (lo, hi) = group_of(p50);
        assert!(
            q >= lo * 0.999 && q <= hi * 1.001,
            "{dir}: histogram_quantile {q} s outside ({lo}, {hi}] around the result's {p50} ns"
        );
    }
    // The device's own figures were scraped while the run went on.
    let name = dev.dev().trim_start_matches("/dev/");
    let w = prom.value(
        &format!("max_over_time(drivelab_device_write_iops{{device=\"{name}\"}}[5m])"),
        None,
    );
    assert!(w > 0.0, "no device writes seen: {w}");
    let info = prom.query("drivelab_claim_info", None);
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0]["metric"]["device"], name);
    // What Prometheus scrapes is also valid text 0.0.4 for promtool.
    promtool_check(&text, dir.path());
}

#[test]
fn prometheus_sees_an_erase_through_to_done() {
    require_root();
    let dir = TempDir::new("metrics-prom-erase");
    let size: u64 = 48 << 20;
    let dev = LoopDev::new_in(&dir, size);
    let port = free_port();
    let port_s = port.to_string();
    let prom = Prometheus::start("erase", port);
    let certs = dir.join("certs");
    // Streamed at 6 MiB/s over the bus limit: about 8 s of erasing.
    let args = [
        "erase",
        dev.dev(),
        "--method",
        "stream",
        "--bus-limit",
        "6m",
        "--verify",
        "full",
        "--yes",
        "--confirm-serial",
        dev.dev(),
        "--certificate-dir",
        certs.to_str().unwrap(),
        "--output-format",
        "json",
        "--metrics-listen",
        &port_s,
        "--metrics-linger",
        "600",
    ];
    let (text, r) = Drivelab::start(&args).finish(port, || prom.await_final());
    let drive = &r["drives"][0];
    assert_eq!(drive["result"], "erased");
    let name = dev.dev().trim_start_matches("/dev/").to_string();
    let sel = |extra: &str| format!("{{device=\"{name}\"{extra}}}");
    // Seen erasing while it ran, done at the end.
    let erasing = prom.value(
        &format!(
            "max_over_time(drivelab_erase_state{}[5m])",
            sel(",state=\"erasing\"")
        ),
        None,
    );
    assert_eq!(erasing, 1.0);
    let done = prom.value(
        &format!("drivelab_erase_state{}", sel(",state=\"done\"")),
        None,
    );
    assert_eq!(done, 1.0);
    // The erase's progress went through the middle and the verification
    // ended complete.
    let mid = prom.value(
        &format!(
            "count_over_time((drivelab_erase_progress_ratio{} > 0.1 < 0.9)[5m:1s])",
            sel(",phase=\"erasing\"")
        ),
        None,
    );
    assert!(mid >= 1.0, "no progress seen between 10 % and 90 %");
    let verified = prom.value(
        &format!(
            "drivelab_erase_progress_ratio{}",
            sel(",phase=\"verifying\"")
        ),
        None,
    );
    assert_eq!(verified, 1.0);
    // The erase's throughput last scraped while erasing is the result's.
    let bps = prom.value(
        &format!(
            "last_over_time(drivelab_erase_throughput_bytes_per_second{}[5m])",
            sel(",phase=\"erasing\"")
        ),
        None,
    );
    let secs = drive["erase_seconds"].as_f64().unwrap();
    let want = size as f64 / secs;
    assert!(
        bps >= 0.7 * want && bps <= 1.3 * want,
        "Prometheus's erase throughput {bps} B/s, the result's {want} B/s"
    );
    promtool_check(&text, dir.path());
}
