//! Faults on command: what the emulated drive does wrong, from the
//! command line (`--fault LINE`) and from a control file re-read whenever
//! it changes (its lines replace the file's previous ones; the command
//! line's stay), so a test can break a drive between two commands.
//!
//! One fault a line; blank lines and `#` comments are ignored:
//! - `sanitize-fail`: the next sanitize (ATA SANITIZE or SCSI SANITIZE)
//!   stops half way and fails; media access is refused until the failure
//!   is cleared (ATA: SANITIZE STATUS EXT with CLEAR; SCSI: EXIT FAILURE
//!   MODE after a sanitize with AUSE).
//! - `hang scsi OPCODE`: CDBs with that operation code (hex) are taken and
//!   never answered; the kernel's command timer ends them.
//! - `hang ata COMMAND`: ATA PASS-THROUGH carrying that ATA command (hex)
//!   likewise.
//! - `freeze`: no command is answered at all.

use crate::sat::PassThrough;

/// The faults in force.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    /// The next sanitize fails half way.
    pub sanitize_fail: bool,
    /// SCSI operation codes never answered.
    pub hang_scsi: Vec<u8>,
    /// ATA commands (through ATA PASS-THROUGH) never answered.
    pub hang_ata: Vec<u8>,
    /// Nothing is answered.
    pub freeze: bool,
}

fn hex(word: &str) -> Result<u8, String> {
    let h = word.trim_start_matches("0x").trim_start_matches("0X");
    u8::from_str_radix(h, 16).map_err(|_| format!("{word:?}: give it in hex, e.g. 85"))
}

impl Faults {
    /// Add the fault `line` names.
    pub fn add(&mut self, line: &str) -> Result<(), String> {
        let line = line.split('#').next().unwrap_or("").trim();
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            ["sanitize-fail"] => self.sanitize_fail = true,
            ["freeze"] => self.freeze = true,
            ["hang", "scsi", op] => self.hang_scsi.push(hex(op)?),
            ["hang", "ata", op] => self.hang_ata.push(hex(op)?),
            _ => {
                return Err(format!(
                    "fault {line:?}: the faults are sanitize-fail, freeze, hang scsi OPCODE, hang ata COMMAND"
                ))
            }
        }
        Ok(())
    }

    /// A control file's text, line by line; the first bad line is the error.
    pub fn parse(text: &str) -> Result<Faults, String> {
        let mut f = Faults::default();
        text.lines().try_for_each(|l| f.add(l))?;
        Ok(f)
    }

    /// These faults and `other`'s together.
    pub fn with(&self, other: &Faults) -> Faults {
        Faults {
            sanitize_fail: self.sanitize_fail || other.sanitize_fail,
            hang_scsi: [self.hang_scsi.as_slice(), &other.hang_scsi].concat(),
            hang_ata: [self.hang_ata.as_slice(), &other.hang_ata].concat(),
            freeze: self.freeze || other.freeze,
        }
    }

    /// Whether the command `cdb` is never answered.
    pub fn hangs(&self, cdb: &[u8]) -> bool {
        let Some(&op) = cdb.first() else {
            return self.freeze;
        };
        self.freeze
            || self.hang_scsi.contains(&op)
            || PassThrough::parse(cdb).is_ok_and(|p| self.hang_ata.contains(&p.tf.command))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_name_the_commands_that_hang() {
        let f =
            Faults::parse("# faults\nsanitize-fail\nhang scsi 0x48\nhang ata B4  # sanitize\n\n")
                .expect("parses");
        assert!(f.sanitize_fail && !f.freeze);
        let sanitize_status = [
            0x85, 0x07, 0x2C, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0xB4, 0,
        ];
        let identify = [0x85, 0x08, 0x0E, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xEC, 0];
        assert!(f.hangs(&sanitize_status));
        assert!(!f.hangs(&identify));
        assert!(f.hangs(&[0x48, 0x82, 0, 0, 0, 0, 0, 0, 0, 0]));
        assert!(!f.hangs(&[0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0]));
        let z = Faults::parse("freeze").expect("parses");
        assert!(z.hangs(&[0x00, 0, 0, 0, 0, 0]));
        for bad in ["hang nvme 84", "hang scsi zz", "explode"] {
            assert!(Faults::parse(bad).is_err(), "{bad}");
        }
        let both = f.with(&z);
        assert!(both.freeze && both.sanitize_fail && both.hang_ata == vec![0xB4]);
    }
}
