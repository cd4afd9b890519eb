//! Aliases that appear while a writer runs: a second loop device attached
//! over the target's backing file mid-write was formatted and mounted
//! while drivelab kept writing (828 MiB in 3 s, exit 0), and the new
//! filesystem was corrupt. Every writer (a run on a loop device and on the
//! file itself, a test step write, an erase stream and a zero-out, a trace
//! replay) now
//! stops within about a second, exits 1 with one line naming the new
//! loop device, and the new loop then takes a clean filesystem. Opens that
//! are not aliases (the run's own direct-I/O reopen, a reader, a listing,
//! a second drivelab refused by the claim) do not stop it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use drivelab_testkit::{diskstats, make_image, require_root, run, sh, LoopDev, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");
const MIB: u64 = 1 << 20;

/// How long a writer may take from the alias's attach to its exit.
const STOP_WITHIN: Duration = Duration::from_secs(3);

/// A drivelab child, killed on drop if it still runs.
struct Writer {
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

impl Writer {
    fn start(args: &[String], dir: &TempDir, tag: &str) -> Writer {
        let out = dir.join(&format!("{tag}.out"));
        let err = dir.join(&format!("{tag}.err"));
        let child = Command::new(BIN)
            .args(args)
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .expect("drivelab");
        Writer { child, out, err }
    }

