//! Fill and verify throughput of every pattern, against memcpy / memcmp
//! measured in the same run.
//!
//! Each measurement pushes `PATTERNS_BENCH_MIB` MiB (default 1024) through
//! one 1 MiB buffer of 4096-byte blocks, on one thread; it is repeated
//! `PATTERNS_BENCH_RUNS` times (default 5) and the median is printed, in
//! GB/s (10^9 bytes per second) of the thread's CPU time — the per-core
//! rate, which other processes on a shared machine do not dilute — with the
//! wall-clock rate beside it, and as a ratio to the peer (`memcpy` of the
//! same buffer for fill, `memcmp` for verify) measured the same way.

use std::hint::black_box;
use std::time::{Duration, Instant};

use drivelab_patterns::{Generator, Pattern};

const BUF: usize = 1 << 20;
const BLOCK: usize = 4096;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&v| v > 0)
        .unwrap_or(default)
}

/// Nanoseconds this thread has spent on a CPU (first field of
/// /proc/thread-self/schedstat), so the figure is per core even when other
/// processes share the machine; `None` where the kernel does not expose it.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// One figure: median GB/s over the runs, by CPU time and by wall time.
#[derive(Clone, Copy)]
struct Rate {
    cpu: f64,
    wall: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median over `runs` of the rate `iters` calls of `f` achieve.
fn measure(runs: usize, iters: usize, mut f: impl FnMut(usize)) -> Rate {
    // Warm-up: page in the buffers, settle the clock.
    for i in 0..iters.min(64) {
        f(i);
    }
    let bytes = (iters * BUF) as f64;
    let mut cpu = Vec::new();
    let mut wall = Vec::new();
    for _ in 0..runs {
        let c0 = thread_cpu_ns();
        let t0 = Instant::now();
        for i in 0..iters {
            f(i);
        }
        let elapsed: Duration = t0.elapsed();
        wall.push(bytes / elapsed.as_secs_f64() / 1e9);
        if let (Some(a), Some(b)) = (c0, thread_cpu_ns()) {
            cpu.push(bytes / (b.saturating_sub(a).max(1)) as f64);
        }
    }
    let wall = median(wall);
    Rate {
        cpu: if cpu.is_empty() { wall } else { median(cpu) },
        wall,
    }
}

fn main() {
    let runs = env_usize("PATTERNS_BENCH_RUNS", 5);
    let mib = env_usize("PATTERNS_BENCH_MIB", 1024);
    let iters = mib * (1 << 20) / BUF;
    let blocks = (BUF / BLOCK) as u64;

    let src = vec![0x5Au8; BUF];
    let mut dst = vec![0u8; BUF];
    let memcpy = measure(runs, iters, |_| {
        black_box(&mut dst).copy_from_slice(black_box(&src));
    });
    let copy = dst.clone();
    let memcmp = measure(runs, iters, |_| {
        assert!(black_box(&copy[..]) == black_box(&src[..]));
    });

    println!(
        "drivelab-patterns throughput: {mib} MiB per measurement, {} KiB buffer, \
         {BLOCK}-byte blocks, median of {runs} runs, 1 thread",
        BUF / 1024
    );
    println!(
        "GB/s = 10^9 bytes per second of this thread's CPU time (per core); \
         wall-clock GB/s in brackets"
    );
    println!(
        "peer: memcpy {:.2} [{:.2}] GB/s, memcmp {:.2} [{:.2}] GB/s",
        memcpy.cpu, memcpy.wall, memcmp.cpu, memcmp.wall
    );
    println!(
        "{:<22} {:>17} {:>8} {:>17} {:>8}",
        "pattern", "fill GB/s", "/memcpy", "verify GB/s", "/memcmp"
    );

    let mut patterns: Vec<Pattern> = Pattern::all_named().to_vec();
    patterns.push(Pattern::Stamped);
    patterns.push(Pattern::Fixed(vec![0xDE, 0xAD, 0xBE, 0xEF]));
    let mut slowest = (f64::INFINITY, String::new());
    for pattern in patterns {
        let name = pattern.to_string();
        let g = match Generator::builder(pattern, BLOCK)
            .seed(0x0123_4567_89AB_CDEF)
            .run_id(1)
            .sequence(1)
            .build()
        {
            Ok(g) => g,
            Err(e) => {
                eprintln!("{name}: {e}");
                std::process::exit(1);
            }
        };
        let mut buf = vec![0u8; BUF];
        let fill = measure(runs, iters, |i| {
            g.fill(black_box(&mut buf), i as u64 * blocks);
        });
        g.fill(&mut buf, 0);
        let verify = measure(runs, iters, |_| {
            assert!(g.verify(black_box(&buf), 0).is_ok());
        });
        for (op, r) in [("fill", fill), ("verify", verify)] {
            if r.cpu < slowest.0 {
                slowest = (r.cpu, format!("{name} {op}"));
            }
        }
        println!(
            "{name:<22} {:>7.2} [{:>7.2}] {:>8.2} {:>7.2} [{:>7.2}] {:>8.2}",
            fill.cpu,
            fill.wall,
            fill.cpu / memcpy.cpu,
            verify.cpu,
            verify.wall,
            verify.cpu / memcmp.cpu
        );
    }
    println!("slowest: {:.2} GB/s per core ({})", slowest.0, slowest.1);
}
