//! ATA SECURITY ERASE UNIT through SAT ATA PASS-THROUGH: the Security
//! feature set's whole-drive erase, with the one rule that matters most —
//! never leave a password set on the drive.
//!
//! The erase needs a user password (ACS-3, Security feature set): drivelab
//! sets a temporary one ([`TEMP_PASSWORD`]), sends SECURITY ERASE PREPARE
//! and SECURITY ERASE UNIT (which, on success, also removes the password
//! and disables security), and checks IDENTIFY afterwards. When anything
//! fails after the password is set, or the stop flag (Ctrl-C) is seen, it
//! sends SECURITY DISABLE PASSWORD (after SECURITY UNLOCK if the drive
//! locked itself); if even that fails the error names the password so the
//! user can unlock the drive by hand.
//!
//! Before anything is sent, IDENTIFY DEVICE words 82, 89, 90 and 128
//! ([`SecurityState`]) decide whether the erase can run at all: not
//! supported, frozen (with how to unfreeze), locked or enabled with a
//! password drivelab does not know, attempt counter expired, enhanced erase
//! not supported. Each is a [`SecurityRefusal`]: one line, nothing sent.
//!
//! Layouts follow ACS-3 (T13/2161-D): the IDENTIFY DEVICE data words, and
//! the 512-byte data block of SECURITY SET PASSWORD (F1h), SECURITY UNLOCK
//! (F2h), SECURITY ERASE UNIT (F4h) and SECURITY DISABLE PASSWORD (F6h),
//! all PIO data-out 28-bit commands; SECURITY ERASE PREPARE (F3h) and
//! SECURITY FREEZE LOCK (F5h) are non-data. The password is 32 bytes (words
//! 1-16) sent as the bytes of the string in order, NUL-padded — the same
//! convention as hdparm, so `hdparm --security-unlock` takes the same text.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;

use crate::ata::{command, execute_with_timeout, AtaData, AtaError, AtaPassThrough, AtaRegisters};
use crate::ata::{Protocol, Taskfile};
use crate::scsi::sg::SgDevice;

pub use crate::ata::security_state::{EraseTime, SecurityRefusal, SecurityState};

/// The temporary user password drivelab sets for the erase (ASCII,
/// NUL-padded to 32 bytes). Fixed and documented, so that a drive left
/// with it set by a power loss mid-erase can be unlocked by anyone.
pub const TEMP_PASSWORD: &str = "drivelab";

/// Timeout of the short security commands (set/disable password, prepare,
/// unlock), ms.
pub const SHORT_TIMEOUT_MS: u32 = 30_000;

/// Which password a security data block names (word 0 bit 0, IDENTIFIER).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Who {
    /// 0: the user password.
    User,
    /// 1: the master password.
    Master,
}

/// The 512-byte data block of SECURITY SET PASSWORD, SECURITY UNLOCK,
/// SECURITY ERASE UNIT and SECURITY DISABLE PASSWORD (ACS-3, the "data
/// content" table of each): word 0 bit 0 IDENTIFIER (user/master), bit 1
/// ENHANCED ERASE (ERASE UNIT only), bit 8 MASTER PASSWORD CAPABILITY (SET
/// PASSWORD of the user password only: 0 High, 1 Maximum); words 1-16 the
/// 32-byte password; word 17 MASTER PASSWORD IDENTIFIER (SET PASSWORD of
/// the master password only); words 18-255 reserved (zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecurityBlock {
    who: Who,
    password: [u8; 32],
    enhanced: bool,
    maximum: bool,
    master_id: u16,
}

impl SecurityBlock {
    /// A block naming `who`'s password `password` (at most 32 bytes, sent
    /// in order, NUL-padded; longer is cut to 32, as the drive would).
    pub fn new(who: Who, password: &[u8]) -> SecurityBlock {
        let mut p = [0u8; 32];
        let n = password.len().min(32);
        p[..n].copy_from_slice(&password[..n]);
        SecurityBlock {
            who,
            password: p,
            enhanced: false,
            maximum: false,
            master_id: 0,
        }
    }
    /// ENHANCED ERASE (word 0 bit 1), for SECURITY ERASE UNIT.
    pub fn enhanced(mut self, on: bool) -> Self {
        self.enhanced = on;
        self
    }
    /// MASTER PASSWORD CAPABILITY Maximum (word 0 bit 8), for SECURITY SET
    /// PASSWORD of the user password (default High).
    pub fn maximum(mut self, on: bool) -> Self {
        self.maximum = on;
        self
    }
    /// MASTER PASSWORD IDENTIFIER (word 17), for SECURITY SET PASSWORD of
    /// the master password.
    pub fn master_id(mut self, id: u16) -> Self {
        self.master_id = id;
        self
    }
    /// The 512 bytes (little-endian words).
    pub fn build(&self) -> [u8; 512] {
        let mut b = [0u8; 512];
        let w0: u16 = u16::from(self.who == Who::Master)
            | (u16::from(self.enhanced) << 1)
            | (u16::from(self.maximum) << 8);
        b[0..2].copy_from_slice(&w0.to_le_bytes());
        b[2..34].copy_from_slice(&self.password);
        b[34..36].copy_from_slice(&self.master_id.to_le_bytes());
        b
    }
}

