//! Filling and verifying buffers of logical blocks with a pattern, fast.
//!
//! The engine calls [`Generator::fill`] before every write and
//! [`Generator::verify`] after every read, so both run at memory speed
//! (several GB/s per core) and allocate nothing:
//!
//! - periodic patterns (every block alike) are generated once, at build
//!   time, into a cache-resident template of whole blocks; fill copies it
//!   (`memcpy`) and verify compares against it (`memcmp`), both of which the
//!   C library runs with the widest SIMD the CPU has;
//! - `random` generates each block from its own counter-based stream (one
//!   64-bit multiply per 8 bytes), and verify compares generated words with
//!   the buffer in the same loop, or-ing differences, without writing a copy;
//! - `stamped` is `random` keyed also by the sequence number, behind a
//!   40-byte header whose CRC-32C (hardware-accelerated) covers the block.
//!
//! Only when a block fails does verification slow down, to locate the first
//! differing byte and classify the block.

use std::ops::ControlFlow;

use crate::error::PatternError;
use crate::miscompare::{Miscompare, MiscompareKind, VerifySummary, WINDOW_LEN};
use crate::pattern::Pattern;
use crate::rng;
use crate::stamp::{self, Stamp, StampRead, HEADER_LEN, MAGIC};

/// Smallest template of a periodic pattern, in bytes (rounded up to whole
/// blocks): big enough that per-call overhead of `memcpy`/`memcmp` vanishes,
/// small enough to stay in L1/L2.
const TEMPLATE_MIN: usize = 16 * 1024;

/// Page size for the aliasing rule below, in bytes.
const PAGE: usize = 4096;
/// Copies whose destination lies less than this many bytes after the source
/// modulo [`PAGE`] are slow: glibc 2.36's `memcpy` (its `rep movsb` path
/// for mid-size copies) ran at ~2 GB/s instead of ~40 on this AMD EPYC
/// whenever `(dst − src) mod 4096` was in 1..32 (measured with 16 KiB
/// copies; a page-aliasing effect). The template is stored twice, the
/// copies 2048 bytes apart modulo 4096, and fill takes the safe one.
const ALIAS_WINDOW: usize = 64;

/// Builds a [`Generator`]: `new(pattern, block_size)`, then optional
/// `seed`, `run_id`, `sequence`, then `build()`.
#[derive(Debug, Clone)]
pub struct GeneratorBuilder {
    pattern: Pattern,
    block_size: usize,
    seed: u64,
    run_id: u64,
    sequence: u64,
}

impl GeneratorBuilder {
    /// A builder for `pattern` over logical blocks of `block_size` bytes.
    pub fn new(pattern: Pattern, block_size: usize) -> GeneratorBuilder {
        GeneratorBuilder {
            pattern,
            block_size,
            seed: 0,
            run_id: 0,
            sequence: 0,
        }
    }

    /// Seed of `random` and of `stamped`'s payload (default 0). Print it in
    /// the log: the same seed regenerates the same data.
    pub fn seed(mut self, seed: u64) -> GeneratorBuilder {
        self.seed = seed;
        self
    }

    /// Run id written into every `stamped` block (default 0).
    pub fn run_id(mut self, run_id: u64) -> GeneratorBuilder {
        self.run_id = run_id;
        self
    }

    /// Sequence number (pass / write generation) written into every
    /// `stamped` block and keying its payload (default 0).
    pub fn sequence(mut self, sequence: u64) -> GeneratorBuilder {
        self.sequence = sequence;
        self
    }

