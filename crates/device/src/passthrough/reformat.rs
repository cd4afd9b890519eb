//! A SCSI drive reformatted to another logical block length, as a
//! refurbisher turns a storage array's 520- or 528-byte drive into a
//! 512-byte one: MODE SELECT(10) with a block descriptor naming the new
//! length (SPC-5 6.12, 7.5.6; SBC-4 6.5.2: NUMBER OF LOGICAL BLOCKS
//! FFFFFFFFh, the most the new length allows), then FORMAT UNIT without a
//! parameter list (SBC-4 5.3: no protection information, the command ends
//! with the format), then READ CAPACITY to see that the drive took it.
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
    d.execute(&mut ScsiCommand::new(&FORMAT_UNIT))?
        .check(&FORMAT_UNIT)?;
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