/// The security commands, each a 28-bit taskfile (ACS-3 command codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SecurityCommand {
    /// F1h, PIO data-out.
    SetPassword,
    /// F2h, PIO data-out.
    Unlock,
    /// F3h, non-data.
    ErasePrepare,
    /// F4h, PIO data-out.
    EraseUnit,
    /// F5h, non-data.
    FreezeLock,
    /// F6h, PIO data-out.
    DisablePassword,
}

impl SecurityCommand {
    /// The command code.
    pub fn code(self) -> u8 {
        match self {
            SecurityCommand::SetPassword => command::SECURITY_SET_PASSWORD,
            SecurityCommand::Unlock => command::SECURITY_UNLOCK,
            SecurityCommand::ErasePrepare => command::SECURITY_ERASE_PREPARE,
            SecurityCommand::EraseUnit => command::SECURITY_ERASE_UNIT,
            SecurityCommand::FreezeLock => command::SECURITY_FREEZE_LOCK,
            SecurityCommand::DisablePassword => command::SECURITY_DISABLE_PASSWORD,
        }
    }
    /// The ACS name.
    pub fn name(self) -> &'static str {
        match self {
            SecurityCommand::SetPassword => "SECURITY SET PASSWORD",
            SecurityCommand::Unlock => "SECURITY UNLOCK",
            SecurityCommand::ErasePrepare => "SECURITY ERASE PREPARE",
            SecurityCommand::EraseUnit => "SECURITY ERASE UNIT",
            SecurityCommand::FreezeLock => "SECURITY FREEZE LOCK",
            SecurityCommand::DisablePassword => "SECURITY DISABLE PASSWORD",
        }
    }
    /// Whether it sends the 512-byte [`SecurityBlock`].
    pub fn has_data(self) -> bool {
        !matches!(
            self,
            SecurityCommand::ErasePrepare | SecurityCommand::FreezeLock
        )
    }
    /// The ATA PASS-THROUGH(16): PIO data-out of one 512-byte block (COUNT
    /// 1, T_LENGTH in COUNT, BYT_BLOK) or non-data; 28-bit (no EXTEND);
    /// CK_COND so that the status registers come back.
    pub fn pass_through(self) -> AtaPassThrough {
        let tf = Taskfile::new(self.code());
        if self.has_data() {
            AtaPassThrough::new(Protocol::PioDataOut, tf.count(1)).ck_cond(true)
        } else {
            AtaPassThrough::new(Protocol::NonData, tf).ck_cond(true)
        }
    }
}

/// What sends ATA commands: an [`SgDevice`] (for the medium-changing
/// security commands, one built from the claim), or a test double.
pub trait AtaPort {
    /// Send `pt` (named `name` in errors) with `data`; `timeout_ms` or the
    /// handle's default.
    fn send(
        &self,
        pt: &AtaPassThrough,
        name: &str,
        data: AtaData<'_>,
        timeout_ms: Option<u32>,
    ) -> Result<Option<AtaRegisters>, AtaError>;
}

impl AtaPort for SgDevice {
    fn send(
        &self,
        pt: &AtaPassThrough,
        name: &str,
        data: AtaData<'_>,
        timeout_ms: Option<u32>,
    ) -> Result<Option<AtaRegisters>, AtaError> {
        execute_with_timeout(self, pt, name, data, timeout_ms)
    }
}

/// Send one security command with its block (when it takes one).
pub fn send(
    port: &dyn AtaPort,
    c: SecurityCommand,
    block: &SecurityBlock,
    timeout_ms: u32,
) -> Result<Option<AtaRegisters>, AtaError> {
    let pt = c.pass_through();
    if c.has_data() {
        let b = block.build();
        port.send(&pt, c.name(), AtaData::Out(&b), Some(timeout_ms))
    } else {
        port.send(&pt, c.name(), AtaData::None, Some(timeout_ms))
    }
}

