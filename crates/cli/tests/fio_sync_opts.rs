//! fio's sync, page-cache and write-buffer options do in drivelab what
//! they do in fio 3.33: the same job file runs under both tools (psync,
//! 4 KiB blocks, a 1 MiB file in a temp dir) and what each option changes
//! is compared: the fsync/fdatasync/sync_file_range calls on the data
//! file and their ranges (strace), the synchronous writes, the file's
//! pages in the page cache (fincore), the zero and distinct blocks
//! written, the file laid out. Needs fio, strace
//! and util-linux's fincore (tests/run installs them).

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use drivelab_testkit::TempDir;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");
const MIB: usize = 1 << 20;

/// The state of the data file before a run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Before {
    /// No file.
    Missing,
    /// 1 MiB of random data, in the page cache.
    Cached,
    /// 1 MiB of random data, none of it cached.
    Cold,
}

/// What a case compares between the tools.
#[derive(Clone, Copy, Debug)]
enum Probe {
    /// (fsync, fdatasync) calls on the data file.
    Syncs(u64, u64),
    /// (fsync, fdatasync, sync_file_range) calls on the data file.
    AllSyncs(u64, u64, u64),
    /// sync_file_range calls on the data file: how many, each over the
    /// next `len` bytes from 0, with these flags.
    Ranges(u64, u64, &'static str),
    /// Writes to the data file that are synchronous (an O_SYNC/O_DSYNC
    /// open, or RWF_SYNC/RWF_DSYNC on the write).
    SyncWrites(u64),
    /// The file's pages in the page cache after the run.
    Resident(u64),
    /// 4 KiB blocks of the file that are all zero, in a range.
    ZeroBlocks(u64, u64),
    /// Distinct 4 KiB blocks of the file, in a range.
    Distinct(u64, u64),
    /// The file's size, and the I/Os the job reported.
    Created(u64, u64),
    /// posix_fadvise calls on the file with this advice.
    Advised(&'static str, u64),
    /// The file's size, and whether its first MiB is what it held before.
    Appended(u64),
}

struct Case {
    name: &'static str,
    /// Job lines after the common ones.
    opts: &'static str,
    before: Before,
    probe: Probe,
}

const CASES: &[Case] = &[
    Case {
        name: "fadvise_hint=1 advises random for a random job",
        opts: "rw=randread\nnumber_ios=4",
        before: Before::Cached,
        probe: Probe::Advised("POSIX_FADV_RANDOM", 1),
    },
    Case {
        name: "fadvise_hint=1 advises sequential otherwise",
        opts: "rw=read\nnumber_ios=4",
        before: Before::Cached,
        probe: Probe::Advised("POSIX_FADV_SEQUENTIAL", 1),
    },
    Case {
        name: "fadvise_hint=0 advises nothing",
        opts: "rw=randread\nnumber_ios=4\nfadvise_hint=0",
        before: Before::Cached,
        probe: Probe::Advised("POSIX_FADV_RANDOM", 0),
    },
    Case {
        name: "fadvise_hint=sequential on a random job",
        opts: "rw=randread\nnumber_ios=4\nfadvise_hint=sequential",
        before: Before::Cached,
        probe: Probe::Advised("POSIX_FADV_SEQUENTIAL", 1),
    },
    Case {
        // fio syncs before the next I/O: 256 writes, none after the last.
        name: "fsync every 8 writes",
        opts: "rw=write\nfsync=8",
        before: Before::Cached,
        probe: Probe::Syncs(31, 0),
    },
    Case {
        name: "fdatasync every 8 writes",
        opts: "rw=write\nfdatasync=8",
        before: Before::Cached,
        probe: Probe::Syncs(0, 31),
    },
    Case {
        name: "sync_file_range every 8 writes, over the range written",
        opts: "rw=write\nsync_file_range=wait_before,write:8",
        before: Before::Cached,
        probe: Probe::Ranges(
            31,
            32768,
            "SYNC_FILE_RANGE_WAIT_BEFORE|SYNC_FILE_RANGE_WRITE",
        ),
    },
    Case {
        // fio issues the first of fsync, fdatasync, sync_file_range whose
        // count falls on the write; the others still have theirs.
        name: "fsync=8 and sync_file_range=write:4 share the writes",
        opts: "rw=write\nfsync=8\nsync_file_range=write:4",
        before: Before::Cached,
        probe: Probe::AllSyncs(31, 0, 32),
    },
    Case {
        name: "fsync=8 and fdatasync=4 share the writes",
        opts: "rw=write\nfsync=8\nfdatasync=4",
        before: Before::Cached,
        probe: Probe::AllSyncs(31, 32, 0),
    },
    Case {
        name: "end_fsync once at the end",
        opts: "rw=write\nend_fsync=1",
        before: Before::Cached,
        probe: Probe::Syncs(1, 0),
    },
    Case {
        name: "fsync_on_close once at close",
        opts: "rw=write\nfsync_on_close=1",
        before: Before::Cached,
        probe: Probe::Syncs(1, 0),
    },
    Case {
        name: "no sync by default",
        opts: "rw=write",
        before: Before::Cached,
        probe: Probe::Syncs(0, 0),
    },
    Case {
        name: "a file laid out is fsynced (create_fsync)",
        opts: "rw=read\nnumber_ios=1",
        before: Before::Missing,
        probe: Probe::Syncs(1, 0),
    },
    Case {
        name: "create_fsync=0 leaves the layout unsynced",
        opts: "rw=read\nnumber_ios=1\ncreate_fsync=0",
        before: Before::Missing,
        probe: Probe::Syncs(0, 0),
    },
    Case {
        name: "sync=dsync makes every write synchronous",
        opts: "rw=write\nsync=dsync",
        before: Before::Cached,
        probe: Probe::SyncWrites(256),
    },
    Case {
        name: "sync=1 makes every write synchronous",
        opts: "rw=randwrite\nsync=1\nnumber_ios=64",
        before: Before::Cached,
        probe: Probe::SyncWrites(64),
    },
    Case {
        name: "invalidate drops the cached file",
        opts: "rw=read\ndirect=1\nnumber_ios=1",
        before: Before::Cached,
        probe: Probe::Resident(0),
    },
    Case {
        name: "invalidate=0 keeps it cached",
        opts: "rw=read\ndirect=1\nnumber_ios=1\ninvalidate=0",
        before: Before::Cached,
        probe: Probe::Resident(256),
    },
    Case {
        name: "pre_read caches the file",
        opts: "rw=read\nnumber_ios=1\npre_read=1",
        before: Before::Cold,
        probe: Probe::Resident(256),
    },
    Case {
        name: "zero_buffers writes zeroes",
        opts: "rw=write\nzero_buffers=1",
        before: Before::Cached,
        probe: Probe::ZeroBlocks(256, 256),
    },
    Case {
        name: "refill_buffers writes new data each time",
        opts: "rw=write\nrefill_buffers=1",
        before: Before::Cached,
        probe: Probe::Distinct(256, 256),
    },
    Case {
        name: "scramble_buffers=0 reuses the buffer",
        opts: "rw=write\nscramble_buffers=0",
        before: Before::Cached,
        probe: Probe::Distinct(1, 1),
    },
    Case {
        name: "overwrite lays a new file out before writing",
        opts: "rw=randwrite\nnumber_ios=16\noverwrite=1",
        before: Before::Missing,
        probe: Probe::ZeroBlocks(0, 0),
    },
    Case {
        name: "without overwrite a new file is only allocated",
        opts: "rw=randwrite\nnumber_ios=16",
        before: Before::Missing,
        probe: Probe::ZeroBlocks(240, 256),
    },
    Case {
        name: "file_append writes after the end",
        opts: "rw=write\nfile_append=1",
        before: Before::Cached,
        probe: Probe::Appended(2 * MIB as u64),
    },
    Case {
        name: "create_only lays out and does no I/O",
        opts: "rw=read\ncreate_only=1",
        before: Before::Missing,
        probe: Probe::Created(MIB as u64, 0),
    },
];

/// What one tool's run gave.
struct Ran {
    json: Value,
    trace: String,
}

fn random_mib() -> Vec<u8> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    (0..MIB / 8)
        .flat_map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s.to_le_bytes()
        })
        .collect()
}

