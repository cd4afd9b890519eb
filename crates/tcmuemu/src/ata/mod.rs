//! The SATA personality: an ATA device behind the SATL, reached through
//! ATA PASS-THROUGH. It holds what an ATA drive holds beyond its blocks:
//! the Security feature set state ([`security`]), the host protected area
//! (READ NATIVE MAX ADDRESS EXT, SET MAX ADDRESS EXT), the Sanitize
//! Device feature set ([`sanitize`]), the Device Configuration Overlay
//! ([`dco`]), SMART data whose
//! counters move with the I/O ([`smart`]), and the IDENTIFY DEVICE data
//! built from all of it ([`identify`]). Commands are ACS-3's; each
//! returns an [`Outcome`] the SATL ([`crate::sat`]) encodes.

pub mod dco;
pub mod identify;
pub mod sanitize;
pub mod security;
pub mod smart;

use std::time::Instant;

use crate::sat::{Regs, ERROR_ABRT, STATUS_DRDY, STATUS_ERR};

/// ATA command codes (ACS-3 table "Command codes").
pub mod command {
    /// READ NATIVE MAX ADDRESS EXT (7.26, HPA feature set).
    pub const READ_NATIVE_MAX_EXT: u8 = 0x27;
    /// SET MAX ADDRESS EXT (7.51).
    pub const SET_MAX_ADDRESS_EXT: u8 = 0x37;
    /// SMART (7.48).
    pub const SMART: u8 = 0xB0;
    /// SANITIZE DEVICE (7.36).
    pub const SANITIZE_DEVICE: u8 = 0xB4;
    /// DEVICE CONFIGURATION (ACS-2 7.10).
    pub const DEVICE_CONFIGURATION: u8 = 0xB1;
    /// FLUSH CACHE (7.10).
    pub const FLUSH_CACHE: u8 = 0xE7;
    /// FLUSH CACHE EXT (7.11).
    pub const FLUSH_CACHE_EXT: u8 = 0xEA;
    /// IDENTIFY DEVICE (7.12).
    pub const IDENTIFY_DEVICE: u8 = 0xEC;
    /// CHECK POWER MODE (7.3).
    pub const CHECK_POWER_MODE: u8 = 0xE5;
    /// SECURITY SET PASSWORD (7.45).
    pub const SECURITY_SET_PASSWORD: u8 = 0xF1;
    /// SECURITY UNLOCK (7.46).
    pub const SECURITY_UNLOCK: u8 = 0xF2;
    /// SECURITY ERASE PREPARE (7.42).
    pub const SECURITY_ERASE_PREPARE: u8 = 0xF3;
    /// SECURITY ERASE UNIT (7.43).
    pub const SECURITY_ERASE_UNIT: u8 = 0xF4;
    /// SECURITY FREEZE LOCK (7.44).
    pub const SECURITY_FREEZE_LOCK: u8 = 0xF5;
    /// SECURITY DISABLE PASSWORD (7.41).
    pub const SECURITY_DISABLE_PASSWORD: u8 = 0xF6;
}

/// What the drive does to its medium as a result of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediumAction {
    /// Fill every native block with this byte.
    Fill(u8),
    /// Fill every native block with this 32-bit pattern, little-endian.
    Pattern(u32),
    /// Fill every native block with the keystream of this key (what a
    /// cryptographic erase leaves: neither the old data nor zeroes).
    Noise(u32),
    /// The action over the first half of the native blocks only (an
    /// operation that failed half way).
    Half(Box<MediumAction>),
}

/// An ATA command's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The registers returned (`command` is STATUS).
    pub regs: Regs,
    /// ERROR (nonzero: the command failed).
    pub error: u8,
    /// PIO data-in.
    pub data_in: Vec<u8>,
    /// A change of the medium the caller carries out.
    pub medium: Option<MediumAction>,
}

impl Outcome {
    /// Success with no data and the registers `regs` (STATUS DRDY).
    pub fn ok(mut regs: Regs) -> Outcome {
        regs.command = STATUS_DRDY;
        regs.feature = 0;
        Outcome {
            regs,
            error: 0,
            data_in: Vec::new(),
            medium: None,
        }
    }

    /// Success with data in.
    pub fn data(data: Vec<u8>) -> Outcome {
        Outcome {
            data_in: data,
            ..Outcome::ok(Regs::default())
        }
    }

