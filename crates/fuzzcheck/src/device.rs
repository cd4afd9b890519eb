//! What devices answer: SCSI sense and status, ATA status return (fixed and
//! descriptor format), NVMe completion status, and the identify / inquiry /
//! VPD / capacity / log data drivelab decodes.

use drivelab_device::ata::{self, AtaRegisters, AtaSanitizeStatus, IdentifyDevice, SctStatus};
use drivelab_device::nvme::{IdentifyController, IdentifyNamespace, NvmeStatus, SanitizeStatusLog};
use drivelab_device::scsi::{
    self, AtaStatusReturn, BlockCharacteristics, BlockLimits, Capacity, LogicalBlockProvisioning,
    OpcodeSupport, Sense, StandardInquiry,
};
use drivelab_device::sg::{ScsiResult, SgError};

fn one_line(s: &str) {
    assert!(!s.trim().is_empty() && !s.contains('\n'), "{s:?}");
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Sense data and status as SG_IO and the NVMe ioctl return them. The
/// input is the sense buffer; its first bytes double as the SCSI status,
/// host and driver status, residual and NVMe status word, and as a CDB.
///
/// Invariants: sense decodes exactly when the response code is 70h–73h;
/// the decoded fields are the bytes where SPC puts them (key, ASC/ASCQ,
/// deferred, descriptor format, the raw bytes in hex); INFORMATION comes
/// only from a VALID field and never alongside ATA registers in fixed
/// format; registers from fixed-format sense hold at most 24 LBA bits,
/// from a descriptor at most 48; a GOOD result checks clean and a CHECK
/// CONDITION never does; an ATA answer decoded as success carries no
/// error bit; every description is one line; NVMe status fields stay in
/// their bit widths.
pub fn sense(data: &[u8]) {
    let at = |i: usize| data.get(i).copied().unwrap_or(0);
    let parsed = Sense::parse(data);
    let rc = at(0) & 0x7F;
    assert_eq!(
        parsed.is_some(),
        !data.is_empty() && (0x70..=0x73).contains(&rc),
        "response code {rc:#x}"
    );
    if let Some(s) = &parsed {
        check_sense(s, data);
    }
    for a in [
        AtaStatusReturn::from_fixed_sense(data),
        AtaStatusReturn::parse_descriptor(data),
    ]
    .into_iter()
    .flatten()
    {
        let limit = if a.from_fixed_format {
            1 << 24
        } else {
            1 << 48
        };
        assert!(a.lba < limit, "{a:?}");
        let regs = AtaRegisters::from_return(&a);
        one_line(&regs.describe());
        let st = AtaSanitizeStatus::from_registers(&regs);
        assert!((0.0..100.0).contains(&st.percent()));
    }
    // The ATA PASS-THROUGH answer with each SCSI status.
    for status in [0u8, 2, at(1)] {
        match ata::interpret(data, status, "FUZZ", || Ok(())) {
            Ok(Some(regs)) => assert!(!regs.is_error(), "{regs:?} decoded as success"),
            Ok(None) => {}
            Err(e) => {
                assert!(
                    status != 0 || parsed.is_some(),
                    "GOOD without sense failed: {e}"
                );
                one_line(&e.to_string());
            }
        }
        let _ = ata::interpret(data, status, "FUZZ", || {
            Err(SgError::InvalidRequest("refused".into()))
        });
    }
    // The SG_IO result around the same sense bytes.
    let r = ScsiResult {
        status: at(1),
        host_status: u16::from(at(2)),
        driver_status: u16::from(at(3)),
        resid: i32::from_le_bytes([at(4), at(5), at(6), at(7)]),
        duration_ms: 0,
        sense: data.to_vec(),
    };
    let cdb = data.get(8..).unwrap_or(&[]);
    let checked = r.check(cdb);
    if r.status == 2 {
        assert!(checked.is_err(), "CHECK CONDITION checked clean");
    }
    if r.is_good() && r.sense.is_empty() {
        assert!(checked.is_ok(), "GOOD gave {checked:?}");
    }
    if let Err(e) = &checked {
        one_line(&e.to_string());
    }
    assert!(r.transferred(4096) <= 4096);
    one_line(&scsi::command_name(cdb));
    let _ = scsi::modifies_medium(cdb);
    let _ = scsi::ata_in_pass_through(cdb);
    // NVMe completion status words.
    for w in data.chunks(2).take(64) {
        let st = NvmeStatus(u16::from_le_bytes([w[0], *w.get(1).unwrap_or(&0)]));
        assert!(st.sct() <= 7 && st.crd() <= 3);
        assert_eq!(u16::from(st.sc()), st.0 & 0xFF);
        one_line(&st.describe());
        if st.is_unsupported() {
            assert_eq!(st.sct(), 0);
        }
    }
}

fn check_sense(s: &Sense, data: &[u8]) {
    let at = |i: usize| data.get(i).copied().unwrap_or(0);
    let rc = at(0) & 0x7F;
    assert_eq!(s.response_code, rc);
    assert_eq!(s.descriptor_format, rc >= 0x72);
    assert_eq!(s.deferred, rc == 0x71 || rc == 0x73);
    assert!(s.key <= 0x0F);
    assert_eq!(s.key_name, scsi::sense_key_name(s.key));
    assert_eq!(s.raw_hex, hex(data));
    if s.descriptor_format {
        assert_eq!((s.key, s.asc, s.ascq), (at(1) & 0x0F, at(2), at(3)));
    } else {
        assert_eq!(s.key, at(2) & 0x0F);
        if s.information.is_some() {
            assert!(at(0) & 0x80 != 0, "INFORMATION without VALID");
            assert!(s.ata.is_none());
        }
    }
    if let Some(a) = &s.ata {
        let limit = if a.from_fixed_format {
            1 << 24
        } else {
            1 << 48
        };
        assert!(a.lba < limit);
    }
    one_line(&s.describe());
    let _ = (s.is_medium_error(), s.is_unsupported_command());
}

/// Data-in buffers devices return: the first byte selects the decoder
/// (IDENTIFY DEVICE, SCT status, standard INQUIRY, the VPD pages, READ
/// CAPACITY(10/16), REPORT SUPPORTED OPERATION CODES, NVMe Identify
/// Controller / Namespace, the Sanitize Status log); the rest is the
/// buffer, zero-padded to the length the command asks for when shorter
/// (as the buffers drivelab reads into are).
///
/// Invariants: no decoder panics on any content; sizes come out as the
/// fields define them (IDENTIFY's logical sector at least 512 bytes or its
/// stated words, never wrapped; NVMe's block size a power of two or 0);
/// the capacity's block count is last LBA + 1 without overflow.
pub fn device_data(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let padded = |n: usize| {
        let mut v = rest.to_vec();
        if v.len() < n {
            v.resize(n, 0);
        }
        v
    };
    match sel % 12 {
        0 => {
            if let Some(id) = IdentifyDevice::parse(&padded(512)) {
                // Later stages divide by the sector size.
                assert!(id.logical_sector_size >= 512, "{id:?}");
                assert!(id.physical_sector_size >= id.logical_sector_size, "{id:?}");
                let _ = serde_json::to_string(&id);
            }
        }
        1 => {
            let _ = SctStatus::parse(&padded(512)).map(|s| s.in_progress());
        }
        2 => {
            if let Some(i) = StandardInquiry::parse(rest) {
                let _ = serde_json::to_string(&i);
            }
        }
        3 => {
            let _ = scsi::parse_supported_vpd_pages(rest);
            let _ = scsi::parse_unit_serial(rest);
        }
        4 => {
            if let Some(ds) = scsi::parse_device_identification(rest) {
                for d in ds {
                    assert!(!d.type_name.is_empty());
                }
            }
        }
        5 => {
            let _ = BlockLimits::parse(rest);
            let _ = BlockCharacteristics::parse(rest);
            let _ = LogicalBlockProvisioning::parse(rest);
        }
        6 | 7 => {
            for c in [Capacity::parse10(rest), Capacity::parse16(rest)]
                .into_iter()
                .flatten()
            {
                assert_eq!(c.blocks().0, c.last_lba.saturating_add(1));
                let _ = c.physical_block_length();
            }
        }
        8 => {
            let _ = OpcodeSupport::parse(rest).map(|o| o.is_supported());
        }
        9 => {
            if let Some(c) = IdentifyController::parse(&padded(4096)) {
                let _ = serde_json::to_string(&c);
            }
        }
        10 => {
            if let Some(ns) = IdentifyNamespace::parse(&padded(4096)) {
                assert!(ns.block_size == 0 || ns.block_size.is_power_of_two());
                assert!(ns.lba_formats.len() <= 64);
                for f in &ns.lba_formats {
                    let s = f.data_size();
                    assert!(s == 0 || s.is_power_of_two());
                }
            }
        }
        _ => {
            let _ = SanitizeStatusLog::parse(&padded(20));
        }
    }
    let words: Vec<u16> = rest
        .chunks(2)
        .take(64)
        .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))
        .collect();
    let s = ata::ata_string(&words);
    assert!(s.chars().all(|c| (' '..='~').contains(&c)));
}
