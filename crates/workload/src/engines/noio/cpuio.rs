//! fio's `ioengine=cpuio`: a job that moves no data and keeps one CPU busy
//! `cpuload` percent of the time, to load a machine while other jobs do I/O
//! (fio's examples/cpuio.fio; `numjobs` spreads the load over CPUs).
//!
//! The options, as fio's (HOWTO, engines/cpu.c):
//!
//! - `cpuload` (required, 1 to 100): the share of one CPU to burn. fio
//!   fails such a job at its start without it, and takes more than 100 as
//!   100; drivelab refuses both before anything runs.
//! - `cpuchunks` (µs, default 50000): the length of each burn.
//! - `cpumode`: `noop` (default) spins for the chunk; `qsort` sorts an
//!   array of 256 Ki 32-bit numbers four times (up, down, by byte, down
//!   again), and the chunk becomes however long that took.
//! - `exit_on_io_done`: end the job once every job of its stonewall group
//!   that does I/O has finished. (fio waits for every I/O job of the run,
//!   later groups' too, which cannot start while the job runs, so it ends
//!   only at its runtime; drivelab refuses such a job without a runtime
//!   and without an I/O job beside it, which would never end.)
//!
//! Each burn is followed by a sleep of `chunk × (100 − cpuload) / cpuload`,
//! so the burns take `cpuload` percent of the job's time; the job ends at
//! its runtime. Each burn counts as one "I/O" of no bytes, its latency the
//! burn's length ([`crate::engines::noio`]).

use std::time::{Duration, Instant};

use crate::engines::noio::tally::{End, Tally};
pub use crate::engines::opts::noio::{CpuMode, CpuOpts, DEFAULT_CHUNK_US};

/// How many 32-bit numbers a qsort round sorts (fio's 256 Ki).
pub const QSORT_LEN: usize = 256 << 10;

/// The sleep after a burn of `burn_us` that makes the burns `load`
/// percent of the time (fio's think time for the engine).
pub fn think_us(burn_us: u64, load: u32) -> u64 {
    let load = u64::from(load.clamp(1, 100));
    burn_us.saturating_mul(100 - load) / load
}

/// fio's multiply-with-carry generator (Marsaglia's), which fills the
/// qsort array the same way every run.
struct Mwc {
    w: u32,
    z: u32,
}

impl Mwc {
    fn next(&mut self) -> u32 {
        self.z = 36969u32
            .wrapping_mul(self.z & 0xffff)
            .wrapping_add(self.z >> 16);
        self.w = 18000u32
            .wrapping_mul(self.w & 0xffff)
            .wrapping_add(self.w >> 16);
        (self.z << 16).wrapping_add(self.w)
    }
}

/// The qsort array: [`QSORT_LEN`] 32-bit numbers from fio's generator
/// and seeds.
pub fn qsort_data() -> Vec<i32> {
    let mut g = Mwc {
        w: 521_288_629,
        z: 362_436_069,
    };
    (0..QSORT_LEN).map(|_| g.next() as i32).collect()
}

/// The array's bytes (native order) put in ascending order as signed
/// bytes, in place: fio's third sort. Bytes of equal value cannot be told
/// apart, so counting them gives the sorted result.
fn sort_bytes(data: &mut [i32]) {
    let mut count = [0usize; 256];
    for w in data.iter() {
        for b in w.to_ne_bytes() {
            count[usize::from(b ^ 0x80)] += 1;
        }
    }
    let mut bytes = (0..=255u8).flat_map(|k| std::iter::repeat_n(k ^ 0x80, count[usize::from(k)]));
    for w in data.iter_mut() {
        let mut b = [0u8; 4];
        for x in b.iter_mut() {
            *x = bytes.next().unwrap_or(0);
        }
        *w = i32::from_ne_bytes(b);
    }
}

/// One qsort round as fio's: the numbers up, down, the bytes (as signed
/// bytes) up, the numbers down again; the round stops between sorts once
/// `end` is reached.
pub(crate) fn qsort_round(data: &mut [i32], end: &End<'_>) {
    let steps: [fn(&mut [i32]); 4] = [
        |d| d.sort_unstable(),
        |d| d.sort_unstable_by(|a, b| b.cmp(a)),
        sort_bytes,
        |d| d.sort_unstable_by(|a, b| b.cmp(a)),
    ];
    for step in steps {
        if end.reached(Instant::now()) {
            return;
        }
        step(data);
    }
}

/// Spin on the clock for `d` (fio's usec_spin), or until `end` is reached.
fn spin(d: Duration, end: &End<'_>) {
    let t = Instant::now();
    let mut n = 0u32;
    loop {
        let now = Instant::now();
        if now.duration_since(t) >= d {
            return;
        }
        // The stop flag and the deadline every so often, not every turn.
        n = n.wrapping_add(1);
        if n % 1024 == 0 && end.reached(now) {
            return;
        }
        std::hint::spin_loop();
    }
}

/// Run the job: burn, sleep, until `end` (or `io_done` under
/// `exit_on_io_done`).
pub(crate) fn run(opts: &CpuOpts, end: &End<'_>, io_done: &dyn Fn() -> bool, tally: &mut Tally) {
    let load = opts.cpuload.unwrap_or(100);
    let mut chunk = Duration::from_micros(opts.chunk_us);
    let mut data = (opts.mode == CpuMode::Qsort).then(qsort_data);
    loop {
        let t = Instant::now();
        if end.reached(t) || (opts.exit_on_io_done && io_done()) {
            return;
        }
        match data.as_mut() {
            None => spin(chunk, end),
            Some(d) => {
                qsort_round(d, end);
                // fio: the next think time follows the last round's length.
                chunk = t.elapsed();
            }
        }
        tally.record(t, Instant::now());
        let think = think_us(chunk.as_micros() as u64, load);
        end.sleep(Duration::from_micros(think));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_time_makes_the_burns_the_load() {
        assert_eq!(think_us(50_000, 50), 50_000);
        assert_eq!(think_us(50_000, 100), 0);
        assert_eq!(think_us(50_000, 25), 150_000);
        assert_eq!(think_us(10, 1), 990);
    }

    #[test]
    fn the_generator_is_fios() {
        // Marsaglia's MWC from fio's seeds, computed by hand for the first.
        let mut g = Mwc {
            w: 521_288_629,
            z: 362_436_069,
        };
        let z = 36969u32 * (362_436_069 & 0xffff) + (362_436_069 >> 16);
        let w = 18000u32 * (521_288_629 & 0xffff) + (521_288_629 >> 16);
        assert_eq!(g.next(), (z << 16).wrapping_add(w));
    }

    #[test]
    fn the_byte_sort_orders_signed_bytes_and_keeps_them() {
        let mut d = qsort_data()[..1024].to_vec();
        let bytes = |d: &[i32]| -> Vec<u8> { d.iter().flat_map(|w| w.to_ne_bytes()).collect() };
        let mut want = bytes(&d);
        want.sort_by_key(|&b| b as i8);
        sort_bytes(&mut d);
        assert_eq!(bytes(&d), want);
    }

    #[test]
    fn a_qsort_round_leaves_the_numbers_in_descending_order() {
        let mut d = qsort_data();
        let never = || false;
        let end = End::new(None, &never);
        qsort_round(&mut d, &end);
        assert!(d.windows(2).all(|p| p[0] >= p[1]));
    }
}
