//! The logs an ATA host reads and writes (ACS-3 9, A.1): through SMART
//! READ LOG / WRITE LOG (B0h/D5h, D6h; LBA 7:0 the log address, COUNT the
//! pages) and the General Purpose Logging commands READ LOG EXT / WRITE
//! LOG EXT (2Fh, 3Fh, and their DMA forms 47h, 57h; LBA 7:0 the address,
//! LBA 15:8 and 47:32 the page). Each set has its directory (log 00h: a
//! version word, then word N the pages of log N): SMART has the self-test
//! log (06h), GPL the extended one (07h), both the SCT logs (E0h command
//! and status, E1h data, [`super::sct`]). SMART EXECUTE OFF-LINE
//! IMMEDIATE (D4h) is here too, since its results are these logs.

use std::time::Instant;

use super::device::Ata;
use super::outcome::Outcome;
use super::regs::Regs;
use super::sct::log as sct_log;
use super::selftest::Kind;

/// The SMART log addresses with one page each.
const SMART_LOGS: &[u8] = &[0x06, sct_log::COMMAND, sct_log::DATA];
/// The GPL log addresses with one page each.
const GPL_LOGS: &[u8] = &[0x07, sct_log::COMMAND, sct_log::DATA];

/// A log directory (log 00h) listing `logs`, one page each.
fn directory(logs: &[u8]) -> Vec<u8> {
    let mut d = vec![0u8; 512];
    d[0..2].copy_from_slice(&1u16.to_le_bytes());
    for &l in logs {
        d[2 * usize::from(l)] = 1;
    }
    d
}

/// SMART EXECUTE OFF-LINE IMMEDIATE subcommands (LBA 7:0).
mod sub {
    pub const OFFLINE: u8 = 0x00;
    pub const SHORT: u8 = 0x01;
    pub const EXTENDED: u8 = 0x02;
    pub const ABORT: u8 = 0x7F;
    pub const SHORT_CAPTIVE: u8 = 0x81;
    pub const EXTENDED_CAPTIVE: u8 = 0x82;
}

impl Ata {
    /// The power-on hours a log entry records.
    pub(super) fn hours(&self) -> u16 {
        u16::try_from(self.smart.power_on_hours).unwrap_or(u16::MAX)
    }

    /// A log page read: `gpl` for READ LOG EXT (else SMART READ LOG).
    pub(super) fn read_log(&mut self, tf: &Regs, gpl: bool) -> Outcome {
        let (address, page, count) = log_fields(tf, gpl);
        let known = if gpl { GPL_LOGS } else { SMART_LOGS };
        if count != 1 || page != 0 || (address != 0 && !known.contains(&address)) {
            return Outcome::abort();
        }
        let d = match address {
            0x00 => directory(known),
            0x06 => self.selftest.smart_log(),
            0x07 => self.selftest.extended_log(),
            sct_log::COMMAND => self.sct.status(self.smart.temperature_c),
            // The data log is written, not read.
            _ => return Outcome::abort(),
        };
        Outcome::data(d)
    }

    /// A log page written: `gpl` for WRITE LOG EXT (else SMART WRITE
    /// LOG). Only the SCT logs take writes.
    pub(super) fn write_log(&mut self, tf: &Regs, gpl: bool, data: &[u8]) -> Outcome {
        let (address, page, count) = log_fields(tf, gpl);
        if count == 0 || page != 0 {
            return Outcome::abort();
        }
        let locked = self.security.locked;
        match address {
            sct_log::COMMAND if count == 1 => self.sct.command(data, self.max_blocks, locked),
            sct_log::DATA => self.sct.data(data, 512),
            _ => Outcome::abort(),
        }
    }

