//! One table for every writing subcommand: each refused target (mounted,
//! partitioned, filesystem signature, active swap, held open O_EXCL by
//! another process, the running system's disk) is refused by `run`,
//! `test`, `erase` and `trace replay` alike — the same one-line refusal,
//! exit status 2, and the target's bytes and write counter unchanged. They
//! all write through the device claim, so they cannot differ.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use drivelab_testkit::{digest, diskstats, make_image, require_root, run, sh, LoopDev, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");
const MIB: u64 = 1 << 20;

/// Every writing subcommand, as the argument list for target `dev`.
fn writers(dev: &str, trace: &Path, dir: &TempDir) -> Vec<(&'static str, Vec<String>)> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        (
            "run",
            s(&[
                "run",
                "--filename",
                dev,
                "--rw=write",
                "--bs=4k",
                "--size=64k",
            ]),
        ),
        (
            "test",
            s(&[
                "test",
                dev,
                "--step",
                "write",
                "--pattern",
                "fixed:0xA5",
                "--bs",
                "4k",
            ]),
        ),
        (
            "erase",
            s(&[
                "erase",
                dev,
                "--yes",
                "--confirm-serial",
                dev,
                "--method",
                "stream",
                "--verify",
                "none",
                "--certificate-dir",
                dir.join("certs").to_str().unwrap(),
            ]),
        ),
        (
            "trace replay",
            s(&["trace", "replay", trace.to_str().unwrap(), "--target", dev]),
        ),
    ]
}

/// The refusal line without the program's prefix, so the lines of
/// different subcommands compare. The list of processes that have the
/// device open is masked: another test's `losetup` or `udev` may have it
/// open for a moment while one subcommand looks, which is the truth at
/// that instant, not a difference between subcommands (the held test
/// checks its own holder is named in every line).
fn refusal_line(stderr: &str) -> String {
    let line = stderr.trim();
    let line = line
        .strip_prefix("drivelab: ")
        .or_else(|| line.strip_prefix("error: "))
        .unwrap_or(line);
    mask_holders(line)
}

/// Replace "A (pid 1), B (pid 2) have it open; stop A (pid 1), B (pid 2)
/// first" by "<holders> open; stop <holders> first".
fn mask_holders(line: &str) -> String {
    for verb in [" has it open; stop ", " have it open; stop "] {
        if let Some(at) = line.find(verb) {
            let head = &line[..at];
            let list_start = head.rfind("): ").map(|i| i + 3).unwrap_or(0);
            let rest = &line[at + verb.len()..];
            let tail = rest.find(" first").map(|i| &rest[i..]).unwrap_or("");
            return format!(
                "{}<holders> open; stop <holders>{}",
                &line[..list_start],
                tail
            );
        }
    }
    line.to_string()
}

/// Run every writer against `dev`; each must refuse with exit 2, one line
/// containing `needle`, the same line for all, and write nothing.
fn all_refuse(dev: &str, name: Option<&str>, bytes: Option<&Path>, needle: &str, dir: &TempDir) {
    let trace = dir.join("writes.iolog");
    std::fs::write(
        &trace,
        "fio version 3 iolog\n0 t add\n0 t open\n10 t write 0 4096\n20 t write 4096 4096\n30 t close\n",
    )
    .unwrap();
    let mut lines: Vec<(String, String)> = Vec::new();
    for (what, args) in writers(dev, &trace, dir) {
        let before = bytes.map(digest);
        let writes = name.map(|n| diskstats(n).2);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = run(BIN, &argv);
        assert_eq!(
            code, 2,
            "{what} on {dev}: exit {code}, stdout {out}, stderr {err}"
        );
        assert_eq!(
            err.trim().lines().count(),
            1,
            "{what}: one-line error: {err}"
        );
        assert!(
            err.contains(needle),
            "{what} on {dev}: expected {needle:?} in {err}"
        );
        if let Some(p) = bytes {
            assert_eq!(Some(digest(p)), before, "{what} changed the bytes of {dev}");
        }
        if let Some(n) = name {
            assert_eq!(Some(diskstats(n).2), writes, "{what} wrote to {dev}");
        }
        lines.push((what.to_string(), refusal_line(&err)));
    }
    let first = &lines[0].1;
    for (what, l) in &lines[1..] {
        assert_eq!(l, first, "{what} refuses {dev} differently from run");
    }
}

