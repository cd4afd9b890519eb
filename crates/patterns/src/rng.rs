//! The counter-based pseudo-random stream behind `random` and `stamped`.
//!
//! Verification must be able to regenerate any one block on its own, so the
//! stream is not a sequential generator: word `j` of the stream for key `k`
//! is a pure function of `(k, j)`. The key of a block is a 64-bit hash of the
//! caller's seed and the block's LBA (and, for `stamped`, the sequence
//! number). Words are the `wyrand` output function — a 64×64→128-bit
//! multiply folded to 64 bits — applied to the Weyl sequence
//! `k + (j + 1)·W`, which passes PractRand/BigCrush as a stream; each key
//! starts at an unrelated point of that 2^64-long sequence, so the streams of
//! two blocks overlap only with probability ~block_words/2^64. Keys are
//! derived with the MurmurHash3 64-bit finaliser (`fmix64`), a bijection with
//! full avalanche. One multiply per 8 bytes keeps generation well above the
//! 5 GB/s per core the engine needs.

/// Weyl increment of the wyrand stream (odd, so the sequence has period 2^64).
pub(crate) const WEYL: u64 = 0xa076_1d64_78bd_642f;
/// Constant xor-ed into the second multiplicand of the wyrand output function.
const WY_XOR: u64 = 0xe703_7ed1_a0b4_28db;

/// Domain separators, so `random` and `stamped` never share a key.
const DOMAIN_RANDOM: u64 = 0x9e37_79b9_7f4a_7c15;
const DOMAIN_STAMPED: u64 = 0xd1b5_4a32_d192_ed03;
const LBA_SALT: u64 = 0x8cb9_2ba7_2f3d_8dd7;
const SEQ_SALT: u64 = 0xc2b2_ae3d_27d4_eb4f;

/// wyrand's output function of one Weyl state.
#[inline(always)]
pub(crate) fn output(state: u64) -> u64 {
    let t = u128::from(state) * u128::from(state ^ WY_XOR);
    ((t >> 64) as u64) ^ (t as u64)
}

/// Word `j` (0-based) of the stream with key `key`.
#[inline]
pub(crate) fn word(key: u64, j: u64) -> u64 {
    output(key.wrapping_add(j.wrapping_add(1).wrapping_mul(WEYL)))
}

/// MurmurHash3's 64-bit finaliser: a bijection with full avalanche.
#[inline]
pub(crate) fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    x
}

/// Key of block `lba` of the `random` pattern for `seed`.
#[inline]
pub(crate) fn random_key(seed: u64, lba: u64) -> u64 {
    let h = fmix64(seed ^ DOMAIN_RANDOM);
    fmix64(h ^ fmix64(lba ^ LBA_SALT))
}

/// Key of the payload of block `lba`, generation `seq`, of `stamped`.
#[inline]
pub(crate) fn stamped_key(seed: u64, lba: u64, seq: u64) -> u64 {
    let h = fmix64(seed ^ DOMAIN_STAMPED);
    let h = fmix64(h ^ fmix64(lba ^ LBA_SALT));
    fmix64(h ^ fmix64(seq ^ SEQ_SALT))
}

/// Fill `out` with the stream of `key`, starting at word 0.
///
/// Byte `i` of `out` is byte `i % 8` (little-endian) of word `i / 8`; a
/// trailing partial word gets that word's low bytes. The main loop makes
/// four words per step from four independent states, so the multiplies
/// overlap (and the compiler does not try to vectorise the state, which
/// costs more than it saves).
#[inline]
pub(crate) fn fill_stream(out: &mut [u8], key: u64) {
    const W2: u64 = WEYL.wrapping_mul(2);
    const W3: u64 = WEYL.wrapping_mul(3);
    const W4: u64 = WEYL.wrapping_mul(4);
    let mut state = key;
    let mut quads = out.chunks_exact_mut(32);
    for c in &mut quads {
        let w0 = output(state.wrapping_add(WEYL));
        let w1 = output(state.wrapping_add(W2));
        let w2 = output(state.wrapping_add(W3));
        let w3 = output(state.wrapping_add(W4));
        state = state.wrapping_add(W4);
        c[0..8].copy_from_slice(&w0.to_le_bytes());
        c[8..16].copy_from_slice(&w1.to_le_bytes());
        c[16..24].copy_from_slice(&w2.to_le_bytes());
        c[24..32].copy_from_slice(&w3.to_le_bytes());
    }
    let rest = quads.into_remainder();
    let mut words = rest.chunks_exact_mut(8);
    for c in &mut words {
        state = state.wrapping_add(WEYL);
        c.copy_from_slice(&output(state).to_le_bytes());
    }
    let tail = words.into_remainder();
    if !tail.is_empty() {
        state = state.wrapping_add(WEYL);
        let w = output(state).to_le_bytes();
        tail.copy_from_slice(&w[..tail.len()]);
    }
}