fn prepare(file: &Path, before: Before) {
    let _ = std::fs::remove_file(file);
    if before == Before::Missing {
        return;
    }
    std::fs::write(file, random_mib()).unwrap();
    let f = std::fs::File::open(file).unwrap();
    f.sync_all().unwrap();
    let mut dd = Command::new("dd");
    dd.arg(format!("if={}", file.display()));
    if before == Before::Cold {
        // GNU dd drops the whole file's pages with nocache and no count.
        dd.args(["iflag=nocache", "count=0"]);
    } else {
        dd.args(["of=/dev/null", "bs=1M"]);
    }
    assert!(dd.output().unwrap().status.success());
}

/// Run the case's job under `tool` (fio or drivelab), under strace.
fn run(tool: &str, dir: &TempDir, case: &Case) -> Ran {
    drivelab_testkit::isolate_store();
    let file = dir.join("data");
    prepare(&file, case.before);
    let job = dir.join("job.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nioengine=psync\nfilename={}\nsize=1m\nbs=4k\ndirect=0\n[job]\n{}\n",
            file.display(),
            case.opts
        ),
    )
    .unwrap();
    let trace = dir.join(&format!("{tool}.trace"));
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-y", "-s", "0", "-o"])
        .arg(&trace)
        .args([
            "-e",
            "trace=fsync,fdatasync,sync_file_range,openat,pwrite64,pwritev2,fadvise64",
        ]);
    if tool == "fio" {
        cmd.args(["fio", "--output-format=json"]);
    } else {
        cmd.args([BIN, "run", "--output-format=json"]);
    }
    let out = cmd.arg(&job).output().expect("strace runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{tool}, {}: {}{}",
        case.name,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let json = stdout
        .find('{')
        .and_then(|at| serde_json::from_str(&stdout[at..]).ok())
        .unwrap_or_else(|| panic!("{tool}: no JSON in {stdout}"));
    Ran {
        json,
        trace: std::fs::read_to_string(&trace).unwrap_or_default(),
    }
}

