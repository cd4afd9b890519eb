//! The offset and operation generator: turns a job's access lines into a
//! stream of I/Os with exactly the asked-for sizes and proportions.
//!
//! Proportions are dealt from shuffled decks rather than drawn
//! independently: every 100 I/Os (every W I/Os for weights summing to W)
//! contain each line exactly as often as its weight says, and within a line
//! every 100 of its I/Os read exactly `read_pct` times and go random exactly
//! `random_pct` times. The order inside a deck is random, so the stream
//! looks random to the device while the mix holds to the I/O over any long
//! run, not just on average. (Iometer and fio draw independently; over
//! 100k I/Os that already stays within a few tenths of a percent, but a
//! short run can drift.)
//!
//! Sizes are never shortened: a random offset is chosen so the whole
//! transfer fits in the region. With `randommap` the region is cut into
//! slots of the largest size and visited in a keyed random permutation, so
//! one pass touches every slot once and sizes still stay exact.

use crate::{AccessLine, Distribution, WriteKind};

use drivelab_patterns::prng::{Permutation, Rng, Zipf};

pub use crate::job::types::{GenError, Region, Strided};
pub use drivelab_engine::io::{IoDesc, Op};

/// Everything the generator needs.
#[derive(Debug, Clone)]
pub struct GenConfig {
    /// The access lines (size, weight, read %, random %).
    pub lines: Vec<AccessLine>,
    /// Whether non-reads write or trim.
    pub write_kind: WriteKind,
    /// The region on each target.
    pub regions: Vec<Region>,
    /// Alignment of random offsets, bytes (≥ 1).
    pub align: u64,
    /// Distribution of random offsets.
    pub distribution: Distribution,
    /// Visit every slot once per pass in random order.
    pub randommap: bool,
    /// Seed.
    pub seed: u64,
    /// Bytes added after each sequential I/O (`rw=read:-8k`); 0 = contiguous.
    pub seq_delta: i64,
    /// Sequential I/Os per random offset (`rw=randread:8`); 1 = every I/O random.
    pub seq_run: u32,
    /// `rw_sequencer=identical`: the I/Os of a run repeat its random
    /// offset instead of following it.
    pub identical: bool,
    /// `bs_unaligned` with `bsrange=MIN-MAX`: each I/O's size is any byte
    /// count from MIN to MAX (the lines' sizes give the rest of the mix).
    pub unaligned: Option<(u64, u64)>,
    /// fio's `zonemode=strided` (one target only).
    pub strided: Option<Strided>,
    /// Which target each I/O goes to (`file_service_type`).
    pub file_service: crate::engines::opts::files::FileService,
    /// fio's `openfiles` when it holds the job's files open fewer at a
    /// time than it has ([`crate::job::openfiles`]); None: all open throughout.
    pub open_limit: Option<u32>,
}

/// A shuffled deck of small values, reshuffled when exhausted.
#[derive(Debug, Clone)]
struct Deck {
    cards: Vec<u16>,
    pos: usize,
}

impl Deck {
    fn new(cards: Vec<u16>) -> Deck {
        let pos = cards.len();
        Deck { cards, pos }
    }

    /// Deck of `pct` trues (1) among 100.
    fn percent(pct: u8) -> Deck {
        let p = usize::from(pct.min(100));
        Deck::new((0..100).map(|i| u16::from(i < p)).collect())
    }

    #[inline]
    fn draw(&mut self, rng: &mut Rng) -> u16 {
        if self.pos == self.cards.len() {
            rng.shuffle(&mut self.cards);
            self.pos = 0;
        }
        let c = self.cards[self.pos];
        self.pos += 1;
        c
    }
}

/// Per-line state.
#[derive(Debug, Clone)]
struct Line {
    size: u64,
    reads: Deck,
    randoms: Deck,
}

/// How random offsets are drawn on one target.
#[derive(Debug, Clone)]
enum Picker {
    Uniform,
    Zipf(Zipf, Permutation),
    Pareto(f64, Permutation),
    Normal(f64),
    /// Zones of slots: (cumulative access share in [0, 1], first slot, slots).
    Zoned(Vec<(f64, u64, u64)>),
    Map {
        perm: Permutation,
        next: u64,
        pass: u64,
        slot: u64,
    },
}

