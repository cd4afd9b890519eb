//! SCSI SANITIZE (48h, SBC-4 5.30) as a host runs it: which service actions
//! the device says it supports (REPORT SUPPORTED OPERATION CODES), the
//! overwrite parameter list, sending the command with IMMED through a
//! claimed SG_IO handle, and reading its state back with REQUEST SENSE
//! (NOT READY, SANITIZE IN PROGRESS with the progress indication; MEDIUM
//! ERROR, SANITIZE COMMAND FAILED). The CDB builder itself is
//! [`super::Sanitize`].

use serde::Serialize;

use crate::scsi::bytes::put_u16;
use crate::scsi::cdb::opcode;
use crate::scsi::sense::{sense_key, Sense};
use crate::scsi::sg::{ScsiCommand, SgDevice, SgError};
use crate::scsi::{report_opcode, OpcodeSupport, Sanitize, SanitizeAction};

/// REQUEST SENSE (03h, SPC-5 6.39).
#[derive(Debug, Clone, Copy)]
pub struct RequestSense {
    alloc_len: u8,
    desc: bool,
}

impl RequestSense {
    /// REQUEST SENSE for up to `alloc_len` bytes, fixed format.
    pub fn new(alloc_len: u8) -> Self {
        RequestSense {
            alloc_len,
            desc: false,
        }
    }
    /// DESC (byte 1 bit 0): ask for descriptor-format sense.
    pub fn desc(mut self, on: bool) -> Self {
        self.desc = on;
        self
    }
    /// The 6-byte CDB: byte 1 bit 0 DESC, byte 4 allocation length.
    pub fn build(self) -> [u8; 6] {
        [
            opcode::REQUEST_SENSE,
            u8::from(self.desc),
            0,
            0,
            self.alloc_len,
            0,
        ]
    }
}

/// The SANITIZE OVERWRITE parameter list (SBC-4 5.30.3): byte 0 INVERT
/// (bit 7), TEST (bits 6:5), OVERWRITE COUNT (bits 4:0); bytes 2-3 the
/// INITIALIZATION PATTERN LENGTH; the pattern from byte 4.
#[derive(Debug, Clone)]
pub struct OverwriteParameters {
    pattern: Vec<u8>,
    count: u8,
    invert: bool,
}

impl OverwriteParameters {
    /// One overwrite pass with `pattern` (1 to a logical block's length
    /// of bytes, which the device repeats over each block).
    pub fn new(pattern: &[u8]) -> Self {
        OverwriteParameters {
            pattern: pattern.to_vec(),
            count: 1,
            invert: false,
        }
    }
    /// OVERWRITE COUNT, 1 to 31 passes (clamped to that range).
    pub fn count(mut self, passes: u8) -> Self {
        self.count = passes.clamp(1, 31);
        self
    }
    /// INVERT: invert the pattern between passes.
    pub fn invert(mut self, on: bool) -> Self {
        self.invert = on;
        self
    }
    /// The parameter list bytes; `None` for an empty pattern or one longer
    /// than the 16-bit length field holds.
    pub fn build(&self) -> Option<Vec<u8>> {
        let len = u16::try_from(self.pattern.len()).ok().filter(|&l| l > 0)?;
        let mut p = vec![0u8; 4 + self.pattern.len()];
        p[0] = (u8::from(self.invert) << 7) | (self.count & 0x1F);
        put_u16(&mut p, 2, len);
        p[4..].copy_from_slice(&self.pattern);
        Some(p)
    }
}