    /// SMART EXECUTE OFF-LINE IMMEDIATE (ACS-3 7.48.4).
    pub(super) fn execute_offline(&mut self, tf: &Regs) -> Outcome {
        let now = Instant::now();
        let hours = self.hours();
        let st = &mut self.selftest;
        let started = match (tf.lba & 0xFF) as u8 {
            sub::OFFLINE => {
                st.offline_done = true;
                true
            }
            sub::SHORT => st.start(Kind::Short, now),
            sub::EXTENDED => st.start(Kind::Extended, now),
            sub::ABORT => {
                st.abort(hours);
                true
            }
            c @ (sub::SHORT_CAPTIVE | sub::EXTENDED_CAPTIVE) => {
                let k = if c == sub::SHORT_CAPTIVE {
                    Kind::Short
                } else {
                    Kind::Extended
                };
                // Captive: the command ends with the test.
                if st.start(k, now) {
                    let d = st.duration(k);
                    std::thread::sleep(d);
                    st.advance(now + d, hours);
                    true
                } else {
                    false
                }
            }
            _ => false,
        };
        if !started {
            return Outcome::abort();
        }
        Outcome::ok(Regs {
            lba: super::smart::SIGNATURE,
            ..Regs::default()
        })
    }
}

/// (log address, page, pages) of a log command.
fn log_fields(tf: &Regs, gpl: bool) -> (u8, u16, u16) {
    let address = (tf.lba & 0xFF) as u8;
    if gpl {
        let page = ((tf.lba >> 8) & 0xFF) | (((tf.lba >> 32) & 0xFF) << 8);
        (address, page as u16, tf.count)
    } else {
        (address, 0, tf.count & 0xFF)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::ata::{smart_read_log, smart_write_log, SctWriteSame, Taskfile};
    use drivelab_device::units::{BlockCount, Lba};

    fn regs(t: Taskfile) -> Regs {
        Regs::from(t)
    }

    #[test]
    fn the_directories_list_the_logs_each_set_has() {
        let mut a = Ata::new("M", "S", "F", 1000);
        let smart = a.execute(&regs(smart_read_log(0x00, 1)), false, &[]);
        assert_eq!((smart.data_in[0], smart.data_in[12]), (1, 1), "06h");
        assert_eq!(smart.data_in[14], 0, "no 07h in SMART's");
        assert_eq!(smart.data_in[2 * 0xE0], 1);
        let gpl = a.execute(&regs(Taskfile::new(0x2F).count(1)), true, &[]);
        assert_eq!((gpl.data_in[12], gpl.data_in[14]), (0, 1));
        // Log 06h is SMART's only, 07h GPL's; two pages of a one-page log.
        assert!(a
            .execute(&regs(smart_read_log(0x07, 1)), false, &[])
            .failed());
        assert!(a
            .execute(&regs(Taskfile::new(0x2F).count(1).lba(0x06)), true, &[])
            .failed());
        assert!(a
            .execute(&regs(smart_read_log(0x06, 2)), false, &[])
            .failed());
    }

    #[test]
    fn sct_write_same_through_either_log_command_and_its_status() {
        let mut a = Ata::new("M", "S", "F", 1000);
        let key = SctWriteSame::new(
            drivelab_device::ata::SctWriteSameFunction::PatternForeground,
            Lba(10),
            BlockCount(5),
        )
        .pattern(0x1234_5678)
        .build();
        let o = a.execute(&regs(smart_write_log(0xE0, 1)), false, &key);
        assert!(!o.failed() && o.medium.is_some());
        let o = a.execute(&regs(Taskfile::new(0x3F).count(1).lba(0xE0)), true, &key);
        assert!(!o.failed() && o.medium.is_some());
        let st = a.execute(&regs(smart_read_log(0xE0, 1)), false, &[]);
        let st = drivelab_device::ata::SctStatus::parse(&st.data_in).expect("status");
        assert_eq!((st.action_code, st.current_lba), (2, 15));
        assert_eq!(a.sct.write_same.len(), 2);
        assert_eq!(a.log.iter().filter(|c| *c == "SMART WRITE LOG").count(), 1);
    }
}
