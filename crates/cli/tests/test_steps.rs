//! `drivelab test` run as the real binary against loop devices (and files)
//! these tests create. Data written is checked by reading the loop
//! device's backing file directly, against tables written here; errors are
//! provoked by editing the backing file (the loop driver reads it through
//! its page cache, and drivelab reads the loop device with O_DIRECT, so an
//! edit is what the next verify sees) or by a full tmpfs (ENOSPC).

use std::os::unix::fs::FileExt;
use std::path::Path;

use drivelab_testkit::{digest, diskstats, make_image, read_all, run, LoopDev, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn dl(args: &[&str]) -> (i32, String, String) {
    run(BIN, args)
}

fn json(args: &[&str]) -> (i32, serde_json::Value) {
    let mut a = args.to_vec();
    a.extend_from_slice(&["--output-format", "json"]);
    let (code, out, err) = dl(&a);
    let v: serde_json::Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {out}\nstderr: {err}"));
    (code, v)
}

/// Flip (xor 0xFF) one byte of a file and push it to the page cache the
/// loop driver reads.
fn flip(file: &Path, offset: u64) -> u8 {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, offset).unwrap();
    let was = b[0];
    b[0] ^= 0xFF;
    f.write_all_at(&b, offset).unwrap();
    f.sync_all().unwrap();
    was
}

/// Copy one 512-byte block of a file onto another.
fn copy_block(file: &Path, from: u64, to: u64) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)
        .unwrap();
    let mut b = [0u8; 512];
    f.read_exact_at(&mut b, from * 512).unwrap();
    f.write_all_at(&b, to * 512).unwrap();
    f.sync_all().unwrap();
}

/// The first 16 bytes of a 512-byte block of each periodic DMM pattern,
/// written out by hand from the issue's definitions.
const TABLE: &[(&str, [u8; 16])] = &[
    ("allzeros", [0x00; 16]),
    ("allones", [0xFF; 16]),
    ("altzeroandone", [0x55; 16]),
    ("altoneandzero", [0xAA; 16]),
    (
        "incrementing",
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    ),
    (
        "decrementing",
        [
            255, 254, 253, 252, 251, 250, 249, 248, 247, 246, 245, 244, 243, 242, 241, 240,
        ],
    ),
    (
        "walkingones",
        [
            0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20,
            0x40, 0x80,
        ],
    ),
    (
        "walkingzeros",
        [
            0xFE, 0xFD, 0xFB, 0xF7, 0xEF, 0xDF, 0xBF, 0x7F, 0xFE, 0xFD, 0xFB, 0xF7, 0xEF, 0xDF,
            0xBF, 0x7F,
        ],
    ),
    (
        "alt1and0thenalt0and1",
        [
            0xAA, 0x55, 0xAA, 0x55, 0xAA, 0x55, 0xAA, 0x55, 0xAA, 0x55, 0xAA, 0x55, 0xAA, 0x55,
            0xAA, 0x55,
        ],
    ),
    (
        "alt0and1thenalt1and0",
        [
            0x55, 0xAA, 0x55, 0xAA, 0x55, 0xAA, 0x55, 0xAA, 0x55, 0xAA, 0x55, 0xAA, 0x55, 0xAA,
            0x55, 0xAA,
        ],
    ),
    (
        "fixed:0xDEADBEEF",
        [
            0xDE, 0xAD, 0xBE, 0xEF, 0xDE, 0xAD, 0xBE, 0xEF, 0xDE, 0xAD, 0xBE, 0xEF, 0xDE, 0xAD,
            0xBE, 0xEF,
        ],
    ),
];