/// What REQUEST SENSE says about a sanitize (SBC-4 4.11.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "state")]
pub enum SanitizeState {
    /// NOT READY, 04h/1Bh: running; `progress` of 65,536 done (0 when the
    /// device gives no progress indication).
    InProgress {
        /// The PROGRESS INDICATION field.
        progress: u16,
    },
    /// MEDIUM ERROR, 31h/03h: the sanitize failed; the medium stays
    /// unusable until a new sanitize succeeds (or EXIT FAILURE MODE).
    Failed,
    /// No sense to report (NO SENSE, or no sense data at all): no sanitize
    /// is running and none failed.
    Idle,
    /// UNIT ATTENTION (a reset, a changed capacity, ...), in words: reported
    /// once, so the state is to be asked again.
    Attention(String),
    /// Any other sense, in words.
    Other(String),
}

impl SanitizeState {
    /// Read the sanitize state from the sense REQUEST SENSE returned
    /// (`None`: the device returned no sense bytes).
    pub fn from_sense(sense: Option<&Sense>) -> SanitizeState {
        let Some(s) = sense else {
            return SanitizeState::Idle;
        };
        match (s.key, s.asc, s.ascq) {
            (sense_key::NOT_READY, 0x04, 0x1B) => SanitizeState::InProgress {
                progress: progress_indication(s).unwrap_or(0),
            },
            (sense_key::MEDIUM_ERROR, 0x31, 0x03) => SanitizeState::Failed,
            (sense_key::NO_SENSE, 0x00, 0x00) => SanitizeState::Idle,
            (sense_key::UNIT_ATTENTION, _, _) => SanitizeState::Attention(s.describe()),
            _ => SanitizeState::Other(s.describe()),
        }
    }
}

/// The PROGRESS INDICATION of the sense-key-specific field (SPC-5
/// 4.4.2.4.4; fixed format bytes 16-17, descriptor type 02h bytes 5-6),
/// when SKSV is set.
pub fn progress_indication(s: &Sense) -> Option<u16> {
    s.sense_key_specific
        .map(|sks| u16::from_be_bytes([sks[1], sks[2]]))
}

/// The SANITIZE service actions the device reports supported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SanitizeSupport {
    /// OVERWRITE (01h).
    pub overwrite: bool,
    /// BLOCK ERASE (02h).
    pub block: bool,
    /// CRYPTOGRAPHIC ERASE (03h).
    pub crypto: bool,
    /// EXIT FAILURE MODE (1Fh).
    pub exit_failure_mode: bool,
}

impl SanitizeSupport {
    /// Whether any erasing service action is supported.
    pub fn any(&self) -> bool {
        self.overwrite || self.block || self.crypto
    }
}

/// Ask the device, with REPORT SUPPORTED OPERATION CODES (reporting option
/// 2), which SANITIZE service actions it supports. A device that cannot
/// answer that is an error: support is never assumed.
pub fn sanitize_support(dev: &SgDevice) -> Result<SanitizeSupport, SgError> {
    let ask = |a: SanitizeAction| -> Result<bool, SgError> {
        report_opcode(dev, opcode::SANITIZE, Some(u16::from(a.code())))
            .map(OpcodeSupport::is_supported)
    };
    Ok(SanitizeSupport {
        overwrite: ask(SanitizeAction::Overwrite)?,
        block: ask(SanitizeAction::BlockErase)?,
        crypto: ask(SanitizeAction::CryptoErase)?,
        exit_failure_mode: ask(SanitizeAction::ExitFailureMode)?,
    })
}

