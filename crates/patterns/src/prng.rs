//! Small, fast, seedable random numbers for offset generation, and the
//! samplers built on them.
//!
//! - [`Rng`]: xoshiro256++ (Blackman & Vigna, 2018), seeded through
//!   SplitMix64 so any u64 seed gives a well-mixed state.
//! - [`Permutation`]: a keyed bijection on `0..n` (a 4-round Feistel network
//!   over the next power of four, with cycle-walking), so a random order
//!   that visits every element exactly once needs no memory.
//! - [`Zipf`]: rejection-inversion sampling (Hörmann & Derflinger, 1996),
//!   O(1) time and memory for any n.

/// SplitMix64 step: the standard seeding mixer.
#[inline]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xoshiro256++: 256 bits of state, period 2^256 − 1.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator seeded from `seed` (any value, including 0).
    pub fn new(seed: u64) -> Rng {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Rng { s }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (n > 0) by Lemire's multiply-shift; the bias is at
    /// most n / 2^64, far below anything measurable.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal by the Box–Muller transform.
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Shuffle a slice in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// A keyed permutation of `0..n`: `get(i)` for i in 0..n visits every value
/// in 0..n exactly once, in an order that looks random.
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// A permutation of `0..n` (n ≥ 1) keyed by `seed`.
    pub fn new(n: u64, seed: u64) -> Permutation {
        let n = n.max(1);
        let bits = 64 - (n - 1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut sm = seed;
        let keys = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Permutation { n, half_bits, keys }
    }

    /// Size of the domain.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether the domain is empty (never: n ≥ 1).
    pub fn is_empty(&self) -> bool {
        false
    }

    #[inline]
    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let mut l = x >> self.half_bits;
        let mut r = x & mask;
        for k in self.keys {
            let mut f = r ^ k;
            f = f.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            f ^= f >> 29;
            let nl = r;
            r = (l ^ f) & mask;
            l = nl;
        }
        (l << self.half_bits) | r
    }

    /// The i-th element of the permutation (i < n).
    #[inline]
    pub fn get(&self, i: u64) -> u64 {
        // Cycle-walk: the Feistel network permutes 0..4^half_bits, which is
        // less than 4n; walking until we land inside 0..n stays a bijection.
        let mut x = i;
        loop {
            x = self.feistel(x);
            if x < self.n {
                return x;
            }
        }
    }
}

/// Zipf-distributed ranks in `1..=n` with exponent θ > 0.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: f64,
    q: f64,
    h_x1: f64,
    h_n: f64,
    s: f64,
}

impl Zipf {
    /// A sampler over `1..=n` (n ≥ 1).
    pub fn new(n: u64, theta: f64) -> Zipf {
        let n = n.max(1) as f64;
        let q = theta;
        let mut z = Zipf {
            n,
            q,
            h_x1: 0.0,
            h_n: 0.0,
            s: 0.0,
        };
        z.h_x1 = z.h(1.5) - 1.0;
        z.h_n = z.h(n + 0.5);
        z.s = 2.0 - z.h_inv(z.h(2.5) - (2.0f64).powf(-q));
        z
    }

    fn h(&self, x: f64) -> f64 {
        // Integral of x^-q: (x^(1-q) - 1) / (1 - q), with the q → 1 limit ln x.
        let e = 1.0 - self.q;
        if e.abs() < 1e-9 {
            x.ln()
        } else {
            (x.powf(e) - 1.0) / e
        }
    }

    fn h_inv(&self, x: f64) -> f64 {
        let e = 1.0 - self.q;
        if e.abs() < 1e-9 {
            x.exp()
        } else {
            (1.0 + x * e).max(0.0).powf(1.0 / e)
        }
    }

    /// Draw a rank in 1..=n.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.s || u >= self.h(k + 0.5) - k.powf(-self.q) {
                return k as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_is_uniform_enough() {
        let mut r = Rng::new(1);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[r.below(10) as usize] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn same_seed_same_stream_different_seed_different_stream() {
        let a: Vec<u64> = (0..8)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..8)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let c: Vec<u64> = (0..8)
            .map({
                let mut r = Rng::new(8);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn permutation_visits_each_value_once() {
        for n in [1u64, 2, 3, 7, 100, 1000, 4097] {
            let p = Permutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let v = p.get(i);
                assert!(v < n);
                assert!(!seen[v as usize], "n={n} dup {v}");
                seen[v as usize] = true;
            }
        }
        // Not the identity.
        let p = Permutation::new(1000, 1);
        assert!((0..1000).filter(|&i| p.get(i) == i).count() < 50);
    }

    #[test]
    fn zipf_rank_one_is_most_frequent_and_matches_the_law() {
        let n = 1000;
        let theta = 1.2;
        let z = Zipf::new(n, theta);
        let mut r = Rng::new(3);
        let mut c = vec![0u64; n as usize + 1];
        let draws = 200_000;
        for _ in 0..draws {
            c[z.sample(&mut r) as usize] += 1;
        }
        // Expected share of rank 1 = 1 / H(n, θ), computed independently.
        let hn: f64 = (1..=n).map(|k| (k as f64).powf(-theta)).sum();
        let want1 = draws as f64 / hn;
        let got1 = c[1] as f64;
        assert!((got1 - want1).abs() / want1 < 0.03, "{got1} vs {want1}");
        let want2 = want1 * 2f64.powf(-theta);
        assert!((c[2] as f64 - want2).abs() / want2 < 0.05);
    }

    #[test]
    fn normal_has_unit_variance() {
        let mut r = Rng::new(9);
        let n = 100_000;
        let xs: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        assert!(
            mean.abs() < 0.02 && (var - 1.0).abs() < 0.03,
            "{mean} {var}"
        );
    }
}
