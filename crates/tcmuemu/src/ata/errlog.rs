//! The SMART error logs (ACS-3 A.4, A.6, A.11): every ATA command that
//! ends in an error (an aborted command, a read of a sector the drive
//! cannot recover, an address past the max) becomes an error log data
//! structure, with the command that failed and the four before it, the
//! registers the drive returned, its state and the power-on hours. The
//! drive keeps them as real drives do, in three layouts: the Summary SMART
//! error log (SMART log 01h: the newest five, 28-bit registers), the
//! Comprehensive SMART error log (SMART log 02h, one page: the same
//! layout), and the Extended Comprehensive SMART error log (GPL log 03h,
//! one page: the newest four, 48-bit registers). The device error count
//! counts every error since the drive was made.

use super::regs::Regs;
use super::selftest::checksum;

/// Commands each error keeps: the failing one and the four before it.
const COMMANDS: usize = 5;
/// Errors the drive keeps (more than any log shows).
const KEPT: usize = 8;
/// The error data structure's state: active or idle (ACS-3 table "State
/// field values", x3h).
const STATE_ACTIVE: u8 = 0x03;

/// A command as the error log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Command {
    /// Its registers.
    pub regs: Regs,
    /// Milliseconds since power-on when it was received.
    pub timestamp_ms: u32,
}

/// One logged error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The failing command last, up to four before it, oldest first.
    pub commands: Vec<Command>,
    /// The registers returned (`command` is STATUS).
    pub regs: Regs,
    /// ERROR.
    pub error: u8,
    /// Power-on hours when it happened.
    pub hours: u16,
}

/// The errors and the commands that led to them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorLog {
    /// The commands received lately, oldest first (at most five).
    recent: Vec<Command>,
    /// The newest errors, oldest first (at most [`KEPT`]).
    pub errors: Vec<Error>,
    /// Errors since the drive was made (the logs' device error count).
    pub count: u32,
}

impl ErrorLog {
    /// Note a command the drive received.
    pub fn command(&mut self, c: Command) {
        if self.recent.len() == COMMANDS {
            self.recent.remove(0);
        }
        self.recent.push(c);
    }

    /// Log an error: `regs` and `error` as returned for the last command
    /// noted, at `hours`.
    pub fn error(&mut self, regs: Regs, error: u8, hours: u16) {
        if self.errors.len() == KEPT {
            self.errors.remove(0);
        }
        self.errors.push(Error {
            commands: self.recent.clone(),
            regs,
            error,
            hours,
        });
        self.count = self.count.saturating_add(1);
    }

    /// The newest `n` errors, placed in a ring of `n` slots as the drive
    /// would have written them (error number k in slot k mod n), and the
    /// index (1-based) of the newest; 0 when there is none.
    fn ring(&self, n: usize) -> (Vec<Option<&Error>>, usize) {
        let total = self.count as usize;
        let mut slots = vec![None; n];
        let shown = self.errors.len().min(n);
        for (i, e) in self.errors.iter().rev().take(shown).enumerate() {
            // The newest is error number total - 1.
            slots[(total - 1 - i) % n] = Some(e);
        }
        let newest = if total == 0 { 0 } else { (total - 1) % n + 1 };
        (slots, newest)
    }

    /// The Summary SMART error log (01h) and the first page of the
    /// Comprehensive one (02h): version 01h, the index of the newest of
    /// five 90-byte error log data structures, the device error count at
    /// byte 452, the checksum.
    pub fn smart_log(&self) -> Vec<u8> {
        let mut d = vec![0u8; 512];
        d[0] = 0x01;
        let (slots, newest) = self.ring(5);
        d[1] = newest as u8;
        for (i, e) in slots.iter().enumerate() {
            if let Some(e) = e {
                smart_entry(e, &mut d[2 + 90 * i..2 + 90 * (i + 1)]);
            }
        }
        let count = u16::try_from(self.count).unwrap_or(u16::MAX);
        d[452..454].copy_from_slice(&count.to_le_bytes());
        checksum(&mut d);
        d
    }

    /// The Extended Comprehensive SMART error log (03h), page 0: version
    /// 01h, the index of the newest of four 124-byte error log data
    /// structures (a word at byte 2), the device error count at byte 500,
    /// the checksum.
    pub fn extended_log(&self) -> Vec<u8> {
        let mut d = vec![0u8; 512];
        d[0] = 0x01;
        let (slots, newest) = self.ring(4);
        d[2..4].copy_from_slice(&(newest as u16).to_le_bytes());
        for (i, e) in slots.iter().enumerate() {
            if let Some(e) = e {
                extended_entry(e, &mut d[4 + 124 * i..4 + 124 * (i + 1)]);
            }
        }
        let count = u16::try_from(self.count).unwrap_or(u16::MAX);
        d[500..502].copy_from_slice(&count.to_le_bytes());
        checksum(&mut d);
        d
    }
}

/// The five command data structures of an error, the failing command
/// last: the structures before the oldest command kept stay zero.
fn command_slots(e: &Error) -> impl Iterator<Item = (usize, &Command)> {
    let skip = COMMANDS - e.commands.len().min(COMMANDS);
    e.commands
        .iter()
        .enumerate()
        .map(move |(i, c)| (skip + i, c))
}