/// Send SANITIZE with IMMED set (the device returns once it has checked
/// the CDB; [`sanitize_state`] follows it). `overwrite` is the parameter
/// list of an OVERWRITE and must be given for that action only. The handle
/// must be claimed for writing ([`SgDevice::execute`] refuses otherwise).
pub fn sanitize_immed(
    dev: &SgDevice,
    action: SanitizeAction,
    overwrite: Option<&OverwriteParameters>,
) -> Result<(), SgError> {
    let params = match (action, overwrite) {
        (SanitizeAction::Overwrite, Some(p)) => Some(p.build().ok_or_else(|| {
            SgError::InvalidRequest(
                "SANITIZE OVERWRITE needs a pattern of 1 to 65,535 bytes".into(),
            )
        })?),
        (SanitizeAction::Overwrite, None) => {
            return Err(SgError::InvalidRequest(
                "SANITIZE OVERWRITE needs its parameter list".into(),
            ))
        }
        (_, Some(_)) => {
            return Err(SgError::InvalidRequest(
                "only SANITIZE OVERWRITE takes a parameter list".into(),
            ))
        }
        (_, None) => None,
    };
    let len = params.as_ref().map_or(0, Vec::len);
    let param_len = u16::try_from(len).map_err(|_| {
        SgError::InvalidRequest("SANITIZE OVERWRITE parameter list too long".into())
    })?;
    let cdb = Sanitize::new(action)
        .immed(true)
        .param_len(param_len)
        .build();
    let mut c = ScsiCommand::new(&cdb);
    if let Some(p) = params.as_deref() {
        c = c.data_out(p);
    }
    let r = dev.execute(&mut c)?;
    r.check(&cdb)
}

/// REQUEST SENSE (descriptor format asked, whichever comes back is
/// decoded); `None` when the device returned no sense bytes.
pub fn request_sense(dev: &SgDevice) -> Result<Option<Sense>, SgError> {
    let mut buf = [0u8; 252];
    let cdb = RequestSense::new(252).desc(true).build();
    let r = dev.execute(&mut ScsiCommand::new(&cdb).data_in(&mut buf))?;
    r.check(&cdb)?;
    let got = r.transferred(buf.len());
    Ok(Sense::parse(&buf[..got]))
}

