//! The Device Statistics log (log 04h, through GPL and SMART alike; ACS-3
//! 9.5): page 00h lists the pages supported, page 01h holds the General
//! Statistics, each a qword whose bit 63 says supported, bit 62 valid,
//! and whose low bits are the value. The figures are the drive's own
//! counts: power-on resets, hours, logical sectors and commands written
//! and read, and the milliseconds since power-on.

/// The pages of the log, in order.
pub const PAGES: &[u8] = &[0x00, 0x01];

/// The General Statistics the drive reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct General {
    /// Lifetime power-on resets.
    pub power_on_resets: u32,
    /// Power-on hours.
    pub power_on_hours: u32,
    /// Logical sectors written.
    pub sectors_written: u64,
    /// Write commands.
    pub write_commands: u64,
    /// Logical sectors read.
    pub sectors_read: u64,
    /// Read commands.
    pub read_commands: u64,
    /// Date and time timestamp: milliseconds since power-on (the host
    /// never set the clock).
    pub timestamp_ms: u64,
}

/// A statistic's flags: supported (63), valid (62).
const SUPPORTED_VALID: u64 = 0xC000_0000_0000_0000;

/// A page's header qword: revision 0001h, the page number at byte 2.
fn header(page: u8) -> [u8; 8] {
    [0x01, 0x00, page, 0, 0, 0, 0, 0]
}

/// Page `page` (512 bytes), or `None` for one the drive lacks.
pub fn page(page: u8, g: &General) -> Option<Vec<u8>> {
    let mut d = vec![0u8; 512];
    d[..8].copy_from_slice(&header(page));
    match page {
        0x00 => {
            d[8] = PAGES.len() as u8;
            d[9..9 + PAGES.len()].copy_from_slice(PAGES);
        }
        0x01 => {
            let mask48 = 0xFFFF_FFFF_FFFF;
            let stats: [(usize, u64); 7] = [
                (0x08, u64::from(g.power_on_resets)),
                (0x10, u64::from(g.power_on_hours)),
                (0x18, g.sectors_written & mask48),
                (0x20, g.write_commands & mask48),
                (0x28, g.sectors_read & mask48),
                (0x30, g.read_commands & mask48),
                (0x38, g.timestamp_ms & mask48),
            ];
            for (at, v) in stats {
                d[at..at + 8].copy_from_slice(&(SUPPORTED_VALID | v).to_le_bytes());
            }
        }
        _ => return None,
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(d: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(d[at..at + 8].try_into().expect("8 bytes"))
    }

    #[test]
    fn page_zero_lists_the_pages_and_page_one_the_counts() {
        let g = General {
            power_on_resets: 1,
            power_on_hours: 5,
            sectors_written: 8192,
            write_commands: 16,
            sectors_read: 0x1_0000_0000_0001,
            read_commands: 3,
            timestamp_ms: 7_200_000,
        };
        let p0 = page(0, &g).expect("page 0");
        assert_eq!(&p0[..10], &[1, 0, 0, 0, 0, 0, 0, 0, 2, 0]);
        assert_eq!(p0[10], 1);
        let p1 = page(1, &g).expect("page 1");
        assert_eq!((p1[0], p1[2]), (1, 1));
        assert_eq!(q(&p1, 0x18), SUPPORTED_VALID | 8192);
        assert_eq!(q(&p1, 0x10) & 0xFFFF_FFFF, 5);
        // 48-bit counters: the bits above stay flags.
        assert_eq!(q(&p1, 0x28), SUPPORTED_VALID | 1);
        assert_eq!(q(&p1, 0x40), 0, "pending error count: not supported");
        assert!(page(2, &g).is_none());
    }
}
