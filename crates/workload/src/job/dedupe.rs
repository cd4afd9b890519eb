//! Write buffers that deduplicate and compress as asked: fio's
//! `dedupe_percentage`, `dedupe_mode`, `dedupe_working_set_percentage`,
//! `dedupe_global`, `buffer_compress_percentage` and
//! `buffer_compress_chunk`, built the way fio 3.33 builds them, so a
//! dedupe or compression engine sees the same ratios from either tool.
//!
//! A write buffer is made of chunks of `min(smallest write, compress
//! chunk)` bytes; each chunk takes the next seed of a *buffer state* and is
//! filled with `100 - compress`% bytes from that seed, then zeros. Before
//! each buffer a draw (1..=100) decides whether it is a duplicate:
//!
//! - `repeat`: the buffer is made from a copy of the state the last unique
//!   buffer left behind, so it repeats a unique buffer;
//! - `working_set`: from one of the states of the job's first unique
//!   buffers, picked at random; there are `size × working_set% / smallest
//!   write` of them. With `dedupe_global` that set is spread evenly over the
//!   run's jobs (slices of it start from each job's first state), so jobs
//!   duplicate each other's blocks.
//!
//! Otherwise the buffer continues the job's own state, and is unique. The
//! working set is computed when the job starts; nothing is allocated per I/O.

use drivelab_patterns::prng::splitmix64;

use crate::spec::value::parse_flag;
use crate::spec::value::parse_in;
use crate::SpecError;

/// How duplicate buffers are chosen (`dedupe_mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DedupeMode {
    /// Repeat the last unique buffer (default).
    #[default]
    Repeat,
    /// Pick from the working set.
    WorkingSet,
}

/// The dedupe and compression options of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DedupeSpec {
    /// Percent of write buffers that duplicate another (`dedupe_percentage`).
    pub percentage: u32,
    /// `dedupe_mode`.
    pub mode: DedupeMode,
    /// Size of the working set, percent of the job's size
    /// (`dedupe_working_set_percentage`, default 5).
    pub working_set_percentage: u32,
    /// Share the working set among the run's jobs (`dedupe_global`).
    pub global: bool,
    /// Percent of each chunk that is zeros (`buffer_compress_percentage`).
    pub compress_percentage: u32,
    /// Bytes per random-then-zeros chunk (`buffer_compress_chunk`, default
    /// 512; 0: the write size).
    pub compress_chunk: u64,
}

impl Default for DedupeSpec {
    fn default() -> Self {
        DedupeSpec {
            percentage: 0,
            mode: DedupeMode::Repeat,
            working_set_percentage: 5,
            global: false,
            compress_percentage: 0,
            compress_chunk: 512,
        }
    }
}

impl DedupeSpec {
    /// Whether `key` is one of these options.
    pub fn handles(key: &str) -> bool {
        matches!(
            key,
            "dedupe_percentage"
                | "dedupe_mode"
                | "dedupe_working_set_percentage"
                | "dedupe_global"
                | "buffer_compress_percentage"
                | "buffer_compress_chunk"
        )
    }

    /// Set option `key` to `v`.
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        match key {
            "dedupe_percentage" => self.percentage = parse_in(key, v, 0, 100)? as u32,
            "dedupe_working_set_percentage" => {
                self.working_set_percentage = parse_in(key, v, 0, 100)? as u32
            }
            "buffer_compress_percentage" => {
                self.compress_percentage = parse_in(key, v, 0, 100)? as u32
            }
            "buffer_compress_chunk" => {
                self.compress_chunk = crate::spec::size::parse_bytes(key, v)?;
            }
            "dedupe_global" => self.global = parse_flag(key, v)?,
            "dedupe_mode" => {
                self.mode = match v.trim() {
                    "repeat" => DedupeMode::Repeat,
                    "working_set" => DedupeMode::WorkingSet,
                    _ => {
                        return Err(SpecError::BadValue {
                            key: key.to_string(),
                            value: v.to_string(),
                            expect: "repeat or working_set".to_string(),
                        })
                    }
                }
            }
            _ => {
                return Err(SpecError::Invalid(format!(
                    "'{key}' is not a dedupe option"
                )))
            }
        }
        Ok(())
    }

    /// Whether write buffers are generated per write (fio then turns
    /// `refill_buffers` on).
    pub fn active(&self) -> bool {
        self.percentage > 0 || self.compress_percentage > 0
    }
}

