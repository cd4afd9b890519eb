//! fio's verify options that change what a verifying job does, run under
//! fio 3.33 and drivelab with the same job file: `verify_only` counts a
//! writing job's writes without issuing them and checks what an earlier run
//! wrote; `verify_offset` moves each block's header into the block;
//! `experimental_verify` reads back each write as issued;
//! `verify_state_load` checks only what a cut-short run wrote. Compared:
//! the writes and reads reaching the data file (strace), its digest
//! before and after, where the header lies in the file's blocks, the
//! counts and error in the JSON. Needs fio and strace (tests/run installs
//! them).

use drivelab_testkit::TempDir;
use serde_json::Value;

mod fio_common;

/// What one run gave: the JSON's job, and the trace's calls on the file.
struct Ran {
    job: Value,
    writes: usize,
    reads: usize,
}

/// Run the job (64 random 4 KiB crc32c-verified writes over 256 KiB)
/// under `tool`, with `extra` job lines, under strace.
fn run(tool: &str, dir: &TempDir, extra: &str) -> Ran {
    drivelab_testkit::isolate_store();
    let file = dir.join("data");
    let job = dir.join("job.fio");
    std::fs::write(
        &job,
        format!(
            "[job]\nioengine=psync\nfilename={}\nsize=256k\nbs=4k\nrw=randwrite\nverify=crc32c\n{extra}\n",
            file.display()
        ),
    )
    .unwrap();
    let trace = dir.join("trace");
    let out = fio_common::under_strace(
        tool,
        &trace,
        &[],
        "pread64,preadv2,pwrite64,pwritev2",
        &["--output-format=json"],
        &job,
    );
    let json = fio_common::json_of(tool, &String::from_utf8_lossy(&out.stdout));
    let trace = std::fs::read_to_string(&trace).unwrap_or_default();
    let on_file = |call: &str| {
        let needle = format!("<{}>", file.display());
        trace
            .lines()
            .filter(|l| l.contains(&needle) && l.contains(call))
            .count()
    };
    Ran {
        job: json["jobs"][0].clone(),
        writes: on_file("pwrite"),
        reads: on_file("pread"),
    }
}

fn ios(ran: &Ran, dir: &str) -> u64 {
    ran.job[dir]["total_ios"].as_u64().unwrap_or(u64::MAX)
}

#[test]
fn verify_only_checks_an_earlier_run_without_writing() {
    let dir = TempDir::new("fio-verify-opts");
    let file = dir.join("data");
    let mut failed = Vec::new();
    for tool in ["fio", "drivelab"] {
        let _ = std::fs::remove_file(&file);
        let wrote = run(tool, &dir, "");
        let before = drivelab_testkit::digest(&file);
        let only = run(tool, &dir, "verify_only=1");
        let after = drivelab_testkit::digest(&file);
        // One block of the earlier run's data replaced: the check fails.
        let mut data = std::fs::read(&file).unwrap();
        data[40960..45056].iter_mut().for_each(|b| *b ^= 0x5a);
        std::fs::write(&file, &data).unwrap();
        let bad = run(tool, &dir, "verify_only=1");
        let got = format!(
            "write run: {} writes; verify_only: {} writes and {} reads on the file, JSON writes {} reads {} error {}, file kept {}; after a corrupted block: error {}",
            wrote.writes,
            only.writes,
            only.reads,
            ios(&only, "write"),
            ios(&only, "read"),
            only.job["error"],
            before == after,
            bad.job["error"]
        );
        eprintln!("{tool:<8} {got}");
        let ok = wrote.writes == 64
            && only.writes == 0
            && only.reads == 64
            && ios(&only, "write") == 64
            && ios(&only, "read") == 64
            && only.job["error"] == 0
            && before == after
            && bad.job["error"] == libc::EILSEQ;
        if !ok {
            failed.push(format!("{tool}: {got}"));
        }
    }
    let _ = std::fs::remove_file(&file);
    assert!(failed.is_empty(), "{failed:#?}");
}

/// The magic each tool's verify header starts with, as stored: fio's
/// 0xacca (verify.h, FIO_HDR_MAGIC), drivelab's "DLVD".
fn magic(tool: &str) -> &'static [u8] {
    if tool == "fio" {
        &[0xca, 0xac]
    } else {
        b"DLVD"
    }
}

/// A sequential read of the whole file checking `verify=crc32c` blocks,
/// with `extra` job lines: the JSON's error.
fn read_check(tool: &str, dir: &TempDir, extra: &str) -> Value {
    run_in(tool, dir, &format!("rw=read\n{extra}")).0["error"].clone()
}