/// IDENTIFY DEVICE's security words, through `port`.
pub fn read_state(port: &dyn AtaPort) -> Result<SecurityState, AtaError> {
    let mut buf = vec![0u8; 512];
    let pt = AtaPassThrough::new(
        Protocol::PioDataIn,
        Taskfile::new(command::IDENTIFY_DEVICE).count(1),
    );
    port.send(&pt, "IDENTIFY DEVICE", AtaData::In(&mut buf), None)?;
    if buf.iter().all(|&b| b == 0) {
        return Err(AtaError::BadData(
            "IDENTIFY DEVICE returned all zeroes".into(),
        ));
    }
    SecurityState::parse(&buf)
        .ok_or_else(|| AtaError::BadData("IDENTIFY DEVICE data too short".into()))
}

/// One command of the sequence, as sent.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// The ACS name.
    pub command: &'static str,
    /// Whether the drive completed it without error.
    pub ok: bool,
    /// Seconds it took.
    pub seconds: f64,
}

/// A finished SECURITY ERASE UNIT.
#[derive(Debug, Clone, Serialize)]
pub struct SecurityErase {
    /// Enhanced (true) or normal mode.
    pub enhanced: bool,
    /// The drive's state before.
    pub before: SecurityState,
    /// The drive's state after (security disabled, no password).
    pub after: SecurityState,
    /// The time IDENTIFY estimated.
    pub estimate: EraseTime,
    /// The timeout given to SECURITY ERASE UNIT, s.
    pub timeout_s: u64,
    /// Every command sent, in order.
    pub steps: Vec<Step>,
    /// Seconds SECURITY ERASE UNIT took.
    pub erase_seconds: f64,
}

/// What became of the temporary password after a failure or a stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cleanup {
    /// No password was ever set.
    NothingSet,
    /// SECURITY DISABLE PASSWORD removed it (or the erase did).
    Removed,
    /// Removing it was refused, and the drive then reported security
    /// disabled: there was none left to remove (an ERASE UNIT whose answer
    /// the host's timer cut off removes it when it completes).
    NoneLeft,
    /// It could not be removed: the drive keeps it until the user removes it.
    StillSet {
        /// The password (ASCII).
        password: String,
        /// Why removing it failed.
        why: String,
    },
}

impl std::fmt::Display for Cleanup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cleanup::NothingSet => f.write_str("no password was set"),
            Cleanup::Removed => f.write_str("the temporary password was removed"),
            Cleanup::NoneLeft => f.write_str(
                "the drive refused to remove the temporary password because it has none set: no password left (IDENTIFY word 128: security disabled)",
            ),
            Cleanup::StillSet { password, why } => write!(
                f,
                "THE TEMPORARY USER PASSWORD '{password}' IS STILL SET ({why}): remove it with 'hdparm --user-master u --security-unlock {password} DEV' then 'hdparm --user-master u --security-disable {password} DEV' (after a power cycle if the drive refuses)"
            ),
        }
    }
}

/// Why SECURITY ERASE UNIT did not finish.
#[derive(Debug, thiserror::Error)]
pub enum SecurityEraseError {
    /// The drive's state rules it out (nothing sent).
    #[error(transparent)]
    Refused(#[from] SecurityRefusal),
    /// IDENTIFY (before anything changed) failed.
    #[error("IDENTIFY DEVICE: {0}")]
    Identify(AtaError),
    /// A command failed; `cleanup` says what became of the password.
    #[error("{command}: {error}; {cleanup}")]
    Failed {
        /// The command that failed.
        command: &'static str,
        /// The drive's or the host's answer.
        error: Box<AtaError>,
        /// The password afterwards.
        cleanup: Cleanup,
        /// Every command sent.
        steps: Vec<Step>,
    },
    /// The stop flag was seen before SECURITY ERASE UNIT was sent.
    #[error("stopped before SECURITY ERASE UNIT was sent; {cleanup}")]
    Stopped {
        /// The password afterwards.
        cleanup: Cleanup,
        /// Every command sent.
        steps: Vec<Step>,
    },
}

impl SecurityEraseError {
    /// Whether nothing was sent that changed the drive (a refusal, or
    /// IDENTIFY failing).
    pub fn nothing_changed(&self) -> bool {
        match self {
            SecurityEraseError::Refused(_) | SecurityEraseError::Identify(_) => true,
            SecurityEraseError::Failed { cleanup, .. }
            | SecurityEraseError::Stopped { cleanup, .. } => *cleanup == Cleanup::NothingSet,
        }
    }
    /// Whether the password is still set on the drive.
    pub fn password_left_set(&self) -> bool {
        matches!(
            self,
            SecurityEraseError::Failed {
                cleanup: Cleanup::StillSet { .. },
                ..
            } | SecurityEraseError::Stopped {
                cleanup: Cleanup::StillSet { .. },
                ..
            }
        )
    }
}

struct Seq<'a> {
    port: &'a dyn AtaPort,
    steps: Vec<Step>,
}

