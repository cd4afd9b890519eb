//! LOG SENSE (4Dh, SPC-5 6.8) and the log pages the SAS personality keeps
//! (SPC-5 7.3): supported pages (00h), write error counter (02h, 7.3.8:
//! no error, and the total bytes processed: what the drive wrote, by WRITE
//! and WRITE SAME alike), temperature (0Dh, 7.3.21),
//! self-test results (10h, 7.3.19: twenty parameters, the newest first,
//! from [`crate::diagnostic::results`]) and informational exceptions
//! (2Fh, 7.3.9: no exception, the temperature). Parameters are cumulative
//! values (PC 01b).

use crate::sense::Sense;

/// Pages returned, in page 00h's order.
pub const PAGES: &[u8] = &[0x00, 0x02, 0x0D, 0x10, 0x2F];

/// One log parameter: code, control byte (binary format, 03h), value.
fn param(code: u16, value: &[u8]) -> Vec<u8> {
    let mut p = code.to_be_bytes().to_vec();
    p.push(0x03);
    p.push(value.len() as u8);
    p.extend_from_slice(value);
    p
}

/// What the pages report of the drive now.
#[derive(Debug, Clone, Default)]
pub struct Now {
    /// Its temperature, °C.
    pub temperature_c: u8,
    /// Bytes it has written for the host.
    pub bytes_written: u64,
    /// The self-test results parameters' values, 0001h first (fewer
    /// than twenty: the rest are zero).
    pub self_tests: Vec<[u8; 16]>,
}

/// Page `page` (no subpages) of a drive as `now` says; `None` for a page
/// the drive lacks.
pub fn page(page: u8, now: &Now) -> Option<Vec<u8>> {
    let temperature_c = now.temperature_c;
    let body: Vec<u8> = match page {
        0x00 => PAGES.to_vec(),
        // Errors corrected (0000h-0003h), algorithm invocations (0004h),
        // total bytes processed (0005h), uncorrected errors (0006h).
        0x02 => [
            (0..=4u16).flat_map(|c| param(c, &[0u8; 4])).collect(),
            param(0x0005, &now.bytes_written.to_be_bytes()),
            param(0x0006, &[0u8; 4]),
        ]
        .concat(),
        0x0D => [param(0x0000, &[0, temperature_c]), param(0x0001, &[0, 70])].concat(),
        0x10 => (1..=20u16)
            .flat_map(|c| {
                let v = now.self_tests.get(usize::from(c) - 1).copied();
                param(c, &v.unwrap_or([0u8; 16]))
            })
            .collect(),
        0x2F => param(0x0000, &[0x00, 0x00, temperature_c]),
        _ => return None,
    };
    let mut d = vec![page, 0];
    d.extend_from_slice(&(body.len() as u16).to_be_bytes());
    d.extend_from_slice(&body);
    Some(d)
}

/// The LOG SENSE data for `cdb`, cut to its allocation length.
pub fn log_sense(cdb: &[u8], now: &Now) -> Result<Vec<u8>, Sense> {
    if cdb.len() < 10 {
        return Err(Sense::INVALID_FIELD_IN_CDB);
    }
    let (pc, code, subpage) = (cdb[2] >> 6, cdb[2] & 0x3F, cdb[3]);
    let pointer = u16::from_be_bytes([cdb[5], cdb[6]]);
    let alloc = usize::from(u16::from_be_bytes([cdb[7], cdb[8]]));
    // Only cumulative and current values, from the first parameter.
    if subpage != 0 || pointer != 0 || pc == 0 || pc == 2 {
        return Err(Sense::INVALID_FIELD_IN_CDB);
    }
    let mut d = page(code, now).ok_or(Sense::INVALID_FIELD_IN_CDB)?;
    d.truncate(alloc);
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::health::scsi_log::{self, LogPage, LogSense};

    fn got(page: u8) -> LogPage {
        let cdb = LogSense::new(page, 4096).build();
        let mut failed = [0u8; 16];
        failed[0] = (2 << 5) | 7;
        failed[4..12].copy_from_slice(&1234u64.to_be_bytes());
        let now = Now {
            temperature_c: 35,
            bytes_written: 3 << 30,
            self_tests: vec![failed],
        };
        let d = log_sense(&cdb, &now).expect("page");
        LogPage::parse(&d).expect("parses")
    }

    #[test]
    fn drivelab_reads_the_pages_back() {
        let sup = got(0x00);
        assert_eq!(sup.page, 0x00);
        let t = scsi_log::Temperature::of(&got(0x0D));
        assert_eq!((t.current_c, t.reference_c), (Some(35), Some(70)));
        let st = scsi_log::self_test_results(&got(0x10));
        assert_eq!(st.len(), 1);
        assert_eq!(
            (st[0].code, st[0].result, st[0].first_failure_lba),
            (2, 7, Some(1234))
        );
        let ie = scsi_log::InformationalExceptions::of(&got(0x2F)).expect("IE");
        assert_eq!((ie.asc, ie.ascq), (0, 0));
        let w = scsi_log::ErrorCounters::of(&got(0x02));
        assert_eq!(w.bytes_processed, Some(3 << 30));
    }

    #[test]
    fn unknown_pages_and_fields_are_refused() {
        for cdb in [
            LogSense::new(0x15, 255).build().to_vec(),
            vec![0x4D, 0, 0x4D, 1, 0, 0, 0, 0, 255, 0], // subpage 1
            vec![0x4D, 0, 0x0D, 0, 0, 0, 1, 0, 255, 0], // parameter pointer 1
            vec![0x4D, 0, 0x0D, 0, 0],                  // short
        ] {
            assert_eq!(
                log_sense(&cdb, &Now::default()),
                Err(Sense::INVALID_FIELD_IN_CDB),
                "{cdb:02x?}"
            );
        }
        let short = log_sense(&LogSense::new(0x0D, 4).build(), &Now::default()).expect("page");
        assert_eq!(short, vec![0x0D, 0, 0, 12]);
    }
}
