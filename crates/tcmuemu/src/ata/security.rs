//! The Security feature set (ACS-3 4.18, commands 7.41-7.46): user and
//! master passwords, the enabled / locked / frozen / count-expired states
//! (SEC1-SEC6), and SECURITY ERASE UNIT, normal (zeroes) and enhanced (the
//! drive's own pattern, [`ENHANCED_PATTERN`]).

use super::outcome::{command, MediumAction, Outcome};
use super::regs::Regs;

/// The byte an enhanced erase leaves in every byte of the medium (the
/// "vendor specific pattern" of ACS-3 7.43.1; a normal erase leaves zeroes).
pub const ENHANCED_PATTERN: u8 = 0x6C;
/// Failed password attempts before the count expires (ACS-3 4.18.8).
pub const MAX_ATTEMPTS: u8 = 5;

/// The feature set's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Security {
    /// The user password, when one is set (security enabled).
    pub user: Option<[u8; 32]>,
    /// The master password.
    pub master: [u8; 32],
    /// MASTER PASSWORD IDENTIFIER (IDENTIFY word 92).
    pub master_id: u16,
    /// MASTER PASSWORD CAPABILITY: Maximum (the master cannot unlock).
    pub maximum: bool,
    /// Locked: media access commands are refused until UNLOCK.
    pub locked: bool,
    /// Frozen: every security command that changes state is aborted.
    pub frozen: bool,
    /// Failed UNLOCK / ERASE UNIT / DISABLE attempts since power-on.
    pub attempts: u8,
    /// Whether the previous security command was ERASE PREPARE.
    prepared: bool,
    /// Normal erase time, IDENTIFY word 89 (units of 2 minutes).
    pub erase_time: u16,
    /// Enhanced erase time, word 90.
    pub enhanced_time: u16,
    /// Erases carried out: (enhanced, by master password).
    pub erases: Vec<(bool, bool)>,
    /// The next ERASE UNIT stops half way (a fault).
    pub fail_next_erase: bool,
    /// ERASE UNITs that stopped half way.
    pub failed_erases: u32,
}

impl Default for Security {
    fn default() -> Security {
        let mut master = [0u8; 32];
        master[..8].copy_from_slice(b"DLMASTER");
        Security {
            user: None,
            master,
            master_id: 0xFFFE,
            maximum: false,
            locked: false,
            frozen: false,
            attempts: 0,
            prepared: false,
            erase_time: 1,
            enhanced_time: 2,
            erases: Vec::new(),
            fail_next_erase: false,
            failed_erases: 0,
        }
    }
}

/// The 512-byte data block of SET PASSWORD, UNLOCK, ERASE UNIT and
/// DISABLE PASSWORD (ACS-3 tables 7.43.x), decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    master: bool,
    enhanced: bool,
    maximum: bool,
    password: [u8; 32],
    master_id: u16,
}

fn block(d: &[u8]) -> Option<Block> {
    let d = d.get(..512)?;
    let w0 = u16::from_le_bytes([d[0], d[1]]);
    let mut password = [0u8; 32];
    password.copy_from_slice(&d[2..34]);
    Some(Block {
        master: w0 & 1 != 0,
        enhanced: w0 & 2 != 0,
        maximum: w0 & 0x100 != 0,
        password,
        master_id: u16::from_le_bytes([d[34], d[35]]),
    })
}

impl Security {
    /// Whether security is enabled (a user password is set).
    pub fn enabled(&self) -> bool {
        self.user.is_some()
    }

    /// Whether the password-attempt count has expired.
    pub fn count_expired(&self) -> bool {
        self.attempts >= MAX_ATTEMPTS
    }

    /// IDENTIFY word 128 (ACS-3 7.12.7.55).
    pub fn word128(&self) -> u16 {
        1 | (u16::from(self.enabled()) << 1)
            | (u16::from(self.locked) << 2)
            | (u16::from(self.frozen) << 3)
            | (u16::from(self.count_expired()) << 4)
            | (1 << 5) // enhanced erase supported
            | (u16::from(self.maximum) << 8)
    }

    /// Whether `b`'s password is the one it names (user or master; the
    /// master does not count at level Maximum when `unlocking`).
    fn matches(&self, b: &Block, unlocking: bool) -> bool {
        if b.master {
            !(unlocking && self.maximum) && b.password == self.master
        } else {
            self.user == Some(b.password)
        }
    }