/// An MBR with one Linux partition at sector 2048.
fn mbr() -> Vec<u8> {
    let mut t = vec![0u8; 512];
    let e = &mut t[446..462];
    e[4] = 0x83;
    e[8..12].copy_from_slice(&2048u32.to_le_bytes());
    e[12..16].copy_from_slice(&4096u32.to_le_bytes());
    t[510] = 0x55;
    t[511] = 0xAA;
    t
}

struct Unmount(PathBuf);
impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

struct SwapOff(PathBuf);
impl Drop for SwapOff {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.0).status();
    }
}

struct Holder(Child);
impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A process of its own that holds `dev` open O_EXCL until killed.
fn hold_exclusively(dev: &Path) -> Holder {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import os,sys,time;os.open(sys.argv[1],os.O_RDONLY|os.O_EXCL);print('held',flush=True);time.sleep(600)",
            dev.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(
        line.trim(),
        "held",
        "the holder did not take {}",
        dev.display()
    );
    Holder(child)
}

#[test]
fn every_writer_refuses_a_mounted_device_alike() {
    require_root();
    let dir = TempDir::new("claim-mounted");
    let d = LoopDev::new_in(&dir, 32 * MIB);
    sh("mkfs.ext4", &["-q", "-F", d.dev()]);
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    sh("mount", &[d.dev(), mnt.to_str().unwrap()]);
    let _u = Unmount(mnt.clone());
    // The mounted filesystem writes its own journal: no write counter to
    // compare; the other targets show nothing is written.
    all_refuse(d.dev(), None, None, "mounted", &dir);
}

#[test]
fn every_writer_refuses_a_partitioned_device_alike() {
    require_root();
    let dir = TempDir::new("claim-mbr");
    let img = dir.join("mbr.img");
    make_image(&img, 8 * MIB, &[(0, &mbr())]);
    let d = LoopDev::attach(&img, &[]);
    all_refuse(d.dev(), Some(&d.name), Some(&img), "partition table", &dir);
}

#[test]
fn every_writer_refuses_a_filesystem_signature_alike() {
    require_root();
    let dir = TempDir::new("claim-ext4");
    let img = dir.join("fs.img");
    make_image(&img, 16 * MIB, &[]);
    sh("mkfs.ext4", &["-q", "-F", img.to_str().unwrap()]);
    let d = LoopDev::attach(&img, &[]);
    all_refuse(d.dev(), Some(&d.name), Some(&img), "ext4", &dir);
}

#[test]
fn every_writer_refuses_active_swap_alike() {
    require_root();
    let dir = TempDir::new("claim-swap");
    let img = dir.join("swap.img");
    make_image(&img, 16 * MIB, &[]);
    let d = LoopDev::attach(&img, &[]);
    sh("mkswap", &[d.dev()]);
    sh("swapon", &[d.dev()]);
    let _off = SwapOff(d.path.clone());
    // Active swap is the kernel's to write (it may swap out pages while
    // the test runs): no bytes or counter to compare; the other targets
    // show that a refusal writes nothing.
    all_refuse(d.dev(), None, None, "swap", &dir);
}