#[derive(Debug, Clone)]
struct TargetState {
    region: Region,
    /// Next sequential offset for reads, writes/trims.
    seq: [u64; 2],
    /// I/Os left to issue sequentially from the last random offset, and where.
    run: (u32, u64),
    picker: Picker,
}

/// The I/O stream of one job.
#[derive(Debug, Clone)]
pub struct Generator {
    lines: Vec<Line>,
    which: Deck,
    targets: Vec<TargetState>,
    files: crate::engines::files::FilePicker,
    /// Under `openfiles`: the open set picks the files instead, and the
    /// draws of an I/O it had no file for yet.
    open: Option<crate::job::openfiles::OpenSet>,
    held: Option<(usize, bool, bool)>,
    /// Under `trimwrite`, the write of the block just trimmed.
    then_write: Option<IoDesc>,
    trimwrite: bool,
    align: u64,
    write_op: Op,
    seed: u64,
    rng: Rng,
    seq_delta: i64,
    seq_run: u32,
    identical: bool,
    unaligned: Option<(u64, u64)>,
    strided: Option<Strided>,
    /// The zone (strided): its start, and the bytes transferred in it.
    zone: (u64, u64),
    /// Strided with `randommap`: the zone's slots in random order, and the
    /// next to use; dealt again at each zone (and each `zonerange` bytes).
    zone_map: Option<(Permutation, u64)>,
    randommap: bool,
}

