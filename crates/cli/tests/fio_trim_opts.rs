//! fio's trims of verified writes (`trim_percentage`, `trim_backlog`,
//! `trim_backlog_batch`, `trim_verify_zero`) trim what fio 3.33 trims,
//! when it trims it: 28 verified 4 KiB writes to a loop device (trims
//! are discards there) under both tools, the order of writes and trims
//! compared from their `write_iolog`s, the reads of the verify pass and
//! the trims from their JSON, the discards from /proc/diskstats and the
//! trimmed blocks from the backing file.
//!
//! fio 3.33 carries these options out only in a job that trims of its
//! own: in `rw=write` its trims fail its read-only assertion
//! (`fio_ro_check`). So fio runs `rw=trimwrite`, and the trim it makes
//! before each write (`trim X` followed by `write X`) is taken out of its
//! log; drivelab runs `rw=write`. Needs fio (tests/run installs it).

mod fio_common;

use drivelab_testkit::{LoopDev, TempDir};

const BS: u64 = 4096;
const BLOCKS: u64 = 28;

/// One run's writes and trims in order ("w3", "t0"), its JSON, and the
/// discards the device saw.
struct Run {
    order: Vec<String>,
    json: serde_json::Value,
    discards: u64,
}

fn run(tool: &str, dir: &TempDir, lo: &LoopDev, extra: &str) -> Run {
    drivelab_testkit::isolate_store();
    let log = dir.join(&format!("{tool}.iolog"));
    let _ = std::fs::remove_file(&log);
    let rw = if tool == "fio" { "trimwrite" } else { "write" };
    let job = dir.join("job.fio");
    std::fs::write(
        &job,
        format!(
            "[job]\nfilename={}\nioengine=psync\ndirect=1\nrw={rw}\nbs=4k\nsize={}\n\
             verify=crc32c\ntrim_percentage=100\ntrim_backlog=8\ntrim_backlog_batch=2\n\
             write_iolog={}\n{extra}\n",
            lo.dev(),
            BLOCKS * BS,
            log.display()
        ),
    )
    .unwrap();
    let name = lo.dev().trim_start_matches("/dev/");
    let before = drivelab_testkit::diskstats(name).4;
    let (json, _) = fio_common::run_json_normal(tool, &job, &dir.join("out"));
    let discards = drivelab_testkit::diskstats(name).4 - before;
    let lines: Vec<(String, u64)> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let at = f.iter().position(|w| *w == "write" || *w == "trim")?;
            Some((f[at].to_string(), f.get(at + 1)?.parse().ok()?))
        })
        .collect();
    let mut order = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (op, off) = &lines[i];
        let own = tool == "fio"
            && op == "trim"
            && lines
                .get(i + 1)
                .is_some_and(|(o, x)| o == "write" && x == off);
        if !own {
            order.push(format!("{}{}", &op[..1], off / BS));
        }
        i += 1;
    }
    Run {
        order,
        json,
        discards,
    }
}

fn count(j: &serde_json::Value, dir: &str) -> u64 {
    j["jobs"][0][dir]["total_ios"].as_u64().unwrap()
}

/// Both tools trim the same blocks at the same points, read back the same
/// number of blocks (trimmed ones checked as zeroes, or not read at all
/// under trim_verify_zero=0), and leave the same blocks trimmed.
#[test]
fn trims_of_verified_writes_come_when_fio_3_33_makes_them() {
    let dir = TempDir::new("fio-trim-opts");
    let lo = LoopDev::new_in(&dir, 1 << 20);
    let img = std::fs::read_to_string(format!(
        "/sys/block/{}/loop/backing_file",
        lo.dev().trim_start_matches("/dev/")
    ))
    .unwrap();
    for (extra, reads, trims) in [("", 28u64, 24u64), ("trim_verify_zero=0", 7, 21)] {
        let fio = run("fio", &dir, &lo, extra);
        let dl = run("drivelab", &dir, &lo, extra);
        assert_eq!(dl.order, fio.order, "{extra:?}");
        assert_eq!(
            dl.order.iter().filter(|o| o.starts_with('t')).count() as u64,
            trims,
            "{extra:?}: {:?}",
            dl.order
        );
        // fio counts its own trims too: one per write.
        assert_eq!(count(&fio.json, "trim") - count(&fio.json, "write"), trims);
        assert_eq!(count(&dl.json, "trim"), trims, "{extra:?}");
        assert_eq!(count(&dl.json, "write"), BLOCKS);
        assert_eq!(count(&fio.json, "read"), reads, "{extra:?}");
        assert_eq!(count(&dl.json, "read"), reads, "{extra:?}");
        assert_eq!(dl.json["jobs"][0]["error"], 0);
        // The device saw the trims (a discard may be split, never fewer).
        assert!(dl.discards >= trims, "{} discards", dl.discards);
        // The trimmed blocks are zeroes now, the rest hold written data.
        let data = std::fs::read(img.trim()).unwrap();
        for b in 0..BLOCKS {
            let blk = &data[(b * BS) as usize..((b + 1) * BS) as usize];
            let trimmed = dl.order.contains(&format!("t{b}"));
            assert_eq!(blk.iter().all(|&x| x == 0), trimmed, "block {b} {extra:?}");
        }
    }
}

/// trim_percentage without trim_backlog trims nothing, as in fio, and
/// neither does it under experimental_verify or do_verify=0; bad values and
/// verify_backlog beside it are refused in one line.
#[test]
fn without_a_backlog_nothing_is_trimmed_and_bad_values_are_refused() {
    let dir = TempDir::new("fio-trim-none");
    let lo = LoopDev::new_in(&dir, 1 << 20);
    // Under experimental_verify and do_verify=0 fio's log_io_piece, which
    // the trims are taken from, logs nothing.
    for (extra, reads) in [
        ("trim_backlog=0", BLOCKS),
        ("experimental_verify=1", BLOCKS),
        ("do_verify=0", 0),
    ] {
        let dl = run("drivelab", &dir, &lo, extra);
        assert!(
            dl.order.iter().all(|o| o.starts_with('w')),
            "{:?}",
            dl.order
        );
        assert_eq!(count(&dl.json, "read"), reads, "{extra}");
        assert_eq!(dl.discards, 0, "{extra}");
    }
    for (opt, what) in [
        ("trim_percentage=101", "trim_percentage"),
        ("verify_backlog=4", "verify_backlog"),
    ] {
        let job = dir.join("bad.fio");
        std::fs::write(
            &job,
            format!(
                "[job]\nfilename={}\nrw=write\nbs=4k\nsize=64k\nverify=crc32c\ntrim_percentage=50\ntrim_backlog=4\n{opt}\n",
                lo.dev()
            ),
        )
        .unwrap();
        let (code, _, err) =
            drivelab_testkit::run(fio_common::BIN, &["run", &job.display().to_string()]);
        assert_eq!(code, 2, "{opt}: {err}");
        assert!(
            err.contains(what) && err.trim().lines().count() == 1,
            "{err}"
        );
    }
}
