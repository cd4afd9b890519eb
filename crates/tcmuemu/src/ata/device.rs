//! The ATA device's own state: identity, capacity (factory, native after
//! a DCO, addressable after an HPA), and its feature sets.

use super::outcome::Outcome;
use super::regs::Regs;
use super::{errlog, sanitize, sct, security, selftest, smart};

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
    pub(super) native_read: bool,
    /// The Security feature set.
    pub security: security::Security,
    /// SMART.
    pub smart: smart::Smart,
    /// The Sanitize Device feature set.
    pub sanitize: sanitize::Sanitize,
    /// SCT Command Transport (Write Same).
    pub sct: sct::Sct,
    /// SMART self-tests.
    pub selftest: selftest::SelfTest,
    /// The SMART error logs.
    pub errors: errlog::ErrorLog,
    /// When the drive powered on (the emulator started): the origin of
    /// the power-on hours and of the logs' timestamps.
    pub powered_on: std::time::Instant,
    /// Blocks trimmed (DATA SET MANAGEMENT, and UNMAP through the SATL).
    pub trimmed_blocks: u64,
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
            sct: sct::Sct::default(),
            selftest: selftest::SelfTest {
                short: std::time::Duration::from_secs(5),
                extended: std::time::Duration::from_secs(20),
                blocks,
                ..selftest::SelfTest::default()
            },
            errors: errlog::ErrorLog::default(),
            powered_on: std::time::Instant::now(),
            trimmed_blocks: 0,
            log: Vec::new(),
        }
    }

    /// SET MAX ADDRESS EXT (ACS-3 7.51): LBA the new max address, COUNT
    /// bit 0 volatile; aborted unless READ NATIVE MAX ADDRESS EXT came
    /// just before, or past the native max (IDNF).
    pub(super) fn set_max(&mut self, tf: &Regs, after_native_read: bool) -> Outcome {
        if !after_native_read || self.security.locked {
            return Outcome::abort();
        }
        if tf.lba >= self.native_blocks {
            let mut o = Outcome::abort();
            o.error = super::regs::ERROR_IDNF;
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