#[test]
fn every_writer_refuses_a_device_held_open_exclusively_alike() {
    require_root();
    let dir = TempDir::new("claim-held");
    let img = dir.join("held.img");
    make_image(&img, 8 * MIB, &[(0, &[0x5Au8; 4096])]);
    let d = LoopDev::attach(&img, &[]);
    let h = hold_exclusively(&d.path);
    // Each line names the holder; other processes (a parallel test's
    // losetup) may be named beside it.
    let needle = format!("python3 (pid {})", h.0.id());
    all_refuse(d.dev(), Some(&d.name), Some(&img), &needle, &dir);
    all_refuse(
        d.dev(),
        Some(&d.name),
        Some(&img),
        "held exclusively by another process",
        &dir,
    );
}

#[test]
fn every_writer_refuses_the_running_system_alike() {
    require_root();
    // The device under /. Only the refusal path runs: the claim's
    // assessment refuses it before anything is opened for writing.
    let root_dev = drivelab_testkit::root_device();
    let dir = TempDir::new("claim-root");
    all_refuse(&root_dev, None, None, "running system", &dir);
}

/// The claim each writer took is in its JSON result: what was assessed and
/// how the target was held.
#[test]
fn every_writer_records_its_claim_in_the_result() {
    require_root();
    let dir = TempDir::new("claim-record");
    let d = LoopDev::new_in(&dir, 16 * MIB);
    let dev = d.dev();
    let trace = dir.join("writes.iolog");
    std::fs::write(
        &trace,
        "fio version 3 iolog\n0 t add\n0 t open\n10 t write 0 4096\n30 t close\n",
    )
    .unwrap();
    let certs = dir.join("certs");
    let json = |args: &[&str]| -> serde_json::Value {
        let (code, out, err) = run(BIN, args);
        assert_eq!(code, 0, "{args:?}: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
    };
    let run_doc = json(&[
        "run",
        "--filename",
        dev,
        "--rw=write",
        "--bs=4k",
        "--size=64k",
        "--output-format=json",
    ]);
    let test_doc = json(&[
        "test",
        dev,
        "--step",
        "write",
        "--pattern",
        "fixed:0xA5",
        "--bs",
        "4k",
        "--count",
        "64",
        "--output-format",
        "json",
    ]);
    let erase_doc = json(&[
        "erase",
        dev,
        "--yes",
        "--confirm-serial",
        dev,
        "--verify",
        "none",
        "--certificate-dir",
        certs.to_str().unwrap(),
        "--output-format",
        "json",
    ]);
    let replay_doc = json(&[
        "trace",
        "replay",
        trace.to_str().unwrap(),
        "--target",
        dev,
        "--output-format",
        "json",
    ]);
    for (what, c) in [
        ("run", &run_doc["claims"][0]),
        ("test", &test_doc["claim"]),
        ("erase", &erase_doc["drives"][0]["claim"]),
        ("trace replay", &replay_doc["claim"]),
    ] {
        assert_eq!(c["path"], dev, "{what}: {c}");
        assert_eq!(c["kind"], "block", "{what}: {c}");
        assert_eq!(c["hold"], "exclusive_open", "{what}: {c}");
        assert!(c["findings"].as_array().is_some(), "{what}: {c}");
    }
    assert_eq!(
        erase_doc["drives"][0]["claim"]["consent"]["confirmed_by"], dev,
        "the erase's claim carries the confirmation"
    );
}

#[test]
fn the_holder_list_is_masked_whatever_its_length() {
    let one = "refusing to write to /dev/loop0: it is held exclusively by another process (mounted, in use by another program, or being written by another drivelab): python3 (pid 7) has it open; stop python3 (pid 7) first (--force cannot override this)";
    let two = "refusing to write to /dev/loop0: it is held exclusively by another process (mounted, in use by another program, or being written by another drivelab): losetup (pid 6), python3 (pid 7) have it open; stop losetup (pid 6), python3 (pid 7) first (--force cannot override this)";
    assert_eq!(mask_holders(one), mask_holders(two));
    assert!(mask_holders(one).ends_with(
        "drivelab): <holders> open; stop <holders> first (--force cannot override this)"
    ));
    assert_eq!(mask_holders("is mounted at /mnt"), "is mounted at /mnt");
}