/// The first buffer state of job `number` (from 1) of a run seeded `seed`.
pub fn job_state(seed: u64, number: usize) -> u64 {
    let mut s = seed ^ 0x6465_6475_7065_0000 ^ (number as u64).wrapping_mul(0x9E37_79B9);
    splitmix64(&mut s)
}

/// What a job needs to build its buffers, fixed before it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DedupeSetup {
    /// The options.
    pub spec: DedupeSpec,
    /// The job's smallest write, bytes.
    pub min_write: u64,
    /// The job's size, bytes (for the working set).
    pub size: u64,
    /// The job's place in the run (0-based) and the first buffer state of
    /// every job of the run (`dedupe_global` draws from them).
    pub index: usize,
    /// First buffer states of the run's jobs, in order.
    pub states: Vec<u64>,
    /// Seed of the duplicate draws.
    pub seed: u64,
}

/// Fills write buffers; one per job, built at its start.
#[derive(Debug, Clone)]
pub struct BufFiller {
    spec: DedupeSpec,
    min_write: usize,
    state: u64,
    prev: u64,
    draws: u64,
    picks: u64,
    working_set: Vec<u64>,
}

impl BufFiller {
    /// The filler of a job (allocates the working set).
    pub fn new(s: &DedupeSetup) -> BufFiller {
        let state = s.states.get(s.index).copied().unwrap_or(s.seed);
        let mut working_set = Vec::new();
        let min_write = s.min_write.max(1);
        if s.spec.percentage > 0 && s.spec.mode == DedupeMode::WorkingSet {
            let chunk = if s.spec.compress_chunk == 0 {
                min_write
            } else {
                s.spec.compress_chunk.min(min_write)
            };
            let advance = (min_write / chunk).max(1);
            let pages = (s.size * u64::from(s.spec.working_set_percentage) / 100) / min_write;
            let jobs = s.states.len().max(1);
            let per_job = (pages / jobs as u64).max(1);
            let mut at = state;
            let mut from = s.index;
            working_set.reserve(pages as usize);
            for i in 0..pages {
                if i > 0 {
                    for _ in 0..advance {
                        splitmix64(&mut at);
                    }
                    if s.spec.global && i % per_job == 0 {
                        from = (from + 1) % jobs;
                        at = s.states.get(from).copied().unwrap_or(at);
                    }
                }
                working_set.push(at);
            }
        }
        BufFiller {
            spec: s.spec,
            min_write: min_write as usize,
            state,
            prev: state,
            draws: s.seed ^ 0x6472_6177,
            picks: s.seed ^ 0x7069_636b,
            working_set,
        }
    }

    /// Fill `buf` for one write.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let pct = self.spec.percentage;
        // Which state the buffer comes from: Some(copy) for a duplicate.
        let mut copy = None;
        if pct == 100 {
            self.prev = self.state;
        } else if pct > 0 {
            let v = 1 + splitmix64(&mut self.draws) % 100;
            if v <= u64::from(pct) {
                copy = Some(match self.spec.mode {
                    DedupeMode::Repeat => self.prev,
                    DedupeMode::WorkingSet if !self.working_set.is_empty() => {
                        let i = splitmix64(&mut self.picks) % self.working_set.len() as u64;
                        self.working_set[i as usize]
                    }
                    DedupeMode::WorkingSet => self.prev,
                });
            }
        }
        let chunk = if self.spec.compress_chunk == 0 {
            self.min_write
        } else {
            (self.spec.compress_chunk as usize).min(self.min_write)
        };
        let mut local = copy.unwrap_or(self.state);
        for c in buf.chunks_mut(chunk.max(1)) {
            let seed = splitmix64(&mut local);
            fill_chunk(c, seed, self.spec.compress_percentage);
            if pct == 100 {
                local = self.prev;
            }
        }
        if copy.is_none() {
            self.state = local;
            if pct != 100 {
                self.prev = local;
            }
        }
    }
}

