//! Every reader on the real sample traces in tests/data/traces, checked
//! against figures computed here from the raw files by a separate, plainer
//! parse (String splitting, no shared code with the readers).

use std::collections::HashMap;
use std::path::Path;

use drivelab_trace::{analyze, open_file, Format, ReadOptions, Request};

/// The sample traces kept in the repository (see tests/data/traces/README.md).
const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/traces");

fn path(name: &str) -> std::path::PathBuf {
    let p = Path::new(DIR).join(name);
    assert!(p.exists(), "sample trace {} is missing", p.display());
    p
}

fn read_all(
    name: &str,
    fmt: Option<Format>,
    opts: ReadOptions,
) -> (Format, Vec<Request>, drivelab_trace::ReadStats) {
    let (f, mut r) = open_file(&path(name), fmt, opts).unwrap();
    let v: Vec<Request> = r.by_ref().map(|x| x.unwrap()).collect();
    let s = r.stats();
    (f, v, s)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// (requests, reads, writes, bytes_read, bytes_written, first_ns, last_ns)
fn mqsim_reference(name: &str) -> (u64, u64, u64, u64, u64, u64, u64) {
    let text = std::fs::read_to_string(path(name)).unwrap();
    let (mut n, mut r, mut w, mut br, mut bw) = (0, 0, 0, 0, 0);
    let (mut lo, mut hi) = (u64::MAX, 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let t: u64 = f[0].parse().unwrap();
        let size: u64 = f[3].parse().unwrap();
        n += 1;
        if f[4] == "1" {
            r += 1;
            br += size * 512;
        } else {
            w += 1;
            bw += size * 512;
        }
        lo = lo.min(t);
        hi = hi.max(t);
    }
    (n, r, w, br, bw, lo, hi)
}

#[test]
fn mqsim_samples_match_an_independent_count() {
    for name in ["wsrch-small.trace", "tpcc-small.trace"] {
        let (f, reqs, _) = read_all(name, None, ReadOptions::default());
        assert_eq!(f, Format::Mqsim, "{name} detected as {f}");
        let (n, r, w, br, bw, lo, hi) = mqsim_reference(name);
        let a = analyze(&mut reqs.iter().map(|r| Ok(*r))).unwrap();
        assert_eq!((a.requests, a.reads, a.writes), (n, r, w), "{name}");
        assert_eq!((a.bytes_read, a.bytes_written), (br, bw), "{name}");
        assert!(
            close(a.duration_s, (hi - lo) as f64 / 1e9),
            "{name}: {} vs {}",
            a.duration_s,
            (hi - lo) as f64 / 1e9
        );
        assert!(close(a.read_fraction, r as f64 / n as f64));
    }
    // The README's figures, as a sanity check on the reference itself.
    assert_eq!(mqsim_reference("tpcc-small.trace").0, 6999);
}

#[test]
fn tpcc_uses_sixteen_devices() {
    let (_, reqs, _) = read_all("tpcc-small.trace", None, ReadOptions::default());
    let text = std::fs::read_to_string(path("tpcc-small.trace")).unwrap();
    let mut devs: Vec<u32> = text
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    devs.sort();
    devs.dedup();
    let mut got: Vec<u32> = reqs.iter().map(|r| r.device).collect();
    got.sort();
    got.dedup();
    assert_eq!(got, devs);
    assert_eq!(devs.len(), 16);
}

#[test]
fn vscsi_sample_matches_an_independent_decode() {
    let (f, reqs, stats) = read_all("cloudPhysicsIO.vscsi", None, ReadOptions::default());
    assert_eq!(f, Format::Vscsi1);
    let raw = std::fs::read(path("cloudPhysicsIO.vscsi")).unwrap();
    assert_eq!(raw.len() % 32, 0);
    let (mut r, mut w, mut br, mut bw) = (0u64, 0u64, 0u64, 0u64);
    let mut ts = Vec::new();
    let mut offsets = Vec::new();
    for rec in raw.chunks(32) {
        let le = |a: usize, n: usize| {
            rec[a..a + n]
                .iter()
                .rev()
                .fold(0u64, |acc, b| (acc << 8) | *b as u64)
        };
        let (len, cmd, lbn, t) = (le(4, 4), le(12, 2), le(16, 8), le(24, 8));
        match cmd {
            0x28 => {
                r += 1;
                br += len
            }
            0x2a => {
                w += 1;
                bw += len
            }
            other => panic!("unexpected opcode {other:#x} in the sample"),
        }
        ts.push(t);
        offsets.push(lbn * 512);
    }
    assert_eq!(r + w, 113_872);
    let a = analyze(&mut reqs.iter().map(|x| Ok(*x))).unwrap();
    assert_eq!(
        (a.requests, a.reads, a.writes, a.bytes_read, a.bytes_written),
        (r + w, r, w, br, bw)
    );
    let span_us = ts.iter().max().unwrap() - ts.iter().min().unwrap();
    assert!(close(a.duration_s, span_us as f64 / 1e6));
    assert_eq!(reqs.iter().map(|x| x.offset).collect::<Vec<_>>(), offsets);
    assert_eq!(stats.skipped, 0);
}

struct BlkRef {
    q: u64,
    d: u64,
    c: u64,
    merges: u64,
    d_bytes: HashMap<&'static str, u64>,
    service_mean_ns: f64,
    matched: u64,
}

fn blk_reference() -> BlkRef {
    let text = std::fs::read_to_string(path("apress_blktrace.txt")).unwrap();
    let (mut q, mut d, mut c, mut merges) = (0, 0, 0, 0);
    let mut d_bytes: HashMap<&'static str, u64> = HashMap::new();
    let mut issued: HashMap<u64, f64> = HashMap::new();
    let (mut sum, mut matched) = (0.0, 0u64);
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 7 || !f[0].contains(',') {
            continue;
        }
        let t: f64 = f[3].parse().unwrap();
        match f[5] {
            "Q" => q += 1,
            "M" | "F" => merges += 1,
            "D" => {
                d += 1;
                let sector: u64 = f[7].parse().unwrap();
                let nsect: u64 = f[9].parse().unwrap();
                let kind = if f[6].contains('R') { "read" } else { "write" };
                *d_bytes.entry(kind).or_insert(0) += nsect * 512;
                issued.insert(sector, t);
            }
            "C" => {
                c += 1;
                let sector: u64 = f[7].parse().unwrap();
                if let Some(t0) = issued.remove(&sector) {
                    sum += (t - t0) * 1e9;
                    matched += 1;
                }
            }
            _ => {}
        }
    }
    BlkRef {
        q,
        d,
        c,
        merges,
        d_bytes,
        service_mean_ns: sum / matched as f64,
        matched,
    }
}

