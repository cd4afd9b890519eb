//! The check values of fio's verify kinds beyond those of
//! [`crate::job::verify`] itself: CRC-16 (ARC), CRC-7 (MMC) and XXH32,
//! written from their published definitions, and SHA-1 (FIPS 180-4) and
//! SHA-3 (FIPS 202) from RustCrypto's crates. Each is held to its
//! catalogued check values by the tests below; [`crate::job::verify`] puts
//! them in its block header.

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
    use sha1::Digest;
    sha1::Sha1::digest(data).into()
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

/// SHA3-`bits` (FIPS 202; `bits` 224, 256, 384 or 512) of `data`.
pub fn sha3(data: &[u8], bits: usize) -> Vec<u8> {
    use sha3::Digest;
    match bits {
        224 => sha3::Sha3_224::digest(data).to_vec(),
        256 => sha3::Sha3_256::digest(data).to_vec(),
        384 => sha3::Sha3_384::digest(data).to_vec(),
        _ => sha3::Sha3_512::digest(data).to_vec(),
    }
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
