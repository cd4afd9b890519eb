//! A SCSI drive reformatted to another logical block length, as a
//! refurbisher turns a storage array's 520- or 528-byte drive into a
//! 512-byte one: MODE SELECT(10) with a block descriptor naming the new
//! length (SPC-5 6.12, 7.5.6; SBC-4 6.5.2: NUMBER OF LOGICAL BLOCKS
//! FFFFFFFFh, the most the new length allows), then FORMAT UNIT (SBC-4
//! 5.3, no protection information) with IMMED in its short parameter list
//! header, so the command returns at once and the format, which takes
//! hours on a large drive, is followed by REQUEST SENSE (NOT READY, FORMAT
//! IN PROGRESS, 04h/04h, with its progress) until it ends; a drive that
//! refuses IMMED gets FORMAT UNIT without it, held for the command's
//! timeout. Then READ CAPACITY shows whether the drive took the length.
//! Every block is lost. Afterwards the kernel is asked to rescan the
//! device, so its disk driver sees the new geometry.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::common::{elapsed_ms, sg_for_write, OpError, WriteConsent, LONG_TIMEOUT_MS};
use super::failure::Failure;
use crate::scsi::{self, sg::ScsiCommand};

/// Logical block lengths a drive is reformatted to: the plain ones and
/// the storage arrays' (with 8, 12, 16 or 64 bytes of their own per block).
pub const BLOCK_LENGTHS: &[u32] = &[512, 520, 524, 528, 4096, 4104, 4112, 4160];

/// MODE SELECT(10), PF set, with a parameter list of `len` bytes.
pub fn mode_select10(len: u16) -> [u8; 10] {
    let l = len.to_be_bytes();
    [0x55, 0x10, 0, 0, 0, 0, 0, l[0], l[1], 0]
}

/// MODE SELECT(10)'s parameter list: the 8-byte header (block descriptor
/// length 8) and one short block descriptor of `block_length` bytes, the
/// number of blocks FFFFFFFFh (SBC-4 6.5.2: as many as the length allows).
pub fn block_descriptor_list(block_length: u32) -> [u8; 16] {
    let b = block_length.to_be_bytes();
    [
        0, 0, 0, 0, 0, 0, 0, 8, 0xFF, 0xFF, 0xFF, 0xFF, 0, b[1], b[2], b[3],
    ]
}

/// FORMAT UNIT: no parameter list, no protection information.
pub const FORMAT_UNIT: [u8; 6] = [0x04, 0, 0, 0, 0, 0];

/// FORMAT UNIT with FMTDATA: a parameter list follows.
pub const FORMAT_UNIT_WITH_LIST: [u8; 6] = [0x04, 0x10, 0, 0, 0, 0];

/// The short parameter list header (SBC-4 5.3.2.2) with IMMED (byte 1
/// bit 1) and no defect list.
pub const IMMED_HEADER: [u8; 4] = [0, 0x02, 0, 0];

/// How often a running format is asked how far it got.
const POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// A drive's geometry as READ CAPACITY gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Geometry {
    /// Logical block length, bytes.
    pub block_length: u32,
    /// Logical blocks.
    pub blocks: u64,
}

impl From<&scsi::Capacity> for Geometry {
    fn from(c: &scsi::Capacity) -> Geometry {
        Geometry {
            block_length: c.block_length,
            blocks: c.blocks().0,
        }
    }
}

/// What the reformat did.
#[derive(Debug, Clone, Serialize)]
pub struct Reformat {
    /// Before the format.
    pub before: Geometry,
    /// After it, as READ CAPACITY reports.
    pub after: Geometry,
    /// Time from MODE SELECT to the end of FORMAT UNIT, ms.
    pub duration_ms: u64,
    /// The kernel was asked to rescan the device (its sysfs `rescan`).
    pub rescanned: bool,
}

impl std::fmt::Display for Reformat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "FORMAT UNIT: {} blocks of {} bytes -> {} blocks of {} bytes (READ CAPACITY), {} ms{}",
            self.before.blocks,
            self.before.block_length,
            self.after.blocks,
            self.after.block_length,
            self.duration_ms,
            if self.rescanned {
                "; the kernel rescanned the device"
            } else {
                "; the kernel could not be asked to rescan the device"
            }
        )
    }
}