    /// The generator; fails on a zero block size, or a block size below
    /// [`HEADER_LEN`] (40 bytes) for `stamped`. Periodic patterns build
    /// their template here (the only allocation).
    pub fn build(self) -> Result<Generator, PatternError> {
        let bs = self.block_size;
        if bs == 0 {
            return Err(PatternError::ZeroBlockSize);
        }
        if self.pattern == Pattern::Stamped && bs < HEADER_LEN {
            return Err(PatternError::BlockTooSmallForStamp {
                block_size: bs,
                min: HEADER_LEN,
            });
        }
        let (store, template_len, alt_at) = if self.pattern.is_periodic() {
            let blocks = TEMPLATE_MIN.div_ceil(bs).max(1);
            let len = blocks * bs;
            // Second copy at an offset ≡ PAGE/2 (mod PAGE), past the first.
            let alt_at = len.saturating_sub(PAGE / 2).div_ceil(PAGE) * PAGE + PAGE / 2;
            let mut t = Vec::with_capacity(alt_at + len);
            for i in 0..bs {
                // is_periodic() guarantees Some.
                t.push(self.pattern.periodic_byte(i).unwrap_or(0));
            }
            for _ in 1..blocks {
                t.extend_from_within(..bs);
            }
            t.resize(alt_at, 0);
            t.extend_from_within(..len);
            (t, len, alt_at)
        } else {
            (Vec::new(), 0, 0)
        };
        Ok(Generator {
            pattern: self.pattern,
            block_size: bs,
            seed: self.seed,
            run_id: self.run_id,
            sequence: self.sequence,
            store,
            template_len,
            alt_at,
        })
    }
}

/// Fills and verifies buffers of consecutive logical blocks with one
/// pattern. Cheap to share between threads (`&self` everywhere).
#[derive(Clone)]
pub struct Generator {
    pattern: Pattern,
    block_size: usize,
    seed: u64,
    run_id: u64,
    sequence: u64,
    /// Periodic patterns: the template (whole blocks of the pattern, at
    /// least `TEMPLATE_MIN` bytes) at 0 and again at `alt_at`. Empty for
    /// `random` and `stamped`.
    store: Vec<u8>,
    /// Length of the template in bytes (a multiple of the block size).
    template_len: usize,
    /// Offset of the second copy of the template in `store`.
    alt_at: usize,
}

impl std::fmt::Debug for Generator {
    /// The settings, without the template bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator")
            .field("pattern", &self.pattern)
            .field("block_size", &self.block_size)
            .field("seed", &format_args!("{:#018x}", self.seed))
            .field("run_id", &format_args!("{:#018x}", self.run_id))
            .field("sequence", &self.sequence)
            .finish()
    }
}

impl Generator {
    /// Shorthand for [`GeneratorBuilder::new`].
    pub fn builder(pattern: Pattern, block_size: usize) -> GeneratorBuilder {
        GeneratorBuilder::new(pattern, block_size)
    }

    /// The pattern.
    pub fn pattern(&self) -> &Pattern {
        &self.pattern
    }

    /// Logical block size in bytes.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Seed of `random` / `stamped`.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Run id stamped into `stamped` blocks.
    pub fn run_id(&self) -> u64 {
        self.run_id
    }

    /// Sequence number stamped into `stamped` blocks.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Change the sequence number, e.g. at the start of a new pass.
    pub fn set_sequence(&mut self, sequence: u64) {
        self.sequence = sequence;
    }

    /// Check that a buffer of `len` bytes is a whole number of blocks, as
    /// [`Generator::fill`] and [`Generator::verify`] require. Call it once
    /// when sizing buffers.
    pub fn check_len(&self, len: usize) -> Result<(), PatternError> {
        if len % self.block_size == 0 {
            Ok(())
        } else {
            Err(PatternError::PartialBlock {
                len,
                block_size: self.block_size,
            })
        }
    }

    fn assert_whole(&self, len: usize) {
        assert!(
            len % self.block_size == 0,
            "drivelab-patterns: buffer of {len} bytes is not a whole number of \
             {}-byte blocks (size buffers with Generator::check_len)",
            self.block_size
        );
    }

    /// Fill `buf` with the pattern, as consecutive blocks from `first_lba`
    /// (in logical blocks; wraps past `u64::MAX`). Allocates nothing.
    ///
    /// # Panics
    /// If `buf.len()` is not a multiple of the block size (see
    /// [`Generator::check_len`]).
    pub fn fill(&self, buf: &mut [u8], first_lba: u64) {
        self.assert_whole(buf.len());
        let bs = self.block_size;
        match self.pattern {
            Pattern::Random => {
                for (n, block) in buf.chunks_exact_mut(bs).enumerate() {
                    let lba = first_lba.wrapping_add(n as u64);
                    rng::fill_stream(block, rng::random_key(self.seed, lba));
                }
            }
            Pattern::Stamped => {
                for (n, block) in buf.chunks_exact_mut(bs).enumerate() {
                    let lba = first_lba.wrapping_add(n as u64);
                    let key = rng::stamped_key(self.seed, lba, self.sequence);
                    rng::fill_stream(&mut block[HEADER_LEN..], key);
                    Stamp::new(lba, self.run_id, self.sequence).write(block);
                }
            }
            _ => {
                let a = self.template();
                let b = &self.store[self.alt_at..self.alt_at + self.template_len];
                for chunk in buf.chunks_mut(self.template_len) {
                    let rel = (chunk.as_ptr() as usize).wrapping_sub(a.as_ptr() as usize) % PAGE;
                    let src = if rel < ALIAS_WINDOW { b } else { a };
                    chunk.copy_from_slice(&src[..chunk.len()]);
                }
            }
        }
    }

