//! The recorder against a real loop device this test creates: known
//! O_DIRECT reads and writes at known offsets must come back exactly, with
//! completions, and the tracefs instance must be gone afterwards. Each
//! test runs with both recorders (tracefs and BPF).

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use drivelab_trace::record::{RecordOptions, Recorder, RecorderKind};

/// Both recorders, with the reader each must report.
const RECORDERS: [(RecorderKind, &str); 2] =
    [(RecorderKind::Tracefs, "raw"), (RecorderKind::Bpf, "bpf")];
use drivelab_trace::{Op, Request};

fn require_root() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let uid = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap_or("?")
        .to_string();
    assert_eq!(
        uid, "0",
        "this test needs root (loop devices, tracefs); run it as root"
    );
}

struct Scratch(PathBuf);
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A loop device over a file; detached (by its own name) on drop.
struct LoopDev(PathBuf);
impl LoopDev {
    fn attach(file: &Path) -> LoopDev {
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "losetup failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        LoopDev(PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()))
    }
}
impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

/// One O_DIRECT 4 KiB read of `dev` at each of `blocks` (in 4 KiB units).
fn direct_reads(dev: &Path, blocks: impl Iterator<Item = u64>) {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .unwrap();
    let (mut buf, off) = aligned(4096);
    for b in blocks {
        f.read_exact_at(&mut buf[off..off + 4096], b * 4096)
            .unwrap();
    }
}

fn aligned(len: usize) -> (Vec<u8>, usize) {
    let v = vec![0u8; len + 4096];
    let off = v.as_ptr().align_offset(4096);
    (v, off)
}

