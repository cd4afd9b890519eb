//! The SATA personality: an ATA device behind the SATL, reached through
//! ATA PASS-THROUGH. It holds what an ATA drive holds beyond its blocks:
//! the Security feature set state ([`security`]), the host protected area
//! (READ NATIVE MAX ADDRESS EXT, SET MAX ADDRESS EXT), the Sanitize
//! Device feature set ([`sanitize`]), the Device Configuration Overlay
//! ([`dco`]), SMART data whose
//! counters move with the I/O ([`smart`]), its self-tests ([`selftest`])
//! and logs ([`logs`]: the error logs [`errlog`], the Device Statistics
//! [`devstats`]), SCT Write Same and the temperature history ([`sct`]),
//! TRIM ([`dsm`]), and the
//! IDENTIFY DEVICE data built from all of it ([`identify`]). Commands are ACS-3's; each
//! returns an [`Outcome`] the SATL ([`crate::sat`]) encodes.

pub mod dco;
pub mod device;
pub mod devstats;
pub mod dsm;
pub mod errlog;
pub mod identify;
pub mod logs;
pub mod outcome;
pub mod regs;
pub mod sanitize;
pub mod sct;
pub mod security;
pub mod selftest;
pub mod smart;

use std::time::Instant;

pub use device::Ata;
pub use outcome::{command, MediumAction, Outcome};
use regs::Regs;

impl Ata {
    /// Execute one ATA command: `tf` its registers, `data_out` its PIO
    /// data-out. Counters of the I/O are the caller's (`smart`).
    /// A command that ends in an error is logged in the SMART error logs.
    pub fn execute(&mut self, tf: &Regs, extend: bool, data_out: &[u8]) -> Outcome {
        self.log.push(command_name(tf).to_string());
        self.received(*tf);
        let o = self.dispatch(tf, extend, data_out);
        if o.failed() {
            self.errors.error(o.regs, o.error, self.hours());
        }
        o
    }

    /// Note a command received (the SATL's own, for a SCSI READ or WRITE,
    /// included): the error logs keep the commands before an error; the
    /// power-on hours and the running self-test move on.
    pub fn received(&mut self, tf: Regs) {
        let up = self.powered_on.elapsed();
        self.smart.power_on_hours = u32::try_from(up.as_secs() / 3600).unwrap_or(u32::MAX);
        self.errors.command(errlog::Command {
            regs: tf,
            timestamp_ms: u32::try_from(up.as_millis()).unwrap_or(u32::MAX),
        });
        let hours = self.hours();
        self.selftest.advance(Instant::now(), hours);
    }

    fn dispatch(&mut self, tf: &Regs, extend: bool, data_out: &[u8]) -> Outcome {
        let native_read = std::mem::take(&mut self.native_read);
        use command::*;
        match tf.command {
            IDENTIFY_DEVICE => Outcome::data(identify::build(self).to_vec()),
            CHECK_POWER_MODE => Outcome::ok(Regs {
                count: 0xFF, // active or idle
                ..Regs::default()
            }),
            FLUSH_CACHE | FLUSH_CACHE_EXT => Outcome::ok(Regs::default()),
            SMART => self.smart_command(tf, data_out),
            DATA_SET_MANAGEMENT => {
                dsm::execute(tf, data_out, self.max_blocks, self.security.locked)
            }
            READ_LOG_EXT | READ_LOG_DMA_EXT if extend => self.read_log(tf, true),
            WRITE_LOG_EXT | WRITE_LOG_DMA_EXT if extend => self.write_log(tf, true, data_out),
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
}

impl Ata {
    /// SMART (B0h): READ DATA with the self-test state, the logs and
    /// EXECUTE OFF-LINE IMMEDIATE here, the rest from the counters.
    fn smart_command(&mut self, tf: &Regs, data_out: &[u8]) -> Outcome {
        if tf.lba & 0x00FF_FF00 != smart::SIGNATURE {
            return Outcome::abort();
        }
        match tf.feature {
            smart::feature::READ_DATA => {
                let st = &self.selftest;
                let (short_minutes, extended_minutes) = st.polling_minutes();
                let t = smart::SelfTestBytes {
                    execution_status: st.execution_status(Instant::now()),
                    offline_done: st.offline_done,
                    short_minutes,
                    extended_minutes,
                };
                Outcome::data(self.smart.read_data(&t).to_vec())
            }
            smart::feature::EXECUTE_OFFLINE => self.execute_offline(tf),
            smart::feature::READ_LOG => self.read_log(tf, false),
            smart::feature::WRITE_LOG => self.write_log(tf, false, data_out),
            _ => self.smart.execute(tf),
        }
    }
}

/// A command's name for the state file's log.
pub fn command_name(tf: &Regs) -> &'static str {
    use command::*;
    match tf.command {
        IDENTIFY_DEVICE => "IDENTIFY DEVICE",
        CHECK_POWER_MODE => "CHECK POWER MODE",
        DATA_SET_MANAGEMENT => "DATA SET MANAGEMENT",
        READ_LOG_EXT => "READ LOG EXT",
        READ_LOG_DMA_EXT => "READ LOG DMA EXT",
        WRITE_LOG_EXT => "WRITE LOG EXT",
        WRITE_LOG_DMA_EXT => "WRITE LOG DMA EXT",
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
    use super::regs::{ERROR_ABRT, STATUS_DRDY, STATUS_ERR};
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