    /// Verify that `buf` holds what [`Generator::fill`] would write for
    /// blocks from `first_lba`; stop at the first failing block. Allocates
    /// nothing.
    ///
    /// # Panics
    /// If `buf.len()` is not a multiple of the block size.
    pub fn verify(&self, buf: &[u8], first_lba: u64) -> Result<(), Miscompare> {
        let mut first = None;
        self.verify_each(buf, first_lba, |m| {
            first = Some(m);
            ControlFlow::Break(())
        });
        match first {
            Some(m) => Err(m),
            None => Ok(()),
        }
    }

    /// Verify every block of `buf`, counting all failing blocks and keeping
    /// the first `limit` miscompares (allocating only when a block fails).
    ///
    /// # Panics
    /// If `buf.len()` is not a multiple of the block size.
    pub fn verify_all(&self, buf: &[u8], first_lba: u64, limit: usize) -> VerifySummary {
        let mut summary = VerifySummary {
            blocks_checked: (buf.len() / self.block_size) as u64,
            ..VerifySummary::default()
        };
        self.verify_each(buf, first_lba, |m| {
            summary.blocks_failed += 1;
            if summary.miscompares.len() < limit {
                summary.miscompares.push(m);
            }
            ControlFlow::Continue(())
        });
        summary
    }

