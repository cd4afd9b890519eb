//! ATA SMART: the taskfiles of SMART READ DATA (B0h/D0h), READ ATTRIBUTE
//! THRESHOLDS (B0h/D1h) and RETURN STATUS (B0h/DAh), and the decoders of
//! their answers.
//!
//! The attribute table is the layout every drive since SFF-8035i keeps in
//! the 512-byte SMART data (ACS-3 made the attributes vendor specific, but
//! not their frame): bytes 0-1 revision, then 30 entries of 12 bytes (id,
//! flags 2 LE, current, worst, raw 6 LE, reserved); byte 362 off-line
//! collection status, 363 self-test execution status, 372-376 polling
//! times, 511 checksum. The thresholds sector has the same 30 slots: id,
//! threshold, 10 reserved. RETURN STATUS returns its verdict in LBA 23:8:
//! C24Fh (mid 4Fh, high C2h) when no threshold is exceeded, 2CF4h when one is.

use serde::Serialize;

use crate::ata::{command, execute, AtaData, AtaError, AtaPassThrough, Protocol, Taskfile};
use crate::scsi::sg::SgDevice;

/// SMART feature codes (ACS-3 SMART command set).
pub mod feature {
    /// SMART READ DATA.
    pub const READ_DATA: u16 = 0xD0;
    /// SMART READ ATTRIBUTE THRESHOLDS (obsolete in ACS, still answered).
    pub const READ_THRESHOLDS: u16 = 0xD1;
    /// SMART EXECUTE OFF-LINE IMMEDIATE (a self-test: changes state).
    pub const EXECUTE_OFFLINE_IMMEDIATE: u16 = 0xD4;
    /// SMART RETURN STATUS.
    pub const RETURN_STATUS: u16 = 0xDA;
}

/// The SMART signature in LBA 23:8 (mid 4Fh, high C2h).
pub const SIGNATURE: u64 = 0x00C2_4F00;
/// LBA 23:8 of RETURN STATUS when a threshold is exceeded (mid F4h, high 2Ch).
pub const THRESHOLD_EXCEEDED: u64 = 0x002C_F400;

/// A SMART taskfile: command B0h, `feature`, the signature in LBA 23:8.
pub fn smart_taskfile(feature: u16) -> Taskfile {
    Taskfile::new(command::SMART)
        .feature(feature)
        .lba(SIGNATURE)
}

/// SMART READ DATA: one 512-byte sector in (PIO data-in).
pub fn read_data() -> AtaPassThrough {
    AtaPassThrough::new(
        Protocol::PioDataIn,
        smart_taskfile(feature::READ_DATA).count(1),
    )
}

/// SMART READ ATTRIBUTE THRESHOLDS: one 512-byte sector in.
pub fn read_thresholds() -> AtaPassThrough {
    AtaPassThrough::new(
        Protocol::PioDataIn,
        smart_taskfile(feature::READ_THRESHOLDS).count(1),
    )
}

/// SMART RETURN STATUS: no data; CK_COND so the SATL returns the registers.
pub fn return_status() -> AtaPassThrough {
    AtaPassThrough::new(Protocol::NonData, smart_taskfile(feature::RETURN_STATUS))
        .byt_blok(false)
        .ck_cond(true)
}

/// The overall verdict from RETURN STATUS's LBA (47:0) register.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverallStatus {
    /// LBA mid/high 4Fh/C2h: no threshold exceeded.
    Passed,
    /// LBA mid/high F4h/2Ch: a pre-fail threshold is exceeded.
    Failed,
    /// Neither signature (or no registers returned).
    Unknown,
}

impl OverallStatus {
    /// Decode LBA 23:8 of the returned registers.
    pub fn from_lba(lba: u64) -> OverallStatus {
        match lba & 0x00FF_FF00 {
            SIGNATURE => OverallStatus::Passed,
            THRESHOLD_EXCEEDED => OverallStatus::Failed,
            _ => OverallStatus::Unknown,
        }
    }
}

