//! The logs an ATA host reads and writes (ACS-3 9, A.1): through SMART
//! READ LOG / WRITE LOG (B0h/D5h, D6h; LBA 7:0 the log address, COUNT the
//! pages) and the General Purpose Logging commands READ LOG EXT / WRITE
//! LOG EXT (2Fh, 3Fh, and their DMA forms 47h, 57h; LBA 7:0 the address,
//! LBA 15:8 and 47:32 the page). Each set has its directory (log 00h: a
//! version word, then word N the pages of log N): SMART has the summary
//! and comprehensive error logs (01h, 02h, [`super::errlog`]) and the
//! self-test log (06h), GPL the extended comprehensive error log (03h) and
//! the extended self-test log (07h), both the Device Statistics log (04h,
//! [`super::devstats`]) and the SCT logs (E0h command and status, E1h
//! data, [`super::sct`]). A read may take several pages of a log from any
//! page within it. SMART EXECUTE OFF-LINE IMMEDIATE (D4h) is here too,
//! since its results are these logs.

use std::time::Instant;

use super::device::Ata;
use super::outcome::Outcome;
use super::regs::Regs;
use super::sct::log as sct_log;
use super::selftest::Kind;

/// Log addresses.
mod address {
    pub const SUMMARY_ERROR: u8 = 0x01;
    pub const COMPREHENSIVE_ERROR: u8 = 0x02;
    pub const EXT_COMPREHENSIVE_ERROR: u8 = 0x03;
    pub const DEVICE_STATISTICS: u8 = 0x04;
    pub const SELF_TEST: u8 = 0x06;
    pub const EXT_SELF_TEST: u8 = 0x07;
}

/// The device statistics log's pages.
const DEVSTAT_PAGES: u16 = super::devstats::PAGES.len() as u16;

/// The SMART logs: (address, pages).
const SMART_LOGS: &[(u8, u16)] = &[
    (address::SUMMARY_ERROR, 1),
    (address::COMPREHENSIVE_ERROR, 1),
    (address::DEVICE_STATISTICS, DEVSTAT_PAGES),
    (address::SELF_TEST, 1),
    (sct_log::COMMAND, 1),
    (sct_log::DATA, 1),
];
/// The GPL logs: (address, pages).
const GPL_LOGS: &[(u8, u16)] = &[
    (address::EXT_COMPREHENSIVE_ERROR, 1),
    (address::DEVICE_STATISTICS, DEVSTAT_PAGES),
    (address::EXT_SELF_TEST, 1),
    (sct_log::COMMAND, 1),
    (sct_log::DATA, 1),
];