/// Lines of the trace about the data file.
fn on_file<'a>(trace: &'a str, file: &Path) -> impl Iterator<Item = &'a str> {
    let needle = format!("<{}>", file.display());
    let path = format!("\"{}\"", file.display());
    trace
        .lines()
        .filter(move |l| l.contains(&needle) || l.contains(&path))
}

fn count(trace: &str, file: &Path, call: &str) -> u64 {
    on_file(trace, file)
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|c| c.starts_with(call))
        })
        .count() as u64
}

/// Writes to the file that are synchronous: all of them when it was
/// opened for writing with O_SYNC/O_DSYNC, else those carrying RWF_SYNC
/// or RWF_DSYNC.
fn sync_writes(trace: &str, file: &Path) -> u64 {
    let sync_open = on_file(trace, file).any(|l| {
        l.contains("openat(")
            && (l.contains("O_DSYNC") || l.contains("O_SYNC"))
            && l.contains("O_RDWR")
    });
    on_file(trace, file)
        .filter(|l| l.contains("pwrite64(") || l.contains("pwritev2("))
        .filter(|l| sync_open || l.contains("RWF_DSYNC") || l.contains("RWF_SYNC"))
        .count() as u64
}

fn resident_pages(file: &Path) -> u64 {
    let out = Command::new("fincore")
        .args(["--bytes", "--noheadings", "--output", "PAGES"])
        .arg(file)
        .output()
        .expect("fincore runs");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("fincore: {:?}", out))
}

