//! Get Log Page (NVMe Base 1.4, 5.14): Error Information (01h), SMART /
//! Health Information (02h), Firmware Slot Information (03h), Device
//! Self-test (06h, [`super::selftest`]) and Sanitize
//! Status (81h), and the vendor-specific media log (C0h, NAND writes:
//! [`crate::media::media_log`]), each built from the controller's state and cut to the
//! offset (LPOL/LPOU) and length (NUMDL/NUMDU) asked for.
//!
//! The SMART counters are the host's commands as the controller executed
//! them: Data Units Read / Written count Read and Write data in thousands
//! of 512-byte units, rounded up; Write Zeroes and Dataset Management do
//! not count as written data, as the specification says.

use crate::cmd::{put, Sqe, Status};
use crate::ctrl::{data_units, Ctrl, Outcome};

/// Log identifiers.
pub mod lid {
    /// Error Information.
    pub const ERROR: u8 = 0x01;
    /// SMART / Health Information.
    pub const SMART: u8 = 0x02;
    /// Firmware Slot Information.
    pub const FIRMWARE_SLOT: u8 = 0x03;
    /// Device Self-test.
    pub const SELF_TEST: u8 = 0x06;
    /// Sanitize Status.
    pub const SANITIZE: u8 = 0x81;
}

/// The composite temperature the controller reports, kelvin (35 °C).
pub const TEMPERATURE_K: u16 = 308;

/// The SMART / Health Information log.
pub fn smart(c: &Ctrl) -> Vec<u8> {
    let n = &c.counters;
    let mut d = vec![0u8; 512];
    put(&mut d, 1, &TEMPERATURE_K.to_le_bytes());
    d[3] = 100; // Available Spare
    d[4] = 10; // Available Spare Threshold
    put(&mut d, 32, &data_units(n.bytes_read).to_le_bytes());
    put(&mut d, 48, &data_units(n.bytes_written).to_le_bytes());
    put(&mut d, 64, &n.read_commands.to_le_bytes());
    put(&mut d, 80, &n.write_commands.to_le_bytes());
    put(&mut d, 96, &(n.busy_ns / 60_000_000_000).to_le_bytes());
    put(&mut d, 112, &1u128.to_le_bytes()); // Power Cycles: this run
    let hours = u128::from(c.started.elapsed().as_secs() / 3600);
    put(&mut d, 128, &hours.to_le_bytes());
    put(&mut d, 160, &n.media_errors.to_le_bytes());
    put(&mut d, 176, &u128::from(c.error_count).to_le_bytes());
    put(&mut d, 200, &TEMPERATURE_K.to_le_bytes()); // sensor 1
    d
}

/// The Error Information log: ELPE + 1 entries of 64 bytes, newest first.
pub fn errors(c: &Ctrl) -> Vec<u8> {
    let mut d = vec![0u8; 64 * crate::ctrl::ERROR_LOG_ENTRIES];
    for (i, e) in c.errors.iter().enumerate() {
        let b = &mut d[64 * i..64 * (i + 1)];
        put(b, 0, &e.count.to_le_bytes());
        put(b, 8, &e.sqid.to_le_bytes());
        put(b, 10, &e.cid.to_le_bytes());
        put(b, 12, &(e.status.field() << 1).to_le_bytes());
        put(b, 14, &0xFFFFu16.to_le_bytes()); // parameter location: none
        put(b, 16, &e.lba.to_le_bytes());
        put(b, 24, &e.nsid.to_le_bytes());
        b[29] = 3; // TRTYPE: TCP
    }
    d
}

/// The Sanitize Status log: SPROG, SSTAT, SCDW10 and the estimated
/// times of overwrite, block erase and crypto erase (the ones without
/// deallocation are not reported).
pub fn sanitize(c: &Ctrl) -> Vec<u8> {
    let s = &c.sanitize;
    let mut d = vec![0u8; 512];
    let sprog = if s.status == 2 { s.progress } else { 0xFFFF };
    put(&mut d, 0, &sprog.to_le_bytes());
    let sstat =
        u16::from(s.status) | (u16::from(s.passes & 0x1F) << 3) | (u16::from(s.global_erased) << 8);
    put(&mut d, 2, &sstat.to_le_bytes());
    put(&mut d, 4, &s.cdw10.to_le_bytes());
    let est = c.cfg.sanitize_seconds.ceil() as u32;
    for at in [8, 12, 16] {
        put(&mut d, at, &est.to_le_bytes());
    }
    for at in [20, 24, 28] {
        put(&mut d, at, &u32::MAX.to_le_bytes());
    }
    d
}

/// The Firmware Slot Information log: slot 1 active, its revision.
fn firmware(c: &Ctrl) -> Vec<u8> {
    let mut d = vec![0u8; 512];
    d[0] = 1;
    let fw = c.cfg.firmware.as_bytes();
    let mut slot = [b' '; 8];
    slot[..fw.len().min(8)].copy_from_slice(&fw[..fw.len().min(8)]);
    put(&mut d, 8, &slot);
    d
}

/// Executes Get Log Page: CDW10 bits 7:0 LID, 31:16 NUMDL; CDW11 bits
/// 15:0 NUMDU; CDW12-13 the byte offset.
pub fn execute(c: &mut Ctrl, sqe: &Sqe) -> Outcome {
    let lid = (sqe.cdw(10) & 0xFF) as u8;
    let dwords = u64::from(sqe.cdw(10) >> 16) | (u64::from(sqe.cdw(11) & 0xFFFF) << 16);
    let len = (dwords + 1) * 4;
    let offset = u64::from(sqe.cdw(12)) | (u64::from(sqe.cdw(13)) << 32);
    let page = match lid {
        lid::ERROR => errors(c),
        lid::SMART => smart(c),
        lid::FIRMWARE_SLOT => firmware(c),
        lid::SELF_TEST => {
            let now = std::time::Instant::now();
            c.self_test
                .advance(now, c.started.elapsed().as_secs() / 3600);
            c.self_test.log_page(now)
        }
        crate::media::MEDIA_LOG => crate::media::media_log(&c.namespaces),
        lid::SANITIZE => {
            if c.sanitize.status == 2 {
                c.sanitize.polls_in_progress += 1;
            }
            sanitize(c)
        }
        _ => return Outcome::status(Status::INVALID_LOG_PAGE),
    };
    if offset % 4 != 0 || offset > page.len() as u64 {
        return Outcome::status(Status::INVALID_FIELD);
    }
    let mut out = vec![0u8; len.min(1 << 20) as usize];
    let from = &page[offset as usize..];
    let n = from.len().min(out.len());
    out[..n].copy_from_slice(&from[..n]);
    Outcome::data(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_units_are_thousands_of_sectors_rounded_up() {
        assert_eq!(data_units(0), 0);
        assert_eq!(data_units(1), 1);
        assert_eq!(data_units(512_000), 1);
        assert_eq!(data_units(512_001), 2);
        assert_eq!(data_units(64 << 20), 132); // 131072 sectors
    }
}