/// The name smartctl and most vendors give attribute `id` (`None` when
/// there is no common name).
pub fn attribute_name(id: u8) -> Option<&'static str> {
    Some(match id {
        1 => "Raw_Read_Error_Rate",
        2 => "Throughput_Performance",
        3 => "Spin_Up_Time",
        4 => "Start_Stop_Count",
        5 => "Reallocated_Sector_Ct",
        7 => "Seek_Error_Rate",
        8 => "Seek_Time_Performance",
        9 => "Power_On_Hours",
        10 => "Spin_Retry_Count",
        11 => "Calibration_Retry_Count",
        12 => "Power_Cycle_Count",
        170 => "Available_Reservd_Space",
        171 => "Program_Fail_Count",
        172 => "Erase_Fail_Count",
        173 => "Wear_Leveling_Count",
        174 => "Unexpect_Power_Loss_Ct",
        177 => "Wear_Leveling_Count",
        179 => "Used_Rsvd_Blk_Cnt_Tot",
        181 => "Program_Fail_Cnt_Total",
        182 => "Erase_Fail_Count_Total",
        183 => "Runtime_Bad_Block",
        184 => "End-to-End_Error",
        187 => "Reported_Uncorrect",
        188 => "Command_Timeout",
        189 => "High_Fly_Writes",
        190 => "Airflow_Temperature_Cel",
        191 => "G-Sense_Error_Rate",
        192 => "Power-Off_Retract_Count",
        193 => "Load_Cycle_Count",
        194 => "Temperature_Celsius",
        195 => "Hardware_ECC_Recovered",
        196 => "Reallocated_Event_Count",
        197 => "Current_Pending_Sector",
        198 => "Offline_Uncorrectable",
        199 => "UDMA_CRC_Error_Count",
        200 => "Multi_Zone_Error_Rate",
        231 => "SSD_Life_Left",
        232 => "Available_Reservd_Space",
        233 => "Media_Wearout_Indicator",
        240 => "Head_Flying_Hours",
        241 => "Total_LBAs_Written",
        242 => "Total_LBAs_Read",
        _ => return None,
    })
}

/// What a raw value means, for the attributes that matter to a drive's
/// health. Attribute meanings are vendor conventions, not a standard: the
/// decodings are the ones nearly every vendor follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Decoded {
    /// A count of events or sectors (raw bytes 0-5): 5 reallocated sectors,
    /// 12 power cycles, 187 reported uncorrectable, 188 command timeouts,
    /// 196 reallocation events, 197 pending sectors, 198 off-line
    /// uncorrectable, 199 interface CRC errors.
    Count(u64),
    /// Power-on hours (raw bytes 0-2; vendors put minutes or milliseconds
    /// in the upper bytes).
    Hours(u64),
    /// Temperature in °C (raw byte 0): 190, 194.
    Celsius(u8),
    /// Percent of rated life remaining (the normalised current value): 177,
    /// 231, 233.
    LifeRemainingPct(u8),
    /// Logical blocks (raw bytes 0-5): 241 written, 242 read.
    Lbas(u64),
}

/// One SMART attribute with its threshold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attribute {
    /// Attribute id (1-255).
    pub id: u8,
    /// Its common name (`null` for an id without one).
    pub name: Option<&'static str>,
    /// Flags (bytes 1-2 of the entry).
    pub flags: u16,
    /// Pre-failure (flags bit 0): a value at or below the threshold
    /// predicts failure; else an advisory (old-age) attribute.
    pub prefailure: bool,
    /// Normalised current value (1-253).
    pub current: u8,
    /// Worst normalised value seen.
    pub worst: u8,
    /// Raw value (6 bytes, little-endian).
    pub raw: u64,
    /// The threshold from READ ATTRIBUTE THRESHOLDS (`null` when not read
    /// or the id is missing there).
    pub threshold: Option<u8>,
    /// Current value at or below a non-zero threshold.
    pub failing_now: bool,
    /// The raw value decoded, for the attributes listed in [`Decoded`].
    pub decoded: Option<Decoded>,
}

/// Decode attribute `id`'s raw value (`current` for the wear attributes).
pub fn decode(id: u8, current: u8, raw: u64) -> Option<Decoded> {
    Some(match id {
        5 | 12 | 187 | 188 | 196 | 197 | 198 | 199 => Decoded::Count(raw),
        9 => Decoded::Hours(raw & 0xFF_FFFF),
        190 | 194 => Decoded::Celsius((raw & 0xFF) as u8),
        177 | 231 | 233 => Decoded::LifeRemainingPct(current),
        241 | 242 => Decoded::Lbas(raw),
        _ => return None,
    })
}