    /// Command aborted (STATUS ERR, ERROR ABRT).
    pub fn abort() -> Outcome {
        Outcome {
            regs: Regs {
                command: STATUS_DRDY | STATUS_ERR,
                ..Regs::default()
            },
            error: ERROR_ABRT,
            data_in: Vec::new(),
            medium: None,
        }
    }

    /// Whether the command failed.
    pub fn failed(&self) -> bool {
        self.error != 0
    }
}

/// The ATA device's own state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ata {
    /// Model (IDENTIFY words 27-46).
    pub model: String,
    /// Serial (words 10-19).
    pub serial: String,
    /// Firmware (words 23-26).
    pub firmware: String,
    /// Blocks of the medium as made (DEVICE CONFIGURATION IDENTIFY's max).
    pub factory_blocks: u64,
    /// Blocks up to the native max address + 1: less than the factory's
    /// while a device configuration overlay is set.
    pub native_blocks: u64,
    /// DEVICE CONFIGURATION FREEZE LOCK was sent.
    pub dco_frozen: bool,
    /// Blocks the host can address (max address + 1): less than native
    /// while a host protected area exists.
    pub max_blocks: u64,
    /// Whether the last SET MAX ADDRESS EXT was volatile.
    pub max_volatile: bool,
    /// Whether the previous command was READ NATIVE MAX ADDRESS EXT (SET
    /// MAX ADDRESS EXT must follow it immediately, ACS-3 7.51.1).
    native_read: bool,
    /// The Security feature set.
    pub security: security::Security,
    /// SMART.
    pub smart: smart::Smart,
    /// The Sanitize Device feature set.
    pub sanitize: sanitize::Sanitize,
    /// Every command received, by name, in order (the state file's log).
    pub log: Vec<String>,
}

impl Ata {
    /// A device of `blocks` blocks, all addressable, security disabled.
    pub fn new(model: &str, serial: &str, firmware: &str, blocks: u64) -> Ata {
        Ata {
            model: model.to_string(),
            serial: serial.to_string(),
            firmware: firmware.to_string(),
            factory_blocks: blocks,
            native_blocks: blocks,
            dco_frozen: false,
            max_blocks: blocks,
            max_volatile: false,
            native_read: false,
            security: security::Security::default(),
            // A drive powered on once, at 35 C; the hours count from here.
            smart: smart::Smart {
                power_cycles: 1,
                temperature_c: 35,
                ..smart::Smart::default()
            },
            sanitize: sanitize::Sanitize::default(),
            log: Vec::new(),
        }
    }

    /// Execute one ATA command: `tf` its registers, `data_out` its PIO
    /// data-out. Counters of the I/O are the caller's (`smart`).
    pub fn execute(&mut self, tf: &Regs, extend: bool, data_out: &[u8]) -> Outcome {
        let native_read = std::mem::take(&mut self.native_read);
        let name = command_name(tf);
        self.log.push(name.to_string());
        use command::*;
        match tf.command {
            IDENTIFY_DEVICE => Outcome::data(identify::build(self).to_vec()),
            CHECK_POWER_MODE => Outcome::ok(Regs {
                count: 0xFF, // active or idle
                ..Regs::default()
            }),
            FLUSH_CACHE | FLUSH_CACHE_EXT => Outcome::ok(Regs::default()),
            SMART => self.smart.execute(tf),
            READ_NATIVE_MAX_EXT if extend => {
                self.native_read = true;
                Outcome::ok(Regs {
                    lba: self.native_blocks - 1,
                    device: 0x40,
                    ..Regs::default()
                })
            }
            SET_MAX_ADDRESS_EXT if extend => self.set_max(tf, native_read),
            SANITIZE_DEVICE if extend => self.sanitize.execute(tf, Instant::now()),
            DEVICE_CONFIGURATION => self.dco(tf, data_out),
            SECURITY_SET_PASSWORD..=SECURITY_DISABLE_PASSWORD => {
                self.security.execute(tf.command, data_out)
            }
            _ => Outcome::abort(),
        }
    }

    /// SET MAX ADDRESS EXT (ACS-3 7.51): LBA the new max address, COUNT
    /// bit 0 volatile; aborted unless READ NATIVE MAX ADDRESS EXT came
    /// just before, or past the native max (IDNF).
    fn set_max(&mut self, tf: &Regs, after_native_read: bool) -> Outcome {
        if !after_native_read || self.security.locked {
            return Outcome::abort();
        }
        if tf.lba >= self.native_blocks {
            let mut o = Outcome::abort();
            o.error = 0x10; // IDNF
            return o;
        }
        self.max_blocks = tf.lba + 1;
        self.max_volatile = tf.count & 1 != 0;
        Outcome::ok(Regs {
            lba: tf.lba,
            device: 0x40,
            ..Regs::default()
        })
    }
}

