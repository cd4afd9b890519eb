//! DATA SET MANAGEMENT (06h, ACS-3 7.5) with the TRIM bit: the host
//! names LBA ranges the drive may deallocate. Its data-out is COUNT
//! 512-byte blocks of range entries (7.5.3.2: eight bytes each,
//! little-endian, LBA in bits 47:0, the range's length in 63:48; a length
//! of zero is an unused entry). The drive takes at most
//! [`MAX_BLOCKS`] blocks of entries (IDENTIFY word 105) and trims
//! deterministically to zeroes (word 69 bits 14 and 5).

use super::outcome::{MediumAction, Outcome};
use super::regs::Regs;

/// Most 512-byte blocks of range entries one command may carry.
pub const MAX_BLOCKS: u16 = 8;

/// ERROR IDNF: an entry names blocks past the max address.
const ERROR_IDNF: u8 = 0x10;

/// The ranges (first block, blocks) of a TRIM's data-out, unused entries
/// left out; `None` when an entry reaches past `max_blocks`.
pub fn ranges(data: &[u8], max_blocks: u64) -> Option<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    for e in data.chunks_exact(8) {
        let mut b = [0u8; 8];
        b.copy_from_slice(e);
        let v = u64::from_le_bytes(b);
        let (lba, len) = (v & 0xFFFF_FFFF_FFFF, v >> 48);
        if len == 0 {
            continue;
        }
        if lba + len > max_blocks {
            return None;
        }
        out.push((lba, len));
    }
    Some(out)
}

/// DATA SET MANAGEMENT: TRIM (FEATURE bit 0) of the ranges in
/// `data_out`, COUNT blocks of them; anything else aborted, as is a
/// range past the max address (IDNF) or a locked drive's request.
pub fn execute(tf: &Regs, data_out: &[u8], max_blocks: u64, locked: bool) -> Outcome {
    let n = usize::from(tf.count);
    if tf.feature & 0x01 == 0 || n == 0 || tf.count > MAX_BLOCKS || locked {
        return Outcome::abort();
    }
    let Some(data) = data_out.get(..n * 512) else {
        return Outcome::abort();
    };
    let Some(list) = ranges(data, max_blocks) else {
        let mut o = Outcome::abort();
        o.error = ERROR_IDNF;
        return o;
    };
    let mut o = Outcome::ok(Regs::default());
    o.medium = Some(MediumAction::Trim(list));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(lba: u64, len: u16) -> [u8; 8] {
        (lba | (u64::from(len) << 48)).to_le_bytes()
    }

    fn tf(count: u16) -> Regs {
        Regs {
            feature: 1,
            count,
            command: 0x06,
            ..Regs::default()
        }
    }

    #[test]
    fn trim_ranges_come_from_the_entries_and_stay_in_range() {
        let mut d = vec![0u8; 512];
        d[..8].copy_from_slice(&entry(100, 8));
        d[16..24].copy_from_slice(&entry(0xFFFF, 0xFFFF));
        let o = execute(&tf(1), &d, 1 << 20, false);
        assert_eq!(
            o.medium,
            Some(MediumAction::Trim(vec![(100, 8), (0xFFFF, 0xFFFF)]))
        );
        // Past the max address: IDNF, nothing trimmed.
        let o = execute(&tf(1), &d, 0x1_0000, false);
        assert_eq!((o.error, o.medium), (ERROR_IDNF, None));
        // No TRIM bit, too many blocks, a short buffer, a locked drive.
        let no_trim = Regs {
            feature: 0,
            ..tf(1)
        };
        for (t, data, locked) in [
            (no_trim, &d[..], false),
            (tf(MAX_BLOCKS + 1), &d[..], false),
            (tf(2), &d[..], false),
            (tf(1), &d[..], true),
        ] {
            let o = execute(&t, data, 1 << 20, locked);
            assert!(o.failed() && o.medium.is_none(), "{t:?}");
        }
    }
}