/// A loop device over a new `size`-byte file in a scratch directory named
/// after `tag` (the directory goes when the Scratch drops, after the
/// device is detached), once udev's probing of it is over.
fn fresh_loop(tag: &str, size: u64) -> (Scratch, LoopDev) {
    let dir = std::env::temp_dir().join(format!("drivelab-trace-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scratch = Scratch(dir.clone());
    let img = dir.join("disk.img");
    std::fs::File::create(&img).unwrap().set_len(size).unwrap();
    let lo = LoopDev::attach(&img);
    let _ = Command::new("udevadm").args(["settle", "-t", "5"]).status();
    std::thread::sleep(Duration::from_millis(300));
    (scratch, lo)
}

#[test]
fn recorder_sees_known_direct_io_exactly() {
    require_root();
    for (kind, reader) in RECORDERS {
        sees_known_direct_io_exactly(kind, reader);
    }
}

fn sees_known_direct_io_exactly(kind: RecorderKind, reader: &str) {
    let (_scratch, lo) = fresh_loop("rec", 64 << 20);
    let opts = RecordOptions {
        recorder: kind,
        ..RecordOptions::default()
    };
    let mut rec = Recorder::start(std::slice::from_ref(&lo.0), &opts).unwrap();
    let instance = rec.instance().to_path_buf();
    assert_eq!(instance.is_dir(), kind == RecorderKind::Tracefs);
    assert_eq!(rec.reader(), reader);

    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&lo.0)
        .unwrap();
    // (op, offset, len): all at or above 1 MiB, away from probe reads.
    let plan: Vec<(Op, u64, u64)> = vec![
        (Op::Write, 1 << 20, 4096),
        (Op::Write, (1 << 20) + 65536, 16384),
        (Op::Read, 1 << 20, 4096),
        (Op::Write, 8 << 20, 65536),
        (Op::Read, (8 << 20) + 4096, 8192),
        (Op::Read, 32 << 20, 512),
        (Op::Write, (40 << 20) + 512, 1024),
        (Op::Read, 63 << 20, 32768),
    ];
    let (mut buf, off) = aligned(65536);
    for (i, (op, offset, len)) in plan.iter().enumerate() {
        let b = &mut buf[off..off + *len as usize];
        match op {
            Op::Write => {
                b.fill(i as u8 + 1);
                f.write_all_at(b, *offset).unwrap();
            }
            _ => f.read_exact_at(b, *offset).unwrap(),
        }
    }
    // A loop device caches writes: fsync sends the kernel's flush request
    // (no data, no sector), which both recorders must keep, completed.
    f.sync_all().unwrap();
    drop(f);
    let mut got: Vec<Request> = rec.poll().unwrap();
    let (rest, summary) = rec.stop().unwrap();
    got.extend(rest);
    assert!(
        !instance.exists(),
        "tracefs instance {} left behind",
        instance.display()
    );
    assert_eq!(summary.lost_events, 0);
    // The device's own count agrees: every request it finished while the
    // recorder was attached came back with a completion.
    assert_eq!(summary.missed_completions, 0, "{reader}: {summary:?}");
    assert!(
        summary.device_finished >= Some(plan.len() as u64),
        "{reader}: {summary:?}"
    );
    assert_eq!(
        (summary.reader.as_str(), summary.clock.as_str()),
        (reader, "mono")
    );
    if kind == RecorderKind::Bpf {
        assert!(["tp_btf", "raw_tp"].contains(&summary.bpf_programs.as_str()));
    }

    let flushes: Vec<&Request> = got.iter().filter(|r| r.op == Op::Flush).collect();
    assert!(
        !flushes.is_empty() && flushes.iter().all(|r| r.complete_ns.is_some()),
        "{reader}: the fsync's flush, completed: {got:?} {summary:?}"
    );
    let ours: Vec<&Request> = got
        .iter()
        .filter(|r| r.op != Op::Flush && r.offset >= 1 << 20)
        .collect();
    let seen: Vec<(Op, u64, u64)> = ours.iter().map(|r| (r.op, r.offset, r.len)).collect();
    assert_eq!(seen, plan, "{reader}: all recorded: {got:?}");
    for r in &ours {
        let c = r.complete_ns.expect("every request completed");
        assert!(c >= r.issue_ns);
    }
    assert!(ours.windows(2).all(|w| w[0].issue_ns <= w[1].issue_ns));
    let (maj, min) = drivelab_trace::record::block_dev_numbers(&lo.0).unwrap();
    assert!(ours
        .iter()
        .all(|r| r.device == drivelab_trace::model::kernel_dev(maj, min)));
}

#[test]
fn recorder_refuses_a_regular_file_and_leaves_no_instance() {
    require_root();
    let before: Vec<_> = std::fs::read_dir("/sys/kernel/tracing/instances")
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let err = match Recorder::start(&[PathBuf::from("/etc/hostname")], &RecordOptions::default()) {
        Err(e) => e,
        Ok(_) => panic!("recorded a regular file"),
    };
    assert!(err.to_string().contains("not a block device"), "{err}");
    let after: Vec<_> = std::fs::read_dir("/sys/kernel/tracing/instances")
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(before, after);
}

/// The kernel overwrites (tracefs) or refuses (a full BPF ring) events
/// nobody reads once the ring is full: a recorder with an 8 KiB buffer per
/// CPU, not polled while 20,000 reads go by (about 2.5 MB of events), must
/// say that it lost events instead of handing back a trace that only
/// looks complete.
#[test]
fn an_unread_small_buffer_that_overflows_reports_its_lost_events() {
    require_root();
    for (kind, reader) in RECORDERS {
        small_buffer_reports_loss(kind, reader);
    }
}

fn small_buffer_reports_loss(kind: RecorderKind, reader: &str) {
    let (_scratch, lo) = fresh_loop("lost", 16 << 20);
    let opts = RecordOptions {
        buffer_kb_per_cpu: 8,
        recorder: kind,
        ..RecordOptions::default()
    };
    let rec = Recorder::start(std::slice::from_ref(&lo.0), &opts).unwrap();
    const READS: u64 = 20_000;
    direct_reads(&lo.0, (0..READS).map(|i| i * 7919 % 4096));
    let (got, summary) = rec.stop().unwrap();
    assert_eq!(summary.reader, reader);
    assert!(
        summary.lost_events > 0,
        "{READS} reads through an 8 KiB buffer, none lost? {summary:?}"
    );
    // What survived is a fraction of the reads: the trace is incomplete.
    assert!((got.len() as u64) < READS, "{} requests", got.len());
    // Whatever was not lost pairs up: every request seen was recorded, and
    // with BPF each record is whole, so issues kept plus lost events
    // account for at least every read.
    if kind == RecorderKind::Bpf {
        assert!(
            got.len() as u64 + summary.lost_events >= READS,
            "{} requests, {} lost of {READS}",
            got.len(),
            summary.lost_events
        );
    }
}

/// Completions that never reach the trace, with no loss reported by the
/// reader, are found against the device's own count: the tracefs
/// instance's completion event is switched off after the start (as a
/// reader that silently misses completions would), 50 reads go by, and
/// the summary must count 50 missed completions (or more, should anything
/// else touch the device) as lost.
#[test]
fn completions_the_device_counted_but_the_trace_lacks_are_reported_missed() {
    require_root();
    let (_scratch, lo) = fresh_loop("missed", 16 << 20);
    let opts = RecordOptions {
        recorder: RecorderKind::Tracefs,
        ..RecordOptions::default()
    };
    let rec = Recorder::start(std::slice::from_ref(&lo.0), &opts).unwrap();
    let off_switch = rec.instance().join("events/block/block_rq_complete/enable");
    std::fs::write(&off_switch, "0").unwrap();
    const READS: u64 = 50;
    direct_reads(&lo.0, (0..READS).map(|i| i * 64 + 256));
    let (got, summary) = rec.stop().unwrap();
    assert!(
        got.iter().filter(|r| r.complete_ns.is_none()).count() as u64 >= READS,
        "{summary:?}"
    );
    assert!(summary.device_finished >= Some(READS), "{summary:?}");
    assert!(summary.missed_completions >= READS, "{summary:?}");
    assert!(summary.lost_events >= summary.missed_completions);
}

/// Each reader spooled (what it reads copied to a scratch file while it
/// runs, decoded and matched at the stop) gives the requests the same
/// reader live gives of the same I/O: two recorders attached at once, four
/// threads reading and writing at once so that several CPUs' buffers fill.
/// The spool leaves no file behind, not even while it runs.
#[test]
fn a_spooled_recording_holds_the_requests_a_live_one_holds() {
    require_root();
    for (kind, reader) in RECORDERS {
        spooled_holds_what_live_holds(kind, reader);
    }
}

fn spooled_holds_what_live_holds(kind: RecorderKind, reader: &str) {
    let (scratch, lo) = fresh_loop("spool", 64 << 20);
    let opts = RecordOptions {
        recorder: kind,
        ..RecordOptions::default()
    };
    // A recorder dropped without a stop takes its tracefs instance along.
    let dropped = Recorder::start(std::slice::from_ref(&lo.0), &opts).unwrap();
    let instance = dropped.instance().to_path_buf();
    assert_eq!(instance.is_dir(), kind == RecorderKind::Tracefs);
    drop(dropped);
    assert!(!instance.is_dir(), "{} left behind", instance.display());
    let mut live = Recorder::start(std::slice::from_ref(&lo.0), &opts).unwrap();
    let mut spooled = Recorder::start(std::slice::from_ref(&lo.0), &opts).unwrap();
    spooled
        .spool_beside(&scratch.0.join("out.dlt"), "--output")
        .unwrap();
    let listing = || {
        let mut v: Vec<String> = std::fs::read_dir(&scratch.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(listing(), ["disk.img"]);
    const PER_THREAD: u64 = 400;
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let dev = &lo.0;
            s.spawn(move || {
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(dev)
                    .unwrap();
                let (mut buf, off) = aligned(4096);
                for i in 0..PER_THREAD {
                    let at = (256 + t * 2048 + i * 5 % 2048) * 4096;
                    let b = &mut buf[off..off + 4096];
                    if i % 3 == 0 {
                        f.write_all_at(b, at).unwrap();
                    } else {
                        f.read_exact_at(b, at).unwrap();
                    }
                }
            });
        }
    });
    // Spooled, nothing is decoded until the stop.
    assert_eq!(spooled.poll().unwrap().len(), 0, "{reader}");
    let mut want = live.poll().unwrap();
    let (rest, live_sum) = live.stop().unwrap();
    want.extend(rest);
    let (got, sum) = spooled.stop().unwrap();
    assert_eq!(listing(), ["disk.img"]);
    for s in [&live_sum, &sum] {
        assert_eq!((s.lost_events, s.reader.as_str()), (0, reader), "{s:?}");
    }
    assert_eq!(sum.requests, got.len() as u64);
    assert_eq!(sum.completed, live_sum.completed, "{sum:?} {live_sum:?}");
    let ours = |v: &[Request]| {
        let mut k: Vec<(u64, Op, u64, bool)> = v
            .iter()
            .filter(|r| r.offset >= 256 * 4096 && r.op != Op::Flush)
            .map(|r| (r.offset, r.op, r.len, r.complete_ns.is_some()))
            .collect();
        k.sort();
        k
    };
    let (want, got_keys) = (ours(&want), ours(&got));
    assert_eq!(want.len() as u64, 4 * PER_THREAD, "{reader}");
    assert!(
        want.iter().all(|k| k.3),
        "{reader}: every request completed"
    );
    assert_eq!(got_keys, want, "{reader}");
    assert!(got.windows(2).all(|w| w[0].issue_ns <= w[1].issue_ns));
}