/// A Summary error log data structure (ACS-3 A.4: five 12-byte command
/// data structures, then the 30-byte error data structure), 28-bit
/// registers: LBA 7:0, 15:8, 23:16, and LBA 27:24 in DEVICE.
fn smart_entry(e: &Error, d: &mut [u8]) {
    let regs28 = |r: &Regs, out: &mut [u8]| {
        out[0] = r.count as u8;
        out[1] = r.lba as u8;
        out[2] = (r.lba >> 8) as u8;
        out[3] = (r.lba >> 16) as u8;
        out[4] = (r.device & 0xF0) | ((r.lba >> 24) as u8 & 0x0F);
    };
    for (i, c) in command_slots(e) {
        let s = &mut d[12 * i..12 * (i + 1)];
        s[1] = c.regs.feature as u8;
        regs28(&c.regs, &mut s[2..7]);
        s[7] = c.regs.command;
        s[8..12].copy_from_slice(&c.timestamp_ms.to_le_bytes());
    }
    let s = &mut d[60..90];
    s[1] = e.error;
    regs28(&e.regs, &mut s[2..7]);
    s[7] = e.regs.command;
    s[27] = STATE_ACTIVE;
    s[28..30].copy_from_slice(&e.hours.to_le_bytes());
}

/// COUNT, LBA and DEVICE of a 48-bit register set as the extended logs
/// lay them out: count 7:0, 15:8; LBA 7:0, 31:24, 15:8, 39:32, 23:16,
/// 47:40; DEVICE.
fn regs48(r: &Regs, out: &mut [u8]) {
    let c = r.count.to_le_bytes();
    let l = r.lba.to_le_bytes();
    out[..9].copy_from_slice(&[c[0], c[1], l[0], l[3], l[1], l[4], l[2], l[5], r.device]);
}

/// An Extended Comprehensive error log data structure (ACS-3 A.6: five
/// 18-byte command data structures, then the 34-byte error data
/// structure).
fn extended_entry(e: &Error, d: &mut [u8]) {
    for (i, c) in command_slots(e) {
        let s = &mut d[18 * i..18 * (i + 1)];
        s[1..3].copy_from_slice(&c.regs.feature.to_le_bytes());
        regs48(&c.regs, &mut s[3..12]);
        s[12] = c.regs.command;
        s[14..18].copy_from_slice(&c.timestamp_ms.to_le_bytes());
    }
    let s = &mut d[90..124];
    s[1] = e.error;
    regs48(&e.regs, &mut s[2..11]);
    s[11] = e.regs.command;
    s[31] = STATE_ACTIVE;
    s[32..34].copy_from_slice(&e.hours.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(command: u8, lba: u64, t: u32) -> Command {
        Command {
            regs: Regs {
                command,
                lba,
                count: 8,
                device: 0x40,
                feature: 0,
            },
            timestamp_ms: t,
        }
    }

    fn failed_read(log: &mut ErrorLog, lba: u64, t: u32, hours: u16) {
        log.command(cmd(0x25, lba - 2, t));
        let regs = Regs {
            lba,
            device: 0x40,
            command: 0x51,
            ..Regs::default()
        };
        log.error(regs, 0x40, hours);
    }

    #[test]
    fn an_error_lands_in_both_layouts_with_the_commands_before_it() {
        let mut log = ErrorLog::default();
        log.command(cmd(0xEC, 0, 100));
        failed_read(&mut log, 0x0123_4567_89AB, 250, 3);
        let s = log.smart_log();
        assert_eq!((s[0], s[1], s[452]), (1, 1, 1));
        // Slot 0: commands 3 (IDENTIFY) and 4 (the read), error at 60.
        assert_eq!((s[2 + 36 + 7], s[2 + 48 + 7]), (0xEC, 0x25));
        assert_eq!(u32::from_le_bytes([s[58], s[59], s[60], s[61]]), 250);
        let err = &s[62..92];
        assert_eq!(
            (err[1], err[3], err[4], err[5], err[7]),
            (0x40, 0xAB, 0x89, 0x67, 0x51)
        );
        assert_eq!((err[27], err[28]), (STATE_ACTIVE, 3));
        assert_eq!(s.iter().fold(0u8, |a, b| a.wrapping_add(*b)), 0);
        let x = log.extended_log();
        assert_eq!((x[0], x[2], x[500]), (1, 1, 1));
        let err = &x[4 + 90..4 + 124];
        assert_eq!(err[1], 0x40);
        // LBA 7:0, 31:24, 15:8, 39:32, 23:16, 47:40.
        assert_eq!(&err[4..10], &[0xAB, 0x45, 0x89, 0x23, 0x67, 0x01]);
        assert_eq!((err[11], err[31], err[32]), (0x51, STATE_ACTIVE, 3));
        assert_eq!(x[4 + 72 + 12], 0x25, "the failing command last");
        assert_eq!(x.iter().fold(0u8, |a, b| a.wrapping_add(*b)), 0);
    }

    #[test]
    fn the_logs_are_rings_that_keep_the_count() {
        let mut log = ErrorLog::default();
        for i in 0..7u16 {
            failed_read(&mut log, 1000 + u64::from(i), u32::from(i), i);
        }
        let s = log.smart_log();
        // Seven errors in five slots: the newest (number 6) in slot 1.
        assert_eq!((s[1], s[452]), (2, 7));
        assert_eq!(s[2 + 90 + 60 + 28], 6, "hours of the newest");
        assert_eq!(s[2 + 60 + 28], 5, "slot 0: error number 5");
        let x = log.extended_log();
        // Four slots: the newest (6) in slot 2.
        assert_eq!((x[2], x[500]), (3, 7));
        assert_eq!(x[4 + 124 * 2 + 90 + 32], 6);
    }
}