/// A command's name for the state file's log.
pub fn command_name(tf: &Regs) -> &'static str {
    use command::*;
    match tf.command {
        IDENTIFY_DEVICE => "IDENTIFY DEVICE",
        CHECK_POWER_MODE => "CHECK POWER MODE",
        FLUSH_CACHE => "FLUSH CACHE",
        FLUSH_CACHE_EXT => "FLUSH CACHE EXT",
        SMART => smart::feature_name(tf.feature),
        DEVICE_CONFIGURATION => match tf.feature {
            dco::sub::IDENTIFY => "DEVICE CONFIGURATION IDENTIFY",
            dco::sub::SET => "DEVICE CONFIGURATION SET",
            dco::sub::RESTORE => "DEVICE CONFIGURATION RESTORE",
            dco::sub::FREEZE_LOCK => "DEVICE CONFIGURATION FREEZE LOCK",
            _ => "DEVICE CONFIGURATION (unsupported)",
        },
        SANITIZE_DEVICE => match tf.feature {
            sanitize::sub::STATUS => "SANITIZE STATUS EXT",
            sanitize::sub::CRYPTO => "CRYPTO SCRAMBLE EXT",
            sanitize::sub::BLOCK => "BLOCK ERASE EXT",
            sanitize::sub::OVERWRITE => "OVERWRITE EXT",
            sanitize::sub::FREEZE_LOCK => "SANITIZE FREEZE LOCK EXT",
            _ => "SANITIZE DEVICE (unsupported)",
        },
        READ_NATIVE_MAX_EXT => "READ NATIVE MAX ADDRESS EXT",
        SET_MAX_ADDRESS_EXT => "SET MAX ADDRESS EXT",
        SECURITY_SET_PASSWORD => "SECURITY SET PASSWORD",
        SECURITY_UNLOCK => "SECURITY UNLOCK",
        SECURITY_ERASE_PREPARE => "SECURITY ERASE PREPARE",
        SECURITY_ERASE_UNIT => "SECURITY ERASE UNIT",
        SECURITY_FREEZE_LOCK => "SECURITY FREEZE LOCK",
        SECURITY_DISABLE_PASSWORD => "SECURITY DISABLE PASSWORD",
        _ => "unsupported",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tf(command: u8, lba: u64, count: u16) -> Regs {
        Regs {
            command,
            lba,
            count,
            device: 0x40,
            feature: 0,
        }
    }

    #[test]
    fn set_max_needs_read_native_max_just_before_and_stays_in_range() {
        let mut a = Ata::new("M", "S", "F", 1000);
        // Not preceded by READ NATIVE MAX ADDRESS EXT: aborted.
        assert!(a.execute(&tf(0x37, 799, 0), true, &[]).failed());
        let n = a.execute(&tf(0x27, 0, 0), true, &[]);
        assert_eq!(n.regs.lba, 999);
        assert!(!a.execute(&tf(0x37, 799, 1), true, &[]).failed());
        assert_eq!((a.max_blocks, a.max_volatile), (800, true));
        // Another command between: aborted again.
        a.execute(&tf(0x27, 0, 0), true, &[]);
        a.execute(&tf(0xEC, 0, 1), false, &[]);
        assert!(a.execute(&tf(0x37, 999, 0), true, &[]).failed());
        // Past the native max: IDNF.
        a.execute(&tf(0x27, 0, 0), true, &[]);
        assert_eq!(a.execute(&tf(0x37, 1000, 0), true, &[]).error, 0x10);
        a.execute(&tf(0x27, 0, 0), true, &[]);
        assert!(!a.execute(&tf(0x37, 999, 0), true, &[]).failed());
        assert_eq!(a.max_blocks, 1000);
        assert_eq!(
            a.log.iter().filter(|c| *c == "SET MAX ADDRESS EXT").count(),
            5
        );
    }

    #[test]
    fn unknown_commands_are_aborted() {
        let mut a = Ata::new("M", "S", "F", 1000);
        let o = a.execute(&tf(0x06, 0, 1), true, &[]);
        assert_eq!(
            (o.error, o.regs.command),
            (ERROR_ABRT, STATUS_DRDY | STATUS_ERR)
        );
    }
}
