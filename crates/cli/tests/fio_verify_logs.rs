//! A verifying job's logs list its verify reads as fio 3.33's do: the
//! `write_iolog` has the reads of the read-back pass (after the main
//! pass's `close`, each file opened again at its first read and closed at
//! the end) and the reads `verify_backlog` makes among the writes, and the
//! latency log has a line for each of them. Each job runs under both tools
//! in the same directory; the logs are compared line by line without their
//! times. Needs fio (tests/run installs it).

mod fio_common;

use drivelab_testkit::TempDir;

/// A log's lines without their first field (the time), e.g.
/// "/dir/f write 4096 4096".
fn iolog_lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
        .collect()
}

/// Run `body` (a job section's options) under `tool` in `dir` (emptied
/// first): its iolog lines and its completion latency log's directions.
fn run(tool: &str, dir: &TempDir, body: &str) -> (Vec<String>, Vec<(u32, u32)>) {
    drivelab_testkit::isolate_store();
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let _ = std::fs::remove_file(e.unwrap().path());
    }
    let job = dir.join("job.fio");
    std::fs::write(
        &job,
        format!(
            "[v]\ndirectory={}\nioengine=psync\nbs=4k\nverify=crc32c\n\
             write_iolog={}\nwrite_lat_log={}\n{body}\n",
            dir.path().display(),
            dir.join("io.log").display(),
            dir.join("lat").display()
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let (json, _) = fio_common::run_json_normal(tool, &job, &out);
    assert_eq!(json["jobs"][0]["error"], 0, "{tool}");
    (
        iolog_lines(&dir.join("io.log")),
        fio_common::lat_log_directions(&dir.join("lat_clat.1.log")),
    )
}

/// The lines with their offsets and lengths left out: "FILE write".
fn shape(v: &[String]) -> Vec<String> {
    v.iter()
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect()
}

/// The I/O lines of one direction ("read" or "write"), in order.
fn ios(v: &[String], dir: &str) -> Vec<String> {
    v.iter()
        .filter(|l| l.split_whitespace().nth(1) == Some(dir))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            format!("{} {} {}", f[0], f[2], f[3])
        })
        .collect()
}

#[test]
fn a_verifying_jobs_logs_list_its_verify_reads_as_fio_3_33s_do() {
    let dir = TempDir::new("fio-verify-logs");
    for (body, random) in [
        // A random job with fio's random map reads back in write order.
        ("rw=randwrite\nsize=64k", true),
        (
            "rw=randwrite\nsize=64k\nnrfiles=2\nfile_service_type=roundrobin",
            true,
        ),
        // Sequential writes read back by file and offset.
        (
            "rw=write\nsize=64k\nnrfiles=2\nfile_service_type=roundrobin",
            false,
        ),
        // verify_backlog: reads among the writes, the rest read back after.
        ("rw=write\nsize=64k\nverify_backlog=4", false),
    ] {
        let fio = run("fio", &dir, body);
        let dl = run("drivelab", &dir, body);
        // Which file, which action, in which order: the main pass's
        // closes, the verify reads (among the writes under a backlog), each
        // file opened again at its first read and closed at the end.
        assert_eq!(shape(&dl.0), shape(&fio.0), "{body:?}: the logs' lines");
        assert_eq!(ios(&dl.0, "read").len(), 16, "{body:?}");
        if random {
            // drivelab's random offsets are its own: each tool reads back
            // exactly its writes, in the order it wrote them.
            for (tool, log) in [("fio", &fio.0), ("drivelab", &dl.0)] {
                assert_eq!(ios(log, "read"), ios(log, "write"), "{body:?}: {tool}");
            }
        } else {
            assert_eq!(dl.0, fio.0, "{body:?}: the logs' lines");
        }
        assert_eq!(dl.1, fio.1, "{body:?}: the latency log's directions");
        assert_eq!(
            dl.1.iter()
                .filter(|(d, _)| *d == 0)
                .map(|(_, n)| n)
                .sum::<u32>(),
            16,
            "{body:?}: a latency line per verify read"
        );
    }
}