/// `100 - zeros`% of `c` from `seed`, the rest zeros.
fn fill_chunk(c: &mut [u8], seed: u64, zeros: u32) {
    if zeros >= 100 {
        c.fill(0);
        return;
    }
    let random = c.len() * (100 - zeros as usize) / 100;
    let (r, z) = c.split_at_mut(random);
    let mut s = seed;
    let mut words = r.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&splitmix64(&mut s).to_le_bytes());
    }
    let rest = words.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&splitmix64(&mut s).to_le_bytes()[..n]);
    z.fill(0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn setup(spec: DedupeSpec, index: usize, jobs: usize) -> DedupeSetup {
        DedupeSetup {
            spec,
            min_write: 4096,
            size: 4096 * 2000,
            index,
            states: (1..=jobs).map(|n| job_state(7, n)).collect(),
            seed: 11 + index as u64,
        }
    }

    /// Fraction of 4k blocks whose content another block also has.
    fn dup_fraction(blocks: &[Vec<u8>]) -> f64 {
        let distinct: HashSet<&Vec<u8>> = blocks.iter().collect();
        1.0 - distinct.len() as f64 / blocks.len() as f64
    }

    fn write(f: &mut BufFiller, n: usize) -> Vec<Vec<u8>> {
        let mut buf = vec![0u8; 4096];
        (0..n)
            .map(|_| {
                f.fill(&mut buf);
                buf.clone()
            })
            .collect()
    }

    #[test]
    fn repeat_mode_duplicates_the_asked_share() {
        let spec = DedupeSpec {
            percentage: 30,
            ..DedupeSpec::default()
        };
        let blocks = write(&mut BufFiller::new(&setup(spec, 0, 1)), 2000);
        let f = dup_fraction(&blocks);
        assert!((f - 0.30).abs() < 0.04, "{f}");
        let none = write(
            &mut BufFiller::new(&setup(DedupeSpec::default(), 0, 1)),
            200,
        );
        assert_eq!(dup_fraction(&none), 0.0);
    }

    #[test]
    fn working_set_duplicates_come_from_the_set() {
        let spec = DedupeSpec {
            percentage: 50,
            mode: DedupeMode::WorkingSet,
            working_set_percentage: 10,
            ..DedupeSpec::default()
        };
        let blocks = write(&mut BufFiller::new(&setup(spec, 0, 1)), 2000);
        let distinct: HashSet<&Vec<u8>> = blocks.iter().collect();
        // About 1000 unique writes; the 200 set pages are among them.
        assert!((900..1100).contains(&distinct.len()), "{}", distinct.len());
    }

    #[test]
    fn global_working_sets_share_blocks_between_jobs() {
        let spec = DedupeSpec {
            percentage: 50,
            mode: DedupeMode::WorkingSet,
            working_set_percentage: 50,
            global: true,
            ..DedupeSpec::default()
        };
        let a = write(&mut BufFiller::new(&setup(spec, 0, 2)), 2000);
        let b = write(&mut BufFiller::new(&setup(spec, 1, 2)), 2000);
        let sa: HashSet<&Vec<u8>> = a.iter().collect();
        let shared = b.iter().filter(|x| sa.contains(x)).count();
        assert!(shared > 200, "{shared}");
        let both: Vec<Vec<u8>> = a.into_iter().chain(b).collect();
        assert!(dup_fraction(&both) > 0.4, "{}", dup_fraction(&both));
    }

    #[test]
    fn compress_percentage_zeros_that_share_of_each_chunk() {
        let spec = DedupeSpec {
            compress_percentage: 50,
            ..DedupeSpec::default()
        };
        let mut f = BufFiller::new(&setup(spec, 0, 1));
        let mut buf = vec![0xffu8; 4096];
        f.fill(&mut buf);
        for c in buf.chunks(512) {
            assert!(c[256..].iter().all(|&b| b == 0));
            assert!(c[..256].iter().filter(|&&b| b == 0).count() < 16);
        }
    }

    #[test]
    fn bad_values_name_the_key() {
        let mut s = DedupeSpec::default();
        for (k, v) in [
            ("dedupe_percentage", "101"),
            ("dedupe_mode", "sometimes"),
            ("dedupe_working_set_percentage", "x"),
            ("buffer_compress_percentage", "-1"),
            ("dedupe_global", "maybe"),
        ] {
            let e = s.set(k, v).unwrap_err().to_string();
            assert!(e.contains(k), "{e}");
        }
    }
}
