//! NVMe SMART / Health Information (log 02h) and Error Information (log
//! 01h), read with Get Log Page and decoded at the byte offsets of the NVMe
//! Base Specification 2.0 (figures "SMART / Health Information Log Page"
//! and "Error Information Log Entry Data Structure").
//!
//! The counters of the health log are 128-bit little-endian; they are kept
//! as `u128` and serialised as JSON numbers (a value past 2^64 as a decimal
//! string, so no reader silently rounds it).

use serde::{Serialize, Serializer};

use crate::nvme::{le16, le32, le64, NvmeCommand, NvmeData, NvmeDevice, NvmeError};

/// Log identifiers.
pub mod log_id {
    /// Error Information.
    pub const ERROR_INFORMATION: u8 = 0x01;
    /// SMART / Health Information.
    pub const SMART_HEALTH: u8 = 0x02;
}

/// The namespace ID that means "the controller as a whole" (all namespaces).
pub const NSID_ALL: u32 = 0xFFFF_FFFF;

/// Bytes one "data unit" of the health log stands for: 1000 units of 512 bytes.
pub const DATA_UNIT_BYTES: u128 = 512_000;

/// A 128-bit counter: a JSON number up to 2^64 - 1, a decimal string above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Counter(pub u128);

impl Serialize for Counter {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match u64::try_from(self.0) {
            Ok(v) => s.serialize_u64(v),
            Err(_) => s.serialize_str(&self.0.to_string()),
        }
    }
}

impl std::fmt::Display for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

fn le128(d: &[u8], at: usize) -> Counter {
    let mut a = [0u8; 16];
    a.copy_from_slice(&d[at..at + 16]);
    Counter(u128::from_le_bytes(a))
}

/// Kelvin to °C (0 K means "not reported").
fn kelvin_to_c(k: u16) -> Option<i32> {
    (k != 0).then(|| i32::from(k) - 273)
}

/// The SMART / Health Information log (02h), 512 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SmartHealthLog {
    /// Critical Warning (byte 0).
    pub critical_warning: u8,
    /// The critical warning bits set, in words.
    pub critical_warnings: Vec<&'static str>,
    /// Composite Temperature (bytes 1-2), kelvin.
    pub temperature_k: u16,
    /// Composite temperature, °C (`null` when 0 K).
    pub temperature_c: Option<i32>,
    /// Available Spare (byte 3), percent.
    pub available_spare_pct: u8,
    /// Available Spare Threshold (byte 4), percent.
    pub available_spare_threshold_pct: u8,
    /// Percentage Used (byte 5; may exceed 100, 255 = 255 or more).
    pub percentage_used: u8,
    /// Endurance Group Critical Warning Summary (byte 6).
    pub endurance_group_critical_warning: u8,
    /// Data Units Read (bytes 32-47), thousands of 512-byte units.
    pub data_units_read: Counter,
    /// Data read, bytes (data units x 512000).
    pub data_read_bytes: Counter,
    /// Data Units Written (bytes 48-63).
    pub data_units_written: Counter,
    /// Data written, bytes (data units x 512000).
    pub data_written_bytes: Counter,
    /// Host Read Commands (bytes 64-79).
    pub host_read_commands: Counter,
    /// Host Write Commands (bytes 80-95).
    pub host_write_commands: Counter,
    /// Controller Busy Time (bytes 96-111), minutes.
    pub controller_busy_minutes: Counter,
    /// Power Cycles (bytes 112-127).
    pub power_cycles: Counter,
    /// Power On Hours (bytes 128-143).
    pub power_on_hours: Counter,
    /// Unsafe Shutdowns (bytes 144-159).
    pub unsafe_shutdowns: Counter,
    /// Media and Data Integrity Errors (bytes 160-175).
    pub media_errors: Counter,
    /// Number of Error Information Log Entries over the life of the
    /// controller (bytes 176-191).
    pub error_log_entries: Counter,
    /// Warning Composite Temperature Time (bytes 192-195), minutes.
    pub warning_temp_minutes: u32,
    /// Critical Composite Temperature Time (bytes 196-199), minutes.
    pub critical_temp_minutes: u32,
    /// Temperature Sensors 1-8 (bytes 200-215), °C; sensors reporting 0 K
    /// are left out as `null`.
    pub sensors_c: Vec<Option<i32>>,
}

/// The Critical Warning bits (byte 0), in words.
pub fn critical_warning_bits(w: u8) -> Vec<&'static str> {
    [
        (0, "available spare below threshold"),
        (1, "temperature outside its threshold"),
        (2, "reliability degraded (media or internal errors)"),
        (3, "media placed in read-only mode"),
        (4, "volatile memory backup failed"),
        (5, "persistent memory region read-only or unreliable"),
    ]
    .iter()
    .filter(|(bit, _)| w & (1 << bit) != 0)
    .map(|(_, n)| *n)
    .collect()
}

