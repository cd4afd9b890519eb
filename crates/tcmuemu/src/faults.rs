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
//! - `sanitize-stall`: the next sanitize (started with IMMED, as it is
//!   polled) stops at half way and stays there: SANITIZE STATUS EXT and
//!   REQUEST SENSE report it in progress at 50 % for as long as the
//!   emulator runs, media access is refused, nothing is erased.
//! - `hang scsi OPCODE`: CDBs with that operation code (hex) are taken and
//!   never answered; the kernel's command timer ends them.
//! - `hang ata COMMAND`: ATA PASS-THROUGH carrying that ATA command (hex)
//!   likewise.
//! - `freeze`: no command is answered at all.
//! - `delay scsi OPCODE SECONDS` and `delay ata COMMAND SECONDS`: those
//!   commands are carried out and answered SECONDS later; the drive
//!   answers nothing else meanwhile, as a drive busy with a long command.
//! - `erase-fail`: the next SECURITY ERASE UNIT stops half way (half the
//!   medium erased) and is aborted; the drive keeps the password and is
//!   left locked, as after an erase cut short, so the host must UNLOCK
//!   before it can DISABLE PASSWORD.

use std::time::Duration;

use crate::sat::PassThrough;

/// The faults in force.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    /// The next sanitize fails half way.
    pub sanitize_fail: bool,
    /// The next sanitize stalls half way.
    pub sanitize_stall: bool,
    /// SCSI operation codes never answered.
    pub hang_scsi: Vec<u8>,
    /// ATA commands (through ATA PASS-THROUGH) never answered.
    pub hang_ata: Vec<u8>,
    /// Nothing is answered.
    pub freeze: bool,
    /// SCSI operation codes answered late, with the delay in seconds.
    pub delay_scsi: Vec<(u8, u64)>,
    /// ATA commands (through ATA PASS-THROUGH) answered late, seconds.
    pub delay_ata: Vec<(u8, u64)>,
    /// The next SECURITY ERASE UNIT fails half way.
    pub erase_fail: bool,
}

fn seconds(word: &str) -> Result<u64, String> {
    word.parse()
        .map_err(|_| format!("{word:?}: give the delay in whole seconds, e.g. 8"))
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
            ["sanitize-stall"] => self.sanitize_stall = true,
            ["freeze"] => self.freeze = true,
            ["hang", "scsi", op] => self.hang_scsi.push(hex(op)?),
            ["hang", "ata", op] => self.hang_ata.push(hex(op)?),
            ["erase-fail"] => self.erase_fail = true,
            ["delay", "scsi", op, s] => self.delay_scsi.push((hex(op)?, seconds(s)?)),
            ["delay", "ata", op, s] => self.delay_ata.push((hex(op)?, seconds(s)?)),
            _ => {
                return Err(format!(
                    "fault {line:?}: the faults are sanitize-fail, sanitize-stall, erase-fail, freeze, hang scsi OPCODE, hang ata COMMAND, delay scsi OPCODE SECONDS, delay ata COMMAND SECONDS"
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
            sanitize_stall: self.sanitize_stall || other.sanitize_stall,
            hang_scsi: [self.hang_scsi.as_slice(), &other.hang_scsi].concat(),
            hang_ata: [self.hang_ata.as_slice(), &other.hang_ata].concat(),
            freeze: self.freeze || other.freeze,
            delay_scsi: [self.delay_scsi.as_slice(), &other.delay_scsi].concat(),
            delay_ata: [self.delay_ata.as_slice(), &other.delay_ata].concat(),
            erase_fail: self.erase_fail || other.erase_fail,
        }
    }

    /// How long the answer to `cdb` is held, when a fault delays it (the
    /// longest of the delays that name it).
    pub fn delay(&self, cdb: &[u8]) -> Option<Duration> {
        let op = *cdb.first()?;
        let ata = PassThrough::parse(cdb).ok().map(|p| p.tf.command);
        let scsi = self.delay_scsi.iter().filter(|(o, _)| *o == op);
        let ata = self.delay_ata.iter().filter(|(c, _)| Some(*c) == ata);
        scsi.chain(ata)
            .map(|(_, s)| *s)
            .max()
            .map(Duration::from_secs)
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
        for bad in [
            "hang nvme 84",
            "hang scsi zz",
            "explode",
            "delay ata F3",
            "delay ata F3 soon",
            "delay nvme 84 5",
        ] {
            assert!(Faults::parse(bad).is_err(), "{bad}");
        }
        let both = f.with(&z);
        assert!(both.freeze && both.sanitize_fail && both.hang_ata == vec![0xB4]);
    }

    #[test]
    fn delays_name_their_commands_and_erase_fail_parses() {
        let f = Faults::parse("delay ata F3 8\ndelay scsi 0x28 2\ndelay ata f3 3\nerase-fail")
            .expect("parses");
        assert!(f.erase_fail && !f.freeze && !f.sanitize_stall && f.hang_ata.is_empty());
        let stall = Faults::parse("sanitize-stall").expect("parses");
        assert!(stall.sanitize_stall && !stall.sanitize_fail);
        assert!(Faults::default().with(&stall).sanitize_stall);
        // SECURITY ERASE PREPARE (F3h), non-data, through ATA PASS-THROUGH(16).
        let prepare = [0x85, 0x06, 0x24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xF3, 0];
        let identify = [0x85, 0x08, 0x0E, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xEC, 0];
        assert_eq!(f.delay(&prepare), Some(Duration::from_secs(8)));
        assert_eq!(f.delay(&identify), None);
        assert_eq!(
            f.delay(&[0x28, 0, 0, 0, 0, 0, 0, 0, 1, 0]),
            Some(Duration::from_secs(2))
        );
        assert!(!f.hangs(&prepare));
        let both = Faults::default().with(&f);
        assert_eq!(both.delay(&prepare), Some(Duration::from_secs(8)));
        assert!(both.erase_fail);
    }
}
