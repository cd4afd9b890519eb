//! A change of logical block size, as a refurbisher reformats a drive from
//! a storage array (520- or 528-byte sectors) to 512: MODE SELECT (6/10)
//! with a block descriptor names the new block length (SPC-5 6.11, 6.12,
//! 7.5.6), FORMAT UNIT (SBC-4 5.3) applies it over the whole medium. The
//! medium's bytes stay; the number of blocks follows the new length.

use crate::sense::{key, Sense};

/// Block lengths the drive can be formatted to.
pub const LENGTHS: &[u32] = &[512, 520, 528, 4096];

/// INVALID FIELD IN PARAMETER LIST (26h/00h).
pub const INVALID_PARAMETER: Sense = Sense::new(key::ILLEGAL_REQUEST, 0x26, 0x00);

/// The block length a MODE SELECT's parameter list asks for: `None`
/// without a block descriptor (the pages alone are accepted and ignored).
pub fn mode_select_block_length(ten: bool, list: &[u8]) -> Result<Option<u32>, Sense> {
    let (hdr, bdl) = if ten {
        let h = list.get(..8).ok_or(Sense::PARAMETER_LIST_LENGTH)?;
        (8, usize::from(u16::from_be_bytes([h[6], h[7]])))
    } else {
        let h = list.get(..4).ok_or(Sense::PARAMETER_LIST_LENGTH)?;
        (4, usize::from(h[3]))
    };
    if bdl == 0 {
        return Ok(None);
    }
    if bdl != 8 {
        return Err(INVALID_PARAMETER);
    }
    let d = list.get(hdr..hdr + 8).ok_or(Sense::PARAMETER_LIST_LENGTH)?;
    let len = u32::from_be_bytes([0, d[5], d[6], d[7]]);
    if !LENGTHS.contains(&len) {
        return Err(INVALID_PARAMETER);
    }
    Ok(Some(len))
}

/// How long a format started with IMMED keeps the drive NOT READY.
pub const IMMED_FORMAT: std::time::Duration = std::time::Duration::from_secs(2);

/// NOT READY, LOGICAL UNIT NOT READY, FORMAT IN PROGRESS (04h/04h), with
/// the progress of a format `elapsed` into [`IMMED_FORMAT`] (of 65,536).
pub fn in_progress(elapsed: std::time::Duration) -> Sense {
    let done = elapsed.as_secs_f64() / IMMED_FORMAT.as_secs_f64();
    Sense::new(crate::sense::key::NOT_READY, 0x04, 0x04)
        .with_specific((done.min(1.0) * 65535.0) as u16)
}

/// FORMAT UNIT's CDB, checked: no protection information (FMTPINFO 0: a
/// protected format is not offered), and with FMTDATA a parameter list
/// header without protection. Whether its IMMED is set (the command ends
/// at once, the format after it).
pub fn check_format_unit(cdb: &[u8], list: &[u8]) -> Result<bool, Sense> {
    let b1 = *cdb.get(1).ok_or(Sense::INVALID_FIELD_IN_CDB)?;
    if b1 >> 6 != 0 {
        return Err(Sense::INVALID_FIELD_IN_CDB);
    }
    if b1 & 0x10 != 0 {
        let h = list.get(..4).ok_or(Sense::PARAMETER_LIST_LENGTH)?;
        // Byte 0 bits 2:0 PROTECTION FIELD USAGE; byte 1 bit 1 IMMED
        // (SBC-4 table "short parameter list header").
        if h[0] & 0x07 != 0 {
            return Err(INVALID_PARAMETER);
        }
        return Ok(h[1] & 0x02 != 0);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn select6(len: u32) -> Vec<u8> {
        let l = len.to_be_bytes();
        vec![0, 0, 0, 8, 0, 0, 0, 0, 0, l[1], l[2], l[3]]
    }

    #[test]
    fn the_block_descriptor_names_the_new_length() {
        assert_eq!(
            mode_select_block_length(false, &select6(512)),
            Ok(Some(512))
        );
        let mut ten = vec![0, 0, 0, 0, 0, 0, 0, 8];
        ten.extend_from_slice(&select6(4096)[4..]);
        assert_eq!(mode_select_block_length(true, &ten), Ok(Some(4096)));
        // No descriptor: nothing to change.
        assert_eq!(mode_select_block_length(false, &[0, 0, 0, 0]), Ok(None));
        // An odd length, a long descriptor, a short list.
        assert_eq!(
            mode_select_block_length(false, &select6(1000)),
            Err(INVALID_PARAMETER)
        );
        assert_eq!(
            mode_select_block_length(false, &[0, 0, 0, 16, 0, 0, 0, 0]),
            Err(INVALID_PARAMETER)
        );
        assert_eq!(
            mode_select_block_length(false, &[0, 0, 0, 8, 0]),
            Err(Sense::PARAMETER_LIST_LENGTH)
        );
    }

    #[test]
    fn format_unit_without_protection_only_and_immed_when_asked() {
        assert_eq!(check_format_unit(&[0x04, 0, 0, 0, 0, 0], &[]), Ok(false));
        assert_eq!(
            check_format_unit(&[0x04, 0x40, 0, 0, 0, 0], &[]),
            Err(Sense::INVALID_FIELD_IN_CDB)
        );
        assert_eq!(
            check_format_unit(&[0x04, 0x10, 0, 0, 0, 0], &[0, 0, 0, 0]),
            Ok(false)
        );
        assert_eq!(
            check_format_unit(&[0x04, 0x10, 0, 0, 0, 0], &[0, 0x02, 0, 0]),
            Ok(true),
            "IMMED"
        );
        assert_eq!(
            check_format_unit(&[0x04, 0x10, 0, 0, 0, 0], &[0x01, 0, 0, 0]),
            Err(INVALID_PARAMETER),
            "protection field usage"
        );
        assert_eq!(
            check_format_unit(&[0x04, 0x10, 0, 0, 0, 0], &[]),
            Err(Sense::PARAMETER_LIST_LENGTH)
        );
    }
}