/// Reformat `dev` to `block_length`-byte logical blocks. The request is
/// checked first, then consent and the claim (a character device needs
/// `--force`); the drive's answer after FORMAT UNIT must name the new
/// length, else the op fails.
pub fn format_unit(
    dev: &Path,
    block_length: u32,
    consent: &WriteConsent,
    timeout_ms: Option<u32>,
) -> Result<Reformat, OpError> {
    if !BLOCK_LENGTHS.contains(&block_length) {
        return Err(OpError::Invalid(format!(
            "--block-size {block_length}: give one of {}",
            BLOCK_LENGTHS
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    // A drive with a block length the kernel's disk driver does not take
    // shows size 0 there: it is claimed all the same.
    let held = consent.claim_any_size(dev, "format-unit")?;
    let d = sg_for_write(dev, held.as_ref(), timeout_ms.unwrap_or(LONG_TIMEOUT_MS))?;
    let before = Geometry::from(&scsi::read_capacity(&d)?);
    let t0 = Instant::now();
    let list = block_descriptor_list(block_length);
    let cdb = mode_select10(list.len() as u16);
    d.execute(&mut ScsiCommand::new(&cdb).data_out(&list))?
        .check(&cdb)?;
    let immed = d
        .execute(&mut ScsiCommand::new(&FORMAT_UNIT_WITH_LIST).data_out(&IMMED_HEADER))?
        .check(&FORMAT_UNIT_WITH_LIST);
    match immed {
        Ok(()) => wait_formatted(&d)?,
        // IMMED (or a parameter list) refused: the format within the command.
        Err(scsi::sg::SgError::CheckCondition { sense, .. })
            if sense.key == scsi::sense_key::ILLEGAL_REQUEST =>
        {
            d.execute(&mut ScsiCommand::new(&FORMAT_UNIT))?
                .check(&FORMAT_UNIT)?
        }
        Err(e) => return Err(e.into()),
    }
    let duration_ms = elapsed_ms(t0);
    let after = Geometry::from(&scsi::read_capacity(&d)?);
    drop(d);
    drop(held);
    let rescanned = rescan(dev);
    if after.block_length != block_length {
        return Err(Failure::line(format!(
            "FORMAT UNIT completed, but READ CAPACITY reports {}-byte blocks, not {block_length}",
            after.block_length
        ))
        .into());
    }
    Ok(Reformat {
        before,
        after,
        duration_ms,
        rescanned,
    })
}

/// What REQUEST SENSE says of a format started with IMMED.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatState {
    /// NOT READY, FORMAT IN PROGRESS (04h/04h).
    Running,
    /// Ended (no sense to report).
    Done,
    /// A unit attention: reported once, ask again.
    Again,
    /// MEDIUM ERROR, FORMAT COMMAND FAILED (31h/01h) or MEDIUM FORMAT
    /// CORRUPTED (31h/00h), or any other sense: the format failed, in words.
    Failed(String),
}

impl FormatState {
    /// The state the sense from REQUEST SENSE shows (`None`: no sense).
    pub fn from_sense(s: Option<&scsi::Sense>) -> FormatState {
        let Some(s) = s else {
            return FormatState::Done;
        };
        match (s.key, s.asc, s.ascq) {
            (scsi::sense_key::NOT_READY, 0x04, 0x04) => FormatState::Running,
            (scsi::sense_key::NO_SENSE, 0x00, 0x00) => FormatState::Done,
            (scsi::sense_key::UNIT_ATTENTION, _, _) => FormatState::Again,
            _ => FormatState::Failed(s.describe()),
        }
    }
}

/// Poll a format started with IMMED until it ends.
fn wait_formatted(d: &scsi::sg::SgDevice) -> Result<(), OpError> {
    loop {
        match FormatState::from_sense(scsi::sanitize::request_sense(d)?.as_ref()) {
            FormatState::Done => return Ok(()),
            FormatState::Running | FormatState::Again => std::thread::sleep(POLL),
            FormatState::Failed(why) => {
                return Err(Failure::line(format!("FORMAT UNIT failed: {why}")).into())
            }
        }
    }
}

/// Ask the kernel to rescan the SCSI device behind `dev` (a block or sg
/// node): its `device/rescan` in sysfs.
fn rescan(dev: &Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(md) = std::fs::metadata(dev) else {
        return false;
    };
    let kind = if md.file_type().is_block_device() {
        "block"
    } else {
        "char"
    };
    let (maj, min) = (libc::major(md.rdev()), libc::minor(md.rdev()));
    std::fs::write(format!("/sys/dev/{kind}/{maj}:{min}/device/rescan"), "1").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_select_and_format_unit_match_spc5_and_sbc4() {
        // MODE SELECT(10): PF (byte 1 bit 4), parameter list length 7-8.
        assert_eq!(mode_select10(16), [0x55, 0x10, 0, 0, 0, 0, 0, 0, 16, 0]);
        // Header: block descriptor length 8 (bytes 6-7); the descriptor:
        // number of blocks 0-3, block length 5-7.
        let l = block_descriptor_list(512);
        assert_eq!(&l[..8], &[0, 0, 0, 0, 0, 0, 0, 8]);
        assert_eq!(&l[8..], &[0xFF, 0xFF, 0xFF, 0xFF, 0, 0x00, 0x02, 0x00]);
        assert_eq!(&block_descriptor_list(4160)[13..], &[0x00, 0x10, 0x40]);
        // FORMAT UNIT: FMTPINFO 0, FMTDATA 0, no IMMED.
        assert_eq!(FORMAT_UNIT, [0x04, 0, 0, 0, 0, 0]);
        // With FMTDATA (byte 1 bit 4) and the short header's IMMED (byte 1
        // bit 1), no defect list.
        assert_eq!(FORMAT_UNIT_WITH_LIST, [0x04, 0x10, 0, 0, 0, 0]);
        assert_eq!(IMMED_HEADER, [0, 0x02, 0, 0]);
    }

    #[test]
    fn request_sense_tells_a_running_format_from_an_ended_or_failed_one() {
        // Fixed-format sense: key (byte 2), ASC/ASCQ (12, 13), progress in
        // the sense-key-specific bytes (15-17).
        let fixed = |key: u8, asc: u8, ascq: u8| {
            let mut b = [0u8; 18];
            b[0] = 0x70;
            b[2] = key;
            b[7] = 10;
            b[12] = asc;
            b[13] = ascq;
            b[15] = 0x80;
            b[16] = 0x40;
            scsi::Sense::parse(&b)
        };
        let k = scsi::sense_key::NOT_READY;
        assert_eq!(
            FormatState::from_sense(fixed(k, 4, 4).as_ref()),
            FormatState::Running
        );
        assert_eq!(FormatState::from_sense(None), FormatState::Done);
        assert_eq!(
            FormatState::from_sense(fixed(0, 0, 0).as_ref()),
            FormatState::Done
        );
        assert_eq!(
            FormatState::from_sense(fixed(scsi::sense_key::UNIT_ATTENTION, 0x29, 0).as_ref()),
            FormatState::Again
        );
        // MEDIUM ERROR, FORMAT COMMAND FAILED; and a sanitize's NOT READY
        // is not a format's.
        for (key, asc, ascq) in [(scsi::sense_key::MEDIUM_ERROR, 0x31, 0x01), (k, 4, 0x1B)] {
            assert!(matches!(
                FormatState::from_sense(fixed(key, asc, ascq).as_ref()),
                FormatState::Failed(_)
            ));
        }
    }

    #[test]
    fn an_odd_block_length_is_refused_before_anything_is_opened() {
        let e = format_unit(
            Path::new("/nonexistent/sdz"),
            513,
            &WriteConsent {
                yes: true,
                force: false,
            },
            None,
        )
        .unwrap_err();
        assert!(
            e.is_input() && e.to_string().contains("--block-size 513"),
            "{e}"
        );
    }
}
