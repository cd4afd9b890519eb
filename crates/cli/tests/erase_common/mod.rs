//! Shared helpers for the `drivelab erase` integration tests: run the real
//! binary with its own config dir (so the signing key is the test's, not the
//! user's), fill devices, find certificates.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use drivelab_testkit::TempDir;

pub const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// Run `drivelab erase ARGS` with XDG_CONFIG_HOME inside `dir`.
pub fn erase(dir: &TempDir, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .arg("erase")
        .args(args)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .output()
        .expect("run drivelab");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Erase `dev` (confirmed by its path) with certificates in `certs` and
/// the `extra` arguments; asserts exit status 0 and returns the JSON
/// report.
pub fn erase_ok(dir: &TempDir, dev: &str, certs: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        dev,
        "--yes",
        "--confirm-serial",
        dev,
        "--certificate-dir",
        certs,
    ];
    args.extend(extra);
    args.extend(["--output-format", "json"]);
    let (code, out, err) = erase(dir, &args);
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).unwrap()
}

/// Fill a file with `byte` (keeping its size).
pub fn fill_file(path: &Path, byte: u8) {
    let len = std::fs::metadata(path).unwrap().len() as usize;
    std::fs::write(path, vec![byte; len]).unwrap();
}

/// Index of the first byte of `data` that is not `byte`.
pub fn first_not(data: &[u8], byte: u8) -> Option<usize> {
    data.iter().position(|&b| b != byte)
}

/// Certificate JSON files in `dir`.
pub fn certificates(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The certificate object of a signed certificate file.
pub fn cert_body(path: &Path) -> serde_json::Value {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["certificate"].clone()
}

/// write_zeroes_max_bytes of a block device, read from sysfs here.
pub fn write_zeroes_max(name: &str) -> u64 {
    std::fs::read_to_string(format!("/sys/block/{name}/queue/write_zeroes_max_bytes"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}
