//! The check values of fio's verify kinds that no dependency computes
//! here: CRC-16 (ARC), CRC-7 (MMC), SHA-1 (FIPS 180-4), SHA-3 (FIPS 202)
//! and XXH32. Each is
//! written from its published definition and held to its catalogued
//! check values by the tests below; [`crate::job::verify`] puts them in
//! its block header.

/// CRC-16/ARC (polynomial 0x8005 reflected, init 0, no final xor), as
/// Linux's `crc16` that fio uses.
pub fn crc16(data: &[u8]) -> u16 {
    let mut c = 0u16;
    for &b in data {
        c ^= u16::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xA001
            } else {
                c >> 1
            };
        }
    }
    c
}

/// CRC-7/MMC (polynomial 0x09, init 0, no final xor), as Linux's `crc7`.
pub fn crc7(data: &[u8]) -> u8 {
    let mut c = 0u8;
    for &b in data {
        for i in (0..8).rev() {
            let top = (c >> 6) & 1;
            c = (c << 1) & 0x7f;
            if ((b >> i) & 1) ^ top == 1 {
                c ^= 0x09;
            }
        }
    }
    c
}

/// SHA-1 (FIPS 180-4) of `data`.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    let bits = (data.len() as u64).wrapping_mul(8);
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for chunk in msg.chunks_exact(64) {
        let mut w = [0u32; 80];
        for (i, word) in chunk.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 20];
    for (o, x) in out.chunks_exact_mut(4).zip(h) {
        o.copy_from_slice(&x.to_be_bytes());
    }
    out
}

const P1: u32 = 0x9E37_79B1;
const P2: u32 = 0x85EB_CA77;
const P3: u32 = 0xC2B2_AE3D;
const P4: u32 = 0x27D4_EB2F;
const P5: u32 = 0x1656_67B1;

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// XXH32 of `data` with `seed` (xxHash's 32-bit hash).
pub fn xxh32(data: &[u8], seed: u32) -> u32 {
    let len = data.len();
    let mut rest = data;
    let mut h = if len >= 16 {
        let mut v = [
            seed.wrapping_add(P1).wrapping_add(P2),
            seed.wrapping_add(P2),
            seed,
            seed.wrapping_sub(P1),
        ];
        while rest.len() >= 16 {
            for (k, lane) in v.iter_mut().enumerate() {
                let x = le32(&rest[4 * k..]);
                *lane = lane
                    .wrapping_add(x.wrapping_mul(P2))
                    .rotate_left(13)
                    .wrapping_mul(P1);
            }
            rest = &rest[16..];
        }
        v[0].rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18))
    } else {
        seed.wrapping_add(P5)
    };
    h = h.wrapping_add(len as u32);
    while rest.len() >= 4 {
        h = h
            .wrapping_add(le32(rest).wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
        rest = &rest[4..];
    }
    for &b in rest {
        h = h
            .wrapping_add(u32::from(b).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}

/// Keccak-f[1600]'s round constants (FIPS 202, 3.2.5).
const RC: [u64; 24] = [
    0x0000_0000_0000_0001,
    0x0000_0000_0000_8082,
    0x8000_0000_0000_808A,
    0x8000_0000_8000_8000,
    0x0000_0000_0000_808B,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8009,
    0x0000_0000_0000_008A,
    0x0000_0000_0000_0088,
    0x0000_0000_8000_8009,
    0x0000_0000_8000_000A,
    0x0000_0000_8000_808B,
    0x8000_0000_0000_008B,
    0x8000_0000_0000_8089,
    0x8000_0000_0000_8003,
    0x8000_0000_0000_8002,
    0x8000_0000_0000_0080,
    0x0000_0000_0000_800A,
    0x8000_0000_8000_000A,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8080,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8008,
];

/// The rotation of lane x + 5y (FIPS 202, 3.2.2).
const ROT: [u32; 25] = [
    0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14,
];

fn keccak_f(a: &mut [u64; 25]) {
    for rc in RC {
        let mut c = [0u64; 5];
        for (x, cx) in c.iter_mut().enumerate() {
            *cx = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20];
        }
        for x in 0..5 {
            let d = c[(x + 4) % 5] ^ c[(x + 1) % 5].rotate_left(1);
            for y in 0..5 {
                a[x + 5 * y] ^= d;
            }
        }
        let mut b = [0u64; 25];
        for x in 0..5 {
            for y in 0..5 {
                b[y + 5 * ((2 * x + 3 * y) % 5)] = a[x + 5 * y].rotate_left(ROT[x + 5 * y]);
            }
        }
        for x in 0..5 {
            for y in 0..5 {
                a[x + 5 * y] = b[x + 5 * y] ^ (!b[(x + 1) % 5 + 5 * y] & b[(x + 2) % 5 + 5 * y]);
            }
        }
        a[0] ^= rc;
    }
}

/// SHA3-`bits` (224, 256, 384 or 512; FIPS 202) of `data`.
pub fn sha3(data: &[u8], bits: usize) -> Vec<u8> {
    let rate = 200 - bits / 4;
    let mut msg = data.to_vec();
    msg.push(0x06);
    while msg.len() % rate != 0 {
        msg.push(0);
    }
    if let Some(last) = msg.last_mut() {
        *last |= 0x80;
    }
    let mut a = [0u64; 25];
    for block in msg.chunks_exact(rate) {
        for (lane, w) in a.iter_mut().zip(block.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            *lane ^= u64::from_le_bytes(b);
        }
        keccak_f(&mut a);
    }
    let mut out: Vec<u8> = a.iter().flat_map(|l| l.to_le_bytes()).collect();
    out.truncate(bits / 8);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_matches_its_catalogued_check_values() {
        // The CRC catalogue's check of "123456789".
        assert_eq!(crc16(b"123456789"), 0xBB3D);
        assert_eq!(crc7(b"123456789"), 0x75);
        // FIPS 180-4's "abc", and a message of many blocks.
        assert_eq!(
            sha1(b"abc")[..8],
            [0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a]
        );
        assert_eq!(
            sha1(&[b'a'; 1000])[..8],
            [0x29, 0x1e, 0x9a, 0x6c, 0x66, 0x99, 0x49, 0x49]
        );
        // FIPS 202 digests of "abc" and of a message of many blocks
        // (first 8 bytes; as Python's hashlib gives them).
        for (bits, abc, many) in [
            (224, 0xe642_824c_3f8c_f24a_u64, 0x2461_344b_8441_6db8_u64),
            (256, 0x3a98_5da7_4fe2_25b2, 0x8f39_34e6_f7a1_5698),
            (384, 0xec01_4982_8851_6fc9, 0xccf4_495f_f20b_4b33),
            (512, 0xb751_850b_1a57_168a, 0xac7e_95cc_95aa_7f24),
        ] {
            assert_eq!(sha3(b"abc", bits)[..8], abc.to_be_bytes(), "{bits}");
            assert_eq!(sha3(&[b'a'; 1000], bits)[..8], many.to_be_bytes(), "{bits}");
            assert_eq!(sha3(b"", bits).len(), bits / 8);
        }
        // xxHash's reference values (seed 0).
        assert_eq!(xxh32(b"", 0), 0x02CC_5D05);
        assert_eq!(xxh32(b"abc", 0), 0x32D1_53FF);
        // python-xxhash's example, longer than one 16-byte stripe.
        assert_eq!(
            xxh32(b"Nobody inspects the spammish repetition", 0),
            0xE229_3B2F
        );
    }
}