    /// Verify `buf` block by block, calling `on_fail` with each failing
    /// block's miscompare, in buffer order, until it returns `Break`.
    /// Returns the number of failing blocks reported.
    ///
    /// # Panics
    /// If `buf.len()` is not a multiple of the block size.
    pub fn verify_each(
        &self,
        buf: &[u8],
        first_lba: u64,
        mut on_fail: impl FnMut(Miscompare) -> ControlFlow<()>,
    ) -> u64 {
        self.assert_whole(buf.len());
        let bs = self.block_size;
        let mut failed = 0u64;
        let mut report = |n: usize, block: &[u8]| {
            failed += 1;
            let lba = first_lba.wrapping_add(n as u64);
            on_fail(self.describe(block, lba, n * bs))
        };
        match self.pattern {
            Pattern::Random => {
                for (n, block) in buf.chunks_exact(bs).enumerate() {
                    let lba = first_lba.wrapping_add(n as u64);
                    if !rng::matches_stream(block, rng::random_key(self.seed, lba))
                        && report(n, block).is_break()
                    {
                        break;
                    }
                }
            }
            Pattern::Stamped => {
                for (n, block) in buf.chunks_exact(bs).enumerate() {
                    let lba = first_lba.wrapping_add(n as u64);
                    if !self.stamped_block_ok(block, lba) && report(n, block).is_break() {
                        break;
                    }
                }
            }
            _ => {
                let t = self.template();
                let per_chunk = t.len() / bs;
                'chunks: for (c, chunk) in buf.chunks(t.len()).enumerate() {
                    if chunk == &t[..chunk.len()] {
                        continue;
                    }
                    for (b, block) in chunk.chunks_exact(bs).enumerate() {
                        if block != &t[..bs] && report(c * per_chunk + b, block).is_break() {
                            break 'chunks;
                        }
                    }
                }
            }
        }
        failed
    }

    /// The template of a periodic pattern (empty for the others).
    fn template(&self) -> &[u8] {
        &self.store[..self.template_len]
    }

    /// Fast check of one stamped block: header fields, payload, CRC.
    #[inline]
    fn stamped_block_ok(&self, block: &[u8], lba: u64) -> bool {
        let mut fields = [0u8; HEADER_LEN];
        Stamp::new(lba, self.run_id, self.sequence).write_fields(&mut fields);
        // Header except the CRC (bytes 32..36), then payload, then CRC.
        block[..32] == fields[..32]
            && block[36..HEADER_LEN] == fields[36..]
            && rng::matches_stream(
                &block[HEADER_LEN..],
                rng::stamped_key(self.seed, lba, self.sequence),
            )
            && stamp::stored_crc(block) == stamp::block_crc(block)
    }

    /// Locate the first differing byte of a failing `block` (at
    /// `buffer_base` in the buffer) and classify it.
    fn describe(&self, block: &[u8], lba: u64, buffer_base: usize) -> Miscompare {
        let expect = Expected::new(self, lba);
        let mut tmp = [0u8; 256];
        let mut first = None;
        let mut off = 0;
        while off < block.len() {
            let n = tmp.len().min(block.len() - off);
            expect.range(off, &mut tmp[..n]);
            if let Some(i) = tmp[..n]
                .iter()
                .zip(&block[off..off + n])
                .position(|(e, f)| e != f)
            {
                first = Some(off + i);
                break;
            }
            off += n;
        }
        // A failing block always differs somewhere; 0 is a safe fallback.
        let at = first.unwrap_or(0);
        let n = WINDOW_LEN.min(block.len() - at);
        let mut exp = [0u8; WINDOW_LEN];
        expect.range(at, &mut exp[..n]);
        let kind = match self.pattern {
            Pattern::Stamped => match Stamp::read(block) {
                StampRead::NoMagic | StampRead::BadChecksum { .. } => MiscompareKind::Corrupted,
                StampRead::Valid(s) if s.lba != lba => {
                    MiscompareKind::Misdirected { belongs_to: s.lba }
                }
                StampRead::Valid(s) if s.run_id != self.run_id || s.sequence != self.sequence => {
                    MiscompareKind::Stale {
                        found_seq: s.sequence,
                        found_run: s.run_id,
                    }
                }
                StampRead::Valid(_) => MiscompareKind::SeedMismatch,
            },
            _ => MiscompareKind::Data,
        };
        Miscompare::new(
            lba,
            at,
            buffer_base + at,
            kind,
            &exp[..n],
            &block[at..at + n],
        )
    }
}

/// The expected content of one block, generated piecewise without a
/// block-sized buffer (the slow path of verification).
struct Expected<'a> {
    generator: &'a Generator,
    key: u64,
    header: [u8; HEADER_LEN],
}