    /// Wait up to `limit` for the exit: (status, stdout, stderr), or None.
    fn wait(&mut self, limit: Duration) -> Option<(i32, String, String)> {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some((
                    st.code().unwrap_or(-1),
                    std::fs::read_to_string(&self.out).unwrap_or_default(),
                    std::fs::read_to_string(&self.err).unwrap_or_default(),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Every writer, writing for about 30 s to `target` (a loop device or,
/// for the file case, the backing file).
fn writers(target: &str, dir: &TempDir) -> Vec<(&'static str, Vec<String>)> {
    let seq = dir.join("steps.toml");
    let mut text = String::from("seed = 1\n");
    for _ in 0..2000 {
        text.push_str("[[step]]\nkind = \"write\"\npattern = \"fixed:0xA5\"\nbs = \"64k\"\n");
    }
    std::fs::write(&seq, text).unwrap();
    let trace = dir.join("loop.iolog");
    let mut t = String::from("fio version 3 iolog\n0 t add\n0 t open\n");
    // fio's iolog v3 stamps are microseconds: one write a millisecond,
    // 30 s of original timing.
    for i in 0..30_000u64 {
        t.push_str(&format!(
            "{} t write {} 65536\n",
            i * 1000,
            (i % 512) * 65536
        ));
    }
    t.push_str("30000000 t close\n");
    std::fs::write(&trace, t).unwrap();
    let certs = dir.join("certs");
    vec![
        (
            "run",
            strings(&[
                "run",
                "--filename",
                target,
                "--rw=write",
                "--bs=64k",
                "--size=32m",
                "--time_based",
                "--runtime=30",
            ]),
        ),
        (
            "test",
            strings(&["test", target, "--sequence", seq.to_str().unwrap()]),
        ),
        (
            "erase",
            strings(&[
                "erase",
                target,
                "--yes",
                "--confirm-serial",
                target,
                "--method",
                "stream",
                "--verify",
                "none",
                "--passes",
                "100",
                // 100 passes of 32 MiB at 64 MiB/s: 50 s of writing.
                "--bus-limit",
                "64m",
                "--certificate-dir",
                certs.to_str().unwrap(),
                // No progress lines on stderr: only the outcome.
                "--output-format",
                "json",
            ]),
        ),
        (
            // Not an I/O loop: BLKZEROOUT range by range.
            "erase zeroout",
            strings(&[
                "erase",
                target,
                "--yes",
                "--confirm-serial",
                target,
                "--method",
                "zeroout",
                "--verify",
                "none",
                "--passes",
                "10000",
                "--certificate-dir",
                certs.to_str().unwrap(),
                "--output-format",
                "json",
            ]),
        ),
        (
            "trace replay",
            strings(&[
                "trace",
                "replay",
                trace.to_str().unwrap(),
                "--target",
                target,
                "--mode",
                "original",
            ]),
        ),
    ]
}

/// Start `args`, let it write, attach a second loop over `file`, and check
/// the writer stops at once naming it; the new loop then formats, mounts
/// and checks clean.
fn stops_for_a_new_alias(what: &str, args: &[String], file: &Path, watch: &str, dir: &TempDir) {
    let mut w = Writer::start(args, dir, what);
    // Writing has begun when the watched device's write counter moves.
    let begun = Instant::now();
    let first = diskstats(watch).2;
    while diskstats(watch).2 == first {
        if let Some((code, out, err)) = w.wait(Duration::from_millis(50)) {
            panic!("{what} ended before the alias: exit {code}: {out} {err}");
        }
        assert!(
            begun.elapsed() < Duration::from_secs(10),
            "{what} does not write"
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(w.wait(Duration::ZERO).is_none(), "{what} ended early");
    let alias = LoopDev::attach(file, &[]);
    let attached = Instant::now();
    let (code, out, err) = w
        .wait(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("{what} kept writing after {} appeared", alias.dev()));
    let took = attached.elapsed();
    assert!(took < STOP_WITHIN, "{what} took {took:?} to stop");
    assert_eq!(code, 1, "{what}: exit {code}: {out} {err}");
    assert_eq!(err.trim().lines().count(), 1, "{what}: {err}");
    assert!(
        err.contains(&format!("{} was attached over the same bytes", alias.dev())),
        "{what}: {err}"
    );
    // Nothing writes the bytes any more: the alias takes a clean filesystem.
    sh("mkfs.ext4", &["-q", "-F", alias.dev()]);
    let mnt = dir.join(&format!("{}-mnt", what.replace(' ', "-")));
    std::fs::create_dir_all(&mnt).unwrap();
    sh("mount", &[alias.dev(), mnt.to_str().unwrap()]);
    std::fs::write(mnt.join("kept"), b"kept").unwrap();
    sh("umount", &[mnt.to_str().unwrap()]);
    sh("e2fsck", &["-fn", alias.dev()]);
}

#[test]
fn every_writer_on_a_loop_stops_when_a_second_loop_appears_over_its_file() {
    require_root();
    let dir = TempDir::new("alias-loop");
    for (what, args) in writers("@", &dir) {
        let img = dir.join(&format!("{}.img", what.replace(' ', "-")));
        make_image(&img, 32 * MIB, &[]);
        let a = LoopDev::attach(&img, &[]);
        let args: Vec<String> = args
            .into_iter()
            .map(|s| if s == "@" { a.dev().to_string() } else { s })
            .collect();
        stops_for_a_new_alias(what, &args, &img, &a.name, &dir);
    }
}

#[test]
fn a_run_on_a_file_stops_when_a_loop_appears_over_it() {
    require_root();
    let dir = TempDir::new("alias-file");
    let img = dir.join("f.img");
    make_image(&img, 32 * MIB, &[]);
    let args = strings(&[
        "run",
        "--filename",
        img.to_str().unwrap(),
        "--rw=write",
        "--bs=64k",
        "--size=32m",
        "--time_based",
        "--runtime=30",
        "--fsync=16",
    ]);
    // The file's writes reach the disk under it; its counter shows them.
    let under = drivelab_device::blockdev::backing_device_of_file(&img)
        .ok()
        .flatten()
        .map(|d| d.name)
        .expect("the disk under the test directory");
    stops_for_a_new_alias("run on a file", &args, &img, &under, &dir);
}

/// A run whose own direct-I/O reopen, a reader of the file, a device
/// listing and a second drivelab (refused by the claim) happen while it
/// writes: none of them is an alias, and the run finishes with exit 0.
#[test]
fn opens_that_are_not_aliases_do_not_stop_a_run() {
    require_root();
    let dir = TempDir::new("alias-none");
    let img = dir.join("f.img");
    make_image(&img, 32 * MIB, &[]);
    let a = LoopDev::attach(&img, &[]);
    let other = dir.join("other.img");
    make_image(&other, 8 * MIB, &[]);
    for (what, target) in [("loop", a.dev()), ("file", img.to_str().unwrap())] {
        let args = strings(&[
            "run",
            "--filename",
            target,
            "--rw=randwrite",
            "--bs=4k",
            "--size=32m",
            "--direct=1",
            "--time_based",
            "--runtime=4",
        ]);
        let mut w = Writer::start(&args, &dir, &format!("quiet-{what}"));
        std::thread::sleep(Duration::from_millis(800));
        sh("sh", &["-c", &format!("cat {} > /dev/null", img.display())]);
        let (code, _, err) = run(BIN, &["devices"]);
        assert_eq!(code, 0, "{err}");
        // A second writer of the same target is refused, and only it.
        let (code, _, err) = run(
            BIN,
            &["run", "--filename", target, "--rw=write", "--size=64k"],
        );
        assert_eq!(code, 2, "the second writer: {err}");
        // A loop over another file is no alias of this one.
        let elsewhere = LoopDev::attach(&other, &[]);
        drop(elsewhere);
        let (code, out, err) = w
            .wait(Duration::from_secs(30))
            .expect("the run did not finish");
        assert_eq!(code, 0, "{what}: {out} {err}");
        assert!(!err.contains("stopped writing"), "{what}: {err}");
    }
}