    fn failed_attempt(&mut self) -> Outcome {
        self.attempts = self.attempts.saturating_add(1).min(MAX_ATTEMPTS);
        Outcome::abort()
    }

    /// One security command (F1h-F6h) with its data-out.
    pub fn execute(&mut self, code: u8, data_out: &[u8]) -> Outcome {
        let prepared = std::mem::take(&mut self.prepared);
        if code == command::SECURITY_FREEZE_LOCK {
            if self.locked {
                return Outcome::abort();
            }
            self.frozen = true;
            return Outcome::ok(Regs::default());
        }
        if self.frozen && code != command::SECURITY_UNLOCK {
            return Outcome::abort();
        }
        if code == command::SECURITY_ERASE_PREPARE {
            self.prepared = true;
            return Outcome::ok(Regs::default());
        }
        let Some(b) = block(data_out) else {
            return Outcome::abort();
        };
        match code {
            command::SECURITY_SET_PASSWORD => self.set_password(&b),
            command::SECURITY_UNLOCK => self.unlock(&b),
            command::SECURITY_ERASE_UNIT => self.erase_unit(&b, prepared),
            command::SECURITY_DISABLE_PASSWORD => self.disable(&b),
            _ => Outcome::abort(),
        }
    }

    fn set_password(&mut self, b: &Block) -> Outcome {
        if self.locked {
            return Outcome::abort();
        }
        if b.master {
            self.master = b.password;
            if b.master_id != 0 && b.master_id != 0xFFFF {
                self.master_id = b.master_id;
            }
        } else {
            self.user = Some(b.password);
            self.maximum = b.maximum;
        }
        Outcome::ok(Regs::default())
    }

    fn unlock(&mut self, b: &Block) -> Outcome {
        if self.count_expired() {
            return Outcome::abort();
        }
        if !self.matches(b, true) {
            return self.failed_attempt();
        }
        self.locked = false;
        Outcome::ok(Regs::default())
    }

    fn disable(&mut self, b: &Block) -> Outcome {
        if self.locked || self.count_expired() {
            return Outcome::abort();
        }
        if !self.matches(b, true) {
            return self.failed_attempt();
        }
        self.user = None;
        self.maximum = false;
        Outcome::ok(Regs::default())
    }

