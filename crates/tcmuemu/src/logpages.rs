//! LOG SENSE (4Dh, SPC-5 6.8) and the log pages the SAS personality keeps
//! (SPC-5 7.3): supported pages (00h), write error counter (02h, 7.3.8:
//! no error, and the total bytes processed: what the drive wrote, by WRITE
//! and WRITE SAME alike), temperature (0Dh, 7.3.21),
//! self-test results (10h, 7.3.19: twenty parameters, the newest first,
//! from [`crate::diagnostic::results`]) and informational exceptions
//! (2Fh, 7.3.9: no exception, the temperature); and on the FTL medium a
//! vendor-specific page (30h, [`NAND_PAGE`]) with the NAND writes, as
//! SAS SSDs keep theirs in vendor pages. Parameters are cumulative values
//! (PC 01b).

use crate::sense::Sense;

/// Pages returned, in page 00h's order.
pub const PAGES: &[u8] = &[0x00, 0x02, 0x0D, 0x10, 0x2F];

/// The vendor-specific page of NAND writes (SPC-5: 30h-3Eh are vendor
/// specific), listed on the FTL medium only. Its parameters, each 8
/// bytes, big-endian: 0000h NAND bytes written, 0001h flash pages the
/// host's writes programmed, 0002h the drive's own (sanitize overwrite,
/// FORMAT UNIT), 0003h all NAND page programs (with garbage collection's
/// copies), 0004h garbage-collection copies, 0005h flash block erases,
/// 0006h whole-medium erases: write amplification = 0003h / (0001h +
/// 0002h).
pub const NAND_PAGE: u8 = 0x30;

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
    /// The FTL medium's NAND counts (none on plain memory).
    pub nand: Option<drivelab_ftlsim::media::MediaStats>,
}

/// Page `page` (no subpages) of a drive as `now` says; `None` for a page
/// the drive lacks.
pub fn page(page: u8, now: &Now) -> Option<Vec<u8>> {
    let temperature_c = now.temperature_c;
    let body: Vec<u8> = match page {
        0x00 => {
            let mut p = PAGES.to_vec();
            if now.nand.is_some() {
                p.push(NAND_PAGE);
            }
            p
        }
        NAND_PAGE => {
            let n = now.nand.as_ref()?;
            let bytes = n.nand_pages * drivelab_ftlsim::media::PAGE_BYTES;
            [
                bytes,
                n.host_pages,
                n.drive_pages,
                n.nand_pages,
                n.gc_copies,
                n.block_erases,
                n.resets,
            ]
            .iter()
            .zip(0u16..)
            .flat_map(|(v, c)| param(c, &v.to_be_bytes()))
            .collect()
        }
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
            nand: None,
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
    fn the_nand_page_is_listed_and_answered_on_the_ftl_medium_only() {
        let stats = drivelab_ftlsim::media::MediaStats {
            host_pages: 100,
            drive_pages: 20,
            nand_pages: 150,
            gc_copies: 30,
            block_erases: 4,
            resets: 1,
        };
        let now = Now {
            nand: Some(stats),
            ..Now::default()
        };
        let sup = log_sense(&LogSense::new(0x00, 255).build(), &now).expect("page 00h");
        assert_eq!(sup[4..], [0x00, 0x02, 0x0D, 0x10, 0x2F, NAND_PAGE]);
        let d = log_sense(&LogSense::new(NAND_PAGE, 4096).build(), &now).expect("page 30h");
        let p = LogPage::parse(&d).expect("parses");
        let v = |code: u16| {
            let q = p
                .parameters
                .iter()
                .find(|q| q.code == code)
                .expect("parameter");
            u64::from_be_bytes(q.value[..8].try_into().expect("8 bytes"))
        };
        assert_eq!(
            (v(0), v(1), v(2), v(3), v(4), v(5), v(6)),
            (150 * 4096, 100, 20, 150, 30, 4, 1)
        );
        // Plain memory: not listed, not answered.
        let sup = log_sense(&LogSense::new(0x00, 255).build(), &Now::default()).expect("00h");
        assert!(!sup[4..].contains(&NAND_PAGE));
        assert!(log_sense(&LogSense::new(NAND_PAGE, 255).build(), &Now::default()).is_err());
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