/// A spool that runs out of space fails the recording in one line that
/// names the output and what to do, and leaves nothing behind: a 256 KiB
/// tmpfs this test mounts holds the spool of 20,000 reads (64 bytes each)
/// only in part.
#[test]
fn a_full_spool_fails_the_recording_saying_what_to_do() {
    require_root();
    let (scratch, lo) = fresh_loop("spoolfull", 16 << 20);
    let full = scratch.0.join("full");
    std::fs::create_dir(&full).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "drivelab-spool-test"])
        .arg(&full)
        .status()
        .unwrap();
    assert!(mounted.success(), "mount tmpfs on {}", full.display());
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&full);
    let opts = RecordOptions {
        recorder: RecorderKind::Bpf,
        ..RecordOptions::default()
    };
    let mut rec = Recorder::start(std::slice::from_ref(&lo.0), &opts).unwrap();
    let out = full.join("t.dlt");
    rec.spool_beside(&out, "--output").unwrap();
    direct_reads(&lo.0, (0..20_000u64).map(|i| i * 7919 % 4096));
    let err = match rec.stop() {
        Ok((_, summary)) => panic!("a 256 KiB spool held 20,000 reads: {summary:?}"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(
        matches!(err, drivelab_trace::TraceError::Spool { .. })
            && msg.contains(&out.display().to_string())
            && msg.contains("free space there")
            && !msg.contains('\n'),
        "{msg}"
    );
    assert_eq!(std::fs::read_dir(&full).unwrap().count(), 0);
}
