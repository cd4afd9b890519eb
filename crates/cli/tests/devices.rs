//! `drivelab devices` run as the real binary against a loop device this test
//! attaches (and detaches on drop).

use std::process::Command;

use drivelab_testkit::{require_root, LoopDev, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn json_row_for_a_fresh_loop_device() {
    require_root();
    let dir = TempDir::new("json");
    let img = dir.0.join("disk.img");
    let size: u64 = 48 << 20;
    let f = std::fs::File::create(&img).unwrap();
    f.set_len(size).unwrap();
    drop(f);
    let lo = LoopDev::attach(&img, &["-b", "4096"]);
    let dev = lo.dev();

    let (code, out, err) = run(&["devices", dev, "--output-format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = v["devices"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r["name"], lo.name.as_str());
    assert_eq!(r["path"], dev);
    assert_eq!(r["size"], size);
    assert_eq!(r["logical_sector"], 4096);
    assert_eq!(r["kind"], "loop");
    assert_eq!(
        r["loop_backing_file"],
        img.canonicalize().unwrap().to_str().unwrap()
    );
    assert_eq!(r["state"], "free");
    assert_eq!(r["findings"], serde_json::json!([]));

    // The full listing holds it too, and the table names it with its size.
    let (code, out, _) = run(&["devices", "--output-format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == lo.name.as_str() && r["size"] == size));
    let (code, out, _) = run(&["devices", dev]);
    assert_eq!(code, 0);
    let line = out
        .lines()
        .find(|l| l.starts_with(&lo.name))
        .expect("a row for the device");
    assert!(
        line.contains("48 MiB") && line.contains("4096/") && line.ends_with("free"),
        "{line}"
    );
}

#[test]
fn state_names_a_signature() {
    require_root();
    let dir = TempDir::new("sig");
    let img = dir.0.join("disk.img");
    let f = std::fs::File::create(&img).unwrap();
    f.set_len(16 << 20).unwrap();
    // XFS superblock magic at byte 0.
    std::os::unix::fs::FileExt::write_all_at(&f, b"XFSB", 0).unwrap();
    drop(f);
    let lo = LoopDev::attach(&img, &[]);
    let (code, out, err) = run(&["devices", lo.dev(), "--output-format=json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["devices"][0]["state"], "has xfs signature");
    assert_eq!(v["devices"][0]["findings"][0]["reason"], "signature");
    assert_eq!(v["devices"][0]["findings"][0]["offset"], 0);
}

#[test]
fn a_regular_file_is_a_usage_error() {
    let (code, out, _) = run(&["devices", "/proc/self/status", "--output-format", "json"]);
    assert_eq!(code, 2);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["error"].as_str().unwrap().contains("not a block device"));
}
