//! SCSI status and sense data as the emulated drive returns them (SPC-5
//! 4.4: fixed format 70h; the control mode page's D_SENSE is 0).

/// SCSI status GOOD.
pub const GOOD: u8 = 0x00;
/// SCSI status CHECK CONDITION.
pub const CHECK_CONDITION: u8 = 0x02;

/// Sense keys (SPC-5 table 51).
pub mod key {
    /// NO SENSE.
    pub const NO_SENSE: u8 = 0x0;
    /// NOT READY.
    pub const NOT_READY: u8 = 0x2;
    /// MEDIUM ERROR.
    pub const MEDIUM_ERROR: u8 = 0x3;
    /// ILLEGAL REQUEST.
    pub const ILLEGAL_REQUEST: u8 = 0x5;
    /// DATA PROTECT.
    pub const DATA_PROTECT: u8 = 0x7;
}

/// One sense condition: key, additional sense code and qualifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sense {
    /// The sense key.
    pub key: u8,
    /// ASC.
    pub asc: u8,
    /// ASCQ.
    pub ascq: u8,
    /// The SKSV field (bytes 15-17), e.g. a progress indication.
    pub specific: Option<u16>,
}

impl Sense {
    /// A condition with no sense-key-specific field.
    pub const fn new(key: u8, asc: u8, ascq: u8) -> Sense {
        Sense {
            key,
            asc,
            ascq,
            specific: None,
        }
    }

    /// INVALID COMMAND OPERATION CODE (20h/00h).
    pub const INVALID_OPCODE: Sense = Sense::new(key::ILLEGAL_REQUEST, 0x20, 0x00);
    /// LOGICAL BLOCK ADDRESS OUT OF RANGE (21h/00h).
    pub const LBA_OUT_OF_RANGE: Sense = Sense::new(key::ILLEGAL_REQUEST, 0x21, 0x00);
    /// INVALID FIELD IN CDB (24h/00h).
    pub const INVALID_FIELD_IN_CDB: Sense = Sense::new(key::ILLEGAL_REQUEST, 0x24, 0x00);
    /// PARAMETER LIST LENGTH ERROR (1Ah/00h).
    pub const PARAMETER_LIST_LENGTH: Sense = Sense::new(key::ILLEGAL_REQUEST, 0x1A, 0x00);
    /// UNRECOVERED READ ERROR (11h/00h), for a backing file that fails.
    pub const READ_ERROR: Sense = Sense::new(key::MEDIUM_ERROR, 0x11, 0x00);
    /// WRITE ERROR (0Ch/00h), for a backing file that fails.
    pub const WRITE_ERROR: Sense = Sense::new(key::MEDIUM_ERROR, 0x0C, 0x00);
    /// NO ADDITIONAL SENSE INFORMATION.
    pub const NONE: Sense = Sense::new(key::NO_SENSE, 0x00, 0x00);

    /// With a sense-key-specific field (SKSV set).
    pub const fn with_specific(mut self, v: u16) -> Sense {
        self.specific = Some(v);
        self
    }

    /// Fixed-format sense data (18 bytes, response code 70h: current).
    pub fn fixed(&self) -> [u8; 18] {
        let mut s = [0u8; 18];
        s[0] = 0x70;
        s[2] = self.key & 0x0F;
        s[7] = 10; // additional sense length: bytes 8..18
        s[12] = self.asc;
        s[13] = self.ascq;
        if let Some(v) = self.specific {
            s[15] = 0x80;
            s[16..18].copy_from_slice(&v.to_be_bytes());
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_sense_places_key_codes_and_specific_field() {
        let cases: &[(Sense, [u8; 18])] = &[
            (
                Sense::INVALID_OPCODE,
                [
                    0x70, 0, 0x05, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x20, 0x00, 0, 0, 0, 0,
                ],
            ),
            (
                Sense::new(key::NOT_READY, 0x04, 0x1B).with_specific(0x8000),
                [
                    0x70, 0, 0x02, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x04, 0x1B, 0, 0x80, 0x80, 0x00,
                ],
            ),
        ];
        for (s, want) in cases {
            assert_eq!(&s.fixed(), want, "{s:?}");
        }
    }
}