/// The decoded SMART READ DATA sector (and thresholds when read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SmartData {
    /// Data structure revision (bytes 0-1).
    pub revision: u16,
    /// The attributes (slots with id 0 left out), in table order.
    pub attributes: Vec<Attribute>,
    /// Off-line data collection status (byte 362).
    pub offline_status: u8,
    /// Self-test execution status (byte 363): bits 7:4 status (0 done
    /// without error, 15 in progress), bits 3:0 tenths of the test left.
    pub self_test_status: u8,
    /// Off-line data collection capability (byte 367).
    pub offline_capability: u8,
    /// SMART capability (bytes 368-369).
    pub smart_capability: u16,
    /// Short self-test polling time, minutes (byte 372).
    pub short_test_minutes: u8,
    /// Extended self-test polling time, minutes (byte 373, or bytes 375-376
    /// when byte 373 is FFh).
    pub extended_test_minutes: u16,
    /// Whether the sector's checksum (byte 511: all 512 bytes sum to 0) holds.
    pub checksum_ok: bool,
}

fn checksum_ok(d: &[u8]) -> bool {
    d[..512].iter().fold(0u8, |a, &b| a.wrapping_add(b)) == 0
}

impl SmartData {
    /// Decode the 512-byte SMART READ DATA sector with the thresholds
    /// sector, when there is one.
    pub fn parse(d: &[u8], thresholds: Option<&[u8]>) -> Option<SmartData> {
        if d.len() < 512 {
            return None;
        }
        let thr = thresholds.filter(|t| t.len() >= 512).map(parse_thresholds);
        let mut attributes = Vec::new();
        for slot in 0..30 {
            let e = &d[2 + 12 * slot..2 + 12 * (slot + 1)];
            let id = e[0];
            if id == 0 {
                continue;
            }
            let flags = u16::from_le_bytes([e[1], e[2]]);
            let mut r = [0u8; 8];
            r[..6].copy_from_slice(&e[5..11]);
            let raw = u64::from_le_bytes(r);
            let threshold = thr
                .as_ref()
                .and_then(|t| t.iter().find(|(tid, _)| *tid == id).map(|(_, v)| *v));
            let current = e[3];
            attributes.push(Attribute {
                id,
                name: attribute_name(id),
                flags,
                prefailure: flags & 1 != 0,
                current,
                worst: e[4],
                raw,
                threshold,
                failing_now: threshold.is_some_and(|t| t != 0 && current <= t),
                decoded: decode(id, current, raw),
            });
        }
        let ext = if d[373] == 0xFF {
            u16::from_le_bytes([d[375], d[376]])
        } else {
            u16::from(d[373])
        };
        Some(SmartData {
            revision: u16::from_le_bytes([d[0], d[1]]),
            attributes,
            offline_status: d[362],
            self_test_status: d[363],
            offline_capability: d[367],
            smart_capability: u16::from_le_bytes([d[368], d[369]]),
            short_test_minutes: d[372],
            extended_test_minutes: ext,
            checksum_ok: checksum_ok(d),
        })
    }

    /// The attribute with `id`, if the drive has it.
    pub fn attribute(&self, id: u8) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.id == id)
    }
}

/// The (id, threshold) pairs of a thresholds sector (slots with id 0 left out).
pub fn parse_thresholds(d: &[u8]) -> Vec<(u8, u8)> {
    (0..30)
        .map(|slot| (d[2 + 12 * slot], d[3 + 12 * slot]))
        .filter(|(id, _)| *id != 0)
        .collect()
}

/// The summary of the attributes that matter, decoded (each `null` when the
/// drive does not keep that attribute).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AtaSummary {
    /// Reallocated sectors (5).
    pub reallocated_sectors: Option<u64>,
    /// Power-on hours (9).
    pub power_on_hours: Option<u64>,
    /// Power cycles (12).
    pub power_cycles: Option<u64>,
    /// Reported uncorrectable errors (187).
    pub reported_uncorrectable: Option<u64>,
    /// Command timeouts (188).
    pub command_timeouts: Option<u64>,
    /// Temperature, °C (194, else 190).
    pub temperature_c: Option<u8>,
    /// Reallocation events (196).
    pub reallocation_events: Option<u64>,
    /// Sectors pending reallocation (197).
    pub pending_sectors: Option<u64>,
    /// Off-line uncorrectable sectors (198).
    pub offline_uncorrectable: Option<u64>,
    /// Interface CRC errors (199).
    pub crc_errors: Option<u64>,
    /// Percent of rated life used: 100 - the normalised value of 177, 231
    /// or 233 (the first present).
    pub percentage_used: Option<u8>,
    /// Logical blocks written (241).
    pub lbas_written: Option<u64>,
    /// Logical blocks read (242).
    pub lbas_read: Option<u64>,
}

