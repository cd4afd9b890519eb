//! `drivelab erase --resume`: the test kills the process mid-erase (SIGKILL,
//! and Ctrl-C's SIGINT), then reruns the same command with --resume. The
//! journal it reads back is parsed here independently; the second run must
//! write only what was left (diskstats), the whole drive must hold the
//! pattern (backing file), and the certificate must cover the whole drive.

mod erase_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use drivelab_testkit::{diskstats, read_all, require_root, LoopDev, TempDir};
use erase_common::*;

fn journal_in(dir: &Path) -> Option<PathBuf> {
    drivelab_testkit::file_with_extension(dir, "journal")
}

/// Pass-0 watermark of a journal: the largest `D 0 END` line.
fn watermark(p: &Path) -> u64 {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("D 0 "))
        .filter_map(|v| v.trim().parse::<u64>().ok())
        .max()
        .unwrap_or(0)
}

fn args<'a>(dev: &'a str, certs: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        dev,
        "--method",
        "stream",
        "--pattern",
        "fixed:0x3C",
        "--verify",
        "full",
        "--yes",
        "--confirm-serial",
        dev,
        "--certificate-dir",
        certs,
        "--output-format",
        "json",
    ];
    v.extend_from_slice(extra);
    v
}

fn interrupted_then_resumed(signal: &str) {
    require_root();
    let dir = TempDir::new(&format!("erase-resume-{signal}"));
    let size: u64 = 256 << 20;
    let d = LoopDev::new_in(&dir, size);
    let certs = dir.join("certs");
    let certs_s = certs.to_str().unwrap().to_string();
    // Slow the first run down so it can be interrupted part-way.
    let first = args(d.dev(), &certs_s, &["--bus-limit", "32m"]);
    let mut child = Command::new(BIN)
        .arg("erase")
        .args(&first)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let want = 96u64 << 20;
    loop {
        if let Some(j) = journal_in(&certs) {
            if watermark(&j) >= want {
                break;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "journal never reached {want}"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "erase ended before the kill"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    if signal == "KILL" {
        child.kill().unwrap();
        child.wait().unwrap();
    } else {
        let st = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["drives"][0]["result"], "stopped");
        assert!(v["drives"][0]["error"]
            .as_str()
            .unwrap()
            .contains("--resume"));
    }
    let j = journal_in(&certs).expect("journal kept after the interruption");
    let w = watermark(&j);
    assert!(w >= want && w < size, "watermark {w}");
    assert!(
        certificates(&certs).is_empty(),
        "no certificate for an unfinished erase"
    );
    // Everything below the watermark is written; the end is still old data.
    let data = read_all(&d.backing);
    assert_eq!(first_not(&data[..w as usize], 0x3C), None);
    assert_eq!(data[size as usize - 1], 0);

    let before = diskstats(&d.name).3;
    let second = args(d.dev(), &certs_s, &["--resume"]);
    let (code, out, err) = erase(&dir, &second);
    assert_eq!(code, 0, "{out}{err}");
    let written = (diskstats(&d.name).3 - before) * 512;
    let left = size - w;
    // Only what was left (plus what was in flight or not yet journalled,
    // at most ~1 s at 32 MiB/s), never the whole drive again.
    assert!(written >= left, "wrote {written}, {left} were left");
    assert!(
        written < left + (48 << 20),
        "wrote {written}, only {left} were left"
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["drives"][0]["resumed_bytes"].as_u64(), Some(w));
    assert_eq!(first_not(&read_all(&d.backing), 0x3C), None);
    let files = certificates(&certs);
    assert_eq!(files.len(), 1);
    let b = cert_body(&files[0]);
    assert_eq!(b["result"], "erased");
    assert_eq!(b["erase"]["bytes_resumed"].as_u64(), Some(w));
    assert_eq!(b["erase"]["bytes_this_run"].as_u64(), Some(left));
    assert_eq!(b["verification"]["bytes_read"].as_u64(), Some(size));
    assert_eq!(b["verification"]["result"], "passed");
    // Both runs are on the certificate; the journal is gone.
    let runs = b["timing"]["runs"].as_array().unwrap().len();
    assert!(runs >= 2, "runs {runs}");
    assert!(journal_in(&certs).is_none());
    let (c, o, e) = erase(&dir, &["verify-cert", files[0].to_str().unwrap()]);
    assert_eq!(c, 0, "{o}{e}");
}

#[test]
fn resume_after_sigkill_mid_stream_covers_the_whole_drive() {
    interrupted_then_resumed("KILL");
}

#[test]
fn resume_after_ctrl_c_mid_stream_covers_the_whole_drive() {
    interrupted_then_resumed("INT");
}

#[test]
fn resume_refuses_a_journal_for_another_pattern() {
    require_root();
    let dir = TempDir::new("erase-resume-mismatch");
    let size: u64 = 64 << 20;
    let d = LoopDev::new_in(&dir, size);
    let certs = dir.join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    // A journal left by an erase with another pattern.
    let j = certs.join(format!("erase-{}-{size}.journal", d.name));
    std::fs::write(
        &j,
        format!(
            "drivelab-erase-journal 1 {{\"device\":\"{}\",\"serial\":null,\"size\":{size},\"method\":\"stream\",\"pattern\":\"allones\",\"passes\":1,\"seed\":1,\"started\":\"x\"}}\nD 0 1048576\n",
            d.dev()
        ),
    )
    .unwrap();
    let certs_s = certs.to_str().unwrap().to_string();
    let (code, out, err) = erase(&dir, &args(d.dev(), &certs_s, &["--resume"]));
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("pattern allones"), "{out}");
    // Nothing was written.
    assert_eq!(first_not(&read_all(&d.backing), 0), None);
}