#[test]
fn blkparse_sample_matches_an_independent_parse() {
    let reference = blk_reference();
    // The README's counts.
    assert_eq!((reference.q, reference.d, reference.c), (15_524, 170, 171));
    let (f, reqs, stats) = read_all("apress_blktrace.txt", None, ReadOptions::default());
    assert_eq!(f, Format::Blkparse);
    let a = analyze(&mut reqs.iter().map(|x| Ok(*x))).unwrap();
    assert_eq!(a.requests, reference.d);
    assert_eq!(a.bytes_read, reference.d_bytes["read"]);
    assert_eq!(a.bytes_written, reference.d_bytes["write"]);
    assert_eq!(stats.merges, reference.merges);
    assert_eq!(a.service_time_ns.count, reference.matched);
    assert_eq!(stats.unmatched_completions, reference.c - reference.matched);
    let mean = a.service_time_ns.mean.unwrap();
    assert!(
        (mean - reference.service_mean_ns).abs() < 1.0,
        "{mean} vs {}",
        reference.service_mean_ns
    );
    // Requests come out in issue order.
    assert!(reqs.windows(2).all(|w| w[0].issue_ns <= w[1].issue_ns));
}

#[test]
fn blkparse_queue_mode_counts_every_q() {
    let reference = blk_reference();
    let opts = ReadOptions {
        use_queue: true,
        ..Default::default()
    };
    let (_, reqs, _) = read_all("apress_blktrace.txt", Some(Format::Blkparse), opts);
    assert_eq!(reqs.len() as u64, reference.q);
}

#[test]
fn every_sample_is_detected() {
    for (name, want) in [
        ("apress_blktrace.txt", Format::Blkparse),
        ("cloudPhysicsIO.vscsi", Format::Vscsi1),
        ("tpcc-small.trace", Format::Mqsim),
        ("wsrch-small.trace", Format::Mqsim),
    ] {
        let head: Vec<u8> = std::fs::read(path(name))
            .unwrap()
            .into_iter()
            .take(drivelab_trace::DETECT_BYTES)
            .collect();
        assert_eq!(drivelab_trace::detect(&head).unwrap(), want, "{name}");
    }
}

#[test]
fn analysis_of_a_sample_has_the_documented_json_keys() {
    let (_, reqs, _) = read_all("apress_blktrace.txt", None, ReadOptions::default());
    let a = analyze(&mut reqs.iter().map(|x| Ok(*x))).unwrap();
    let v = serde_json::to_value(&a).unwrap();
    for k in [
        "requests",
        "reads",
        "writes",
        "bytes_read",
        "bytes_written",
        "duration_s",
        "read_fraction",
        "sizes",
        "queue_depth",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert!(v["seek_distance"]["zero_fraction"].is_number());
    assert!(v["service_time_ns"]["mean"].is_number());
    assert!(v["interarrival_ns"]["mean"].is_number());
    let fsum: f64 = a.sizes.iter().map(|s| s.fraction).sum();
    assert!((fsum - 1.0).abs() < 1e-9);
    assert!(a.sizes.iter().all(|s| s.count > 0));
}