impl<'a> Expected<'a> {
    fn new(generator: &'a Generator, lba: u64) -> Expected<'a> {
        let g = generator;
        let mut header = [0u8; HEADER_LEN];
        let key = match g.pattern {
            Pattern::Random => rng::random_key(g.seed, lba),
            Pattern::Stamped => {
                let key = rng::stamped_key(g.seed, lba, g.sequence);
                Stamp::new(lba, g.run_id, g.sequence).write_fields(&mut header);
                // CRC over header fields, reserved bytes, then the payload
                // generated in stack-sized pieces.
                let mut crc = crc32c::crc32c(&header[..32]);
                crc = crc32c::crc32c_append(crc, &header[36..]);
                let payload_len = g.block_size - HEADER_LEN;
                let mut piece = [0u8; 256];
                let mut off = 0;
                while off < payload_len {
                    let n = piece.len().min(payload_len - off);
                    rng::stream_range(&mut piece[..n], key, off);
                    crc = crc32c::crc32c_append(crc, &piece[..n]);
                    off += n;
                }
                header[32..36].copy_from_slice(&crc.to_le_bytes());
                key
            }
            _ => 0,
        };
        debug_assert!(g.pattern != Pattern::Stamped || header[..8] == MAGIC);
        Expected {
            generator,
            key,
            header,
        }
    }

    /// Expected bytes `[offset, offset + out.len())` of the block.
    fn range(&self, offset: usize, out: &mut [u8]) {
        let g = self.generator;
        match g.pattern {
            Pattern::Random => rng::stream_range(out, self.key, offset),
            Pattern::Stamped => {
                let mut pos = offset;
                let mut n = 0;
                while n < out.len() && pos < HEADER_LEN {
                    out[n] = self.header[pos];
                    n += 1;
                    pos += 1;
                }
                if n < out.len() {
                    rng::stream_range(&mut out[n..], self.key, pos - HEADER_LEN);
                }
            }
            _ => out.copy_from_slice(&g.template()[offset..offset + out.len()]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generator(p: Pattern, bs: usize) -> Generator {
        Generator::builder(p, bs)
            .seed(0x5EED)
            .run_id(7)
            .sequence(3)
            .build()
            .unwrap()
    }

    #[test]
    fn expected_range_equals_fill_for_every_kind() {
        for p in [Pattern::Incrementing, Pattern::Random, Pattern::Stamped] {
            for bs in [40usize, 513, 4096] {
                let g = generator(p.clone(), bs);
                let mut block = vec![0u8; bs];
                g.fill(&mut block, 99);
                let e = Expected::new(&g, 99);
                let mut got = vec![0u8; bs];
                e.range(0, &mut got);
                assert_eq!(got, block, "{p} bs {bs}");
                let mut part = vec![0u8; bs / 3];
                e.range(bs / 2, &mut part);
                assert_eq!(part, block[bs / 2..bs / 2 + bs / 3], "{p} bs {bs}");
            }
        }
    }

    #[test]
    fn both_template_copies_are_the_pattern_and_sit_half_a_page_apart() {
        for bs in [1usize, 3, 512, 520, 4096, 20_000] {
            let g = generator(Pattern::Decrementing, bs);
            let a = g.template();
            let b = &g.store[g.alt_at..g.alt_at + g.template_len];
            assert_eq!(a, b, "bs {bs}");
            assert_eq!(g.template_len % bs, 0);
            assert!(g.template_len >= TEMPLATE_MIN);
            assert!(g.alt_at >= g.template_len);
            assert_eq!(g.alt_at % PAGE, PAGE / 2, "bs {bs}");
            for (i, byte) in a.iter().enumerate() {
                assert_eq!(*byte, 255 - ((i % bs) % 256) as u8);
            }
        }
    }

    #[test]
    fn fill_at_every_alignment_to_the_template_is_right() {
        // Destinations at each 8-byte offset of a page relative to the
        // template, so both copies get used (under Miri every 65th: 8
        // offsets, 4 in each half of the page).
        let g = generator(Pattern::Incrementing, 512);
        let mut big = vec![0u8; 64 * 1024 + PAGE];
        let step = if cfg!(miri) { 8 * 65 } else { 8 };
        for shift in (0..PAGE).step_by(step) {
            let buf = &mut big[shift..shift + 64 * 1024];
            buf.fill(0xEE);
            g.fill(buf, 0);
            assert!(g.verify(buf, 0).is_ok(), "shift {shift}");
        }
    }

    #[test]
    fn debug_shows_settings_not_bytes() {
        let g = generator(Pattern::Fixed(vec![0xAB; 3]), 512);
        let d = format!("{g:?}");
        assert!(d.contains("Pattern(fixed:0xABABAB)"), "{d}");
        assert!(d.contains("block_size: 512"), "{d}");
        assert!(d.len() < 300, "{d}");
    }

    #[test]
    fn builder_rejects_zero_and_too_small_stamped_blocks() {
        assert!(matches!(
            Generator::builder(Pattern::AllZeros, 0).build(),
            Err(PatternError::ZeroBlockSize)
        ));
        let e = Generator::builder(Pattern::Stamped, 39)
            .build()
            .unwrap_err();
        assert!(matches!(
            e,
            PatternError::BlockTooSmallForStamp {
                block_size: 39,
                min: 40
            }
        ));
        assert!(Generator::builder(Pattern::Stamped, 40).build().is_ok());
    }

    #[test]
    fn check_len_wants_whole_blocks() {
        let g = generator(Pattern::AllOnes, 512);
        assert!(g.check_len(1024).is_ok());
        let e = g.check_len(1000).unwrap_err();
        assert!(e.to_string().contains("multiple of the block size"));
    }

    #[test]
    #[should_panic(expected = "not a whole number")]
    fn fill_of_a_partial_block_panics_with_a_message() {
        let g = generator(Pattern::AllOnes, 512);
        g.fill(&mut [0u8; 100], 0);
    }
}
