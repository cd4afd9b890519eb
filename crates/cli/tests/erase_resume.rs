//! `drivelab erase --resume`: the test kills the process mid-erase (SIGKILL,
//! and Ctrl-C's SIGINT), then reruns the same command with --resume. The
//! journal it reads back is parsed here independently; the second run must
//! write only what was left (diskstats), the whole drive must hold the
//! pattern (backing file), and the certificate must cover the whole drive.

mod erase_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use drivelab_erase::journal::{DriveIdentity, JournalHeader};
use drivelab_testkit::{digest, diskstats, make_image, read_all, require_root, LoopDev, TempDir};
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
    // A journal left by an erase of this drive with another pattern.
    let j = certs.join(format!("erase-{}-{size}.journal", d.name));
    let dev = drivelab_device::blockdev::BlockDevice::from_path(&d.path).unwrap();
    let header = JournalHeader {
        device: d.dev().into(),
        serial: None,
        size,
        method: "stream".into(),
        pattern: "allones".into(),
        passes: 1,
        seed: 1,
        started: "x".into(),
        identity: Some(DriveIdentity::of(&dev, None, size)),
    };
    std::fs::write(
        &j,
        format!(
            "drivelab-erase-journal 1 {}\nD 0 1048576\n",
            serde_json::to_string(&header).unwrap()
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

/// Start an erase of `d` slowed to 16 MiB/s and kill it once its journal
/// holds at least 8 MiB; returns the journal.
fn killed_mid_erase(dir: &TempDir, d: &LoopDev, certs: &str) -> PathBuf {
    let first = args(d.dev(), certs, &["--bus-limit", "16m"]);
    let mut child = Command::new(BIN)
        .arg("erase")
        .args(&first)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        if let Some(j) = journal_in(Path::new(certs)) {
            if watermark(&j) >= 8 << 20 {
                child.kill().unwrap();
                child.wait().unwrap();
                return j;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the journal never reached 8 MiB"
        );
        assert!(child.try_wait().unwrap().is_none(), "erase ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Another drive at the node of an interrupted erase (here another image
/// on the loop device, as another disk in the slot would be): `--resume`
/// must not continue the journal on it, which would skip every byte the
/// first drive had written and certify the new one erased. Refused up
/// front, exit 2, one line saying what to do, nothing written; likewise
/// for a journal without a recorded identity of a drive without a serial.
#[test]
fn resume_refuses_a_journal_of_another_drive_at_the_same_node() {
    require_root();
    let dir = TempDir::new("erase-resume-other");
    let size: u64 = 64 << 20;
    let a = LoopDev::new_in(&dir, size);
    let certs = dir.join("certs");
    let certs_s = certs.to_str().unwrap().to_string();
    let journal = killed_mid_erase(&dir, &a, &certs_s);
    // Another image, not erased, put at the first one's node when the
    // kernel gives it back; else at another node, the journal renamed to
    // that node's (what a --resume there would look for).
    let img = dir.join("other.img");
    make_image(&img, size, &[]);
    std::fs::write(&img, vec![0x5Au8; size as usize]).unwrap();
    drivelab_testkit::sh("losetup", &["-d", a.dev()]);
    let same_node = Command::new("losetup")
        .arg(&a.path)
        .arg(&img)
        .status()
        .is_ok_and(|s| s.success());
    let b = if same_node {
        let b = LoopDev {
            path: a.path.clone(),
            name: a.name.clone(),
            backing: img.clone(),
        };
        std::mem::forget(a);
        b
    } else {
        eprintln!(
            "{} was taken meanwhile: the other image goes elsewhere",
            a.name
        );
        drop(a);
        LoopDev::attach(&img, &[])
    };
    let at_b = certs.join(format!("erase-{}-{size}.journal", b.name));
    if at_b != journal {
        std::fs::rename(&journal, &at_b).unwrap();
    }
    let text = std::fs::read_to_string(&at_b).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let mut header: serde_json::Value =
        serde_json::from_str(first.strip_prefix("drivelab-erase-journal 1 ").unwrap()).unwrap();
    assert!(
        header["identity"]["backing"]["inode"].as_u64().is_some(),
        "{header}"
    );
    header.as_object_mut().unwrap().remove("identity");
    let without_identity = format!("drivelab-erase-journal 1 {header}\n{rest}");
    let cases: [(&str, &str, &str); 2] = [
        (
            "the journal of the image that was there",
            &text,
            "is not the drive the journal",
        ),
        (
            "a journal recording no identity, a drive without a serial",
            &without_identity,
            "records no drive identity",
        ),
    ];
    let before = (digest(&img), diskstats(&b.name).3);
    for (name, journal_text, want) in cases {
        std::fs::write(&at_b, journal_text).unwrap();
        let (code, out, err) = erase(&dir, &args(b.dev(), &certs_s, &["--resume"]));
        assert_eq!(code, 2, "{name}: {out}{err}");
        // The one line, in JSON under --output-format json.
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let e = v["error"].as_str().unwrap_or_default();
        assert!(!e.contains('\n') && v["exit_status"] == 2, "{name}: {out}");
        assert!(
            e.contains(want) && e.contains("run without --resume"),
            "{name}: {e}"
        );
        assert_eq!(
            std::fs::read_to_string(&at_b).unwrap(),
            journal_text,
            "{name}"
        );
        assert!(certificates(&certs).is_empty(), "{name}: a certificate");
        assert_eq!(
            (digest(&img), diskstats(&b.name).3),
            before,
            "{name}: written"
        );
    }
}