/// The device's sanitize state, by REQUEST SENSE.
pub fn sanitize_state(dev: &SgDevice) -> Result<SanitizeState, SgError> {
    request_sense(dev).map(|s| SanitizeState::from_sense(s.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_sense_cdb_bytes() {
        assert_eq!(RequestSense::new(252).build(), [0x03, 0, 0, 0, 252, 0]);
        assert_eq!(
            RequestSense::new(18).desc(true).build(),
            [0x03, 1, 0, 0, 18, 0]
        );
    }

    #[test]
    fn sanitize_cdb_bytes_per_action() {
        // (action, immed, ause, param_len, expected CDB)
        let table: [(SanitizeAction, bool, bool, u16, [u8; 10]); 4] = [
            (
                SanitizeAction::BlockErase,
                true,
                false,
                0,
                [0x48, 0x82, 0, 0, 0, 0, 0, 0, 0, 0],
            ),
            (
                SanitizeAction::CryptoErase,
                true,
                true,
                0,
                [0x48, 0xA3, 0, 0, 0, 0, 0, 0, 0, 0],
            ),
            (
                SanitizeAction::Overwrite,
                true,
                false,
                8,
                [0x48, 0x81, 0, 0, 0, 0, 0, 0x00, 0x08, 0],
            ),
            (
                SanitizeAction::ExitFailureMode,
                false,
                false,
                0,
                [0x48, 0x1F, 0, 0, 0, 0, 0, 0, 0, 0],
            ),
        ];
        for (action, immed, ause, len, want) in table {
            let got = Sanitize::new(action)
                .immed(immed)
                .ause(ause)
                .param_len(len)
                .build();
            assert_eq!(got, want, "{action:?}");
        }
    }

    #[test]
    fn overwrite_parameter_list_bytes() {
        let p = OverwriteParameters::new(&[0xDE, 0xAD, 0xBE, 0xEF])
            .count(3)
            .invert(true)
            .build();
        assert_eq!(p, Some(vec![0x83, 0, 0x00, 0x04, 0xDE, 0xAD, 0xBE, 0xEF]));
        assert_eq!(
            OverwriteParameters::new(&[0x00]).count(0).build(),
            Some(vec![0x01, 0, 0, 1, 0])
        );
        assert_eq!(
            OverwriteParameters::new(&[0x55])
                .count(200)
                .build()
                .map(|p| p[0]),
            Some(31)
        );
        assert_eq!(OverwriteParameters::new(&[]).build(), None);
    }

    #[test]
    fn rsoc_cdb_asks_each_sanitize_service_action() {
        use crate::scsi::ReportSupportedOpcode;
        let c = ReportSupportedOpcode::new(opcode::SANITIZE)
            .service_action(u16::from(SanitizeAction::CryptoErase.code()))
            .alloc_len(64)
            .build();
        assert_eq!(c, [0xA3, 0x0C, 0x02, 0x48, 0, 0x03, 0, 0, 0, 64, 0, 0]);
    }

    /// Fixed-format sense (SPC-5 4.4.3): key at byte 2, ASC/ASCQ at 12-13,
    /// SKSV and the sense-key-specific bytes at 15-17.
    fn fixed(key: u8, asc: u8, ascq: u8, sks: Option<u16>) -> Vec<u8> {
        let mut s = vec![0u8; 18];
        s[0] = 0x70;
        s[2] = key;
        s[7] = 10;
        s[12] = asc;
        s[13] = ascq;
        if let Some(p) = sks {
            s[15] = 0x80;
            s[16..18].copy_from_slice(&p.to_be_bytes());
        }
        s
    }

    /// Descriptor-format sense with a sense-key-specific descriptor (02h).
    fn descriptor(key: u8, asc: u8, ascq: u8, sks: Option<u16>) -> Vec<u8> {
        let mut s = vec![0x72, key, asc, ascq, 0, 0, 0, 0];
        if let Some(p) = sks {
            let [hi, lo] = p.to_be_bytes();
            s.extend_from_slice(&[0x02, 0x06, 0, 0, 0x80, hi, lo, 0]);
        }
        s[7] = (s.len() - 8) as u8;
        s
    }

    #[test]
    fn sanitize_state_from_sense_both_formats() {
        let table: [(u8, u8, u8, Option<u16>, SanitizeState); 7] = [
            (
                0x02,
                0x04,
                0x1B,
                Some(0x8000),
                SanitizeState::InProgress { progress: 0x8000 },
            ),
            (
                0x02,
                0x04,
                0x1B,
                Some(0xFFFF),
                SanitizeState::InProgress { progress: 0xFFFF },
            ),
            // No SKSV: running, progress unknown.
            (
                0x02,
                0x04,
                0x1B,
                None,
                SanitizeState::InProgress { progress: 0 },
            ),
            (0x03, 0x31, 0x03, None, SanitizeState::Failed),
            (
                0x06,
                0x29,
                0x00,
                None,
                SanitizeState::Attention(
                    "UNIT ATTENTION: power on, reset, or bus device reset occurred (asc 0x29 ascq 0x00)"
                        .into(),
                ),
            ),
            (0x00, 0x00, 0x00, None, SanitizeState::Idle),
            // A format in progress is not a sanitize.
            (
                0x02,
                0x04,
                0x04,
                Some(0x1000),
                SanitizeState::Other(
                    "NOT READY: logical unit not ready, format in progress (asc 0x04 ascq 0x04)"
                        .into(),
                ),
            ),
        ];
        for (key, asc, ascq, sks, want) in table {
            for bytes in [fixed(key, asc, ascq, sks), descriptor(key, asc, ascq, sks)] {
                let s = Sense::parse(&bytes);
                assert_eq!(
                    SanitizeState::from_sense(s.as_ref()),
                    want,
                    "sense {bytes:02x?}"
                );
            }
        }
        assert_eq!(SanitizeState::from_sense(None), SanitizeState::Idle);
    }

    #[test]
    fn progress_indication_reads_bytes_16_17_of_fixed_sense() {
        let s = Sense::parse(&fixed(0x02, 0x04, 0x1B, Some(0x1234)));
        assert_eq!(s.as_ref().and_then(progress_indication), Some(0x1234));
    }
}