impl Seq<'_> {
    fn run(
        &mut self,
        c: SecurityCommand,
        block: &SecurityBlock,
        timeout_ms: u32,
    ) -> Result<(), AtaError> {
        let t0 = Instant::now();
        let r = send(self.port, c, block, timeout_ms);
        self.steps.push(Step {
            command: c.name(),
            ok: r.is_ok(),
            seconds: t0.elapsed().as_secs_f64(),
        });
        r.map(|_| ())
    }

    /// Remove the temporary password: DISABLE PASSWORD; if the drive
    /// refuses (it locks itself when an erase is interrupted), UNLOCK
    /// then DISABLE PASSWORD; if it refuses those too, IDENTIFY says
    /// whether any password is left.
    fn remove_password(&mut self, block: &SecurityBlock) -> Cleanup {
        let first = match self.run(SecurityCommand::DisablePassword, block, SHORT_TIMEOUT_MS) {
            Ok(()) => return Cleanup::Removed,
            Err(e) => e,
        };
        let second = self
            .run(SecurityCommand::Unlock, block, SHORT_TIMEOUT_MS)
            .and_then(|()| self.run(SecurityCommand::DisablePassword, block, SHORT_TIMEOUT_MS));
        match second {
            Ok(()) => Cleanup::Removed,
            Err(e) => match read_state(self.port) {
                Ok(s) if !s.enabled && !s.locked => Cleanup::NoneLeft,
                _ => Cleanup::StillSet {
                    password: TEMP_PASSWORD.to_string(),
                    why: format!("SECURITY DISABLE PASSWORD: {first}; after SECURITY UNLOCK: {e}"),
                },
            },
        }
    }
}

