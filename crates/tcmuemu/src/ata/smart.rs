//! SMART (ACS-3 7.48; the data structures of the ATA/ATAPI-7 SMART
//! attribute table that ACS keeps as vendor specific, laid out as every
//! drive and smartctl do): READ DATA with attributes that move with the
//! I/O (241/242 count the LBAs written and read), READ THRESHOLDS, RETURN
//! STATUS, ENABLE / DISABLE OPERATIONS.

use super::outcome::Outcome;
use super::regs::Regs;

/// SMART features (the FEATURE register).
pub mod feature {
    /// READ DATA.
    pub const READ_DATA: u16 = 0xD0;
    /// EXECUTE OFF-LINE IMMEDIATE.
    pub const EXECUTE_OFFLINE: u16 = 0xD4;
    /// READ LOG.
    pub const READ_LOG: u16 = 0xD5;
    /// WRITE LOG.
    pub const WRITE_LOG: u16 = 0xD6;
    /// READ ATTRIBUTE THRESHOLDS.
    pub const READ_THRESHOLDS: u16 = 0xD1;
    /// ENABLE OPERATIONS.
    pub const ENABLE: u16 = 0xD8;
    /// DISABLE OPERATIONS.
    pub const DISABLE: u16 = 0xD9;
    /// RETURN STATUS.
    pub const RETURN_STATUS: u16 = 0xDA;
}

/// LBA 23:8 of every SMART command: the signature 4Fh / C2h.
pub const SIGNATURE: u64 = 0x00C2_4F00;

/// The counters SMART reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Smart {
    /// Logical blocks written by the host (attribute 241).
    pub lbas_written: u64,
    /// Logical blocks read by the host (attribute 242).
    pub lbas_read: u64,
    /// Write commands (the Device Statistics log).
    pub write_commands: u64,
    /// Read commands (the Device Statistics log).
    pub read_commands: u64,
    /// Power-on hours (attribute 9).
    pub power_on_hours: u32,
    /// Power cycles (attribute 12).
    pub power_cycles: u32,
    /// Temperature, Celsius (attribute 194).
    pub temperature_c: u8,
    /// Reallocated sectors (attribute 5).
    pub reallocated: u32,
    /// The FTL medium's NAND writes (attributes 247 and 248); none on
    /// plain memory.
    pub nand: Option<Nand>,
}

/// NAND page programs, as an SSD's SMART attributes report them (ids and
/// meanings as Micron's: 247 host program page count, 248 background
/// (FTL) program page count): write amplification = (247 + 248) / 247.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Nand {
    /// Flash pages programmed for writes the host (or the drive's own
    /// erase) asked for (attribute 247).
    pub host_pages: u64,
    /// Flash pages programmed by garbage collection (attribute 248).
    pub background_pages: u64,
}

/// What SMART READ DATA says of the self-tests (ACS-3 7.48.5 table
/// "Device SMART data structure", bytes 362-373).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SelfTestBytes {
    /// Byte 363.
    pub execution_status: u8,
    /// Off-line data collection ran (byte 362).
    pub offline_done: bool,
    /// Byte 372.
    pub short_minutes: u8,
    /// Byte 373.
    pub extended_minutes: u8,
}

/// One attribute: id, flags, normalized value, worst, raw, threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attribute {
    /// Attribute id.
    pub id: u8,
    /// Flags (bit 0 pre-fail, bit 1 online).
    pub flags: u16,
    /// Normalized value.
    pub value: u8,
    /// Worst value.
    pub worst: u8,
    /// Raw value (48 bits).
    pub raw: u64,
    /// Threshold.
    pub threshold: u8,
}

impl Smart {
    /// The attribute table, in id order.
    pub fn attributes(&self) -> Vec<Attribute> {
        let a = |id, flags, value, raw, threshold| Attribute {
            id,
            flags,
            value,
            worst: value,
            raw,
            threshold,
        };
        let mut v = vec![
            a(5, 0x0033, 100, u64::from(self.reallocated), 10),
            a(9, 0x0032, 100, u64::from(self.power_on_hours), 0),
            a(12, 0x0032, 100, u64::from(self.power_cycles), 0),
            a(
                194,
                0x0022,
                100 - self.temperature_c.min(99),
                u64::from(self.temperature_c),
                0,
            ),
            a(241, 0x0032, 100, self.lbas_written & 0xFFFF_FFFF_FFFF, 0),
            a(242, 0x0032, 100, self.lbas_read & 0xFFFF_FFFF_FFFF, 0),
        ];
        if let Some(n) = self.nand {
            let raw = |x: u64| x & 0xFFFF_FFFF_FFFF;
            v.push(a(247, 0x0032, 100, raw(n.host_pages), 0));
            v.push(a(248, 0x0032, 100, raw(n.background_pages), 0));
        }
        v
    }

    /// SMART READ DATA's 512 bytes, with the self-test state: byte 363
    /// (execution status), whether off-line data collection ran, and the
    /// short and extended polling times in minutes.
    pub fn read_data(&self, t: &SelfTestBytes) -> [u8; 512] {
        let mut d = [0u8; 512];
        d[0..2].copy_from_slice(&0x0010u16.to_le_bytes());
        for (i, at) in self.attributes().iter().enumerate() {
            let e = &mut d[2 + 12 * i..14 + 12 * i];
            e[0] = at.id;
            e[1..3].copy_from_slice(&at.flags.to_le_bytes());
            e[3] = at.value;
            e[4] = at.worst;
            e[5..11].copy_from_slice(&at.raw.to_le_bytes()[..6]);
        }
        // Off-line data collection: never started, or completed.
        d[362] = if t.offline_done { 0x02 } else { 0x00 };
        d[363] = t.execution_status;
        // Off-line capability: EXECUTE OFF-LINE IMMEDIATE, self-tests.
        d[367] = 0x11;
        d[368..370].copy_from_slice(&0x0003u16.to_le_bytes()); // saves over power cycles
        d[370] = 0x01; // error logging supported
        d[372] = t.short_minutes;
        d[373] = t.extended_minutes;
        checksum(&mut d);
        d
    }

