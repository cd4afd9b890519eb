//! Deterministic mutations for the stable harness: a seeded PRNG and the
//! edits libFuzzer would make, in a fixed number per input so a run always
//! covers the same inputs and takes the same time.

/// SplitMix64: small, seedable, good enough to pick edits.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Numbers that break arithmetic: limits of each width, one past them,
/// and the values parsers special-case.
pub const HUGE: [&str; 12] = [
    "0",
    "-1",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e308",
    "0.0000000001",
    "nan",
];

/// One mutation of `input`, chosen by `rng`: flip a bit, set a byte to an
/// edge value, truncate, delete or duplicate a span, duplicate a line,
/// splice in a span of `other`, replace a run of digits with a huge number,
/// or insert one. Never returns more than `max_len` bytes.
pub fn mutate(input: &[u8], other: &[u8], rng: &mut Rng, max_len: usize) -> Vec<u8> {
    let mut v = input.to_vec();
    let edits = 1 + rng.below(4);
    for _ in 0..edits {
        match rng.below(10) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = [0x00, 0xFF, 0x7F, 0x80, b'\n', b' ', b',', b'='][rng.below(8)];
            }
            2 if !v.is_empty() => {
                let n = rng.below(v.len());
                v.truncate(n);
            }
            3 if !v.is_empty() => {
                let a = rng.below(v.len());
                let b = (a + 1 + rng.below(64)).min(v.len());
                v.drain(a..b);
            }
            4 if !v.is_empty() => {
                let a = rng.below(v.len());
                let b = (a + 1 + rng.below(256)).min(v.len());
                let span = v[a..b].to_vec();
                let at = rng.below(v.len() + 1);
                v.splice(at..at, span);
            }
            5 => {
                // Duplicate one line.
                let starts: Vec<usize> = std::iter::once(0)
                    .chain(
                        v.iter()
                            .enumerate()
                            .filter(|(_, c)| **c == b'\n')
                            .map(|(i, _)| i + 1),
                    )
                    .filter(|&i| i < v.len())
                    .collect();
                if let Some(&s) = starts.get(rng.below(starts.len().max(1))) {
                    let e = v[s..]
                        .iter()
                        .position(|c| *c == b'\n')
                        .map_or(v.len(), |p| s + p + 1);
                    let line = v[s..e].to_vec();
                    let copies = 1 + rng.below(3);
                    for _ in 0..copies {
                        v.splice(e..e, line.iter().copied());
                    }
                }
            }
            6 if !other.is_empty() => {
                let a = rng.below(other.len());
                let b = (a + 1 + rng.below(512)).min(other.len());
                let at = rng.below(v.len() + 1);
                v.splice(at..at, other[a..b].iter().copied());
            }
            7 => {
                // Replace a run of digits with an edge number.
                let digits: Vec<usize> = (0..v.len()).filter(|&i| v[i].is_ascii_digit()).collect();
                let huge = HUGE[rng.below(HUGE.len())].as_bytes();
                if digits.is_empty() {
                    let at = rng.below(v.len() + 1);
                    v.splice(at..at, huge.iter().copied());
                } else {
                    let s = digits[rng.below(digits.len())];
                    let e = v[s..]
                        .iter()
                        .position(|c| !c.is_ascii_digit())
                        .map_or(v.len(), |p| s + p);
                    v.splice(s..e, huge.iter().copied());
                }
            }
            8 if v.len() >= 8 => {
                // An edge value in a little-endian integer of a binary record.
                let i = rng.below(v.len() - 7);
                let w = [
                    0u64,
                    u64::MAX,
                    i64::MAX as u64,
                    1 << 63,
                    u64::from(u32::MAX),
                ][rng.below(5)];
                let width = [1usize, 2, 4, 8][rng.below(4)];
                v[i..i + width].copy_from_slice(&w.to_le_bytes()[..width]);
            }
            _ => {
                let at = rng.below(v.len() + 1);
                let b = rng.next_u64() as u8;
                v.insert(at, b);
            }
        }
    }
    v.truncate(max_len);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_are_deterministic_and_bounded() {
        let input = b"[global]\nbs=4k\n[job]\nsize=1m\n";
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..50)
                .map(|_| mutate(input, b"other", &mut rng, 64))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        assert!(run(9).iter().all(|m| m.len() <= 64));
        assert!(run(9).iter().any(|m| m.as_slice() != input));
    }
}