/// SECURITY ERASE UNIT, `enhanced` or normal, with the temporary password,
/// through `port` (an [`SgDevice`] built from the claim: the security
/// commands are refused on any other handle). Reads IDENTIFY and refuses
/// (nothing sent) when the state rules the erase out; watches `stop` up to
/// the moment SECURITY ERASE UNIT is sent (the drive cannot be interrupted
/// after that); never leaves the password set if the drive lets it be
/// removed.
pub fn security_erase(
    port: &dyn AtaPort,
    enhanced: bool,
    stop: &AtomicBool,
) -> Result<SecurityErase, SecurityEraseError> {
    let before = read_state(port).map_err(SecurityEraseError::Identify)?;
    if let Some(r) = before.refusal(enhanced) {
        return Err(r.into());
    }
    let estimate = before.erase_time(enhanced);
    let timeout = estimate.timeout();
    let user = SecurityBlock::new(Who::User, TEMP_PASSWORD.as_bytes());
    let mut seq = Seq {
        port,
        steps: Vec::new(),
    };
    if stop.load(Ordering::Relaxed) {
        return Err(SecurityEraseError::Stopped {
            cleanup: Cleanup::NothingSet,
            steps: seq.steps,
        });
    }
    // The password: if SET PASSWORD itself fails, the drive's state did
    // not change (ACS-3: an aborted SET PASSWORD sets nothing).
    if let Err(error) = seq.run(SecurityCommand::SetPassword, &user, SHORT_TIMEOUT_MS) {
        return Err(SecurityEraseError::Failed {
            command: SecurityCommand::SetPassword.name(),
            error: Box::new(error),
            cleanup: Cleanup::NothingSet,
            steps: seq.steps,
        });
    }
    // From here on every way out removes the password.
    let fail = |seq: &mut Seq<'_>, c: SecurityCommand, error: AtaError| {
        let cleanup = seq.remove_password(&user);
        SecurityEraseError::Failed {
            command: c.name(),
            error: Box::new(error),
            cleanup,
            steps: std::mem::take(&mut seq.steps),
        }
    };
    let stopped = |seq: &mut Seq<'_>| {
        let cleanup = seq.remove_password(&user);
        SecurityEraseError::Stopped {
            cleanup,
            steps: std::mem::take(&mut seq.steps),
        }
    };
    if stop.load(Ordering::Relaxed) {
        return Err(stopped(&mut seq));
    }
    if let Err(e) = seq.run(SecurityCommand::ErasePrepare, &user, SHORT_TIMEOUT_MS) {
        return Err(fail(&mut seq, SecurityCommand::ErasePrepare, e));
    }
    if stop.load(Ordering::Relaxed) {
        return Err(stopped(&mut seq));
    }
    let erase = user.enhanced(enhanced);
    let t0 = Instant::now();
    let timeout_ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
    if let Err(e) = seq.run(SecurityCommand::EraseUnit, &erase, timeout_ms) {
        return Err(fail(&mut seq, SecurityCommand::EraseUnit, e));
    }
    let erase_seconds = t0.elapsed().as_secs_f64();
    // A successful ERASE UNIT removes the user password and disables
    // security (ACS-3); a drive that did not is told to.
    let after = match read_state(port) {
        Ok(s) => s,
        Err(e) => return Err(fail(&mut seq, SecurityCommand::EraseUnit, e)),
    };
    let after = if after.enabled || after.locked {
        let cleanup = seq.remove_password(&user);
        if !matches!(cleanup, Cleanup::Removed | Cleanup::NoneLeft) {
            return Err(SecurityEraseError::Failed {
                command: "SECURITY ERASE UNIT (password still enabled afterwards)",
                error: Box::new(AtaError::BadData(
                    "the drive kept security enabled after the erase".into(),
                )),
                cleanup,
                steps: seq.steps,
            });
        }
        read_state(port).unwrap_or(after)
    } else {
        after
    };
    Ok(SecurityErase {
        enhanced,
        before,
        after,
        estimate,
        timeout_s: timeout.as_secs(),
        steps: seq.steps,
        erase_seconds,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use std::cell::RefCell;

    fn identify_with(w82: u16, w89: u16, w90: u16, w128: u16) -> Vec<u8> {
        let mut d = vec![0u8; 512];
        for (i, v) in [(82, w82), (89, w89), (90, w90), (128, w128)] {
            d[2 * i..2 * i + 2].copy_from_slice(&v.to_le_bytes());
        }
        // Something non-zero besides, as a real drive's data is.
        d[0] = 0x40;
        d
    }

    #[test]
    fn word_128_bits_decode_as_acs3_lists_them() {
        // ACS-3 IDENTIFY DEVICE word 128: 0 supported, 1 enabled, 2 locked,
        // 3 frozen, 4 count expired, 5 enhanced erase supported, 8 master
        // password capability (1 = Maximum).
        for (bit, field) in [
            (0, "supported"),
            (1, "enabled"),
            (2, "locked"),
            (3, "frozen"),
            (4, "count_expired"),
            (5, "enhanced_erase_supported"),
            (8, "master_password_maximum"),
        ] {
            let s = SecurityState::from_words(0, 0, 0, 1 << bit);
            let v = serde_json::to_value(s).unwrap();
            let set: Vec<&str> = v
                .as_object()
                .unwrap()
                .iter()
                .filter(|(_, x)| **x == serde_json::Value::Bool(true))
                .map(|(k, _)| k.as_str())
                .collect();
            assert_eq!(set, vec![field], "word 128 bit {bit}");
        }
        // Word 82 bit 1 alone also says supported; reserved bits say nothing.
        assert!(SecurityState::from_words(1 << 1, 0, 0, 0).supported);
        assert_eq!(
            SecurityState::from_words(0, 0, 0, 0xFEC0),
            SecurityState::default()
        );
    }

    #[test]
    fn erase_time_words_89_90() {
        // Short format: bits 7:0, x2 minutes; 255 = more than 508 minutes.
        assert_eq!(EraseTime::from_word(0), EraseTime::NotReported);
        assert_eq!(EraseTime::from_word(0x0002), EraseTime::Minutes(4));
        assert_eq!(EraseTime::from_word(0x7F02), EraseTime::Minutes(4));
        assert_eq!(EraseTime::from_word(0x00FF), EraseTime::MoreThan(508));
        // Extended format (bit 15): bits 14:0; 32767 = more than 65532.
        assert_eq!(EraseTime::from_word(0x8100), EraseTime::Minutes(512));
        assert_eq!(EraseTime::from_word(0xFFFF), EraseTime::MoreThan(65532));
        assert_eq!(EraseTime::from_word(0x8000), EraseTime::NotReported);
        // Timeouts: 2x + 10 min; 24 h unknown; capped at the SG_IO limit.
        assert_eq!(
            EraseTime::Minutes(4).timeout(),
            Duration::from_secs(18 * 60)
        );
        assert_eq!(
            EraseTime::NotReported.timeout(),
            Duration::from_secs(24 * 3600)
        );
        assert_eq!(
            EraseTime::MoreThan(65532).timeout(),
            Duration::from_millis(u64::from(u32::MAX))
        );
        let s = SecurityState::parse(&identify_with(2, 0x0010, 0x8020, 0x21)).unwrap();
        assert_eq!(s.erase_time(false), EraseTime::Minutes(32));
        assert_eq!(s.erase_time(true), EraseTime::Minutes(64));
        assert!(SecurityState::parse(&[0u8; 300]).is_none());
    }

    #[test]
    fn refusals_from_identify_data() {
        let st = |w82, w128| SecurityState::parse(&identify_with(w82, 0, 0, w128)).unwrap();
        // QEMU's IDE/AHCI disk: word 82 bit 1 and word 128 clear.
        assert_eq!(
            st(0x4000, 0).refusal(false),
            Some(SecurityRefusal::NotSupported)
        );
        // Supported, frozen (the BIOS's freeze lock): the most common case.
        let frozen = st(0x0002, 0x0001 | 0x0008);
        assert_eq!(frozen.refusal(false), Some(SecurityRefusal::Frozen));
        let msg = SecurityRefusal::Frozen.to_string();
        assert!(msg.contains("suspend") && msg.contains("hot-plug"), "{msg}");
        assert!(!msg.contains('\n'));
        // Locked (and enabled): a password drivelab does not know.
        assert_eq!(
            st(2, 0x0001 | 0x0002 | 0x0004).refusal(false),
            Some(SecurityRefusal::Locked)
        );
        // Enabled, not locked.
        assert_eq!(
            st(2, 0x0001 | 0x0002).refusal(true),
            Some(SecurityRefusal::PasswordSet)
        );
        assert_eq!(
            st(2, 0x0001 | 0x0010).refusal(false),
            Some(SecurityRefusal::CountExpired)
        );
        // Enhanced asked, not offered; normal is fine.
        let plain = st(2, 0x0001);
        assert_eq!(
            plain.refusal(true),
            Some(SecurityRefusal::EnhancedNotSupported)
        );
        assert_eq!(plain.refusal(false), None);
        assert_eq!(st(2, 0x0001 | 0x0020).refusal(true), None);
        // Frozen wins over locked: unfreezing is the first thing to do.
        assert_eq!(
            st(2, 0x0001 | 0x0004 | 0x0008).refusal(false),
            Some(SecurityRefusal::Frozen)
        );
    }

    #[test]
    fn data_blocks_match_acs3_tables() {
        let b = SecurityBlock::new(Who::User, b"drivelab").build();
        // Word 0: IDENTIFIER 0 (user), MASTER PASSWORD CAPABILITY 0 (High).
        assert_eq!(&b[0..2], &[0, 0]);
        // Words 1-16: the password bytes in order, NUL-padded.
        assert_eq!(&b[2..10], b"drivelab");
        assert!(b[10..34].iter().all(|&x| x == 0));
        assert!(b[34..].iter().all(|&x| x == 0));
        let e = SecurityBlock::new(Who::User, b"x").enhanced(true).build();
        assert_eq!(&e[0..2], &[0x02, 0x00]); // word 0 bit 1 ENHANCED ERASE
        let m = SecurityBlock::new(Who::Master, &[0xAB; 40])
            .maximum(true)
            .master_id(0xFFFE)
            .build();
        assert_eq!(&m[0..2], &[0x01, 0x01]); // bit 0 master, bit 8 Maximum
        assert!(m[2..34].iter().all(|&x| x == 0xAB)); // cut to 32 bytes
        assert_eq!(&m[34..36], &[0xFE, 0xFF]); // word 17
        assert!(m[36..].iter().all(|&x| x == 0));
    }

    #[test]
    fn command_bytes_match_acs3_and_sat() {
        for (c, code, data) in [
            (SecurityCommand::SetPassword, 0xF1, true),
            (SecurityCommand::Unlock, 0xF2, true),
            (SecurityCommand::ErasePrepare, 0xF3, false),
            (SecurityCommand::EraseUnit, 0xF4, true),
            (SecurityCommand::FreezeLock, 0xF5, false),
            (SecurityCommand::DisablePassword, 0xF6, true),
        ] {
            let cdb = c.pass_through().build16();
            assert_eq!(cdb[0], 0x85);
            assert_eq!(cdb[14], code, "{}", c.name());
            // 28-bit: EXTEND (byte 1 bit 0) clear.
            assert_eq!(cdb[1] & 1, 0);
            if data {
                // PROTOCOL 5 (PIO data-out); CK_COND, T_DIR out, BYT_BLOK,
                // T_LENGTH = COUNT; COUNT 7:0 = 1 block.
                assert_eq!(cdb[1] >> 1 & 0x0F, 5, "{}", c.name());
                assert_eq!(cdb[2], 0x26, "{}", c.name());
                assert_eq!(cdb[6], 1);
            } else {
                // PROTOCOL 3 (non-data); CK_COND; no transfer.
                assert_eq!(cdb[1] >> 1 & 0x0F, 3, "{}", c.name());
                assert_eq!(cdb[2], 0x24, "{}", c.name());
                assert_eq!(cdb[6], 0);
            }
            // Every one changes the drive's state: refused unclaimed.
            assert!(crate::scsi::modifies_medium(&cdb), "{}", c.name());
        }
    }

    #[test]
    fn an_unclaimed_handle_refuses_every_security_command() {
        let f = std::fs::File::open("/dev/null").unwrap();
        let sg = SgDevice::from_file(f, "/dev/null");
        let block = SecurityBlock::new(Who::User, TEMP_PASSWORD.as_bytes());
        for c in [
            SecurityCommand::SetPassword,
            SecurityCommand::Unlock,
            SecurityCommand::ErasePrepare,
            SecurityCommand::EraseUnit,
            SecurityCommand::FreezeLock,
            SecurityCommand::DisablePassword,
        ] {
            let e = send(&sg, c, &block, 1000).unwrap_err();
            assert!(
                matches!(
                    e,
                    AtaError::Scsi(crate::scsi::sg::SgError::Unclaimed { .. })
                ),
                "{}: {e:?}",
                c.name()
            );
        }
    }

    /// A drive double: answers IDENTIFY with its state, fails the commands
    /// named in `fail`, records what was sent and the passwords, and
    /// follows ACS-3's state changes.
    struct Fake {
        state: RefCell<SecurityState>,
        fail: Vec<u8>,
        /// Carried out, but reported failed (the host's timer ran out).
        lost: Vec<u8>,
        sent: RefCell<Vec<(u8, Vec<u8>)>>,
        stop_after: Option<(u8, &'static AtomicBool)>,
    }

    impl Fake {
        fn new(state: SecurityState) -> Fake {
            Fake {
                state: RefCell::new(state),
                fail: Vec::new(),
                lost: Vec::new(),
                sent: RefCell::new(Vec::new()),
                stop_after: None,
            }
        }
        fn codes(&self) -> Vec<u8> {
            self.sent.borrow().iter().map(|(c, _)| *c).collect()
        }
    }

    fn aborted(name: &str) -> AtaError {
        AtaError::BadData(format!("{name}: aborted (test)"))
    }

    impl AtaPort for Fake {
        fn send(
            &self,
            pt: &AtaPassThrough,
            name: &str,
            data: AtaData<'_>,
            _timeout_ms: Option<u32>,
        ) -> Result<Option<AtaRegisters>, AtaError> {
            let c = pt.taskfile().command;
            if c == command::IDENTIFY_DEVICE {
                if let AtaData::In(b) = data {
                    let s = *self.state.borrow();
                    let w128 = u16::from(s.supported)
                        | u16::from(s.enabled) << 1
                        | u16::from(s.locked) << 2
                        | u16::from(s.frozen) << 3
                        | u16::from(s.enhanced_erase_supported) << 5;
                    let w82 = u16::from(s.supported) << 1;
                    b.copy_from_slice(&identify_with(w82, 1, 2, w128));
                }
                return Ok(None);
            }
            let bytes = match data {
                AtaData::Out(b) => b.to_vec(),
                _ => Vec::new(),
            };
            self.sent.borrow_mut().push((c, bytes));
            if let Some((code, flag)) = self.stop_after {
                if code == c {
                    flag.store(true, Ordering::Relaxed);
                }
            }
            if self.fail.contains(&c) {
                return Err(aborted(name));
            }
            let mut s = self.state.borrow_mut();
            match c {
                0xF1 => s.enabled = true,
                0xF4 | 0xF6 => {
                    s.enabled = false;
                    s.locked = false;
                }
                0xF2 => s.locked = false,
                _ => {}
            }
            if self.lost.contains(&c) {
                return Err(aborted(name));
            }
            Ok(None)
        }
    }

    fn ready() -> SecurityState {
        SecurityState::from_words(2, 1, 2, 0x0001 | 0x0020)
    }

    #[test]
    fn the_sequence_sets_prepares_erases_and_leaves_no_password() {
        let f = Fake::new(ready());
        let stop = AtomicBool::new(false);
        let r = security_erase(&f, true, &stop).unwrap();
        assert_eq!(f.codes(), vec![0xF1, 0xF3, 0xF4]);
        let sent = f.sent.borrow();
        // SET PASSWORD: user, High, "drivelab".
        assert_eq!(&sent[0].1[0..2], &[0, 0]);
        assert_eq!(&sent[0].1[2..10], TEMP_PASSWORD.as_bytes());
        // ERASE UNIT: user, enhanced, same password.
        assert_eq!(&sent[2].1[0..2], &[0x02, 0]);
        assert_eq!(&sent[2].1[2..34], &sent[0].1[2..34]);
        assert!(!r.after.enabled);
        assert_eq!(r.estimate, EraseTime::Minutes(4));
        assert_eq!(r.steps.len(), 3);
    }

    #[test]
    fn a_failed_erase_unit_removes_the_password() {
        let mut f = Fake::new(ready());
        f.fail = vec![0xF4];
        let stop = AtomicBool::new(false);
        let e = security_erase(&f, false, &stop).unwrap_err();
        assert_eq!(f.codes(), vec![0xF1, 0xF3, 0xF4, 0xF6]);
        assert!(!f.state.borrow().enabled);
        assert!(matches!(
            e,
            SecurityEraseError::Failed {
                cleanup: Cleanup::Removed,
                ..
            }
        ));
        assert!(!e.password_left_set() && !e.nothing_changed());
    }

    #[test]
    fn a_refused_disable_is_retried_after_unlock_and_else_names_the_password() {
        // DISABLE PASSWORD refused once: UNLOCK, then DISABLE again... which
        // the fake also refuses: the error names the password.
        let mut f = Fake::new(ready());
        f.fail = vec![0xF3, 0xF6];
        let stop = AtomicBool::new(false);
        let e = security_erase(&f, false, &stop).unwrap_err();
        assert_eq!(f.codes(), vec![0xF1, 0xF3, 0xF6, 0xF2, 0xF6]);
        assert!(e.password_left_set());
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("'{TEMP_PASSWORD}' IS STILL SET")),
            "{msg}"
        );
        assert!(msg.contains("--security-disable drivelab"), "{msg}");
    }

    #[test]
    fn an_erase_unit_cut_off_by_the_host_but_done_by_the_drive_leaves_no_password_to_name() {
        // ERASE UNIT completes in the drive (no password) but the host's
        // timer ended it; DISABLE and UNLOCK are then refused, as a drive
        // with security disabled refuses them.
        let mut f = Fake::new(ready());
        f.lost = vec![0xF4];
        f.fail = vec![0xF6, 0xF2];
        let stop = AtomicBool::new(false);
        let e = security_erase(&f, true, &stop).unwrap_err();
        assert_eq!(f.codes(), vec![0xF1, 0xF3, 0xF4, 0xF6, 0xF2]);
        assert!(matches!(
            e,
            SecurityEraseError::Failed {
                cleanup: Cleanup::NoneLeft,
                ..
            }
        ));
        assert!(!e.password_left_set());
        let msg = e.to_string();
        assert!(
            !msg.contains("STILL SET") && msg.contains("no password left"),
            "{msg}"
        );
    }

    #[test]
    fn ctrl_c_after_the_password_is_set_removes_it_and_sends_no_erase() {
        static STOP: AtomicBool = AtomicBool::new(false);
        let mut f = Fake::new(ready());
        f.stop_after = Some((0xF1, &STOP));
        let e = security_erase(&f, false, &STOP).unwrap_err();
        assert_eq!(f.codes(), vec![0xF1, 0xF6]);
        assert!(matches!(
            e,
            SecurityEraseError::Stopped {
                cleanup: Cleanup::Removed,
                ..
            }
        ));
        assert!(!f.state.borrow().enabled);
    }

    #[test]
    fn refusals_send_nothing() {
        let stop = AtomicBool::new(false);
        for (w128, want) in [
            (0u16, SecurityRefusal::NotSupported),
            (0x0009, SecurityRefusal::Frozen),
            (0x0007, SecurityRefusal::Locked),
            (0x0003, SecurityRefusal::PasswordSet),
        ] {
            let mut s = SecurityState::from_words(0, 0, 0, w128);
            s.supported = w128 & 1 != 0;
            let f = Fake::new(s);
            match security_erase(&f, false, &stop) {
                Err(SecurityEraseError::Refused(r)) => assert_eq!(r, want),
                other => panic!("word 128 {w128:#x}: {other:?}"),
            }
            assert!(f.codes().is_empty(), "word 128 {w128:#x}");
        }
        // A failed SET PASSWORD changed nothing.
        let mut f = Fake::new(ready());
        f.fail = vec![0xF1];
        let e = security_erase(&f, false, &stop).unwrap_err();
        assert!(e.nothing_changed());
        assert_eq!(f.codes(), vec![0xF1]);
    }
}