    /// ERASE UNIT (ACS-3 7.43): only straight after ERASE PREPARE, with the
    /// user password or the master's; erases, then disables security. With
    /// the `erase-fail` fault it erases half the medium and is aborted,
    /// the password kept and the drive locked (as after an erase cut short).
    fn erase_unit(&mut self, b: &Block, prepared: bool) -> Outcome {
        if !prepared || self.count_expired() || !self.enabled() {
            return Outcome::abort();
        }
        if !self.matches(b, false) {
            return self.failed_attempt();
        }
        let fill = MediumAction::Fill(if b.enhanced { ENHANCED_PATTERN } else { 0 });
        if std::mem::take(&mut self.fail_next_erase) {
            self.failed_erases += 1;
            self.locked = true;
            let mut o = Outcome::abort();
            o.medium = Some(MediumAction::Half(Box::new(fill)));
            return o;
        }
        self.erases.push((b.enhanced, b.master));
        self.user = None;
        self.maximum = false;
        self.locked = false;
        self.attempts = 0;
        let mut o = Outcome::ok(Regs::default());
        o.medium = Some(fill);
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::ata::security::{SecurityBlock, Who};

    fn user(p: &[u8]) -> Vec<u8> {
        SecurityBlock::new(Who::User, p).build().to_vec()
    }

    #[test]
    fn drivelabs_sequence_erases_and_leaves_no_password() {
        let mut s = Security::default();
        assert!(!s
            .execute(command::SECURITY_SET_PASSWORD, &user(b"pw"))
            .failed());
        assert_eq!(s.word128() & 0x2, 0x2);
        assert!(!s.execute(command::SECURITY_ERASE_PREPARE, &[]).failed());
        let erase = SecurityBlock::new(Who::User, b"pw").enhanced(true).build();
        let o = s.execute(command::SECURITY_ERASE_UNIT, &erase);
        assert_eq!(o.medium, Some(MediumAction::Fill(ENHANCED_PATTERN)));
        assert!(!s.enabled());
        assert_eq!(s.erases, vec![(true, false)]);
    }

    #[test]
    fn erase_unit_without_prepare_or_with_a_wrong_password_is_aborted() {
        let mut s = Security::default();
        s.execute(command::SECURITY_SET_PASSWORD, &user(b"pw"));
        // No ERASE PREPARE just before.
        let o = s.execute(command::SECURITY_ERASE_UNIT, &user(b"pw"));
        assert!(o.failed() && o.medium.is_none());
        // Wrong password: aborted, an attempt counted.
        s.execute(command::SECURITY_ERASE_PREPARE, &[]);
        assert!(s
            .execute(command::SECURITY_ERASE_UNIT, &user(b"no"))
            .failed());
        assert_eq!(s.attempts, 1);
        assert!(s.enabled());
    }

    #[test]
    fn frozen_refuses_every_state_change() {
        let mut s = Security::default();
        assert!(!s.execute(command::SECURITY_FREEZE_LOCK, &[]).failed());
        assert_eq!(s.word128() & 0x8, 0x8);
        for code in [
            command::SECURITY_SET_PASSWORD,
            command::SECURITY_ERASE_PREPARE,
            command::SECURITY_ERASE_UNIT,
            command::SECURITY_DISABLE_PASSWORD,
        ] {
            assert!(s.execute(code, &user(b"pw")).failed(), "{code:02x}");
        }
        assert!(!s.enabled());
    }

    #[test]
    fn locked_unlocks_with_the_password_and_the_count_expires() {
        const OTHER: [u8; 32] = *b"someone else's password.........";
        let mut s = Security {
            user: Some(OTHER),
            locked: true,
            ..Security::default()
        };
        assert_eq!(s.word128() & 0x6, 0x6);
        for _ in 0..MAX_ATTEMPTS {
            assert!(s
                .execute(command::SECURITY_UNLOCK, &user(b"guess"))
                .failed());
        }
        assert!(s.count_expired());
        assert_eq!(s.word128() & 0x10, 0x10);
        // Even the right password is refused now.
        let right = OTHER;
        assert!(s.execute(command::SECURITY_UNLOCK, &user(&right)).failed());
        let mut fresh = Security {
            user: Some(right),
            locked: true,
            ..Security::default()
        };
        assert!(!fresh
            .execute(command::SECURITY_UNLOCK, &user(&right))
            .failed());
        assert!(!fresh.locked);
        assert!(!fresh
            .execute(command::SECURITY_DISABLE_PASSWORD, &user(&right))
            .failed());
        assert!(!fresh.enabled());
    }

    #[test]
    fn a_failed_erase_leaves_the_drive_locked_until_unlocked_and_disabled() {
        let mut s = Security {
            fail_next_erase: true,
            ..Security::default()
        };
        s.execute(command::SECURITY_SET_PASSWORD, &user(b"pw"));
        s.execute(command::SECURITY_ERASE_PREPARE, &[]);
        let o = s.execute(command::SECURITY_ERASE_UNIT, &user(b"pw"));
        assert!(o.failed());
        assert_eq!(
            o.medium,
            Some(MediumAction::Half(Box::new(MediumAction::Fill(0))))
        );
        assert!(s.enabled() && s.locked && s.erases.is_empty());
        assert_eq!((s.failed_erases, s.fail_next_erase), (1, false));
        // drivelab's clean-up: DISABLE refused while locked, UNLOCK, DISABLE.
        assert!(s
            .execute(command::SECURITY_DISABLE_PASSWORD, &user(b"pw"))
            .failed());
        assert!(!s.execute(command::SECURITY_UNLOCK, &user(b"pw")).failed());
        assert!(!s
            .execute(command::SECURITY_DISABLE_PASSWORD, &user(b"pw"))
            .failed());
        assert!(!s.enabled() && !s.locked);
        // The fault is spent: the next erase works.
        s.execute(command::SECURITY_SET_PASSWORD, &user(b"pw"));
        s.execute(command::SECURITY_ERASE_PREPARE, &[]);
        assert!(!s
            .execute(command::SECURITY_ERASE_UNIT, &user(b"pw"))
            .failed());
    }
}