/// A log directory (log 00h) listing `logs` with their pages.
fn directory(logs: &[(u8, u16)]) -> Vec<u8> {
    let mut d = vec![0u8; 512];
    d[0..2].copy_from_slice(&1u16.to_le_bytes());
    for &(l, pages) in logs {
        d[2 * usize::from(l)..2 * usize::from(l) + 2].copy_from_slice(&pages.to_le_bytes());
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
    pub fn hours(&self) -> u16 {
        u16::try_from(self.smart.power_on_hours).unwrap_or(u16::MAX)
    }

    /// A log read: `gpl` for READ LOG EXT (else SMART READ LOG), its
    /// pages from the one asked for; aborted for a log the set lacks or
    /// pages beyond its end.
    pub(super) fn read_log(&mut self, tf: &Regs, gpl: bool) -> Outcome {
        let (address, page, count) = log_fields(tf, gpl);
        let known = if gpl { GPL_LOGS } else { SMART_LOGS };
        let pages = match address {
            0x00 => 1,
            a => match known.iter().find(|(l, _)| *l == a) {
                Some((_, n)) => *n,
                None => return Outcome::abort(),
            },
        };
        if count == 0 || u32::from(page) + u32::from(count) > u32::from(pages) {
            return Outcome::abort();
        }
        let mut d = Vec::with_capacity(512 * usize::from(count));
        for p in page..page + count {
            match self.log_page(address, p, known) {
                Some(data) => d.extend_from_slice(&data),
                None => return Outcome::abort(),
            }
        }
        Outcome::data(d)
    }

    /// Page `page` of log `address` of the set `known`.
    fn log_page(&mut self, address: u8, page: u16, known: &[(u8, u16)]) -> Option<Vec<u8>> {
        Some(match address {
            0x00 => directory(known),
            address::SUMMARY_ERROR | address::COMPREHENSIVE_ERROR => self.errors.smart_log(),
            address::EXT_COMPREHENSIVE_ERROR => self.errors.extended_log(),
            address::DEVICE_STATISTICS => {
                super::devstats::page(u8::try_from(page).ok()?, &self.statistics())?
            }
            address::SELF_TEST => self.selftest.smart_log(),
            address::EXT_SELF_TEST => self.selftest.extended_log(),
            sct_log::COMMAND => self.sct.status(self.smart.temperature_c),
            // The data log returns the table a Data Tables command asked for.
            sct_log::DATA => {
                let minutes = self.powered_on.elapsed().as_secs() / 60;
                self.sct.read_table(self.smart.temperature_c, minutes)?
            }
            _ => return None,
        })
    }

    /// The General Statistics of the Device Statistics log, now.
    pub fn statistics(&self) -> super::devstats::General {
        let s = &self.smart;
        super::devstats::General {
            power_on_resets: s.power_cycles,
            power_on_hours: s.power_on_hours,
            sectors_written: s.lbas_written,
            write_commands: s.write_commands,
            sectors_read: s.lbas_read,
            read_commands: s.read_commands,
            timestamp_ms: self.powered_on.elapsed().as_millis() as u64,
        }
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
        // The error logs: 01h and 02h SMART's, 03h GPL's; 04h (two
        // pages) both.
        assert_eq!(
            (smart.data_in[2], smart.data_in[4], smart.data_in[6]),
            (1, 1, 0)
        );
        assert_eq!((gpl.data_in[2], gpl.data_in[4], gpl.data_in[6]), (0, 0, 1));
        assert_eq!((smart.data_in[8], gpl.data_in[8]), (2, 2));
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
        // Both pages of log 04h at once, or page 1 alone (GPL); not three.
        let both = a.execute(&regs(smart_read_log(0x04, 2)), false, &[]);
        assert_eq!(
            (both.data_in.len(), both.data_in[2], both.data_in[512 + 2]),
            (1024, 0, 1)
        );
        let p1 = a.execute(&regs(Taskfile::new(0x2F).count(1).lba(0x0104)), true, &[]);
        assert_eq!(p1.data_in[2], 1);
        assert!(a
            .execute(&regs(Taskfile::new(0x2F).count(2).lba(0x0104)), true, &[])
            .failed());
    }

    #[test]
    fn the_temperature_history_through_the_sct_logs() {
        let mut a = Ata::new("M", "S", "F", 1000);
        // Log E1h holds nothing before a Data Tables command.
        assert!(a
            .execute(&regs(smart_read_log(0xE1, 1)), false, &[])
            .failed());
        let mut key = vec![0u8; 512];
        key[0] = 5; // Data Tables
        key[2] = 1; // read table
        key[4] = 2; // temperature history
        let o = a.execute(&regs(smart_write_log(0xE0, 1)), false, &key);
        assert!(!o.failed());
        let t = a
            .execute(&regs(smart_read_log(0xE1, 1)), false, &[])
            .data_in;
        assert_eq!((t[0], t[2], t[30], t[32]), (2, 1, 128, 0));
        assert_eq!((t[34], t[35]), (35, 0x80), "one sample since power-on");
        let st = a
            .execute(&regs(smart_read_log(0xE0, 1)), false, &[])
            .data_in;
        let st = drivelab_device::ata::SctStatus::parse(&st).expect("status");
        assert_eq!(
            (st.action_code, st.function_code, st.extended_status),
            (5, 1, 0)
        );
        // Another table: invalid table ID, nothing to read.
        key[4] = 3;
        let o = a.execute(&regs(Taskfile::new(0x3F).count(1).lba(0xE0)), true, &key);
        assert_eq!((o.failed(), o.regs.lba), (true, 0x0011));
        assert!(a
            .execute(&regs(Taskfile::new(0x2F).count(1).lba(0xE1)), true, &[])
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
