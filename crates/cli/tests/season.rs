//! `drivelab season` on loop devices and zram: consent refusals (nothing
//! written), every stage run with a complete result, the steady-state test
//! passing on a rate-capped workload (whose IOPS is set, so it is steady by
//! construction) within the round limit, the image restore landing byte for
//! byte, plots written, and an interrupted season (SIGINT mid-rounds)
//! resumed from the journal's round.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use drivelab_testkit::{read_all, require_root, LoopDev, TempDir, Zram};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// A workload whose IOPS the rate cap fixes: stable rounds on any device.
const STEADY: &str = "rw=randwrite bs=4k iodepth=8 rate_iops=1000";

fn season(dir: &TempDir, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .arg("season")
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

fn journal_in(dir: &Path) -> Option<PathBuf> {
    drivelab_testkit::file_with_extension(dir, "journal")
}

fn rounds_in(journal: &Path) -> usize {
    std::fs::read_to_string(journal)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("{\"round\":"))
        .count()
}

#[test]
fn refusals_write_nothing() {
    require_root();
    let dir = TempDir::new("season-refuse");
    let d = LoopDev::new_in(&dir, 32 << 20);
    let st = dir.path().to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![d.dev(), "--state-dir", st], "--yes"),
        (
            vec![
                d.dev(),
                "--yes",
                "--confirm-serial",
                "NOPE",
                "--state-dir",
                st,
            ],
            "not confirmed",
        ),
        (
            vec![
                d.dev(),
                "--yes",
                "--confirm-serial",
                d.dev(),
                "--fill-passes",
                "0",
                "--state-dir",
                st,
            ],
            "--fill-passes",
        ),
        (
            vec![
                d.dev(),
                "--yes",
                "--confirm-serial",
                d.dev(),
                "--stages",
                "image",
                "--state-dir",
                st,
            ],
            "--image",
        ),
        (
            vec![
                d.dev(),
                "--yes",
                "--confirm-serial",
                d.dev(),
                "--stages",
                "polish",
                "--state-dir",
                st,
            ],
            "unknown stage",
        ),
        (
            vec![
                d.dev(),
                "--yes",
                "--confirm-serial",
                d.dev(),
                "--workload",
                "bs=banana",
                "--state-dir",
                st,
            ],
            "bs",
        ),
    ];
    for (args, needle) in cases {
        let (code, _, err) = season(&dir, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    // Nothing was written and no journal was left.
    assert!(read_all(&d.backing).iter().all(|&b| b == 0));
    assert!(journal_in(dir.path()).is_none());
}

#[test]
fn every_stage_runs_to_steady_state_with_plots_and_a_complete_result() {
    require_root();
    let dir = TempDir::new("season-all");
    let size: u64 = 64 << 20;
    let d = LoopDev::new_in(&dir, size);
    let img = dir.join("image.bin");
    let image: Vec<u8> = (0..3u32 << 20).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&img, &image).unwrap();
    let plots = dir.join("plots");
    std::fs::create_dir(&plots).unwrap();
    let st = dir.path().to_str().unwrap();
    let (code, out, err) = season(
        &dir,
        &[
            d.dev(),
            "--yes",
            "--confirm-serial",
            d.dev(),
            "--state-dir",
            st,
            "--image",
            img.to_str().unwrap(),
            "--workload",
            STEADY,
            "--round-time",
            "1",
            "--max-rounds",
            "10",
            "--compare",
            "rw=randwrite bs=4k iodepth=4 rate_iops=500",
            "--plots",
            plots.to_str().unwrap(),
            "--output-format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["stages"],
        serde_json::json!(["purge", "fill", "image", "rounds"])
    );
    let r = &v["drives"][0];
    assert_eq!(r["state"], "done");
    assert_eq!(r["identity"]["device"], d.dev());
    assert_eq!(r["identity"]["capacity_bytes"], size);
    // A loop device offers discard only: that is the purge, by name.
    assert_eq!(r["purge"]["method"], "discard");
    assert_eq!(r["fresh"], true);
    let passes = r["fill"]["pass_results"].as_array().unwrap();
    assert_eq!(passes.len(), 2);
    for p in passes {
        assert_eq!(p["bytes"], size);
    }
    // The write series covers the whole drive, each point a bucket or more
    // over a real interval (at least 10 ms), never a bucket over ~0 s.
    let pts = r["write_series"]["points"].as_array().unwrap();
    assert!(!pts.is_empty());
    assert_eq!(pts.last().unwrap()["written_bytes"], size);
    let bucket = r["write_series"]["bucket_bytes"].as_u64().unwrap();
    let mut prev = 0;
    for p in pts {
        let at = p["written_bytes"].as_u64().unwrap();
        let bw = p["bw_bytes"].as_f64().unwrap();
        assert!(at - prev >= bucket, "{p}");
        assert!((at - prev) as f64 / bw >= 0.00999, "{p}: under 10 ms");
        prev = at;
    }
    // The image was written whole (the rounds overwrite parts of it since).
    assert_eq!(r["image"]["bytes"], image.len() as u64);
    assert_eq!(r["image"]["kind"], "image");
    // Rounds until the PTS test passed, at the first possible window.
    let rounds = r["rounds"].as_array().unwrap();
    let ss = &r["steady_state"];
    assert_eq!(ss["steady"], true, "{ss}");
    // It stops at the first window that passes, within the limit.
    assert!((5..=10).contains(&rounds.len()), "{} rounds", rounds.len());
    assert_eq!(ss["window"]["last_round"], rounds.len());
    assert_eq!(ss["window"]["first_round"], rounds.len() - 4);
    for (i, round) in rounds.iter().enumerate() {
        assert_eq!(round["round"], i + 1);
        assert!(round["iops"].as_f64().unwrap() > 0.0);
        assert!(
            round["lat_p99_ns"].as_f64().unwrap() >= round["lat_mean_ns"].as_f64().unwrap() * 0.5
        );
    }
    for k in ["average", "data_excursion", "slope", "slope_excursion"] {
        assert!(ss["window"][k].is_number(), "{k}");
    }
    let ch = r["compare"]["change"].as_array().unwrap();
    assert_eq!(ch.len(), 4);
    assert!(r["compare"]["fresh"]["iops"].as_f64().unwrap() > 0.0);
    assert!(r["compare"]["used"]["iops"].as_f64().unwrap() > 0.0);
    // Four plots, each an SVG document.
    let files = r["plots"].as_array().unwrap();
    assert_eq!(files.len(), 4, "{files:?}");
    for f in files {
        let t = std::fs::read_to_string(f.as_str().unwrap()).unwrap();
        assert!(t.contains("<svg"), "{f}");
    }
    // A finished season leaves no journal.
    assert!(journal_in(dir.path()).is_none());
    // It is in the store (the test's own, see testkit::isolate_store).
    let h = Command::new(BIN)
        .args(["history", "--kind", "season", "--output-format", "json"])
        .output()
        .expect("run drivelab history");
    let v: serde_json::Value = serde_json::from_slice(&h.stdout).expect("history JSON");
    assert!(
        v.as_array().is_some_and(|a| !a.is_empty()),
        "the season was not stored: {v}"
    );
}

#[test]
fn the_image_lands_sector_by_sector_after_the_fill() {
    require_root();
    let dir = TempDir::new("season-image");
    let size: u64 = 16 << 20;
    let d = LoopDev::new_in(&dir, size);
    let img = dir.join("image.bin");
    // Not a multiple of the sector: the tail is padded with zeroes.
    let image: Vec<u8> = (0..(3u32 << 20) + 100)
        .map(|i| (i * 7 % 251) as u8 | 1)
        .collect();
    std::fs::write(&img, &image).unwrap();
    let (code, _, err) = season(
        &dir,
        &[
            d.dev(),
            "--yes",
            "--confirm-serial",
            d.dev(),
            "--state-dir",
            dir.path().to_str().unwrap(),
            "--stages",
            "fill,image",
            "--fill-passes",
            "1",
            "--image",
            img.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let data = read_all(&d.backing);
    assert!(
        data[..image.len()] == image[..],
        "the image is on the drive"
    );
    let pad_end = image.len().div_ceil(512) * 512;
    assert!(data[image.len()..pad_end].iter().all(|&b| b == 0));
    // Past it, the fill's random data.
    assert!(data[pad_end..].iter().any(|&b| b != 0));
}

#[test]
fn zram_takes_fill_and_rounds() {
    require_root();
    let Some(z) = Zram::new(32 << 20) else {
        eprintln!("zram not available: skipped");
        return;
    };
    let dir = TempDir::new("season-zram");
    let dev = z.path.to_str().unwrap();
    let (code, out, err) = season(
        &dir,
        &[
            dev,
            "--yes",
            "--confirm-serial",
            dev,
            "--state-dir",
            dir.path().to_str().unwrap(),
            "--stages",
            "purge,fill,rounds",
            "--fill-passes",
            "1",
            "--workload",
            STEADY,
            "--round-time",
            "1",
            "--max-rounds",
            "6",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &v["drives"][0];
    assert_eq!(r["state"], "done");
    assert_eq!(r["fill"]["pass_results"][0]["bytes"], 32u64 << 20);
    assert_eq!(r["steady_state"]["steady"], true);
}

#[test]
fn an_interrupted_season_resumes_at_its_round() {
    require_root();
    let dir = TempDir::new("season-resume");
    let size: u64 = 64 << 20;
    let d = LoopDev::new_in(&dir, size);
    let st = dir.path().to_str().unwrap().to_string();
    let args = vec![
        d.dev().to_string(),
        "--yes".into(),
        "--confirm-serial".into(),
        d.dev().to_string(),
        "--state-dir".into(),
        st.clone(),
        "--stages".into(),
        "fill,rounds".into(),
        "--fill-passes".into(),
        "1".into(),
        "--workload".into(),
        STEADY.into(),
        "--round-time".into(),
        "1".into(),
        "--max-rounds".into(),
        "10".into(),
        "--output-format".into(),
        "json".into(),
    ];
    let child = Command::new(BIN)
        .arg("season")
        .args(&args)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        if journal_in(dir.path()).is_some_and(|j| rounds_in(&j) >= 2) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no rounds journaled"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = &v["drives"][0];
    assert_eq!(first["state"], "stopped");
    assert!(first["error"].as_str().unwrap().contains("--resume"));
    let done_rounds = first["rounds"].as_array().unwrap().clone();
    assert!(
        done_rounds.len() >= 2 && done_rounds.len() < 5,
        "{}",
        done_rounds.len()
    );
    let j = journal_in(dir.path()).expect("journal kept");
    assert_eq!(rounds_in(&j), done_rounds.len());

    let mut again = args.clone();
    again.push("--resume".into());
    let again: Vec<&str> = again.iter().map(String::as_str).collect();
    let (code, out, err) = season(&dir, &again);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &v["drives"][0];
    assert_eq!(r["resumed"], true);
    assert_eq!(r["state"], "done");
    // The fill is not done again: its record is the first run's.
    assert_eq!(r["fill"], first["fill"]);
    // The earlier rounds are kept as they were; the run went on from there.
    let rounds = r["rounds"].as_array().unwrap();
    assert_eq!(&rounds[..done_rounds.len()], &done_rounds[..]);
    assert!(rounds.len() >= 5);
    for (i, round) in rounds.iter().enumerate() {
        assert_eq!(round["round"], i + 1);
    }
    assert_eq!(r["steady_state"]["steady"], true);
    assert!(journal_in(dir.path()).is_none());
}
