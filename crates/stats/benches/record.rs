//! Cost of one `record` call, in ns, for each accumulator, against a peer
//! loop that only reads and sums the same values (the floor).
//!
//! Run with `cargo bench -p drivelab-stats`. Each figure is the best of
//! several rounds of 16 Mi records over 16 Ki pre-generated log-uniform
//! latencies (1 µs .. 10 ms), so the generator is not timed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use drivelab_stats::{LatencyHistogram, TimeSeries, Welford};

const VALUES: usize = 1 << 14;
const RECORDS: usize = 1 << 24;
const ROUNDS: usize = 7;

fn values() -> Vec<u64> {
    // splitmix64, mapped log-uniformly onto 1 µs .. 10 ms.
    let mut s = 0x1234_5678_9abc_def0u64;
    (0..VALUES)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let u = (z >> 11) as f64 / (1u64 << 53) as f64;
            (1e3 * (u * (1e4f64).ln()).exp()) as u64
        })
        .collect()
}

/// Best time per record over `ROUNDS` rounds, ns.
fn best_ns(mut round: impl FnMut()) -> f64 {
    let mut best = Duration::MAX;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        round();
        best = best.min(t.elapsed());
    }
    best.as_nanos() as f64 / RECORDS as f64
}

fn main() {
    let vals = values();
    let passes = RECORDS / VALUES;

    let floor = best_ns(|| {
        let mut acc = 0u64;
        for _ in 0..passes {
            for &v in &vals {
                acc = acc.wrapping_add(black_box(v));
            }
        }
        black_box(acc);
    });

    let mut h = LatencyHistogram::new();
    let hist = best_ns(|| {
        for _ in 0..passes {
            for &v in &vals {
                h.record(black_box(v));
            }
        }
        black_box(&h);
    });

    let mut w = Welford::new();
    let welford = best_ns(|| {
        for _ in 0..passes {
            for &v in &vals {
                w.record(black_box(v) as f64);
            }
        }
        black_box(&w);
    });

    // One million completions per simulated second: an interval closes
    // every 2^20 records.
    let mut ts = match TimeSeries::new(1_000_000_000, Instant::now()) {
        Ok(ts) => ts,
        Err(e) => panic!("{e}"),
    };
    let mut t = 0u64;
    let series = best_ns(|| {
        for _ in 0..passes {
            for &v in &vals {
                t += 1_000;
                ts.record(black_box(t), v, 4096);
            }
        }
    });
    black_box(ts.closed_len());

    println!("drivelab-stats record cost ({RECORDS} records per round, best of {ROUNDS})");
    println!("  peer (read + add)          {floor:6.2} ns/record");
    for (name, ns) in [
        ("LatencyHistogram::record", hist),
        ("Welford::record", welford),
        ("TimeSeries::record", series),
    ] {
        println!("  {name:26} {ns:6.2} ns/record  ({:.1}x peer)", ns / floor);
    }
}