/// verify_offset=512: in both tools each block's header sits 512 bytes
/// in, the block's first bytes hold data, the job checks its own writes,
/// and a later read checks them only when told the same offset.
#[test]
fn verify_offset_moves_the_header_into_the_block_as_fio_does() {
    let dir = TempDir::new("fio-verify-offset");
    let file = dir.join("data");
    for tool in ["fio", "drivelab"] {
        let _ = std::fs::remove_file(&file);
        let wrote = run(tool, &dir, "verify_offset=512");
        assert_eq!(wrote.job["error"], 0, "{tool}");
        assert_eq!(
            (ios(&wrote, "write"), ios(&wrote, "read")),
            (64, 64),
            "{tool}"
        );
        let data = std::fs::read(&file).unwrap();
        let m = magic(tool);
        for b in data.chunks(4096) {
            assert_eq!(&b[512..512 + m.len()], m, "{tool}: header at 512");
            assert_ne!(&b[..m.len()], m, "{tool}: data at 0");
        }
        assert_eq!(read_check(tool, &dir, "verify_offset=512"), 0, "{tool}");
        assert_eq!(read_check(tool, &dir, ""), libc::EILSEQ, "{tool}");
    }
    let _ = std::fs::remove_file(&file);
    // Below the header's size both refuse it (fio: "min value out of
    // range"); past the block's end drivelab refuses it, where fio 3.33
    // swaps bytes beyond the block.
    for (v, tools) in [("8", &["fio", "drivelab"][..]), ("4090", &["drivelab"][..])] {
        for tool in tools {
            let job = dir.join("bad.fio");
            std::fs::write(
                &job,
                format!(
                    "[job]\nfilename={}\nsize=64k\nrw=write\nbs=4k\nverify=crc32c\nverify_offset={v}\n",
                    file.display()
                ),
            )
            .unwrap();
            let out = fio_common::tool(tool).arg(&job).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{tool} verify_offset={v}");
            assert!(err.contains("verify_offset"), "{tool}: {err}");
            if *tool == "drivelab" {
                assert_eq!(out.status.code(), Some(2), "{err}");
                assert_eq!(err.trim().lines().count(), 1, "{err}");
            }
        }
    }
    assert!(!file.exists(), "nothing written");
}

/// experimental_verify: the read-back is the job's writes replayed as
/// reads, one read per write. Without overwrites both tools read each of
/// the 64 blocks once; with 128 random writes over 64 blocks
/// (norandommap) drivelab reads 128 times, where its usual read-back, and
/// fio's, reads each block written once. fio 3.33 then fails its own
/// check of the header's write number against the replayed read's
/// (verify.c, verify_header: "bad header numberio"), so that case is
/// drivelab's alone.
#[test]
fn experimental_verify_reads_back_each_write_as_issued() {
    let dir = TempDir::new("fio-experimental-verify");
    let file = dir.join("data");
    for tool in ["fio", "drivelab"] {
        let _ = std::fs::remove_file(&file);
        let r = run(tool, &dir, "experimental_verify=1");
        assert_eq!(r.job["error"], 0, "{tool}");
        assert_eq!((ios(&r, "write"), ios(&r, "read")), (64, 64), "{tool}");
        assert_eq!((r.writes, r.reads), (64, 64), "{tool}");
    }
    let over = "norandommap=1\nio_size=512k";
    let _ = std::fs::remove_file(&file);
    let usual = run("drivelab", &dir, over);
    let exp = run("drivelab", &dir, &format!("{over}\nexperimental_verify=1"));
    assert_eq!(exp.job["error"], 0);
    assert_eq!((ios(&exp, "write"), ios(&exp, "read")), (128, 128));
    assert_eq!(exp.reads, 128);
    let distinct = ios(&usual, "read");
    assert!(
        distinct < 128 && distinct == usual.reads as u64,
        "{distinct}"
    );
    let _ = std::fs::remove_file(&file);
}

/// The JSON's job of `tool` running the job (random 4 KiB crc32c writes
/// over 256 KiB) with `extra` lines, in `dir` (where the verify state
/// goes), and whether it exited 0.
fn run_in(tool: &str, dir: &TempDir, extra: &str) -> (Value, bool) {
    drivelab_testkit::isolate_store();
    let job = dir.join("state.fio");
    std::fs::write(
        &job,
        format!(
            "[vs]\nioengine=psync\nfilename={}\nsize=256k\nbs=4k\nrw=randwrite\nverify=crc32c\n{extra}\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    let out = fio_common::tool(tool)
        .current_dir(dir.path())
        .arg("--output-format=json")
        .arg(&job)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let json = if text.contains('{') {
        fio_common::json_of(tool, &text)["jobs"][0].clone()
    } else {
        Value::Null
    };
    (json, out.status.success())
}

/// A writing run cut short by its runtime (20 writes a second for one
/// second) leaves local-vs-0-verify.state; verify_only with
/// verify_state_load then checks just the blocks that run wrote and
/// passes, where without it the check meets a block never written
/// (EILSEQ). Each tool reads its own state file (the formats differ).
#[test]
fn verify_state_load_checks_only_what_a_cut_short_run_wrote() {
    let dir = TempDir::new("fio-verify-state");
    let state = dir.join("local-vs-0-verify.state");
    for tool in ["fio", "drivelab"] {
        let _ = std::fs::remove_file(&state);
        std::fs::write(dir.join("data"), vec![0u8; 256 << 10]).unwrap();
        let (cut, ok) = run_in(tool, &dir, "rate_iops=20\nruntime=1\ndo_verify=0");
        assert!(ok, "{tool}");
        let wrote = cut["write"]["total_ios"].as_u64().unwrap();
        assert!((5..64).contains(&wrote), "{tool}: {wrote} writes");
        assert!(state.exists(), "{tool}: no state file");
        let (load, ok) = run_in(tool, &dir, "verify_only=1\nverify_state_load=1");
        assert!(ok, "{tool}: {load}");
        assert_eq!(load["read"]["total_ios"].as_u64(), Some(wrote), "{tool}");
        assert_eq!(load["error"], 0, "{tool}");
        let (all, _) = run_in(tool, &dir, "verify_only=1");
        assert_eq!(all["error"], libc::EILSEQ, "{tool}");
        // No state to load: the job does not run.
        std::fs::remove_file(&state).unwrap();
        let (_, ok) = run_in(tool, &dir, "verify_only=1\nverify_state_load=1");
        assert!(!ok, "{tool}: ran without its state");
    }
}