fn blocks(file: &Path) -> Vec<Vec<u8>> {
    std::fs::read(file)
        .unwrap()
        .chunks(4096)
        .map(<[u8]>::to_vec)
        .collect()
}

/// What `probe` measures after `ran`, and whether it is in range.
fn measure(probe: Probe, ran: &Ran, file: &Path) -> (String, bool) {
    let within = |v: u64, lo: u64, hi: u64| (format!("{v}"), (lo..=hi).contains(&v));
    match probe {
        Probe::Syncs(fs, fds) => {
            let got = (
                count(&ran.trace, file, "fsync("),
                count(&ran.trace, file, "fdatasync("),
            );
            (format!("{got:?}"), got == (fs, fds))
        }
        Probe::AllSyncs(fs, fds, sfr) => {
            let got = (
                count(&ran.trace, file, "fsync("),
                count(&ran.trace, file, "fdatasync("),
                count(&ran.trace, file, "sync_file_range("),
            );
            (format!("{got:?}"), got == (fs, fds, sfr))
        }
        Probe::Ranges(n, len, flags) => {
            let calls: Vec<String> = on_file(&ran.trace, file)
                .filter_map(|l| l.split_once("sync_file_range("))
                .filter_map(|(_, args)| args.split_once(", "))
                .filter_map(|(_, rest)| rest.split_once(')'))
                .map(|(args, _)| args.to_string())
                .collect();
            let want: Vec<String> = (0..n)
                .map(|i| format!("{}, {len}, {flags}", i * len))
                .collect();
            let shown = calls.first().cloned().unwrap_or_default();
            (
                format!("{} calls, first {shown:?}", calls.len()),
                calls == want,
            )
        }
        Probe::SyncWrites(n) => within(sync_writes(&ran.trace, file), n, n),
        Probe::Resident(n) => within(resident_pages(file), n, n),
        Probe::Appended(size) => {
            let data = std::fs::read(file).unwrap();
            let kept = data.len() >= MIB && data[..MIB] == random_mib()[..];
            (
                format!("size {}, first MiB kept: {kept}", data.len()),
                data.len() as u64 == size && kept,
            )
        }
        Probe::Advised(advice, n) => {
            let got = on_file(&ran.trace, file)
                .filter(|l| l.contains("fadvise64(") && l.contains(advice))
                .count() as u64;
            within(got, n, n)
        }
        Probe::ZeroBlocks(lo, hi) => {
            let z = blocks(file)
                .iter()
                .filter(|b| b.iter().all(|&x| x == 0))
                .count() as u64;
            within(z, lo, hi)
        }
        Probe::Distinct(lo, hi) => {
            let d: HashSet<Vec<u8>> = blocks(file).into_iter().collect();
            within(d.len() as u64, lo, hi)
        }
        Probe::Created(size, ios) => {
            let len = std::fs::metadata(file).map_or(0, |m| m.len());
            let job = &ran.json["jobs"][0];
            let done: u64 = ["read", "write", "trim"]
                .iter()
                .map(|d| job[d]["total_ios"].as_u64().unwrap_or(0))
                .sum();
            (
                format!("size {len}, {done} I/Os"),
                len == size && done == ios,
            )
        }
    }
}

#[test]
fn sync_cache_and_buffer_options_do_what_they_do_in_fio() {
    let dir = TempDir::new("fio-sync-opts");
    let file = dir.join("data");
    let mut failed = Vec::new();
    for case in CASES {
        for tool in ["fio", "drivelab"] {
            let ran = run(tool, &dir, case);
            let (got, ok) = measure(case.probe, &ran, &file);
            eprintln!("{:<48} {tool:<8} {got}", case.name);
            if !ok {
                failed.push(format!(
                    "{} under {tool}: {got}, expected {:?}",
                    case.name, case.probe
                ));
            }
        }
    }
    let _ = std::fs::remove_file(&file);
    assert!(failed.is_empty(), "{failed:#?}");
}