impl AtaSummary {
    /// Pick the attributes out of `s`.
    pub fn of(s: &SmartData) -> AtaSummary {
        let count = |id: u8| match s.attribute(id).and_then(|a| a.decoded) {
            Some(Decoded::Count(v)) | Some(Decoded::Hours(v)) | Some(Decoded::Lbas(v)) => Some(v),
            _ => None,
        };
        let celsius = |id: u8| match s.attribute(id).and_then(|a| a.decoded) {
            Some(Decoded::Celsius(c)) => Some(c),
            _ => None,
        };
        let wear = [177u8, 231, 233]
            .iter()
            .find_map(|&id| s.attribute(id))
            .map(|a| 100u8.saturating_sub(a.current.min(100)));
        AtaSummary {
            reallocated_sectors: count(5),
            power_on_hours: count(9),
            power_cycles: count(12),
            reported_uncorrectable: count(187),
            command_timeouts: count(188),
            temperature_c: celsius(194).or_else(|| celsius(190)),
            reallocation_events: count(196),
            pending_sectors: count(197),
            offline_uncorrectable: count(198),
            crc_errors: count(199),
            percentage_used: wear,
            lbas_written: count(241),
            lbas_read: count(242),
        }
    }
}

/// Read SMART data (and the thresholds; a drive that refuses those is
/// still decoded, thresholds `null`). Errors of READ DATA are the caller's.
pub fn read_smart(dev: &SgDevice) -> Result<(SmartData, Option<AtaError>), AtaError> {
    let mut data = vec![0u8; 512];
    execute(dev, &read_data(), "SMART READ DATA", AtaData::In(&mut data))?;
    let mut thr = vec![0u8; 512];
    let thr_err = execute(
        dev,
        &read_thresholds(),
        "SMART READ ATTRIBUTE THRESHOLDS",
        AtaData::In(&mut thr),
    )
    .err();
    let parsed = SmartData::parse(&data, thr_err.is_none().then_some(&thr[..]))
        .ok_or_else(|| AtaError::BadData("SMART data too short".into()))?;
    Ok((parsed, thr_err))
}

