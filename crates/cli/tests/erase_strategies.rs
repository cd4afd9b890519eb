//! `drivelab erase` on real loop devices: zeroout and stream, 1 and 8
//! devices, every strategy. What is checked comes from outside drivelab:
//! the backing files' bytes, sysfs, and the certificates' timestamps (which
//! must overlap for parallel and round-robin and not for sequential).

mod erase_common;

use drivelab_testkit::{require_root, LoopDev, TempDir};
use erase_common::*;

const STRATEGIES: [&str; 3] = ["parallel", "sequential", "round-robin"];

fn run_case(method: &str, strategy: &str, n: usize, size: u64, pattern: &str, byte: u8) {
    require_root();
    let dir = TempDir::new(&format!("erase-{method}-{strategy}-{n}"));
    let devs: Vec<LoopDev> = (0..n).map(|_| LoopDev::new_in(&dir, size)).collect();
    for d in &devs {
        // Old data that must disappear.
        fill_file(&d.backing, !byte);
    }
    let certs = dir.join("certs");
    let certs_s = certs.to_str().unwrap().to_string();
    let mut args: Vec<String> = devs.iter().map(|d| d.dev().to_string()).collect();
    args.extend(
        [
            "--method",
            method,
            "--strategy",
            strategy,
            "--pattern",
            pattern,
            "--verify",
            "full",
            "--yes",
            "--certificate-dir",
            &certs_s,
            "--output-format",
            "json",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    for d in &devs {
        args.push("--confirm-serial".into());
        args.push(d.dev().to_string());
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = erase(&dir, &argv);
    assert_eq!(
        code, 0,
        "{method}/{strategy}/{n}: stdout {out} stderr {err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON report");
    let rows = v["drives"].as_array().unwrap();
    assert_eq!(rows.len(), n);
    for (d, row) in devs.iter().zip(rows) {
        assert_eq!(row["device"], d.dev());
        assert_eq!(row["method"], method);
        assert_eq!(row["result"], "erased");
        assert_eq!(row["bytes"].as_u64().unwrap(), size);
        // Every byte of the backing file is the pattern.
        let data = drivelab_testkit::read_all(&d.backing);
        assert_eq!(data.len() as u64, size);
        assert_eq!(first_not(&data, byte), None, "{} not erased", d.dev());
        if method == "zeroout" {
            let offloaded = write_zeroes_max(&d.name) > 0;
            assert_eq!(row["offloaded"].as_bool(), Some(offloaded));
        }
    }
    // One certificate per drive, each verifying.
    let files = certificates(&certs);
    assert_eq!(files.len(), n);
    let mut spans: Vec<(String, String)> = Vec::new();
    for f in &files {
        let (c, o, e) = erase(&dir, &["verify-cert", f.to_str().unwrap()]);
        assert_eq!(c, 0, "{o}{e}");
        let b = cert_body(f);
        assert_eq!(b["drive"]["capacity_bytes"].as_u64(), Some(size));
        assert_eq!(b["verification"]["mode"], "full");
        assert_eq!(b["verification"]["result"], "passed");
        assert_eq!(b["verification"]["bytes_read"].as_u64(), Some(size));
        spans.push((
            b["timing"]["runs"][0].as_str().unwrap().to_string(),
            b["timing"]["end"].as_str().unwrap().to_string(),
        ));
    }
    if n > 1 {
        spans.sort();
        // RFC 3339 UTC strings of one format order like the instants.
        let overlapping = spans.windows(2).any(|w| w[1].0 < w[0].1);
        match strategy {
            "sequential" => assert!(!overlapping, "sequential drives overlapped: {spans:?}"),
            _ => assert!(overlapping, "{strategy} drives did not overlap: {spans:?}"),
        }
    }
}

#[test]
fn zeroout_one_device_every_strategy() {
    for s in STRATEGIES {
        run_case("zeroout", s, 1, 32 << 20, "allzeros", 0);
    }
}

#[test]
fn stream_one_device_every_strategy() {
    for s in STRATEGIES {
        run_case("stream", s, 1, 32 << 20, "allzeros", 0);
    }
}

#[test]
fn zeroout_eight_devices_every_strategy() {
    for s in STRATEGIES {
        run_case("zeroout", s, 8, 16 << 20, "allzeros", 0);
    }
}

#[test]
fn stream_eight_devices_every_strategy() {
    for s in STRATEGIES {
        run_case("stream", s, 8, 16 << 20, "allones", 0xFF);
    }
}

#[test]
fn stream_fixed_pattern_is_read_back_by_full_verify() {
    run_case("stream", "parallel", 1, 24 << 20, "fixed:0xA5", 0xA5);
}

#[test]
fn auto_picks_offloaded_zeroout_on_a_loop_device_and_says_why() {
    require_root();
    let dir = TempDir::new("erase-auto");
    let d = LoopDev::new_in(&dir, 8 << 20);
    let (code, out, err) = erase(&dir, &[d.dev(), "--dry-run", "--output-format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let row = &v["drives"][0];
    if write_zeroes_max(&d.name) > 0 {
        assert_eq!(row["method"], "zeroout");
        assert!(row["reason"].as_str().unwrap().contains("offloaded"));
    } else {
        assert_eq!(row["method"], "stream");
    }
    // A non-zero pattern cannot be zeroed out: auto streams it.
    let (code, out, _) = erase(
        &dir,
        &[
            d.dev(),
            "--dry-run",
            "--pattern",
            "fixed:0xA5",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["drives"][0]["method"], "stream");
}

#[test]
fn bus_limit_caps_the_aggregate_and_shares_it() {
    require_root();
    let dir = TempDir::new("erase-bus");
    let size: u64 = 24 << 20;
    let devs: Vec<LoopDev> = (0..2).map(|_| LoopDev::new_in(&dir, size)).collect();
    let certs = dir.join("certs");
    let (code, out, err) = erase(
        &dir,
        &[
            devs[0].dev(),
            devs[1].dev(),
            "--method",
            "stream",
            "--bus-limit",
            "16m/s",
            "--verify",
            "none",
            "--yes",
            "--confirm-serial",
            devs[0].dev(),
            "--confirm-serial",
            devs[1].dev(),
            "--certificate-dir",
            certs.to_str().unwrap(),
            "--output-format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let complete = v["complete_seconds"].as_f64().unwrap();
    // 48 MiB through 16 MiB/s takes at least ~3 s (20 ms burst allowed).
    let floor = (2 * size) as f64 / (16u64 << 20) as f64;
    assert!(
        complete > floor * 0.9,
        "complete {complete} s, floor {floor} s"
    );
    let a = v["drives"][0]["mb_per_s"].as_f64().unwrap();
    let b = v["drives"][1]["mb_per_s"].as_f64().unwrap();
    assert!(a.min(b) / a.max(b) > 0.7, "unfair shares {a} vs {b}");
}

/// The text summary gives every rate as fio does: binary units first, the
/// decimal figure beside it, never a bare decimal "MB/s" column.
#[test]
fn text_summary_rates_are_binary_with_decimal_beside() {
    require_root();
    let dir = TempDir::new("erase-text-units");
    let d = LoopDev::new_in(&dir, 8 << 20);
    let certs = dir.join("certs");
    let (code, out, err) = erase(
        &dir,
        &[
            d.dev(),
            "--method",
            "stream",
            "--yes",
            "--confirm-serial",
            d.dev(),
            "--certificate-dir",
            certs.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with(d.dev()))
        .unwrap_or_else(|| panic!("no row for {}: {out}", d.dev()));
    assert!(row.contains("iB/s (") && row.contains("B/s)"), "{row}");
    let agg = out
        .lines()
        .find(|l| l.starts_with("complete time"))
        .unwrap_or_else(|| panic!("no summary line: {out}"));
    assert!(agg.contains("iB/s (") && agg.contains("B/s)"), "{agg}");
    assert!(!out.contains(" MB/s "), "a bare decimal rate: {out}");
}
