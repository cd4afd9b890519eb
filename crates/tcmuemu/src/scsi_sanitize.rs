//! SCSI SANITIZE (48h, SBC-4 5.30) for the SAS personality: overwrite
//! (with its parameter list: the pattern), block erase, cryptographic
//! erase and exit failure mode. The operation runs in the background like
//! ATA's ([`crate::ata::sanitize::Sanitize`] keeps its state): with IMMED
//! the command returns at once and the host polls REQUEST SENSE, which
//! answers NOT READY, SANITIZE IN PROGRESS (04h/1Bh) with the progress in
//! the sense-key-specific field (SBC-4 4.11.3).

use crate::ata::sanitize::Kind;
use crate::sense::Sense;

/// A decoded SANITIZE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Start a sanitize operation.
    Start {
        /// What.
        kind: Kind,
        /// IMMED: complete the command at once.
        immed: bool,
        /// AUSE: EXIT FAILURE MODE is allowed if it fails.
        ause: bool,
    },
    /// EXIT FAILURE MODE (1Fh).
    ExitFailureMode,
}

/// Decode SANITIZE and, for overwrite, its parameter list (SBC-4 5.30.2:
/// byte 0 INVERT, TEST, OVERWRITE COUNT; bytes 2-3 the pattern length;
/// the pattern from byte 4). The pattern becomes the 32-bit word the
/// medium is filled with (repeated; a pattern whose length is not 1, 2 or
/// 4 bytes is refused).
pub fn parse(cdb: &[u8], data_out: &[u8]) -> Result<Request, Sense> {
    if cdb.len() < 10 {
        return Err(Sense::INVALID_FIELD_IN_CDB);
    }
    let immed = cdb[1] & 0x80 != 0;
    let ause = cdb[1] & 0x20 != 0;
    let plen = usize::from(u16::from_be_bytes([cdb[7], cdb[8]]));
    let kind = match cdb[1] & 0x1F {
        0x01 => {
            let p = data_out.get(..plen).ok_or(Sense::PARAMETER_LIST_LENGTH)?;
            if p.len() < 5 || p[0] & 0x1F == 0 {
                return Err(Sense::new(crate::sense::key::ILLEGAL_REQUEST, 0x26, 0x00));
            }
            let n = usize::from(u16::from_be_bytes([p[2], p[3]]));
            let pat = p.get(4..4 + n).ok_or(Sense::PARAMETER_LIST_LENGTH)?;
            let word = match pat.len() {
                1 => u32::from_le_bytes([pat[0]; 4]),
                2 => u32::from_le_bytes([pat[0], pat[1], pat[0], pat[1]]),
                4 => u32::from_le_bytes([pat[0], pat[1], pat[2], pat[3]]),
                _ => return Err(Sense::new(crate::sense::key::ILLEGAL_REQUEST, 0x26, 0x00)),
            };
            Kind::Overwrite(word)
        }
        0x02 | 0x03 if plen != 0 => return Err(Sense::INVALID_FIELD_IN_CDB),
        0x02 => Kind::Block,
        0x03 => Kind::Crypto,
        0x1F => return Ok(Request::ExitFailureMode),
        _ => return Err(Sense::INVALID_FIELD_IN_CDB),
    };
    Ok(Request::Start { kind, immed, ause })
}

/// NOT READY, SANITIZE IN PROGRESS, with the progress (0..=65535).
pub fn in_progress(progress: u16) -> Sense {
    Sense::new(crate::sense::key::NOT_READY, 0x04, 0x1B).with_specific(progress)
}

/// MEDIUM ERROR, SANITIZE COMMAND FAILED (31h/03h).
pub const FAILED: Sense = Sense::new(crate::sense::key::MEDIUM_ERROR, 0x31, 0x03);

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::scsi::{Sanitize, SanitizeAction};

    #[test]
    fn drivelabs_sanitize_cdbs_decode() {
        let cases = [
            (
                Sanitize::new(SanitizeAction::BlockErase)
                    .immed(true)
                    .build(),
                Request::Start {
                    kind: Kind::Block,
                    immed: true,
                    ause: false,
                },
            ),
            (
                Sanitize::new(SanitizeAction::CryptoErase)
                    .ause(true)
                    .build(),
                Request::Start {
                    kind: Kind::Crypto,
                    immed: false,
                    ause: true,
                },
            ),
            (
                Sanitize::new(SanitizeAction::ExitFailureMode).build(),
                Request::ExitFailureMode,
            ),
        ];
        for (cdb, want) in cases {
            assert_eq!(parse(&cdb, &[]), Ok(want), "{cdb:02x?}");
        }
    }

    #[test]
    fn overwrite_takes_its_pattern_from_the_parameter_list() {
        let cdb = Sanitize::new(SanitizeAction::Overwrite)
            .immed(true)
            .param_len(8)
            .build();
        let list = [0x01, 0, 0, 4, 0xD4, 0xC3, 0xB2, 0xA1];
        assert_eq!(
            parse(&cdb, &list),
            Ok(Request::Start {
                kind: Kind::Overwrite(0xA1B2_C3D4),
                immed: true,
                ause: false,
            })
        );
        let one = [0x01, 0, 0, 1, 0x5A];
        let cdb1 = Sanitize::new(SanitizeAction::Overwrite)
            .param_len(5)
            .build();
        assert_eq!(
            parse(&cdb1, &one),
            Ok(Request::Start {
                kind: Kind::Overwrite(0x5A5A_5A5A),
                immed: false,
                ause: false,
            })
        );
        // Zero passes, a 3-byte pattern, a list shorter than said: refused.
        assert!(parse(&cdb, &[0x00, 0, 0, 4, 1, 2, 3, 4]).is_err());
        assert!(parse(&cdb, &[0x01, 0, 0, 3, 1, 2, 3, 0]).is_err());
        assert_eq!(
            parse(&cdb, &[0x01, 0, 0]),
            Err(Sense::PARAMETER_LIST_LENGTH)
        );
        // Block erase with a parameter list: invalid.
        let b = Sanitize::new(SanitizeAction::BlockErase)
            .param_len(4)
            .build();
        assert_eq!(parse(&b, &[0; 4]), Err(Sense::INVALID_FIELD_IN_CDB));
    }

    #[test]
    fn progress_travels_in_the_sense_key_specific_field() {
        let s = in_progress(0x8000).fixed();
        let parsed = drivelab_device::scsi::sense::Sense::parse(&s).expect("sense");
        assert_eq!((parsed.key, parsed.asc, parsed.ascq), (2, 0x04, 0x1B));
        assert_eq!(&s[15..18], &[0x80, 0x80, 0x00]);
    }
}