/// SMART RETURN STATUS: the overall verdict.
pub fn overall_status(dev: &SgDevice) -> Result<OverallStatus, AtaError> {
    let regs = execute(dev, &return_status(), "SMART RETURN STATUS", AtaData::None)?;
    Ok(regs
        .map(|r| OverallStatus::from_lba(r.lba))
        .unwrap_or(OverallStatus::Unknown))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry in slot `slot` of a SMART data sector (ACS-3 / SFF-8035i).
    fn put_attr(d: &mut [u8], slot: usize, id: u8, flags: u16, cur: u8, worst: u8, raw: u64) {
        let at = 2 + 12 * slot;
        d[at] = id;
        d[at + 1..at + 3].copy_from_slice(&flags.to_le_bytes());
        d[at + 3] = cur;
        d[at + 4] = worst;
        d[at + 5..at + 11].copy_from_slice(&raw.to_le_bytes()[..6]);
    }

    fn seal(d: &mut [u8]) {
        let s = d[..511].iter().fold(0u8, |a, &b| a.wrapping_add(b));
        d[511] = 0u8.wrapping_sub(s);
    }

    #[test]
    fn smart_cdbs_carry_feature_and_signature() {
        // ATA PASS-THROUGH(16): byte 4 FEATURE 7:0, byte 6 COUNT 7:0,
        // byte 10 LBA 15:8 (mid), byte 12 LBA 23:16 (high), byte 14 COMMAND.
        let c = read_data().build16();
        assert_eq!(c[0], 0x85);
        assert_eq!(c[1], 4 << 1, "PIO data-in, 28-bit");
        assert_eq!(c[2], 0x0E, "T_DIR in, BYT_BLOK, T_LENGTH=COUNT");
        assert_eq!(
            (c[4], c[6], c[10], c[12], c[14]),
            (0xD0, 1, 0x4F, 0xC2, 0xB0)
        );
        let c = read_thresholds().build16();
        assert_eq!(
            (c[4], c[6], c[10], c[12], c[14]),
            (0xD1, 1, 0x4F, 0xC2, 0xB0)
        );
        let c = return_status().build16();
        assert_eq!(c[1], 3 << 1, "non-data");
        assert_eq!(c[2], 0x20, "CK_COND, no transfer");
        assert_eq!((c[4], c[10], c[12], c[14]), (0xDA, 0x4F, 0xC2, 0xB0));
        // None of them is refused on an unclaimed handle.
        for c in [read_data(), read_thresholds(), return_status()] {
            assert!(!crate::scsi::modifies_medium(&c.build16()));
        }
        // The self-test start is.
        let st = AtaPassThrough::new(
            Protocol::NonData,
            smart_taskfile(feature::EXECUTE_OFFLINE_IMMEDIATE).lba(SIGNATURE | 1),
        );
        assert!(crate::scsi::modifies_medium(&st.build16()));
    }

    #[test]
    fn return_status_signatures() {
        assert_eq!(OverallStatus::from_lba(0x00C2_4F00), OverallStatus::Passed);
        assert_eq!(OverallStatus::from_lba(0x00C2_4F07), OverallStatus::Passed);
        assert_eq!(OverallStatus::from_lba(0x002C_F400), OverallStatus::Failed);
        assert_eq!(OverallStatus::from_lba(0), OverallStatus::Unknown);
    }

    #[test]
    fn attribute_table_decodes_at_acs_offsets() {
        let mut d = vec![0u8; 512];
        d[0] = 0x10;
        put_attr(&mut d, 0, 5, 0x0033, 100, 100, 12);
        put_attr(&mut d, 1, 9, 0x0032, 95, 95, 0x0500_0000_1234);
        put_attr(&mut d, 2, 194, 0x0022, 64, 40, 0x0028_0012_0024);
        put_attr(&mut d, 4, 233, 0x0032, 97, 97, 0);
        put_attr(&mut d, 5, 241, 0x0032, 100, 100, 0x0001_0000_0000);
        put_attr(&mut d, 6, 197, 0x0012, 100, 100, 3);
        d[362] = 0x82;
        d[363] = 0xF3;
        d[372] = 2;
        d[373] = 0xFF;
        d[375..377].copy_from_slice(&300u16.to_le_bytes());
        seal(&mut d);
        let mut t = vec![0u8; 512];
        t[2] = 5;
        t[3] = 100;
        t[14] = 9;
        t[15] = 0;
        t[2 + 12 * 6] = 197;
        t[3 + 12 * 6] = 0;
        let s = SmartData::parse(&d, Some(&t)).unwrap();
        assert!(s.checksum_ok);
        assert_eq!(s.revision, 0x10);
        assert_eq!(s.attributes.len(), 6, "empty slot 3 skipped");
        let a5 = s.attribute(5).unwrap();
        assert_eq!((a5.flags, a5.current, a5.raw), (0x33, 100, 12));
        assert!(a5.prefailure);
        assert_eq!(a5.threshold, Some(100));
        assert!(a5.failing_now, "current 100 <= threshold 100");
        assert_eq!(s.attribute(194).unwrap().threshold, None);
        assert_eq!(s.attribute(197).unwrap().threshold, Some(0));
        assert!(
            !s.attribute(197).unwrap().failing_now,
            "threshold 0 never fails"
        );
        let sum = AtaSummary::of(&s);
        assert_eq!(sum.reallocated_sectors, Some(12));
        assert_eq!(sum.power_on_hours, Some(0x1234), "bytes 0-2 only");
        assert_eq!(sum.temperature_c, Some(0x24));
        assert_eq!(sum.percentage_used, Some(3));
        assert_eq!(sum.lbas_written, Some(1 << 32));
        assert_eq!(sum.pending_sectors, Some(3));
        assert_eq!(sum.crc_errors, None);
        assert_eq!((s.offline_status, s.self_test_status), (0x82, 0xF3));
        assert_eq!((s.short_test_minutes, s.extended_test_minutes), (2, 300));
        d[100] ^= 1;
        assert!(!SmartData::parse(&d, None).unwrap().checksum_ok);
        assert!(SmartData::parse(&d[..511], None).is_none());
    }
}