impl SmartHealthLog {
    /// Decode the 512-byte page (`None` when shorter).
    pub fn parse(d: &[u8]) -> Option<SmartHealthLog> {
        if d.len() < 512 {
            return None;
        }
        let temperature_k = le16(d, 1);
        let data_units_read = le128(d, 32);
        let data_units_written = le128(d, 48);
        Some(SmartHealthLog {
            critical_warning: d[0],
            critical_warnings: critical_warning_bits(d[0]),
            temperature_k,
            temperature_c: kelvin_to_c(temperature_k),
            available_spare_pct: d[3],
            available_spare_threshold_pct: d[4],
            percentage_used: d[5],
            endurance_group_critical_warning: d[6],
            data_read_bytes: Counter(data_units_read.0.saturating_mul(DATA_UNIT_BYTES)),
            data_units_read,
            data_written_bytes: Counter(data_units_written.0.saturating_mul(DATA_UNIT_BYTES)),
            data_units_written,
            host_read_commands: le128(d, 64),
            host_write_commands: le128(d, 80),
            controller_busy_minutes: le128(d, 96),
            power_cycles: le128(d, 112),
            power_on_hours: le128(d, 128),
            unsafe_shutdowns: le128(d, 144),
            media_errors: le128(d, 160),
            error_log_entries: le128(d, 176),
            warning_temp_minutes: le32(d, 192),
            critical_temp_minutes: le32(d, 196),
            sensors_c: (0..8).map(|i| kelvin_to_c(le16(d, 200 + 2 * i))).collect(),
        })
    }
}

/// One Error Information log entry (64 bytes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorLogEntry {
    /// Error Count (bytes 0-7): unique, increasing; 0 = an empty entry.
    pub error_count: u64,
    /// Submission Queue ID (bytes 8-9).
    pub sqid: u16,
    /// Command ID (bytes 10-11).
    pub cid: u16,
    /// Status Field (bytes 12-13 bits 15:1: the completion status).
    pub status: crate::nvme::NvmeStatus,
    /// Parameter Error Location (bytes 14-15).
    pub parameter_error_location: u16,
    /// LBA (bytes 16-23).
    pub lba: u64,
    /// Namespace (bytes 24-27).
    pub nsid: u32,
    /// Vendor Specific Information Available (byte 28).
    pub vendor_info_page: u8,
    /// Transport Type (byte 29).
    pub transport_type: u8,
    /// Command Specific Information (bytes 32-39).
    pub command_specific: u64,
}

impl ErrorLogEntry {
    /// Decode one 64-byte entry.
    pub fn parse(d: &[u8]) -> Option<ErrorLogEntry> {
        if d.len() < 64 {
            return None;
        }
        Some(ErrorLogEntry {
            error_count: le64(d, 0),
            sqid: le16(d, 8),
            cid: le16(d, 10),
            status: crate::nvme::NvmeStatus(le16(d, 12) >> 1),
            parameter_error_location: le16(d, 14),
            lba: le64(d, 16),
            nsid: le32(d, 24),
            vendor_info_page: d[28],
            transport_type: d[29],
            command_specific: le64(d, 32),
        })
    }

    /// The entries of an Error Information log, the empty ones (error count
    /// 0) left out.
    pub fn parse_log(d: &[u8]) -> Vec<ErrorLogEntry> {
        d.chunks_exact(64)
            .filter_map(ErrorLogEntry::parse)
            .filter(|e| e.error_count != 0)
            .collect()
    }
}

/// Read log 02h for the whole controller (NSID FFFFFFFFh; a controller that
/// keeps no per-namespace log answers for all of them).
pub fn smart_health(dev: &NvmeDevice) -> Result<SmartHealthLog, NvmeError> {
    let mut buf = vec![0u8; 512];
    dev.execute(
        &NvmeCommand::get_log_page(log_id::SMART_HEALTH, NSID_ALL, 512),
        NvmeData::In(&mut buf),
    )?;
    SmartHealthLog::parse(&buf)
        .ok_or_else(|| NvmeError::InvalidRequest("SMART / Health log too short".into()))
}