    /// SMART READ ATTRIBUTE THRESHOLDS' 512 bytes.
    pub fn read_thresholds(&self) -> [u8; 512] {
        let mut d = [0u8; 512];
        d[0..2].copy_from_slice(&0x0010u16.to_le_bytes());
        for (i, at) in self.attributes().iter().enumerate() {
            d[2 + 12 * i] = at.id;
            d[3 + 12 * i] = at.threshold;
        }
        checksum(&mut d);
        d
    }

    /// Whether a pre-fail attribute is at or below its threshold.
    pub fn threshold_exceeded(&self) -> bool {
        self.attributes()
            .iter()
            .any(|a| a.flags & 1 != 0 && a.threshold > 0 && a.value <= a.threshold)
    }

    /// The SMART commands answered from the counters alone (READ DATA,
    /// the logs and the self-tests are the device's, [`super::logs`]).
    /// Every one needs the signature in LBA 23:8.
    pub fn execute(&mut self, tf: &Regs) -> Outcome {
        if tf.lba & 0x00FF_FF00 != SIGNATURE {
            return Outcome::abort();
        }
        match tf.feature {
            feature::READ_THRESHOLDS => Outcome::data(self.read_thresholds().to_vec()),
            feature::ENABLE | feature::DISABLE => Outcome::ok(Regs {
                lba: SIGNATURE,
                ..Regs::default()
            }),
            feature::RETURN_STATUS => Outcome::ok(Regs {
                lba: if self.threshold_exceeded() {
                    0x002C_F400
                } else {
                    SIGNATURE
                },
                ..Regs::default()
            }),
            _ => Outcome::abort(),
        }
    }
}

/// The last byte makes the 512 bytes sum to zero.
fn checksum(d: &mut [u8; 512]) {
    let s = d[..511].iter().fold(0u8, |a, b| a.wrapping_add(*b));
    d[511] = 0u8.wrapping_sub(s);
}

/// A SMART feature's name for the state file's log.
pub fn feature_name(f: u16) -> &'static str {
    match f {
        feature::READ_DATA => "SMART READ DATA",
        feature::EXECUTE_OFFLINE => "SMART EXECUTE OFF-LINE IMMEDIATE",
        feature::READ_LOG => "SMART READ LOG",
        feature::WRITE_LOG => "SMART WRITE LOG",
        feature::READ_THRESHOLDS => "SMART READ THRESHOLDS",
        feature::ENABLE => "SMART ENABLE OPERATIONS",
        feature::DISABLE => "SMART DISABLE OPERATIONS",
        feature::RETURN_STATUS => "SMART RETURN STATUS",
        _ => "SMART (unsupported feature)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::health::ata_smart;

    fn smart() -> Smart {
        Smart {
            lbas_written: 2048,
            lbas_read: 0x1_0000_0001,
            write_commands: 0,
            read_commands: 0,
            power_on_hours: 1234,
            power_cycles: 7,
            temperature_c: 35,
            reallocated: 0,
            nand: None,
        }
    }

    #[test]
    fn read_data_sums_to_zero_and_carries_the_io_counters() {
        let d = smart().read_data(&SelfTestBytes::default());
        assert_eq!(d.iter().fold(0u8, |a, b| a.wrapping_add(*b)), 0);
        let raw = |id: u8| {
            let i = (0..30).find(|i| d[2 + 12 * i] == id).expect("attribute");
            let mut r = [0u8; 8];
            r[..6].copy_from_slice(&d[7 + 12 * i..13 + 12 * i]);
            u64::from_le_bytes(r)
        };
        assert_eq!(raw(241), 2048);
        assert_eq!(raw(242), 0x1_0000_0001);
        assert_eq!(raw(9), 1234);
        assert_eq!(raw(194), 35);
        assert!(
            (0..30).all(|i| d[2 + 12 * i] != 247),
            "no NAND counts on memory"
        );
        let mut ftl = smart();
        ftl.nand = Some(Nand {
            host_pages: 4096,
            background_pages: 0x1_0000_0003,
        });
        let d = ftl.read_data(&SelfTestBytes::default());
        assert_eq!(d.iter().fold(0u8, |a, b| a.wrapping_add(*b)), 0);
        let at = |id: u8| {
            let i = (0..30).find(|i| d[2 + 12 * i] == id).expect("attribute");
            let mut r = [0u8; 8];
            r[..6].copy_from_slice(&d[7 + 12 * i..13 + 12 * i]);
            u64::from_le_bytes(r)
        };
        assert_eq!((at(247), at(248), at(241)), (4096, 0x1_0000_0003, 2048));
    }

    #[test]
    fn return_status_and_the_signature() {
        let mut s = smart();
        let tf = |feature| Regs {
            feature,
            lba: SIGNATURE,
            ..Regs::default()
        };
        let o = s.execute(&tf(feature::RETURN_STATUS));
        assert_eq!(
            ata_smart::OverallStatus::from_lba(o.regs.lba),
            ata_smart::OverallStatus::Passed
        );
        s.reallocated = 1000;
        // Value stays 100 (the raw count does not move the normalized value).
        assert!(!s.threshold_exceeded());
        let bad = Regs {
            lba: 0,
            ..tf(feature::READ_DATA)
        };
        assert!(s.execute(&bad).failed());
        assert!(s.execute(&tf(0xD3)).failed());
    }
}
