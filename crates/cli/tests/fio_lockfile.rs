//! fio's `lockfile` serialises the I/O of jobs that share a file as fio
//! 3.33 does: two jobs writing one 8 MiB file (psync, 256 KiB writes)
//! run under both tools with strace, and the calls' spans (entry time
//! plus duration) are compared across the jobs' threads. Under
//! `exclusive` no two jobs' calls overlap; under `readwrite` reads
//! overlap each other but never a write; under `none` the jobs' writes
//! do overlap. Needs fio and strace (tests/run installs them).

use drivelab_testkit::TempDir;

mod fio_common;

/// One call: thread, whether it writes, start and end in µs.
type Span = (u32, bool, u64, u64);

fn spans(tool: &str, dir: &TempDir, jobs: &str) -> Vec<Span> {
    drivelab_testkit::isolate_store();
    let file = dir.join("shared");
    if !file.exists() {
        std::fs::write(&file, vec![5u8; 8 << 20]).unwrap();
    }
    let job = dir.join("lock.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nioengine=psync\nfilename={}\nsize=8m\nbs=256k\ndirect=0\n{jobs}\n",
            file.display()
        ),
    )
    .unwrap();
    let trace = dir.join("trace");
    let out =
        fio_common::under_strace(tool, &trace, &["-ttt", "-T"], "pread64,pwrite64", &[], &job);
    assert!(
        out.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let needle = format!("<{}>", file.display());
    let us = |s: &str| -> Option<u64> {
        let (a, b) = s.split_once('.')?;
        Some(a.parse::<u64>().ok()? * 1_000_000 + b.parse::<u64>().ok()?)
    };
    // A call another thread's interrupted is two lines: "... <unfinished
    // ...>" with its start, "<... pwrite64 resumed> ... <DURATION>".
    let mut open: std::collections::HashMap<u32, (bool, u64)> = Default::default();
    let mut out = Vec::new();
    for l in std::fs::read_to_string(&trace).unwrap().lines() {
        // PID SECS.USECS call(FD</path>, ...) = N <SECS.USECS>
        let mut w = l.split_whitespace();
        let (Some(pid), Some(at)) = (w.next().and_then(|p| p.parse::<u32>().ok()), w.next()) else {
            continue;
        };
        let Some(at) = us(at) else { continue };
        let took = || us(l.rsplit_once('<')?.1.trim_end_matches('>'));
        if l.contains(&needle) && l.ends_with("<unfinished ...>") {
            open.insert(pid, (l.contains("pwrite64("), at));
        } else if l.contains(&needle) {
            if let Some(t) = took() {
                out.push((pid, l.contains("pwrite64("), at, at + t));
            }
        } else if l.contains(" resumed>") {
            if let (Some((write, start)), Some(t)) = (open.remove(&pid), took()) {
                // The duration counts from the call's entry.
                out.push((pid, write, start, start + t));
            }
        }
    }
    out
}

/// Pairs of calls from different threads whose spans overlap: (any,
/// with a write in them).
fn overlaps(s: &[Span]) -> (usize, usize) {
    let (mut any, mut with_write) = (0, 0);
    for (i, a) in s.iter().enumerate() {
        for b in &s[i + 1..] {
            if a.0 != b.0 && a.2 < b.3 && b.2 < a.3 {
                any += 1;
                with_write += usize::from(a.1 || b.1);
            }
        }
    }
    (any, with_write)
}

#[test]
fn lockfile_serialises_the_jobs_sharing_a_file_as_fio_does() {
    let dir = TempDir::new("fio-lockfile");
    let writers =
        |mode: &str| format!("lockfile={mode}\n[w1]\nrw=write\nloops=4\n[w2]\nrw=write\nloops=4\n");
    for tool in ["fio", "drivelab"] {
        let free = spans(tool, &dir, &writers("none"));
        assert_eq!(free.len(), 256, "{tool}");
        assert!(
            overlaps(&free).0 > 0,
            "{tool}: unlocked writers never overlapped"
        );
        let locked = spans(tool, &dir, &writers("exclusive"));
        assert_eq!(locked.len(), 256, "{tool}");
        assert_eq!(overlaps(&locked).0, 0, "{tool}: exclusive");
        let rw = spans(
            tool,
            &dir,
            "lockfile=readwrite\n[r1]\nrw=read\nloops=8\n[r2]\nrw=read\nloops=8\n[w]\nrw=write\nloops=2\n",
        );
        assert_eq!(rw.len(), 8 * 32 * 2 + 2 * 32, "{tool}");
        let (any, with_write) = overlaps(&rw);
        assert_eq!(with_write, 0, "{tool}: a write overlapped under readwrite");
        assert!(any > 0, "{tool}: readers never shared the file");
    }
}
