//! fio's `read_iolog` and its `replay_*` options replay what fio 3.33
//! replays: fio writes an iolog of a mixed random job (reads, writes of
//! three sizes, fsyncs), and each tool replays it with the same job
//! file under strace; the calls on the data files (pread64, pwrite64,
//! fsync, with their files, offsets and lengths, in order) are compared,
//! as they are with `replay_redirect`, `replay_scale` with `replay_align`
//! and `read_iolog_chunked`. The log's times are kept unless
//! `replay_no_stall`, and scaled by `replay_time_scale`, in both tools
//! (checked by the calls' times: each gap at least the log's).
//! (fio 3.33 writes no `write_iolog` while it replays, so strace sees
//! what each tool did.) Needs fio and strace (tests/run installs them).

use std::os::unix::fs::MetadataExt;
use std::process::Command;

use drivelab_testkit::TempDir;

mod fio_common;

/// One call on a data file: (call, file, offset, length), and its time
/// in µs.
type Call = ((String, String, u64, u64), u64);

/// Replay `log` under `tool` with `extra` job lines under strace: the
/// calls on files in `dir`.
fn replay(tool: &str, dir: &TempDir, log: &std::path::Path, extra: &str) -> Vec<Call> {
    drivelab_testkit::isolate_store();
    let job = dir.join("replay.fio");
    std::fs::write(
        &job,
        format!(
            "[replay]\nioengine=psync\nread_iolog={}\n{extra}\n",
            log.display()
        ),
    )
    .unwrap();
    let trace = dir.join("trace");
    let out = fio_common::under_strace(
        tool,
        &trace,
        &["-ttt"],
        "pread64,pwrite64,fsync,fdatasync",
        &[],
        &job,
    );
    assert!(
        out.status.success(),
        "{tool} {extra:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let data = format!("<{}/", dir.path().display());
    std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter(|l| l.contains(&data) && !l.contains("replay.fio") && !l.contains(".log>"))
        .filter_map(|l| {
            // PID SECS.USECS call(FD</path>, ""..., LEN, OFFSET) = N
            let mut w = l.split_whitespace();
            let (_, at) = (w.next()?, w.next()?);
            let (secs, us) = at.split_once('.')?;
            let t = secs.parse::<u64>().ok()? * 1_000_000 + us.parse::<u64>().ok()?;
            let (call, rest) = l.split_once(at)?.1.trim().split_once('(')?;
            let file = rest.split_once('<')?.1.split_once('>')?.0;
            let file = file.rsplit('/').next()?.to_string();
            let args: Vec<&str> = rest.split_once(')')?.0.split(", ").collect();
            let (len, off) = match call {
                "pread64" | "pwrite64" => (args.get(2)?.parse().ok()?, args.get(3)?.parse().ok()?),
                _ => (0, 0),
            };
            Some(((call.to_string(), file, off, len), t))
        })
        .collect()
}

fn calls(c: &[Call]) -> Vec<(String, String, u64, u64)> {
    c.iter().map(|x| x.0.clone()).collect()
}

/// Two 1 MiB data files, and fio's iolog of 48 mixed I/Os on the first.
fn setup(dir: &TempDir) -> std::path::PathBuf {
    for f in ["A", "B"] {
        let data: Vec<u8> = (0..1u32 << 20).map(|i| (i * 7 + 3) as u8).collect();
        std::fs::write(dir.join(f), data).unwrap();
    }
    let log = dir.join("made.log");
    let job = dir.join("make.fio");
    std::fs::write(
        &job,
        format!(
            "[make]\nfilename={}\nsize=1m\nrw=randrw\nbssplit=4k/50:16k/30:64k/20\nfsync=8\nnumber_ios=48\nioengine=psync\nwrite_iolog={}\n",
            dir.join("A").display(),
            log.display()
        ),
    )
    .unwrap();
    let out = Command::new("fio").arg(&job).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    log
}

#[test]
fn a_replayed_iolog_issues_what_fio_3_33_issues() {
    let dir = TempDir::new("fio-replay");
    let log = setup(&dir);
    let plain = calls(&replay("fio", &dir, &log, "replay_no_stall=1"));
    let count =
        |c: &[(String, String, u64, u64)], call: &str| c.iter().filter(|x| x.0 == call).count();
    // The log: 48 reads and writes, and fio's fsync=8 (its syncs).
    assert_eq!(count(&plain, "pread64") + count(&plain, "pwrite64"), 48);
    assert!(count(&plain, "fsync") >= 4, "{plain:?}");
    assert!(plain.iter().all(|c| c.1 == "A"));
    for extra in [
        "replay_no_stall=1",
        "replay_no_stall=1\nread_iolog_chunked=1",
        "replay_no_stall=1\nreplay_redirect=B\nreplay_scale=2\nreplay_align=8192",
    ] {
        let extra = extra.replace("=B", &format!("={}", dir.join("B").display()));
        let fio = calls(&replay("fio", &dir, &log, &extra));
        let dl = calls(&replay("drivelab", &dir, &log, &extra));
        assert_eq!(dl, fio, "{extra}");
        if extra.contains("replay_scale") {
            assert!(dl.iter().all(|c| c.1 == "B" && c.2 % 8192 == 0), "{dl:?}");
            let scaled: Vec<u64> = plain
                .iter()
                .filter(|c| c.0 != "fsync")
                .map(|c| c.2 / 2 / 8192 * 8192)
                .collect();
            let got: Vec<u64> = dl.iter().filter(|c| c.0 != "fsync").map(|c| c.2).collect();
            assert_eq!(got, scaled);
        } else {
            assert_eq!(dl, plain, "{extra}");
        }
    }
}

/// replay_skip leaves out the kinds it names. fio 3.33 applies it to
/// blktrace replays only (blktrace.c) and replays an iolog's writes
/// anyway, so this is drivelab's alone.
#[test]
fn replay_skip_leaves_out_what_it_names() {
    let dir = TempDir::new("fio-replay-skip");
    let log = setup(&dir);
    let plain = calls(&replay("drivelab", &dir, &log, "replay_no_stall=1"));
    let before = drivelab_testkit::digest(&dir.join("A"));
    let skipped = calls(&replay(
        "drivelab",
        &dir,
        &log,
        "replay_no_stall=1\nreplay_skip=write,sync",
    ));
    let reads: Vec<_> = plain.into_iter().filter(|c| c.0 == "pread64").collect();
    assert!(!reads.is_empty());
    assert_eq!(skipped, reads);
    assert_eq!(
        drivelab_testkit::digest(&dir.join("A")),
        before,
        "nothing written"
    );
}

/// The data files, and a log of five 4 KiB reads of `A`, 150 ms apart.
fn timed_log(dir: &TempDir) -> std::path::PathBuf {
    setup(dir);
    let log = dir.join("timed.log");
    let a = dir.join("A");
    let mut text = format!("fio version 3 iolog\n0 {0} add\n0 {0} open\n", a.display());
    for i in 0..5u64 {
        text += &format!(
            "{} {} read {} 4096\n",
            1000 + i * 150_000,
            a.display(),
            i * 8192
        );
    }
    std::fs::write(&log, text).unwrap();
    log
}

/// A log of five reads 150 ms apart: replayed at its times, each read
/// comes no earlier than 90% of its time in the log after the first
/// (half of that under replay_time_scale=200); under replay_no_stall the
/// five go at once.
#[test]
fn a_replay_keeps_the_logs_times_unless_told_not_to() {
    let dir = TempDir::new("fio-replay-times");
    let log = timed_log(&dir);
    for tool in ["fio", "drivelab"] {
        for (extra, gap_us) in [("", 150_000), ("replay_time_scale=200", 75_000)] {
            let c = replay(tool, &dir, &log, extra);
            assert_eq!(c.len(), 5, "{tool} {extra}: {c:?}");
            for (i, x) in c.iter().enumerate() {
                // fio takes what it overslept off the next gap (its
                // iolog_delay's time_offset), so the schedule holds from
                // the first I/O on, not each gap: at least 90% of it.
                let due = i as u64 * gap_us;
                assert!(
                    x.1 - c[0].1 >= due * 9 / 10,
                    "{tool} {extra}: I/O {i} after {} µs, due after {due}",
                    x.1 - c[0].1
                );
            }
        }
        let c = replay(tool, &dir, &log, "replay_no_stall=1");
        assert_eq!(c.len(), 5);
        let span = c[4].1 - c[0].1;
        assert!(span < 300_000, "{tool}: no_stall took {span} µs");
    }
}

/// `trace replay --mode gaps` plays an fio iolog on the schedule
/// `read_iolog` follows (the replay crate's one pacer): each gap at least
/// the log's after the previous issue, divided by `--speed`.
#[test]
fn trace_replay_in_gap_mode_keeps_the_logs_gaps_as_read_iolog_does() {
    let dir = TempDir::new("fio-replay-gaps");
    let log = timed_log(&dir);
    let a = dir.join("A");
    for (speed, span_s) in [("1", 0.6), ("2", 0.3)] {
        let out = Command::new(fio_common::BIN)
            .args(["trace", "replay", &log.display().to_string(), "--target"])
            .arg(&a)
            .args([
                "--mode",
                "gaps",
                "--speed",
                speed,
                "--output-format",
                "json",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["mode"], "gaps");
        assert_eq!(r["requests"].as_u64(), Some(5), "{r}");
        let d = r["duration_s"].as_f64().unwrap();
        assert!(
            d >= span_s * 0.95,
            "--speed {speed}: {d} s, the log's gaps take {span_s}"
        );
    }
}

/// What drivelab refuses, in one line, before anything is written.
#[test]
fn a_bad_log_or_an_io_past_the_target_is_refused() {
    let dir = TempDir::new("fio-replay-bad");
    setup(&dir);
    let a = dir.join("A").display().to_string();
    for (log, what) in [
        ("fio version 3 iolog\n0 A add\n".to_string(), "no I/O"),
        (
            format!("fio version 3 iolog\n0 {a} add\n5 {a} read 1048064 4096\n"),
            "past the end",
        ),
        // A write extends a file; a read past what the log has written
        // by then still fails.
        (
            format!(
                "fio version 3 iolog\n0 {a} add\n5 {a} write 1048576 4096\n6 {a} read 1052672 512\n"
            ),
            "I/O 2 reads 512 bytes at offset 1052672, past the end",
        ),
        (format!("fio version 9 iolog\n0 {a} add\n"), "header"),
    ] {
        let path = dir.join("bad.log");
        std::fs::write(&path, log).unwrap();
        let job = dir.join("bad.fio");
        std::fs::write(&job, format!("[j]\nread_iolog={}\n", path.display())).unwrap();
        let before = drivelab_testkit::digest(&dir.join("A"));
        let (code, _, err) =
            drivelab_testkit::run(fio_common::BIN, &["run", &job.display().to_string()]);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(err.contains("read_iolog") && err.contains(what), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert_eq!(drivelab_testkit::digest(&dir.join("A")), before);
    }
}

/// A log that writes files that do not exist yet: fio creates them at
/// their first I/O and its writes extend them, laying nothing out; so
/// does drivelab (the same calls, the same sizes, holes where nothing was
/// written). A log that reads a file past its end at that point fails in
/// fio; drivelab refuses it before anything is created.
#[test]
fn a_log_that_writes_new_files_creates_and_extends_them_as_fio_does() {
    let mut seen = Vec::new();
    for tool in ["fio", "drivelab"] {
        let dir = TempDir::new("fio-replay-grow");
        let (a, b) = (dir.join("new-a"), dir.join("new-b"));
        let (sa, sb) = (a.display(), b.display());
        let log = dir.join("grow.log");
        std::fs::write(
            &log,
            format!(
                "fio version 2 iolog\n{sa} add\n{sb} add\n{sa} open\n{sb} open\n\
                 {sa} write 0 4096\n{sb} write 1048576 8192\n{sa} read 0 4096\n\
                 {sa} write 65536 4096\n{sb} read 1052672 4096\n{sa} close\n{sb} close\n"
            ),
        )
        .unwrap();
        let c = calls(&replay(tool, &dir, &log, "replay_no_stall=1"));
        let files: Vec<(u64, bool)> = [&a, &b]
            .iter()
            .map(|p| {
                let md = std::fs::metadata(p).unwrap();
                (md.len(), md.blocks() * 512 < md.len())
            })
            .collect();
        seen.push((c, files));
    }
    assert_eq!(seen[1], seen[0], "drivelab, then fio");
    assert_eq!(seen[0].1, [(69632, true), (1056768, true)]);

    let dir = TempDir::new("fio-replay-grow-bad");
    let a = dir.join("new-a");
    let log = dir.join("bad.log");
    std::fs::write(
        &log,
        format!(
            "fio version 2 iolog\n{0} add\n{0} open\n{0} write 0 4096\n{0} read 4096 4096\n{0} close\n",
            a.display()
        ),
    )
    .unwrap();
    let job = dir.join("bad.fio");
    std::fs::write(&job, format!("[j]\nread_iolog={}\n", log.display())).unwrap();
    let (code, _, err) =
        drivelab_testkit::run(fio_common::BIN, &["run", &job.display().to_string()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("I/O 2 reads 4096 bytes at offset 4096, past the end"),
        "{err}"
    );
    assert!(!a.exists(), "nothing is created for a refused log");
}

/// A replayed iolog's writes with `verify`: written with check headers,
/// then read back and checked in fio 3.33's order (by offset), a write
/// that a later one overlaps left out, as fio's verify tree drops it.
/// (drivelab's own rule for partial overlaps is held by the workload's
/// unit test `replayed_extents_leave_out_what_a_later_write_overlaps`.)
#[test]
fn a_replayed_iologs_writes_are_verified_as_fio_3_33_verifies_them() {
    let dir = TempDir::new("fio-replay-verify");
    setup(&dir);
    let a = dir.join("A").display().to_string();
    let log = dir.join("verify.log");
    std::fs::write(
        &log,
        format!(
            "fio version 3 iolog\n0 {a} add\n1 {a} open\n\
             2 {a} write 65536 16384\n3 {a} write 0 8192\n\
             4 {a} write 131072 4096\n5 {a} write 131072 4096\n6 {a} close\n"
        ),
    )
    .unwrap();
    let extra = "replay_no_stall=1\nverify=crc32c";
    let fio = calls(&replay("fio", &dir, &log, extra));
    let dl = calls(&replay("drivelab", &dir, &log, extra));
    assert_eq!(dl, fio);
    let reads: Vec<(u64, u64)> = dl
        .iter()
        .filter(|c| c.0 == "pread64")
        .map(|c| (c.2, c.3))
        .collect();
    // The check of each write, by offset, the block written twice once.
    // (fio 3.33's checks of a replay fail when the log also reads, or
    // when a later write overlaps an earlier one in part: its check
    // seeds follow the I/Os, so the log does neither.)
    assert_eq!(reads, [(0, 8192), (65536, 16384), (131072, 4096)]);
}

/// A blktrace binary event (little-endian, as blktrace writes on x86):
/// time in ns, sector, bytes, action (category bits << 16 | action),
/// device (major << 20 | minor), and a payload.
fn blk_event(time: u64, sector: u64, bytes: u32, action: u32, device: u32, pdu: &[u8]) -> Vec<u8> {
    let mut e = Vec::new();
    e.extend(0x6561_7407u32.to_le_bytes());
    e.extend(0u32.to_le_bytes());
    e.extend(time.to_le_bytes());
    e.extend(sector.to_le_bytes());
    e.extend(bytes.to_le_bytes());
    e.extend(action.to_le_bytes());
    e.extend(42u32.to_le_bytes());
    e.extend(device.to_le_bytes());
    e.extend(0u32.to_le_bytes());
    e.extend(0u16.to_le_bytes());
    e.extend((pdu.len() as u16).to_le_bytes());
    e.extend(pdu);
    e
}

/// A blktrace of queued writes, reads and a flush on `device`, with the
/// events around them a real trace has (issues, completions, a notify).
fn blktrace(device: u32) -> Vec<u8> {
    let (read, write, flush, notify) = (1u32, 1u32 << 1, 1u32 << 2, 1u32 << 10);
    let q = |cat: u32| (cat << 16) | 1;
    let mut t = blk_event(0, 0, 0, (notify << 16) | 1, device, b"proc\0");
    let mut at = 1_000u64;
    for (i, (cat, sector, bytes)) in [
        (write, 0u64, 4096u32),
        (write, 8, 8192),
        (read, 0, 4096),
        (read, 1024, 65536),
        (flush, 0, 0),
        (write, 1536, 16384),
        (read, 8, 8192),
    ]
    .into_iter()
    .enumerate()
    {
        at += 1_000 * (i as u64 + 1);
        t.extend(blk_event(at, sector, bytes, q(cat), device, &[]));
        t.extend(blk_event(
            at + 200,
            sector,
            bytes,
            (cat << 16) | 7,
            device,
            &[],
        ));
        t.extend(blk_event(
            at + 900,
            sector,
            bytes,
            (cat << 16) | 8,
            device,
            &[],
        ));
    }
    t
}

/// fio also replays a blktrace binary file with read_iolog: its queued
/// I/Os, with replay_redirect, scale and align, issue what fio 3.33's do.
#[test]
fn a_replayed_blktrace_issues_what_fio_3_33_issues() {
    let dir = TempDir::new("fio-replay-blktrace");
    setup(&dir);
    let log = dir.join("trace.blktrace.0");
    std::fs::write(&log, blktrace((8 << 20) | 99)).unwrap();
    let b = dir.join("B").display().to_string();
    for extra in [
        format!("replay_no_stall=1\nreplay_redirect={b}"),
        format!("replay_no_stall=1\nreplay_redirect={b}\nreplay_scale=2\nreplay_align=8192"),
        format!("replay_redirect={b}\nreplay_skip=read"),
    ] {
        let fio = calls(&replay("fio", &dir, &log, &extra));
        let dl = calls(&replay("drivelab", &dir, &log, &extra));
        assert_eq!(dl, fio, "{extra}");
        let io = dl.iter().filter(|c| c.0 != "fsync").count();
        let want = if extra.contains("skip") { 3 } else { 6 };
        assert_eq!(io, want, "{extra}: {dl:?}");
    }
}

/// Without replay_redirect each traced device is the block device under
/// /dev with its number: both tools find the test's loop device and do the
/// same reads and writes on it.
#[test]
fn a_blktraces_device_is_found_by_its_number() {
    use std::os::unix::fs::MetadataExt;
    let dir = TempDir::new("fio-replay-blktrace-dev");
    let lo = drivelab_testkit::LoopDev::new_in(&dir, 4 << 20);
    let rdev = std::fs::metadata(lo.dev()).unwrap().rdev();
    let (maj, min) = (
        ((rdev >> 8) & 0xfff) as u32,
        ((rdev & 0xff) | ((rdev >> 12) & 0xfff00)) as u32,
    );
    let log = dir.join("dev.blktrace.0");
    std::fs::write(&log, blktrace((maj << 20) | min)).unwrap();
    let job = dir.join("dev.fio");
    std::fs::write(
        &job,
        format!(
            "[dev]\nioengine=psync\ndirect=1\nread_iolog={}\nreplay_no_stall=1\n",
            log.display()
        ),
    )
    .unwrap();
    let mut seen = Vec::new();
    for tool in ["fio", "drivelab"] {
        drivelab_testkit::isolate_store();
        let name = lo.dev().trim_start_matches("/dev/");
        let before = drivelab_testkit::diskstats(name);
        let (j, _) = fio_common::run_json_normal(tool, &job, &dir.join("out"));
        let after = drivelab_testkit::diskstats(name);
        let job = &j["jobs"][0];
        seen.push((
            job["read"]["io_bytes"].clone(),
            job["write"]["io_bytes"].clone(),
            after.2 - before.2,
        ));
    }
    assert_eq!(
        seen[1], seen[0],
        "(read bytes, written bytes, device reads)"
    );
    assert_eq!(seen[0].1, 28672, "{seen:?}");
}