/// Read the Error Information log: `entries` entries (ELPE + 1 from
/// Identify Controller byte 262), at most 256.
pub fn error_log(dev: &NvmeDevice, entries: u32) -> Result<Vec<ErrorLogEntry>, NvmeError> {
    let n = entries.clamp(1, 256);
    let mut buf = vec![0u8; 64 * n as usize];
    dev.execute(
        &NvmeCommand::get_log_page(log_id::ERROR_INFORMATION, NSID_ALL, 64 * n),
        NvmeData::In(&mut buf),
    )?;
    Ok(ErrorLogEntry::parse_log(&buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_log_decodes_at_base_spec_offsets() {
        let mut d = vec![0u8; 512];
        d[0] = 0b0000_0101;
        d[1..3].copy_from_slice(&310u16.to_le_bytes());
        d[3] = 100;
        d[4] = 10;
        d[5] = 3;
        let put = |d: &mut Vec<u8>, at: usize, v: u128| {
            d[at..at + 16].copy_from_slice(&v.to_le_bytes());
        };
        for (i, at) in (32..192).step_by(16).enumerate() {
            put(&mut d, at, 1000 + i as u128);
        }
        // A counter past 2^64 stays exact.
        put(&mut d, 160, (1u128 << 64) + 5);
        d[192..196].copy_from_slice(&7u32.to_le_bytes());
        d[196..200].copy_from_slice(&2u32.to_le_bytes());
        d[200..202].copy_from_slice(&300u16.to_le_bytes());
        let h = SmartHealthLog::parse(&d).unwrap();
        assert_eq!(h.critical_warning, 5);
        assert_eq!(
            h.critical_warnings,
            vec![
                "available spare below threshold",
                "reliability degraded (media or internal errors)"
            ]
        );
        assert_eq!((h.temperature_k, h.temperature_c), (310, Some(37)));
        assert_eq!(
            (
                h.available_spare_pct,
                h.available_spare_threshold_pct,
                h.percentage_used
            ),
            (100, 10, 3)
        );
        assert_eq!(h.data_units_read, Counter(1000));
        assert_eq!(h.data_read_bytes, Counter(1000 * 512_000));
        assert_eq!(h.data_units_written, Counter(1001));
        assert_eq!(h.host_read_commands, Counter(1002));
        assert_eq!(h.host_write_commands, Counter(1003));
        assert_eq!(h.controller_busy_minutes, Counter(1004));
        assert_eq!(h.power_cycles, Counter(1005));
        assert_eq!(h.power_on_hours, Counter(1006));
        assert_eq!(h.unsafe_shutdowns, Counter(1007));
        assert_eq!(h.media_errors, Counter((1 << 64) + 5));
        assert_eq!(h.error_log_entries, Counter(1009));
        assert_eq!((h.warning_temp_minutes, h.critical_temp_minutes), (7, 2));
        assert_eq!(h.sensors_c[0], Some(27));
        assert_eq!(h.sensors_c[1], None);
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["power_on_hours"], 1006);
        assert_eq!(v["media_errors"], "18446744073709551621");
        assert!(SmartHealthLog::parse(&d[..511]).is_none());
    }

    #[test]
    fn error_log_entries_decode_and_empty_ones_are_dropped() {
        let mut d = vec![0u8; 128];
        d[0..8].copy_from_slice(&42u64.to_le_bytes());
        d[8..10].copy_from_slice(&1u16.to_le_bytes());
        d[10..12].copy_from_slice(&0x1234u16.to_le_bytes());
        // Status: phase tag bit 0, then SC 81h (unrecovered read), SCT 2.
        d[12..14].copy_from_slice(&(((0x0281u16) << 1) | 1).to_le_bytes());
        d[14..16].copy_from_slice(&0x0010u16.to_le_bytes());
        d[16..24].copy_from_slice(&0xABCDu64.to_le_bytes());
        d[24..28].copy_from_slice(&1u32.to_le_bytes());
        d[29] = 1;
        let v = ErrorLogEntry::parse_log(&d);
        assert_eq!(v.len(), 1);
        let e = &v[0];
        assert_eq!((e.error_count, e.sqid, e.cid), (42, 1, 0x1234));
        assert_eq!((e.status.sct(), e.status.sc()), (2, 0x81));
        assert_eq!(
            (e.parameter_error_location, e.lba, e.nsid),
            (0x10, 0xABCD, 1)
        );
        assert_eq!(e.transport_type, 1);
    }

    #[test]
    fn log_page_commands_are_reads() {
        use crate::nvme::{modifies_medium, Queue};
        let c = NvmeCommand::get_log_page(log_id::SMART_HEALTH, NSID_ALL, 512);
        assert!(!modifies_medium(c.queue, c.cmd.opcode));
        // CDW10: LID 02h in bits 7:0, NUMDL = 512/4 - 1 = 127 in bits 31:16.
        assert_eq!((c.cmd.opcode, c.cmd.nsid), (0x02, 0xFFFF_FFFF));
        assert_eq!(c.cmd.cdw10, 0x02 | (127 << 16));
        let e = NvmeCommand::get_log_page(log_id::ERROR_INFORMATION, NSID_ALL, 64 * 64);
        assert_eq!(e.cmd.cdw10, 0x01 | (1023 << 16));
        assert_eq!(c.queue, Queue::Admin);
    }
}
