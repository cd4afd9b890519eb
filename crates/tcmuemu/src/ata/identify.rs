//! IDENTIFY DEVICE data (ACS-3 7.12.7) built from the device's state: the
//! strings, the capacity (the max address, so an HPA shows), the feature
//! words for SMART, Security, HPA, Sanitize, 48-bit addressing, TRIM
//! (69, 105, 169), SCT Write Same and Data Tables (206), the security erase times (89,
//! 90) and state (128), and the integrity word.

use super::device::Ata;

/// Put `s` into words `w0..w0 + n` as an ATA string (two characters a
/// word, the first in the high byte), space padded.
fn put_string(w: &mut [u16; 256], w0: usize, n: usize, s: &str) {
    let mut b: Vec<u8> = s
        .bytes()
        .filter(|c| (0x20..0x7F).contains(c))
        .take(2 * n)
        .collect();
    b.resize(2 * n, b' ');
    for i in 0..n {
        w[w0 + i] = u16::from_be_bytes([b[2 * i], b[2 * i + 1]]);
    }
}

/// The 512 bytes of IDENTIFY DEVICE.
pub fn build(a: &Ata) -> [u8; 512] {
    let mut w = [0u16; 256];
    w[0] = 0x0040; // fixed device
    w[1] = 16383;
    w[3] = 16;
    w[6] = 63;
    put_string(&mut w, 10, 10, &a.serial);
    put_string(&mut w, 23, 4, &a.firmware);
    put_string(&mut w, 27, 20, &a.model);
    w[47] = 0x8010;
    w[49] = 0x0300; // LBA, DMA
    w[53] = 0x0006; // words 64-70 and 88 valid
                    // Sanitize: block erase, overwrite, crypto scramble, the feature set;
                    // multiple sector setting valid, 16.
    w[59] = 0xF110;
    let max = a.max_blocks;
    let max28 = max.min(0x0FFF_FFFF) as u32;
    w[60] = max28 as u16;
    w[61] = (max28 >> 16) as u16;
    // 69: deterministic read after TRIM (14), which reads zeroes (5).
    w[69] = 0x4020;
    w[75] = 31;
    w[76] = 0x010E; // SATA gen 1-3, NCQ
    w[80] = 0x0FF0; // ATA/ATAPI-4 .. ACS-4
                    // 82: SMART, Security, write cache, look-ahead, HPA, NOP.
    w[82] = 0x4463;
    // 83: 48-bit, DCO, FLUSH CACHE (EXT); bit 14 one.
    w[83] = 0x7C00;
    // 84: SMART error logging and self-test, GPL; bit 14 one.
    w[84] = 0x4023;
    w[85] = 0x4461 | (u16::from(a.security.enabled()) << 1);
    w[86] = 0xBC00;
    w[87] = 0x4023;
    w[88] = 0x407F;
    w[89] = a.security.erase_time;
    w[90] = a.security.enhanced_time;
    w[92] = a.security.master_id;
    for (i, v) in max.to_le_bytes().chunks_exact(2).take(4).enumerate() {
        w[100 + i] = u16::from_le_bytes([v[0], v[1]]);
    }
    w[105] = super::dsm::MAX_BLOCKS; // DATA SET MANAGEMENT: blocks of ranges
    w[106] = 0x4000; // valid; one 512-byte logical sector per physical
    w[128] = a.security.word128();
    w[169] = 0x0001; // DATA SET MANAGEMENT: TRIM
    w[206] = 0x0025; // SCT Command Transport, Write Same, Data Tables
    w[217] = 1; // solid state
    sector(&w)
}

/// The 512 bytes of a data structure of 256 little-endian words, word
/// 255 its integrity word: signature A5h, then the checksum that makes
/// every byte sum to zero (ACS-3 7.12.7.90; DCO's is the same).
pub fn sector(words: &[u16; 256]) -> [u8; 512] {
    let mut d = [0u8; 512];
    for (i, v) in words.iter().enumerate() {
        d[2 * i..2 * i + 2].copy_from_slice(&v.to_le_bytes());
    }
    d[510] = 0xA5;
    let sum = d[..511].iter().fold(0u8, |s, b| s.wrapping_add(*b));
    d[511] = 0u8.wrapping_sub(sum);
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::ata::IdentifyDevice;

    #[test]
    fn drivelab_reads_back_what_the_device_is() {
        let mut a = Ata::new("DRIVELAB TCMU SATA SSD", "DLSATA0001", "1.0", 32768);
        a.max_blocks = 30000;
        a.security.frozen = true;
        let id = IdentifyDevice::parse(&build(&a)).expect("parse");
        assert_eq!(id.model, "DRIVELAB TCMU SATA SSD");
        assert_eq!(id.serial, "DLSATA0001");
        assert_eq!(id.firmware, "1.0");
        assert_eq!(id.capacity_sectors, 30000);
        assert!(id.lba48 && id.smart && id.security_supported);
        assert!(id.security_frozen && !id.security_enabled && !id.security_locked);
        assert!(id.security_enhanced_erase);
        assert_eq!(
            (id.security_erase_minutes, id.enhanced_erase_minutes),
            (Some(2), Some(4))
        );
        assert_eq!(id.checksum_ok, Some(true));
        assert_eq!(id.logical_sector_size, 512);
        assert!(
            id.sanitize && id.sanitize_block_erase && id.sanitize_crypto && id.sanitize_overwrite
        );
        assert!(id.trim && id.trim_deterministic && id.trim_reads_zero);
        assert!(id.sct_supported && id.sct_write_same && !id.sct_error_recovery);
    }
}