/// Whether `data` equals the stream of `key` from word 0 (the byte layout
/// of [`fill_stream`]). Branch-free over the whole slice: differences are
/// or-ed together and tested once, so the loop runs at generation speed.
#[inline]
pub(crate) fn matches_stream(data: &[u8], key: u64) -> bool {
    const W2: u64 = WEYL.wrapping_mul(2);
    const W3: u64 = WEYL.wrapping_mul(3);
    const W4: u64 = WEYL.wrapping_mul(4);
    let mut state = key;
    let mut diff = 0u64;
    let mut quads = data.chunks_exact(32);
    for c in &mut quads {
        let d0 = le64(&c[0..8]) ^ output(state.wrapping_add(WEYL));
        let d1 = le64(&c[8..16]) ^ output(state.wrapping_add(W2));
        let d2 = le64(&c[16..24]) ^ output(state.wrapping_add(W3));
        let d3 = le64(&c[24..32]) ^ output(state.wrapping_add(W4));
        state = state.wrapping_add(W4);
        diff |= (d0 | d1) | (d2 | d3);
    }
    let mut words = quads.remainder().chunks_exact(8);
    for c in &mut words {
        state = state.wrapping_add(WEYL);
        diff |= le64(c) ^ output(state);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        state = state.wrapping_add(WEYL);
        let w = output(state).to_le_bytes();
        if tail != &w[..tail.len()] {
            return false;
        }
    }
    diff == 0
}

/// Bytes `[offset, offset + out.len())` of the stream of `key`.
pub(crate) fn stream_range(out: &mut [u8], key: u64, offset: usize) {
    let mut pos = offset;
    let mut n = 0;
    while n < out.len() {
        let w = word(key, (pos / 8) as u64).to_le_bytes();
        let start = pos % 8;
        let take = (8 - start).min(out.len() - n);
        out[n..n + take].copy_from_slice(&w[start..start + take]);
        n += take;
        pos += take;
    }
}

/// Little-endian u64 from an 8-byte slice (the callers pass exact chunks).
#[inline(always)]
pub(crate) fn le64(c: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(c);
    u64::from_le_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// wyrand reference values, computed by hand from the published
    /// algorithm: state += 0xa0761d6478bd642f; t = state * (state ^
    /// 0xe7037ed1a0b428db) as u128; out = hi ^ lo.
    #[test]
    fn output_matches_the_wyrand_definition() {
        // A second route: 128-bit product built from 32-bit halves.
        fn slow(s: u64) -> u64 {
            let a = s;
            let b = s ^ 0xe703_7ed1_a0b4_28db;
            let (a0, a1) = (a & 0xffff_ffff, a >> 32);
            let (b0, b1) = (b & 0xffff_ffff, b >> 32);
            let p00 = a0 * b0;
            let p01 = a0 * b1;
            let p10 = a1 * b0;
            let p11 = a1 * b1;
            let mid = (p00 >> 32) + (p01 & 0xffff_ffff) + (p10 & 0xffff_ffff);
            let lo = (p00 & 0xffff_ffff) | (mid << 32);
            let hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
            hi ^ lo
        }
        for s in [0u64, 1, WEYL, u64::MAX, 0x0123_4567_89ab_cdef] {
            assert_eq!(output(s), slow(s), "state {s:#x}");
        }
    }

    #[test]
    fn fmix64_matches_murmur3_reference() {
        // Reference: fmix64(1) from MurmurHash3_x64 (SMHasher) is
        // 0xb456bcfc34c2cb2c.
        assert_eq!(fmix64(1), 0xb456_bcfc_34c2_cb2c);
        assert_eq!(fmix64(0), 0);
    }

    #[test]
    fn fill_and_word_and_range_agree() {
        let key = random_key(42, 7);
        let mut buf = [0u8; 83];
        fill_stream(&mut buf, key);
        for (i, b) in buf.iter().enumerate() {
            assert_eq!(*b, word(key, (i / 8) as u64).to_le_bytes()[i % 8]);
        }
        let mut part = [0u8; 20];
        stream_range(&mut part, key, 61);
        assert_eq!(&part[..], &buf[61..81]);
        assert!(matches_stream(&buf, key));
        // 83 bytes = two 32-byte quads, two words, a 3-byte tail: a wrong
        // byte in each part is caught.
        for at in [0usize, 31, 40, 63, 64, 79, 80, 82] {
            let mut bad = buf;
            bad[at] ^= 0x40;
            assert!(!matches_stream(&bad, key), "byte {at}");
        }
    }
}