impl Generator {
    /// Build the generator; checks every size fits every region.
    pub fn new(cfg: &GenConfig) -> Result<Generator, GenError> {
        if cfg.lines.is_empty() || cfg.regions.is_empty() {
            return Err(GenError::Empty);
        }
        let align = cfg.align.max(1);
        let max_size = cfg.lines.iter().map(|l| l.size).max().unwrap_or(1);
        let mut which_cards = Vec::new();
        for (i, l) in cfg.lines.iter().enumerate() {
            which_cards.extend(std::iter::repeat_n(i as u16, l.weight as usize));
        }
        if which_cards.is_empty() {
            return Err(GenError::Empty);
        }
        let lines = cfg
            .lines
            .iter()
            .map(|l| Line {
                size: l.size,
                reads: Deck::percent(l.read_pct),
                randoms: Deck::percent(l.random_pct),
            })
            .collect();
        let mut targets = Vec::with_capacity(cfg.regions.len());
        for (t, r) in cfg.regions.iter().enumerate() {
            let len = r.end.saturating_sub(r.start);
            if max_size > len {
                return Err(GenError::TooSmall {
                    size: max_size,
                    region: len,
                    target: t,
                });
            }
            let n = (len / align).max(1);
            let key = cfg.seed ^ (t as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let picker = if cfg.randommap {
                Picker::Map {
                    perm: Permutation::new((len / max_size).max(1), key),
                    next: 0,
                    pass: 0,
                    slot: max_size,
                }
            } else {
                match &cfg.distribution {
                    Distribution::Zoned(zones) => {
                        let mut v = Vec::with_capacity(zones.len());
                        let (mut cum, mut first) = (0.0, 0u64);
                        for z in zones {
                            let want = (z.len.resolve(len) / align).min(n - first.min(n));
                            cum += z.access_pct / 100.0;
                            if want > 0 {
                                v.push((cum, first, want));
                            }
                            first += want;
                        }
                        if v.is_empty() {
                            v.push((1.0, 0, n));
                        }
                        Picker::Zoned(v)
                    }
                    Distribution::Random => Picker::Uniform,
                    Distribution::Zipf(th) => {
                        Picker::Zipf(Zipf::new(n, *th), Permutation::new(n, key))
                    }
                    Distribution::Pareto(h) => Picker::Pareto(*h, Permutation::new(n, key)),
                    Distribution::Normal(sigma) => Picker::Normal(sigma / 100.0),
                }
            };
            targets.push(TargetState {
                region: *r,
                seq: [r.start, r.start],
                run: (0, 0),
                picker,
            });
        }
        Ok(Generator {
            lines,
            which: Deck::new(which_cards),
            files: crate::engines::files::FilePicker::new(
                cfg.file_service,
                cfg.regions
                    .iter()
                    .map(|r| r.end.saturating_sub(r.start))
                    .collect(),
            ),
            open: cfg.open_limit.map(|limit| {
                crate::job::openfiles::OpenSet::new(
                    cfg.file_service,
                    cfg.regions
                        .iter()
                        .map(|r| r.end.saturating_sub(r.start))
                        .collect(),
                    limit,
                )
            }),
            held: None,
            then_write: None,
            trimwrite: cfg.write_kind == WriteKind::TrimWrite,
            targets,
            align,
            write_op: match cfg.write_kind {
                WriteKind::Write => Op::Write,
                WriteKind::Trim | WriteKind::TrimWrite => Op::Trim,
            },
            seed: cfg.seed,
            rng: Rng::new(cfg.seed),
            seq_delta: cfg.seq_delta,
            seq_run: cfg.seq_run.max(1),
            identical: cfg.identical,
            unaligned: cfg.unaligned.filter(|(lo, hi)| lo <= hi && *lo > 0),
            strided: cfg.strided.filter(|z| z.size > 0 && z.range > 0),
            zone: (cfg.regions[0].start, 0),
            zone_map: None,
            randommap: cfg.randommap,
        })
    }

    /// The open set of a job under `openfiles` (None: every file open).
    pub fn open_set(&mut self) -> Option<&mut crate::job::openfiles::OpenSet> {
        self.open.as_mut()
    }

    /// The next I/O; under `openfiles`, None while the open set must wait
    /// for an I/O in flight to complete.
    #[inline(always)]
    pub fn try_next_io(&mut self) -> Option<IoDesc> {
        if self.open.is_none() {
            return Some(self.next_io());
        }
        if let Some(w) = self.then_write.take() {
            return Some(w);
        }
        let io = self.try_next_in_open_set()?;
        Some(self.trimmed_then_written(io))
    }

    /// Under `trimwrite` (fio 3.33's `set_rw_ddir`), a trim is followed
    /// by a write of the same block: keep that write for the next call.
    #[inline(always)]
    fn trimmed_then_written(&mut self, io: IoDesc) -> IoDesc {
        if self.trimwrite && io.op == Op::Trim {
            self.then_write = Some(IoDesc {
                op: Op::Write,
                ..io
            });
        }
        io
    }

    /// [`try_next_io`](Generator::try_next_io) under `openfiles`: kept out
    /// of line, so the common path (every file open) stays small enough to
    /// inline into the job loop.
    #[inline(never)]
    fn try_next_in_open_set(&mut self) -> Option<IoDesc> {
        let (li, read, random) = match self.held.take() {
            Some(h) => h,
            None => {
                let li = self.which.draw(&mut self.rng) as usize;
                let line = &mut self.lines[li];
                let read = line.reads.draw(&mut self.rng) == 1;
                let random = line.randoms.draw(&mut self.rng) == 1;
                (li, read, random)
            }
        };
        let size = self.size_of(li);
        let picked = match self.open.as_mut() {
            Some(o) => o.pick(&mut self.rng, size),
            None => Ok(0),
        };
        match picked {
            Ok(t) => Some(self.io_on(t, size, read, random)),
            Err(_) => {
                self.held = Some((li, read, random));
                None
            }
        }
    }

    /// The next I/O.
    #[inline]
    pub fn next_io(&mut self) -> IoDesc {
        if let Some(w) = self.then_write.take() {
            return w;
        }
        let li = self.which.draw(&mut self.rng) as usize;
        let line = &mut self.lines[li];
        let read = line.reads.draw(&mut self.rng) == 1;
        let random = line.randoms.draw(&mut self.rng) == 1;
        let size = self.size_of(li);
        let t = self.files.pick(&mut self.rng, size);
        let io = self.io_on(t, size, read, random);
        self.trimmed_then_written(io)
    }

    /// The size of the next I/O of line `li`: the line's, or under
    /// `bs_unaligned` any byte count of the range.
    #[inline(always)]
    fn size_of(&mut self, li: usize) -> u64 {
        match self.unaligned {
            None => self.lines[li].size,
            Some((lo, hi)) => lo + self.rng.below(hi - lo + 1),
        }
    }

    /// The I/O of `size` bytes on target `t`.
    #[inline(always)]
    fn io_on(&mut self, t: usize, size: u64, read: bool, random: bool) -> IoDesc {
        let op = if read { Op::Read } else { self.write_op };
        if let Some(z) = self.strided {
            return self.strided_io(z, t, op, size, random);
        }
        let offset = if random {
            let ts = &mut self.targets[t];
            if ts.run.0 > 0 && ts.run.1 + size <= ts.region.end {
                // rw=randread:N: continue sequentially from the random
                // offset (rw_sequencer=identical: repeat it).
                ts.run.0 -= 1;
                let off = ts.run.1;
                if !self.identical {
                    ts.run.1 += size;
                }
                off
            } else {
                let off = self.random_offset(t, size);
                let ts = &mut self.targets[t];
                let next = if self.identical { off } else { off + size };
                ts.run = (self.seq_run - 1, next);
                off
            }
        } else {
            let ts = &mut self.targets[t];
            let d = usize::from(!read);
            let r = ts.region;
            let mut off = ts.seq[d];
            if off + size > r.end {
                off = r.start;
            }
            // Next offset: after this I/O plus the rw=MODE:N modifier,
            // wrapping to the end when it runs back before the start.
            let len = (r.end - r.start) as i128;
            let mut next = off as i128 + size as i128 + i128::from(self.seq_delta);
            if next < r.start as i128 {
                next += ((r.start as i128 - next + len - 1) / len) * len;
                if next + size as i128 > r.end as i128 {
                    next = r.end as i128 - size as i128;
                }
            }
            ts.seq[d] = next as u64;
            off
        };
        IoDesc {
            target: t as u32,
            op,
            offset,
            len: size as u32,
        }
    }

    /// Continue sequential I/O after `io`, where the zone rules of
    /// `zonemode=zbd` moved it (fio's last position follows the I/O).
    pub fn follow(&mut self, io: &IoDesc) {
        let d = usize::from(io.op != Op::Read);
        if let Some(ts) = self.targets.get_mut(io.target as usize) {
            ts.seq[d] = io.offset + u64::from(io.len);
        }
    }

    /// The next I/O in `zonemode=strided` (as fio's io_u.c does it).
    fn strided_io(&mut self, z: Strided, t: usize, op: Op, size: u64, random: bool) -> IoDesc {
        let d = usize::from(op != Op::Read);
        let ts = &mut self.targets[t];
        let r = ts.region;
        if self.zone.1 >= z.size {
            // The zone is done: the next one, from the start past the end.
            self.zone.1 = 0;
            self.zone.0 = self.zone.0.saturating_add(z.range).saturating_add(z.skip);
            if self.zone.0 >= r.end {
                self.zone.0 = r.start;
            }
            // As fio: only this direction's position moves to the new zone.
            ts.seq[d] = self.zone.0;
        }
        let start = self.zone.0;
        // A zone cut by the region's end, or too short for a transfer, is
        // used from the region's end back.
        let end = start
            .saturating_add(z.range)
            .min(r.end)
            .max(start + size)
            .min(r.end);
        let start = start.min(end - size);
        if ts.seq[d] >= start + z.range || ts.seq[d] < start {
            ts.seq[d] = start;
        }
        let offset = if random {
            let fit = (end - start - size) / self.align + 1;
            if !self.randommap {
                start + self.rng.below(fit) * self.align
            } else {
                // As fio: every slot once per zonerange bytes of the zone.
                if self.zone.1 % z.range == 0
                    || self.zone_map.as_ref().is_none_or(|m| m.1 >= m.0.len())
                {
                    let key = self.seed ^ start ^ self.zone.1.rotate_left(17) ^ self.rng.next_u64();
                    self.zone_map = Some((Permutation::new(fit, key), 0));
                }
                let m = self.zone_map.as_mut().map_or(0, |m| {
                    m.1 += 1;
                    m.0.get(m.1 - 1)
                });
                start + m.min(fit - 1) * self.align
            }
        } else {
            let mut off = ts.seq[d];
            if off + size > end {
                off = start;
            }
            ts.seq[d] = off + size;
            off
        };
        self.zone.1 += size;
        IoDesc {
            target: t as u32,
            op,
            offset,
            len: size as u32,
        }
    }

    fn random_offset(&mut self, t: usize, size: u64) -> u64 {
        let align = self.align;
        let rng = &mut self.rng;
        let ts = &mut self.targets[t];
        let r = ts.region;
        let len = r.end - r.start;
        // Slots where a transfer of `size` fits entirely.
        let fit = (len - size) / align + 1;
        let all = (len / align).max(1);
        let clamp = |idx: u64| r.start + idx.min(fit - 1) * align;
        match &mut ts.picker {
            Picker::Uniform => r.start + rng.below(fit) * align,
            Picker::Zipf(z, p) => clamp(p.get(z.sample(rng) - 1)),
            Picker::Pareto(h, p) => {
                let x = rng.unit().powf(1.0 / (1.0 - *h));
                clamp(p.get(((x * all as f64) as u64).min(all - 1)))
            }
            Picker::Zoned(zones) => {
                let u = rng.unit() * zones.last().map_or(1.0, |z| z.0);
                let &(_, first, n) = zones
                    .iter()
                    .find(|z| u < z.0)
                    .unwrap_or(&zones[zones.len() - 1]);
                clamp(first + rng.below(n))
            }
            Picker::Normal(sigma) => {
                let x = all as f64 / 2.0 + rng.normal() * *sigma * all as f64;
                clamp(x.clamp(0.0, (all - 1) as f64) as u64)
            }
            Picker::Map {
                perm,
                next,
                pass,
                slot,
            } => {
                if *next == perm.len() {
                    *pass += 1;
                    *perm = Permutation::new(
                        perm.len(),
                        self.seed ^ pass.wrapping_mul(0xA24B_AED4_963E_E407),
                    );
                    *next = 0;
                }
                let s = perm.get(*next);
                *next += 1;
                r.start + s * *slot
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(lines: Vec<AccessLine>, len: u64) -> GenConfig {
        GenConfig {
            lines,
            write_kind: WriteKind::Write,
            regions: vec![Region { start: 0, end: len }],
            align: 512,
            distribution: Distribution::Random,
            file_service: Default::default(),
            open_limit: None,
            randommap: false,
            seed: 1,
            seq_delta: 0,
            seq_run: 1,
            identical: false,
            unaligned: None,
            strided: None,
        }
    }

    /// Offsets in units of 512 KiB of a strided read job over [start, end).
    fn strided(start: u64, end: u64, z: (u64, u64, u64), random: bool, n: usize) -> Vec<u64> {
        strided_map(start, end, z, random, false, n)
    }

    fn strided_map(
        start: u64,
        end: u64,
        z: (u64, u64, u64),
        random: bool,
        randommap: bool,
        n: usize,
    ) -> Vec<u64> {
        const K: u64 = 512 << 10;
        let mut c = cfg(vec![line(K, 1, 100, if random { 100 } else { 0 })], end);
        c.randommap = randommap;
        c.regions = vec![Region { start, end }];
        c.align = K;
        c.strided = Some(Strided {
            size: z.0,
            range: z.1,
            skip: z.2,
        });
        let mut g = Generator::new(&c).unwrap();
        (0..n).map(|_| g.next_io().offset / K).collect()
    }

    #[test]
    fn strided_zones_visit_what_fio_visits() {
        // Each as fio 3.33 did it (--write_iolog), in 512 KiB units.
        const M: u64 = 1 << 20;
        // zonesize=1m zoneskip=1m on 8m: zones at 0, 2, 4, 6 MiB, then again.
        assert_eq!(
            strided(0, 8 * M, (M, M, M), false, 10),
            [0, 1, 4, 5, 8, 9, 12, 13, 0, 1]
        );
        // zonesize=2m zonerange=1m: each zone twice before moving on.
        assert_eq!(
            strided(0, 8 * M, (2 * M, M, M), false, 10),
            [0, 1, 0, 1, 4, 5, 4, 5, 8, 9]
        );
        // offset=1m: zones from the region's start; wrap back to it.
        assert_eq!(
            strided(M, 9 * M, (M, M, M), false, 10),
            [2, 3, 6, 7, 10, 11, 14, 15, 2, 3]
        );
        // zoneskip=2m on 7m: zones at 0, 3, 6 MiB; 9 MiB is past the end.
        assert_eq!(
            strided(0, 7 * M, (M, M, 2 * M), false, 8),
            [0, 1, 6, 7, 12, 13, 0, 1]
        );
        // Random: zonerange=2m zoneskip=1m, zones at 0, 3, 6 MiB; two
        // transfers (zonesize=1m) in each, anywhere a transfer fits.
        let r = strided(0, 8 * M, (M, 2 * M, M), true, 600);
        for (i, o) in r.iter().enumerate() {
            let zone = [0, 6, 12][(i / 2) % 3];
            assert!((zone..=zone + 3).contains(o), "I/O {i} at {o}: zone {zone}");
        }
        let distinct: std::collections::BTreeSet<_> = r.iter().collect();
        assert_eq!(distinct.len(), 12, "every slot of every zone: {distinct:?}");
        // randommap: each zonerange bytes visit every slot of the zone once
        // (zonesize=4m, zonerange=2m: twice in each zone before moving on).
        let r = strided_map(0, 8 * M, (4 * M, 2 * M, M), true, true, 48);
        for (i, pass) in r.chunks(4).enumerate() {
            let zone = [0, 6, 12][(i / 2) % 3];
            let mut p = pass.to_vec();
            p.sort();
            assert_eq!(
                p,
                [zone, zone + 1, zone + 2, zone + 3],
                "pass {i}: {pass:?}"
            );
        }
    }

    fn line(size: u64, weight: u32, read_pct: u8, random_pct: u8) -> AccessLine {
        AccessLine {
            size,
            weight,
            read_pct,
            random_pct,
        }
    }

    #[test]
    fn mix_is_exact_over_every_deck() {
        let lines = vec![
            line(512, 10, 80, 100),
            line(4096, 60, 80, 100),
            line(65536, 30, 80, 100),
        ];
        let mut g = Generator::new(&cfg(lines, 1 << 30)).unwrap();
        let n = 100_000;
        let mut sizes = std::collections::HashMap::new();
        let mut reads = 0;
        for _ in 0..n {
            let io = g.next_io();
            *sizes.entry(io.len).or_insert(0u32) += 1;
            reads += u32::from(io.op == Op::Read);
            assert!(io.offset % 512 == 0 && io.offset + u64::from(io.len) <= 1 << 30);
        }
        assert_eq!(sizes[&512], 10_000);
        assert_eq!(sizes[&4096], 60_000);
        assert_eq!(sizes[&65536], 30_000);
        // 80% of each line, lines' decks cycle independently: within 100 I/Os.
        assert!((reads as i64 - 80_000).abs() <= 300, "{reads}");
    }

    #[test]
    fn sequential_is_contiguous_and_wraps() {
        let mut g = Generator::new(&cfg(vec![line(4096, 100, 0, 0)], 16384)).unwrap();
        let offs: Vec<u64> = (0..6).map(|_| g.next_io().offset).collect();
        assert_eq!(offs, vec![0, 4096, 8192, 12288, 0, 4096]);
    }

    #[test]
    fn randommap_touches_every_slot_once_per_pass() {
        let mut c = cfg(vec![line(4096, 100, 100, 100)], 4096 * 1000);
        c.randommap = true;
        let mut g = Generator::new(&c).unwrap();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            assert!(seen.insert(g.next_io().offset));
        }
        assert_eq!(seen.len(), 1000);
    }

    #[test]
    fn zipf_concentrates_and_normal_centres() {
        let mut c = cfg(vec![line(4096, 100, 100, 100)], 4096 * 10_000);
        c.align = 4096;
        c.distribution = Distribution::Zipf(1.2);
        let mut g = Generator::new(&c).unwrap();
        let mut counts = std::collections::HashMap::new();
        for _ in 0..50_000 {
            *counts.entry(g.next_io().offset).or_insert(0u32) += 1;
        }
        let top = counts.values().max().copied().unwrap();
        assert!(top > 5_000, "hottest block only {top}");
        c.distribution = Distribution::Normal(5.0);
        let mut g = Generator::new(&c).unwrap();
        let mid = 4096 * 5_000;
        let near = (0..10_000)
            .filter(|_| g.next_io().offset.abs_diff(mid) < 4096 * 1000)
            .count();
        // ±2σ (σ = 5% of 10,000 blocks = 500): about 95%.
        assert!(near > 9_300, "{near}");
    }

    #[test]
    fn too_small_region_is_an_error() {
        let e = Generator::new(&cfg(vec![line(8192, 100, 100, 100)], 4096)).unwrap_err();
        assert!(matches!(e, GenError::TooSmall { .. }));
    }

    #[test]
    fn targets_alternate() {
        let mut c = cfg(vec![line(4096, 100, 100, 0)], 1 << 20);
        c.regions.push(Region {
            start: 0,
            end: 1 << 20,
        });
        let mut g = Generator::new(&c).unwrap();
        let t: Vec<u32> = (0..4).map(|_| g.next_io().target).collect();
        assert_eq!(t, vec![0, 1, 0, 1]);
    }

    #[test]
    fn zoned_sends_each_zone_its_share() {
        use crate::spec::kinds::Zone;
        let mut c = cfg(vec![line(4096, 100, 100, 100)], 4096 * 1000);
        c.align = 4096;
        // 50% of the accesses to the first 5%, 30% to the next 15%, 20% to the rest.
        c.distribution = Distribution::Zoned(vec![
            Zone {
                access_pct: 50.0,
                len: crate::SizeSpec::Percent(5.0),
            },
            Zone {
                access_pct: 30.0,
                len: crate::SizeSpec::Percent(15.0),
            },
            Zone {
                access_pct: 20.0,
                len: crate::SizeSpec::Percent(80.0),
            },
        ]);
        let mut g = Generator::new(&c).unwrap();
        let n = 100_000;
        let mut zone = [0u32; 3];
        for _ in 0..n {
            let b = g.next_io().offset / 4096;
            zone[if b < 50 {
                0
            } else if b < 200 {
                1
            } else {
                2
            }] += 1;
        }
        for (got, want) in zone.iter().zip([50_000i64, 30_000, 20_000]) {
            assert!((i64::from(*got) - want).abs() < 1_000, "{zone:?}");
        }
    }

    #[test]
    fn negative_offset_modifier_reads_backwards_once_over_the_region() {
        let mut c = cfg(vec![line(4096, 100, 100, 0)], 4096 * 4);
        c.seq_delta = -8192;
        let mut g = Generator::new(&c).unwrap();
        let offs: Vec<u64> = (0..5).map(|_| g.next_io().offset).collect();
        assert_eq!(offs, vec![0, 12288, 8192, 4096, 0]);
        // A positive one leaves holes.
        c.seq_delta = 4096;
        let mut g = Generator::new(&c).unwrap();
        let offs: Vec<u64> = (0..3).map(|_| g.next_io().offset).collect();
        assert_eq!(offs, vec![0, 8192, 0]);
    }

    #[test]
    fn random_with_a_count_runs_sequentially_from_each_random_offset() {
        let mut c = cfg(vec![line(4096, 100, 100, 100)], 1 << 30);
        c.seq_run = 4;
        let mut g = Generator::new(&c).unwrap();
        let offs: Vec<u64> = (0..8).map(|_| g.next_io().offset).collect();
        for run in offs.chunks(4) {
            assert_eq!(run[1], run[0] + 4096);
            assert_eq!(run[3], run[0] + 3 * 4096);
        }
        assert_ne!(offs[4], offs[3] + 4096);
    }
}