#[test]
fn each_pattern_writes_its_table_bytes_to_the_device() {
    let dir = TempDir::new("steps-table");
    let lo = LoopDev::new_in(&dir, 1 << 20);
    // Start at LBA 8, 16 blocks: the bytes before and after must stay zero.
    for (name, first) in TABLE {
        let (code, out, err) = dl(&[
            "test",
            lo.dev(),
            "--step",
            "write",
            "--pattern",
            name,
            "--start",
            "8",
            "--count",
            "16",
            "--bs",
            "4k",
        ]);
        assert_eq!(code, 0, "{name}: {out}{err}");
        assert!(out.contains("PASSED"), "{name}: {out}");
        let img = read_all(&lo.backing);
        for blk in 8..24usize {
            let b = &img[blk * 512..blk * 512 + 512];
            assert_eq!(&b[..16], first, "{name}: block {blk}");
            // Every 512-byte block is the same: the 16-byte start repeats
            // with the pattern's period (1, 2, 4, 8 or 256 bytes).
            assert_eq!(b, &img[8 * 512..9 * 512], "{name}: block {blk} differs");
        }
        for i in (256..512).step_by(37) {
            let expect = match *name {
                "incrementing" => (i % 256) as u8,
                "decrementing" => 255 - (i % 256) as u8,
                _ => first[i % 16],
            };
            assert_eq!(img[8 * 512 + i], expect, "{name}: byte {i}");
        }
        assert!(
            img[..8 * 512].iter().all(|&b| b == 0),
            "{name}: wrote before the range"
        );
        assert!(
            img[24 * 512..].iter().all(|&b| b == 0),
            "{name}: wrote past the range"
        );
    }

    // random: reproducible from the seed, different for another seed,
    // different per block, not a constant.
    let write_random = |seed: &str, start: &str| {
        let (code, out, err) = dl(&[
            "test",
            lo.dev(),
            "--step",
            "write",
            "--pattern",
            "random",
            "--seed",
            seed,
            "--start",
            start,
            "--count",
            "8",
        ]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(
            out.contains(&format!("seed {seed}")),
            "seed not in the log: {out}"
        );
    };
    let block = |lba: usize| read_all(&lo.backing)[lba * 512..lba * 512 + 512].to_vec();
    write_random("11", "100");
    let a = block(100);
    write_random("12", "100");
    assert_ne!(block(100), a, "another seed must give other data");
    write_random("11", "100");
    assert_eq!(block(100), a, "the same seed must reproduce the data");
    write_random("11", "200");
    assert_ne!(block(200), a, "data must be keyed by LBA");
    let distinct: std::collections::HashSet<u8> = a.iter().copied().collect();
    assert!(distinct.len() > 100, "random data is not random");

    // stamped: magic, then the LBA (little-endian) in every block.
    let (code, out, err) = dl(&[
        "test",
        lo.dev(),
        "--step",
        "write",
        "--pattern",
        "stamped",
        "--seed",
        "5",
        "--start",
        "40",
        "--count",
        "8",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let img = read_all(&lo.backing);
    for lba in 40..48u64 {
        let b = &img[lba as usize * 512..];
        assert_eq!(&b[..8], b"DLSTAMP1", "stamp magic at LBA {lba}");
        assert_eq!(&b[8..16], &lba.to_le_bytes(), "stamped LBA at {lba}");
        assert_eq!(&b[16..24], &5u64.to_le_bytes(), "run id (= seed) at {lba}");
        assert_eq!(&b[24..32], &1u64.to_le_bytes(), "pass at {lba}");
    }
}

#[test]
fn write_verify_of_every_pattern_passes_and_moves_exactly_the_range() {
    let dir = TempDir::new("steps-wv");
    let lo = LoopDev::new_in(&dir, 2 << 20);
    let mut names: Vec<&str> = TABLE.iter().map(|t| t.0).collect();
    names.extend_from_slice(&["random", "stamped"]);
    for (i, name) in names.iter().enumerate() {
        let order = ["sequential", "random", "butterfly"][i % 3];
        let before = diskstats(&lo.name);
        let (code, v) = json(&[
            "test",
            lo.dev(),
            "--step",
            "write-verify",
            "--pattern",
            name,
            "--count",
            "3000",
            "--start",
            "17",
            "--bs",
            "4k-64k",
            "--order",
            order,
            "--qd",
            "4",
            "--seed",
            "3",
        ]);
        let after = diskstats(&lo.name);
        assert_eq!(code, 0, "{name}: {v}");
        let s = &v["steps"][0];
        assert_eq!(s["status"], "PASSED", "{name}: {v}");
        assert_eq!(s["blocks_transferred"], 6000, "{name}");
        assert_eq!(s["passes"][0]["op"], "write");
        assert_eq!(s["passes"][1]["op"], "read");
        assert_eq!(s["passes"][1]["compared"], true);
        // The kernel's own count: exactly the range written once (512-byte
        // sectors = the loop device's logical blocks). Reads are counted on
        // a read-only verify below: a writing step's safety check also
        // reads the head and tail of the device.
        assert_eq!(after.3 - before.3, 3000, "{name}: sectors written");
        let before = diskstats(&lo.name);
        let (code, v) = json(&[
            "test",
            lo.dev(),
            "--step",
            "verify",
            "--pattern",
            name,
            "--count",
            "3000",
            "--start",
            "17",
            "--bs",
            "2k-16k",
            "--order",
            "butterfly",
            "--qd",
            "2",
            "--seed",
            "3",
        ]);
        let after = diskstats(&lo.name);
        assert_eq!(code, 0, "{name}: {v}");
        assert_eq!(v["steps"][0]["status"], "PASSED", "{name}: {v}");
        assert_eq!(after.1 - before.1, 3000, "{name}: sectors read");
        assert_eq!(after.3 - before.3, 0, "{name}: a verify wrote");
    }
}

/// A whole-device write of `pattern` at QD 1, then checks it passed.
fn fill(lo: &LoopDev, pattern: &str, seed: &str) {
    let (code, out, err) = dl(&[
        "test",
        lo.dev(),
        "--step",
        "write",
        "--pattern",
        pattern,
        "--seed",
        seed,
        "--qd",
        "4",
    ]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn verify_names_exactly_the_flipped_lba_and_fails() {
    let dir = TempDir::new("steps-flip");
    let lo = LoopDev::new_in(&dir, 2 << 20);
    fill(&lo, "incrementing", "1");
    let (code, v) = json(&[
        "test",
        lo.dev(),
        "--step",
        "verify",
        "--pattern",
        "incrementing",
    ]);
    assert_eq!(code, 0, "clean device must verify: {v}");
    let was = flip(&lo.backing, 3001 * 512 + 77);
    assert_eq!(was, 77, "incrementing byte 77 of a block");
    let (code, out, _) = dl(&[
        "test",
        lo.dev(),
        "--step",
        "verify",
        "--pattern",
        "incrementing",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("LBA 3001"), "{out}");
    assert!(out.contains("FAILED"), "{out}");
    let (code, v) = json(&[
        "test",
        lo.dev(),
        "--step",
        "verify",
        "--pattern",
        "incrementing",
        "--on-error",
        "continue",
        "--bs",
        "8k-32k",
        "--order",
        "random",
        "--qd",
        "8",
    ]);
    assert_eq!(code, 1);
    let s = &v["steps"][0];
    assert_eq!(s["status"], "FAILED");
    assert_eq!(s["miscompares"], 1, "{v}");
    let f = &s["failures"][0];
    assert_eq!(f["type"], "miscompare");
    assert_eq!(f["lba"], 3001);
    assert_eq!(f["block_offset"], 77);
    assert_eq!(f["byte_offset"], 3001 * 512 + 77);
    // Expected: 77, 78, … (32 bytes); found: the flipped byte, then the same.
    let exp: Vec<String> = (77..77 + 32).map(|b| format!("{b:02X}")).collect();
    assert_eq!(f["expected"], exp.join(" "));
    let mut found = exp.clone();
    found[0] = format!("{:02X}", 77 ^ 0xFF);
    assert_eq!(f["found"], found.join(" "));
    assert!(s["error"].as_str().unwrap().contains("LBA 3001"));
    assert_eq!(v["exit_status"], 1);
}

#[test]
fn stamped_verify_names_a_misdirected_block_and_its_owner() {
    let dir = TempDir::new("steps-misdirect");
    let lo = LoopDev::new_in(&dir, 2 << 20);
    fill(&lo, "stamped", "77");
    copy_block(&lo.backing, 100, 2000);
    let (code, v) = json(&[
        "test",
        lo.dev(),
        "--step",
        "verify",
        "--pattern",
        "stamped",
        "--seed",
        "77",
        "--on-error",
        "continue",
    ]);
    assert_eq!(code, 1);
    let s = &v["steps"][0];
    assert_eq!(s["miscompares"], 1, "{v}");
    let f = &s["failures"][0];
    assert_eq!(f["lba"], 2000);
    assert_eq!(f["kind"], "misdirected");
    assert_eq!(f["belongs_to"], 100);
    let (_, out, _) = dl(&[
        "test",
        lo.dev(),
        "--step",
        "verify",
        "--pattern",
        "stamped",
        "--seed",
        "77",
    ]);
    assert!(
        out.contains("LBA 2000") && out.contains("misdirected") && out.contains("LBA 100"),
        "{out}"
    );
    // Swap two blocks: each is reported as misdirected, naming the other.
    fill(&lo, "stamped", "77");
    let img = read_all(&lo.backing);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&lo.backing)
        .unwrap();
    f.write_all_at(&img[300 * 512..301 * 512], 3000 * 512)
        .unwrap();
    f.write_all_at(&img[3000 * 512..3001 * 512], 300 * 512)
        .unwrap();
    f.sync_all().unwrap();
    let (code, v) = json(&[
        "test",
        lo.dev(),
        "--step",
        "verify",
        "--pattern",
        "stamped",
        "--seed",
        "77",
        "--on-error",
        "continue",
        "--order",
        "random",
        "--qd",
        "8",
    ]);
    assert_eq!(code, 1);
    let s = &v["steps"][0];
    assert_eq!(s["miscompares"], 2, "{v}");
    let mut got: Vec<(u64, u64)> = s["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["kind"], "misdirected");
            (
                f["lba"].as_u64().unwrap(),
                f["belongs_to"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(got, vec![(300, 3000), (3000, 300)]);
}

#[test]
fn stop_on_error_policies_do_what_they_say() {
    let dir = TempDir::new("steps-policy");
    let lo = LoopDev::new_in(&dir, 2 << 20);
    fill(&lo, "decrementing", "1");
    for lba in [1000u64, 2000, 3000] {
        flip(&lo.backing, lba * 512 + 5);
    }
    let seq = |policy: &str| {
        let p = dir.join(&format!("{policy}.toml"));
        std::fs::write(
            &p,
            format!(
                "[[step]]\nkind = \"verify\"\npattern = \"decrementing\"\nbs = \"4k\"\non_error = \"{policy}\"\n\n[[step]]\nkind = \"read\"\ncount = 64\n"
            ),
        )
        .unwrap();
        let (code, v) = json(&["test", lo.dev(), "--sequence", p.to_str().unwrap()]);
        assert_eq!(code, 1, "{policy}: {v}");
        v
    };
    // stop-test: the step ends at the first error; the next step runs.
    let v = seq("stop-test");
    let s = &v["steps"][0];
    assert_eq!(s["miscompares"], 1);
    assert_eq!(s["failures"][0]["lba"], 1000);
    let moved = s["blocks_transferred"].as_u64().unwrap();
    // QD 1, 8-block reads: the failing read ends at 1008; one more read
    // is already in flight while it is compared (and is drained, not
    // checked), so at most 1016.
    assert!(
        (1008..=1016).contains(&moved),
        "stopped after {moved} blocks (QD 1, 8-block reads)"
    );
    assert_eq!(v["steps"][1]["status"], "PASSED");
    // stop-sequence: same first step, the rest skipped.
    let v = seq("stop-sequence");
    assert_eq!(v["steps"][0]["miscompares"], 1);
    assert_eq!(v["steps"][1]["status"], "SKIPPED");
    assert_eq!(v["steps"][1]["blocks_transferred"], 0);
    // continue: every error, every block.
    let v = seq("continue");
    let s = &v["steps"][0];
    assert_eq!(s["miscompares"], 3);
    let lbas: Vec<u64> = s["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["lba"].as_u64().unwrap())
        .collect();
    assert_eq!(lbas, vec![1000, 2000, 3000]);
    assert_eq!(s["blocks_transferred"], 4096);
    assert_eq!(v["steps"][1]["status"], "PASSED");
}

/// A tmpfs of 1 MiB mounted by the test (unmounted on drop).
struct SmallTmpfs(std::path::PathBuf);
impl SmallTmpfs {
    fn new(dir: &TempDir) -> SmallTmpfs {
        let p = dir.join("small");
        std::fs::create_dir_all(&p).unwrap();
        drivelab_testkit::sh(
            "mount",
            &["-t", "tmpfs", "-o", "size=1m", "tmpfs", p.to_str().unwrap()],
        );
        SmallTmpfs(p)
    }
}
impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        // The kernel drops an exited process's io_uring (and the file it
        // registered) asynchronously, so the mount can be busy for a moment.
        for _ in 0..50 {
            let ok = std::process::Command::new("umount")
                .arg(&self.0)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn io_error_names_the_lba_range_and_errno_after_retries() {
    drivelab_testkit::require_root();
    let dir = TempDir::new("steps-enospc");
    let fs = SmallTmpfs::new(&dir);
    let file = fs.0.join("sparse.img");
    make_image(&file, 4 << 20, &[]);
    let (code, v) = json(&[
        "test",
        file.to_str().unwrap(),
        "--step",
        "write",
        "--pattern",
        "allones",
        "--bs",
        "64k",
        "--retries",
        "2",
    ]);
    assert_eq!(code, 1, "{v}");
    let s = &v["steps"][0];
    assert_eq!(s["io_errors"], 1);
    let f = &s["failures"][0];
    assert_eq!(f["type"], "io");
    assert_eq!(f["op"], "write");
    assert_eq!(f["errno"], 28, "ENOSPC");
    assert_eq!(f["retries"], 2);
    assert_eq!(f["blocks"], 128);
    // Second route: what tmpfs allocated is exactly what was written before
    // the failing command.
    use std::os::unix::fs::MetadataExt;
    let allocated = std::fs::metadata(&file).unwrap().blocks() * 512;
    let lba = f["lba"].as_u64().unwrap();
    assert_eq!(lba * 512, allocated, "first failing LBA vs allocated bytes");
    assert_eq!(s["blocks_transferred"], lba);
    let line = s["error"].as_str().unwrap();
    assert!(line.contains(&format!("LBA {lba}-{}", lba + 127)), "{line}");
    assert!(line.contains("No space left"), "{line}");
    drop(fs);
}

#[test]
fn sequence_of_three_steps_logs_test_1_to_3_of_3() {
    let dir = TempDir::new("steps-seq");
    let lo = LoopDev::new_in(&dir, 1 << 20);
    let p = dir.join("seq.toml");
    std::fs::write(
        &p,
        "seed = 9\n[[step]]\nkind = \"write\"\npattern = \"random\"\n\n[[step]]\nkind = \"verify\"\npattern = \"random\"\norder = \"butterfly\"\nbs = \"1k-16k\"\n\n[[step]]\nkind = \"read\"\norder = \"random\"\nqd = 4\n",
    )
    .unwrap();
    let log = dir.join("test.log");
    let (code, out, err) = dl(&[
        "test",
        lo.dev(),
        "--sequence",
        p.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let logged = std::fs::read_to_string(&log).unwrap();
    for text in [&out, &logged] {
        let a = text.find("TEST 1 of 3").expect("TEST 1 of 3");
        let b = text.find("TEST 2 of 3").expect("TEST 2 of 3");
        let c = text.find("TEST 3 of 3").expect("TEST 3 of 3");
        assert!(a < b && b < c);
        assert_eq!(text.matches("PASSED").count(), 4, "{text}"); // 3 steps + summary
        for k in [
            "Write Test; Sequential; for 2,048 Blocks",
            "Read-Compare Test; Butterfly;",
            "Read Test; Random;",
            "Fixed-Length Transfers of 128 (0x0080) Blocks",
            "Variable-Length Transfers of 2 (0x0002) to 32 (0x0020) Blocks",
            "Data Pattern: Random, seed 9",
            "Queue Depth = 4",
            "FUA = OFF",
            "Stop-on-Error Type: Stop Current Test",
            "Transfer Rate:",
            "I/O Per Second:",
            "Number of Blocks Transferred: 2,048",
            "Fastest Command Completion Time:",
            "Slowest Command Completion Time:",
            "Average Command Completion Time:",
            "Standard Deviation of Command Completion Times:",
        ] {
            assert!(text.contains(k), "missing {k:?} in:\n{text}");
        }
    }
}

#[test]
fn refused_write_leaves_the_device_untouched() {
    let dir = TempDir::new("steps-refuse");
    let img = dir.join("fs.img");
    // An ext4 superblock magic (0xEF53 little-endian at byte 1080).
    make_image(&img, 1 << 20, &[(1080, &[0x53, 0xEF])]);
    let lo = LoopDev::attach(&img, &[]);
    let before = digest(&img);
    let (code, out, err) = dl(&[
        "test",
        lo.dev(),
        "--step",
        "write-verify",
        "--pattern",
        "allones",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("refusing"), "{err}");
    assert_eq!(digest(&img), before, "a refused step changed the device");
    // A read-only step is allowed.
    let (code, _, err) = dl(&["test", lo.dev(), "--step", "read", "--count", "16"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let dir = TempDir::new("steps-bad");
    let file = dir.join("f.img");
    make_image(&file, 1 << 20, &[]);
    let f = file.to_str().unwrap();
    let badseq = dir.join("bad.toml");
    std::fs::write(&badseq, "[[step]]\nkind = \"write\"\nbs = \"huge\"\n").unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["test", f],
        vec!["test", f, "--step", "erase"],
        vec!["test", f, "--step", "write", "--bs", "1000"],
        vec!["test", f, "--step", "write", "--pattern", "stripes"],
        vec!["test", f, "--step", "write", "--count", "4096"],
        vec!["test", f, "--step", "write", "--start", "2048"],
        vec!["test", f, "--step", "write", "--order", "zigzag"],
        vec!["test", f, "--step", "write", "--qd", "0"],
        vec!["test", f, "--step", "write", "--on-error", "ignore"],
        vec!["test", f, "--step", "verify", "--pattern", "random"],
        vec!["test", f, "--step", "write", "--sequence", "x.toml"],
        vec!["test", f, "--sequence", badseq.to_str().unwrap()],
        vec!["test", "/nonexistent/dev", "--step", "read"],
    ];
    let before = digest(&file);
    for c in cases {
        let (code, out, err) = dl(&c);
        assert_eq!(code, 2, "{c:?}: {out}{err}");
        assert!(out.is_empty(), "{c:?}: {out}");
        assert_eq!(err.trim().lines().count(), 1, "{c:?}: {err}");
    }
    assert_eq!(digest(&file), before);
    let (code, v) = json(&["test", f, "--step", "write", "--bs", "1000"]);
    assert_eq!(code, 2);
    assert_eq!(v["exit_status"], 2);
    assert!(v["error"].as_str().unwrap().contains("bs"), "{v}");
}

#[test]
fn regular_file_uses_the_given_block_size() {
    let dir = TempDir::new("steps-file");
    let file = dir.join("f.img");
    make_image(&file, 1 << 20, &[]);
    let f = file.to_str().unwrap();
    let (code, v) = json(&[
        "test",
        f,
        "--block-size",
        "4096",
        "--step",
        "write-verify",
        "--pattern",
        "stamped",
        "--seed",
        "1",
        "--bs",
        "16k",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["block_size"], 4096);
    assert_eq!(v["steps"][0]["block_count"], 256);
    let img = read_all(&file);
    for lba in [0u64, 1, 255] {
        let at = lba as usize * 4096;
        assert_eq!(&img[at..at + 8], b"DLSTAMP1");
        assert_eq!(&img[at + 8..at + 16], &lba.to_le_bytes());
    }
}

#[test]
fn fua_reaches_the_block_layer_only_when_asked() {
    use drivelab_testkit::IssueTrace;
    let dir = TempDir::new("steps-fua");
    let lo = LoopDev::new_in(&dir, 1 << 20);
    let fua_native = std::fs::read_to_string(format!("/sys/block/{}/queue/fua", lo.name))
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    let trace_write = |extra: &[&str]| {
        let t = IssueTrace::start(&lo.path);
        let mut a = vec![
            "test",
            lo.dev(),
            "--step",
            "write",
            "--count",
            "256",
            "--bs",
            "16k",
        ];
        a.extend_from_slice(extra);
        let (code, out, err) = dl(&a);
        assert_eq!(code, 0, "{out}{err}");
        t.stop()
    };
    let plain = trace_write(&[]);
    let writes = plain.iter().filter(|r| r.rwbs.contains('W')).count();
    assert_eq!(writes, 8, "{plain:?}");
    assert!(
        plain.iter().all(|r| !r.rwbs.contains('F')),
        "FUA or flush without --fua: {plain:?}"
    );
    let fua = trace_write(&["--fua"]);
    if fua_native {
        let f = fua.iter().filter(|r| r.rwbs.starts_with("WF")).count();
        assert_eq!(f, 8, "every write FUA: {fua:?}");
    } else {
        // No FUA in the device: the block layer emulates it with a flush
        // after the writes.
        assert!(fua.iter().any(|r| r.rwbs.starts_with("FF")), "{fua:?}");
    }
}

#[test]
fn write_same_on_a_loop_device_is_refused_before_any_step_writes() {
    // A loop device answers no SCSI or ATA command: a sequence whose second
    // step is write-same is refused whole (exit 2, one line naming what the
    // device lacks and suggesting --step write), the first step unwritten.
    let dir = TempDir::new("steps-ws-refuse");
    let lo = LoopDev::new_in(&dir, 1 << 20);
    let before = digest(&lo.backing);
    let (code, out, err) = dl(&[
        "test",
        lo.dev(),
        "--step",
        "write",
        "--step",
        "write-same",
        "--pattern",
        "allones",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("step 2: write-same"), "{err}");
    assert!(err.contains("neither SCSI nor ATA"), "{err}");
    assert!(err.contains("use --step write"), "{err}");
    assert_eq!(digest(&lo.backing), before, "a refused sequence wrote");
    // A pattern that differs per block is refused before the device is asked.
    let (code, _, err) = dl(&[
        "test",
        lo.dev(),
        "--step",
        "write-same",
        "--pattern",
        "random",
        "--seed",
        "1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("differs in every block"), "{err}");
    assert_eq!(digest(&lo.backing), before);
}

#[test]
fn repeated_step_flags_run_in_order_and_are_shown_side_by_side() {
    let dir = TempDir::new("steps-repeat");
    let lo = LoopDev::new_in(&dir, 1 << 20);
    let (code, out, err) = dl(&[
        "test",
        lo.dev(),
        "--step",
        "write",
        "--step",
        "verify",
        "--pattern",
        "decrementing",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let a = out.find("TEST 1 of 2").expect("TEST 1 of 2");
    let b = out.find("TEST 2 of 2").expect("TEST 2 of 2");
    assert!(a < b);
    let s = out.find("Summary, side by side").expect("summary");
    assert!(s > b, "{out}");
    let rows: Vec<&str> = out[s..].lines().skip(2).take(2).collect();
    assert!(
        rows[0].contains(" write ") && rows[0].contains("2,048"),
        "{rows:?}"
    );
    assert!(
        rows[1].contains(" verify ") && rows[1].contains("passed"),
        "{rows:?}"
    );
}
