//! One table for every writing subcommand: each refused target (mounted,
//! partitioned, filesystem signature, active swap, held open O_EXCL by
//! another process, the running system's disk) is refused by `run`,
//! `test`, `erase` and `trace replay` alike — the same one-line refusal,
//! exit status 2, and the target's bytes and write counter unchanged. They
//! all write through the device claim, so they cannot differ. A target
//! whose bytes another user has (mounted, swap, held, or under a device
//! that is) is refused the same with `--force`, and the line never offers
//! `--force` nor advises wiping bytes a live user relies on.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use drivelab_testkit::{
    digest, diskstats, make_image, mkfs_ext4, read_all, require_root, run, sh, LoopDev, Mounted,
    TempDir,
};

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
    refuse_all(dev, name, bytes, needle, dir, false);
}

/// [`all_refuse`], then again with `--force`, which must change nothing:
/// the refusal says `--force` cannot override it and offers neither
/// `--force` nor a wipe.
fn all_refuse_even_forced(
    dev: &str,
    name: Option<&str>,
    bytes: Option<&Path>,
    needle: &str,
    dir: &TempDir,
) {
    refuse_all(dev, name, bytes, needle, dir, false);
    refuse_all(dev, name, bytes, needle, dir, true);
}

fn refuse_all(
    dev: &str,
    name: Option<&str>,
    bytes: Option<&Path>,
    needle: &str,
    dir: &TempDir,
    force: bool,
) {
    let trace = dir.join("writes.iolog");
    std::fs::write(
        &trace,
        "fio version 3 iolog\n0 t add\n0 t open\n10 t write 0 4096\n20 t write 4096 4096\n30 t close\n",
    )
    .unwrap();
    let mut lines: Vec<(String, String)> = Vec::new();
    for (what, mut args) in writers(dev, &trace, dir) {
        if force {
            args.push("--force".into());
        }
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
        // --force is offered only when it would let the write through.
        let hard = err.contains("--force cannot override");
        assert!(
            !(hard && err.contains("pass --force")),
            "{what} on {dev}: {err}"
        );
        if force {
            assert!(hard, "{what} on {dev} with --force: {err}");
            assert!(!err.contains("wipefs"), "{what} on {dev}: {err}");
        }
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
    let _m = Mounted::mount_in(d.dev(), &dir, "mnt", None);
    // The mounted filesystem writes its own journal: no write counter to
    // compare; the other targets show nothing is written.
    all_refuse_even_forced(d.dev(), None, None, "mounted", &dir);
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
    all_refuse_even_forced(d.dev(), None, None, "swap", &dir);
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
    all_refuse_even_forced(
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
    all_refuse_even_forced(&root_dev, None, None, "running system", &dir);
}

/// A mounted ext4 made without lazy initialisation and synced, so that it
/// writes nothing more while the test looks.
fn mount_ext4(dev: &str, dir: &TempDir, tag: &str) -> Mounted {
    mkfs_ext4(dev);
    Mounted::mount_in(dev, dir, tag, None)
}

/// A loop B with a loop T stacked on it and T mounted was written with
/// --force, which B's refusal offered, and T's filesystem broke.
#[test]
fn every_writer_refuses_a_device_under_a_mounted_stacked_loop_even_forced() {
    require_root();
    let dir = TempDir::new("claim-stacked");
    let b = LoopDev::new_in(&dir, 32 * MIB);
    let t = LoopDev::attach(&b.path, &[]);
    {
        let _u = mount_ext4(t.dev(), &dir, "mnt");
        all_refuse_even_forced(
            b.dev(),
            Some(&b.name),
            None,
            &format!("{} is mounted at", t.dev()),
            &dir,
        );
    }
    sh("e2fsck", &["-fn", t.dev()]);
}

/// A disk whose partition is mounted was told "pass --force".
#[test]
fn every_writer_refuses_a_disk_with_a_mounted_partition_even_forced() {
    require_root();
    let dir = TempDir::new("claim-partmnt");
    let img = dir.join("disk.img");
    make_image(&img, 32 * MIB, &[(0, &mbr())]);
    let d = LoopDev::attach(&img, &["-P"]);
    let part = format!("{}p1", d.dev());
    // Kernels without the MBR parser need the table added from user space.
    std::thread::sleep(std::time::Duration::from_millis(100));
    if !Path::new(&part).exists() {
        sh("partx", &["-a", d.dev()]);
    }
    for _ in 0..100 {
        if Path::new(&part).exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    {
        let _u = mount_ext4(&part, &dir, "mnt");
        all_refuse_even_forced(
            d.dev(),
            Some(&d.name),
            None,
            &format!("{part} is mounted at"),
            &dir,
        );
    }
    sh("e2fsck", &["-fn", &part]);
}

/// The refusal of a loop over the same bytes as a mounted filesystem
/// advised `wipefs -a` on it, which would wipe the mounted signature.
#[test]
fn every_writer_refuses_an_alias_of_a_mounted_filesystem_without_advising_wipefs() {
    require_root();
    let dir = TempDir::new("claim-alias");
    let img = dir.join("fs.img");
    make_image(&img, 32 * MIB, &[]);
    let m = LoopDev::attach(&img, &[]);
    let a = LoopDev::attach(&img, &[]);
    {
        let _u = mount_ext4(m.dev(), &dir, "mnt");
        for force in [false, true] {
            refuse_all(a.dev(), Some(&a.name), None, "shares bytes", &dir, force);
            let (code, _, err) = run(
                BIN,
                &["run", "--filename", a.dev(), "--rw=write", "--size=64k"],
            );
            assert_eq!(code, 2, "{err}");
            assert!(err.contains("ext4") && !err.contains("wipefs"), "{err}");
            assert!(err.contains(&format!("unmount {} first", m.dev())), "{err}");
        }
    }
    sh("e2fsck", &["-fn", m.dev()]);
}

/// An active swap file was written until the kernel failed the first
/// write (exit 1): it is refused before, as swap, with exit 2 (the file
/// itself by `run`, a loop over it by every writer).
#[test]
fn every_writer_refuses_an_active_swap_file_alike() {
    require_root();
    let dir = TempDir::new("claim-swapfile");
    let img = dir.join("swap.img");
    // A swap file may have no holes: written, not sparse.
    std::fs::write(&img, vec![0u8; 16 * MIB as usize]).unwrap();
    sh("chmod", &["600", img.to_str().unwrap()]);
    sh("mkswap", &[img.to_str().unwrap()]);
    let l = LoopDev::attach(&img, &[]);
    sh("swapon", &[img.to_str().unwrap()]);
    let _off = SwapOff(img.clone());
    let needle = format!("{} is an active swap file", img.display());
    all_refuse_even_forced(l.dev(), Some(&l.name), None, &needle, &dir);
    for force in [false, true] {
        let mut args = vec![
            "run",
            "--filename",
            img.to_str().unwrap(),
            "--rw=write",
            "--size=64k",
        ];
        if force {
            args.push("--force");
        }
        let (code, _, err) = run(BIN, &args);
        assert_eq!(code, 2, "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(&needle) && err.contains("swapoff"), "{err}");
        assert!(!err.contains("pass --force"), "{err}");
    }
}

/// The same device given twice, once through a symlink, was refused as
/// "held by drivelab itself"; it is named as given twice, exit 2, with
/// nothing written. A symlink given and confirmed as such confirms.
#[test]
fn a_target_given_twice_through_a_symlink_is_named_so_and_a_symlink_confirms() {
    require_root();
    let dir = TempDir::new("claim-twice");
    let img = dir.join("d.img");
    make_image(&img, 16 * MIB, &[(4096, &[0x5Au8; 4096])]);
    let d = LoopDev::attach(&img, &[]);
    let link = dir.join("link");
    std::os::unix::fs::symlink(&d.path, &link).unwrap();
    let l = link.to_str().unwrap();
    let certs = dir.join("certs");
    let c = certs.to_str().unwrap();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "run",
            vec![
                "run",
                "--filename",
                d.dev(),
                "--filename",
                l,
                "--rw=write",
                "--size=64k",
            ],
        ),
        (
            "erase",
            vec![
                "erase",
                d.dev(),
                l,
                "--yes",
                "--confirm-serial",
                d.dev(),
                "--confirm-serial",
                l,
                "--method",
                "stream",
                "--verify",
                "none",
                "--certificate-dir",
                c,
            ],
        ),
    ];
    for (what, args) in cases {
        let (before, writes) = (digest(&img), diskstats(&d.name).2);
        let (code, out, err) = run(BIN, &args);
        assert_eq!(code, 2, "{what}: {out} {err}");
        assert_eq!(err.trim().lines().count(), 1, "{what}: {err}");
        assert!(
            err.contains(&format!(
                "{l} is the same device as {}, given twice",
                d.dev()
            )),
            "{what}: {err}"
        );
        assert!(!err.contains("held"), "{what}: {err}");
        assert_eq!(digest(&img), before, "{what} wrote");
        assert_eq!(diskstats(&d.name).2, writes, "{what} wrote");
    }
    // Confirmed by the symlink it is given as: erased.
    let (code, out, err) = run(
        BIN,
        &[
            "erase",
            l,
            "--yes",
            "--confirm-serial",
            l,
            "--method",
            "stream",
            "--verify",
            "none",
            "--certificate-dir",
            c,
            "--output-format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{out} {err}");
    assert!(
        read_all(&img).iter().all(|b| *b == 0),
        "the confirmed erase did not write"
    );
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
