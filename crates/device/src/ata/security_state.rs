//! The drive's Security feature set state as IDENTIFY DEVICE reports it
//! (ACS-3): what IDENTIFY decoding and the security erase both read.

use std::time::Duration;

use serde::Serialize;

/// The time an IDENTIFY word 89 (normal erase) or 90 (enhanced erase)
/// reports (ACS-3 IDENTIFY DEVICE words 89-90): bit 15 selects the
/// extended format (time in bits 14:0) over the short one (bits 7:0); the
/// value times 2 is minutes; 0 means not reported, and the largest value
/// (255 short, 32767 extended) means "more than" the value before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "minutes")]
pub enum EraseTime {
    /// The word is 0.
    #[default]
    NotReported,
    /// About this many minutes.
    Minutes(u32),
    /// More than this many minutes (508 short, 65532 extended).
    MoreThan(u32),
}

impl EraseTime {
    /// Decode word 89 or 90.
    pub fn from_word(w: u16) -> EraseTime {
        let (v, max) = if w & 0x8000 != 0 {
            (w & 0x7FFF, 0x7FFF)
        } else {
            (w & 0x00FF, 0x00FF)
        };
        match v {
            0 => EraseTime::NotReported,
            v if v == max => EraseTime::MoreThan(u32::from(v - 1) * 2),
            v => EraseTime::Minutes(u32::from(v) * 2),
        }
    }

    /// Minutes when reported exactly.
    pub fn minutes(self) -> Option<u32> {
        match self {
            EraseTime::Minutes(m) => Some(m),
            _ => None,
        }
    }

    /// How long to wait for SECURITY ERASE UNIT: twice the reported time
    /// plus 10 minutes (drives underestimate; a timeout mid-erase leaves
    /// the drive locked until it finishes), 24 hours when the drive says
    /// nothing, 48 hours past a "more than" figure; at most 49 days (the
    /// SG_IO timeout is a 32-bit count of ms).
    pub fn timeout(self) -> Duration {
        let min = match self {
            EraseTime::NotReported => 24 * 60,
            EraseTime::Minutes(m) => m * 2 + 10,
            EraseTime::MoreThan(m) => m * 2 + 48 * 60,
        };
        Duration::from_secs(u64::from(min) * 60).min(Duration::from_millis(u64::from(u32::MAX)))
    }
}

impl std::fmt::Display for EraseTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EraseTime::NotReported => f.write_str("not reported"),
            EraseTime::Minutes(m) => write!(f, "about {m} min"),
            EraseTime::MoreThan(m) => write!(f, "more than {m} min"),
        }
    }
}

/// The drive's Security feature set state, from IDENTIFY DEVICE (ACS-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct SecurityState {
    /// Security feature set supported: word 82 bit 1 (word 128 bit 0 is a
    /// copy; either is taken).
    pub supported: bool,
    /// SECURITY ENABLED: a user password is set (word 128 bit 1).
    pub enabled: bool,
    /// SECURITY LOCKED: media access refused until SECURITY UNLOCK (word
    /// 128 bit 2).
    pub locked: bool,
    /// SECURITY FROZEN: every security command that changes state is
    /// aborted until the next power-on or hardware reset (word 128 bit 3).
    pub frozen: bool,
    /// SECURITY COUNT EXPIRED: five wrong passwords; unlock and erase are
    /// refused until a power cycle (word 128 bit 4).
    pub count_expired: bool,
    /// ENHANCED SECURITY ERASE SUPPORTED (word 128 bit 5).
    pub enhanced_erase_supported: bool,
    /// MASTER PASSWORD CAPABILITY: true = Maximum, false = High (word 128
    /// bit 8).
    pub master_password_maximum: bool,
    /// Normal erase time (word 89).
    pub normal_erase_time: EraseTime,
    /// Enhanced erase time (word 90).
    pub enhanced_erase_time: EraseTime,
}

impl SecurityState {
    /// Decode from the IDENTIFY DEVICE words 82, 89, 90 and 128.
    pub fn from_words(w82: u16, w89: u16, w90: u16, w128: u16) -> SecurityState {
        SecurityState {
            supported: w82 & (1 << 1) != 0 || w128 & 1 != 0,
            enabled: w128 & (1 << 1) != 0,
            locked: w128 & (1 << 2) != 0,
            frozen: w128 & (1 << 3) != 0,
            count_expired: w128 & (1 << 4) != 0,
            enhanced_erase_supported: w128 & (1 << 5) != 0,
            master_password_maximum: w128 & (1 << 8) != 0,
            normal_erase_time: EraseTime::from_word(w89),
            enhanced_erase_time: EraseTime::from_word(w90),
        }
    }

    /// Decode from the 512-byte IDENTIFY DEVICE data (`None` when shorter).
    pub fn parse(identify: &[u8]) -> Option<SecurityState> {
        let w = |i: usize| -> Option<u16> {
            Some(u16::from_le_bytes([
                *identify.get(2 * i)?,
                *identify.get(2 * i + 1)?,
            ]))
        };
        if identify.len() < 512 {
            return None;
        }
        Some(SecurityState::from_words(w(82)?, w(89)?, w(90)?, w(128)?))
    }

    /// The erase time of the mode asked for.
    pub fn erase_time(&self, enhanced: bool) -> EraseTime {
        if enhanced {
            self.enhanced_erase_time
        } else {
            self.normal_erase_time
        }
    }

    /// Why SECURITY ERASE UNIT (`enhanced` or normal) cannot run on a drive
    /// in this state, checked in the order a user fixes them; `None` when
    /// it can.
    pub fn refusal(&self, enhanced: bool) -> Option<SecurityRefusal> {
        if !self.supported {
            Some(SecurityRefusal::NotSupported)
        } else if self.frozen {
            Some(SecurityRefusal::Frozen)
        } else if self.count_expired {
            Some(SecurityRefusal::CountExpired)
        } else if self.locked {
            Some(SecurityRefusal::Locked)
        } else if self.enabled {
            Some(SecurityRefusal::PasswordSet)
        } else if enhanced && !self.enhanced_erase_supported {
            Some(SecurityRefusal::EnhancedNotSupported)
        } else {
            None
        }
    }
}

/// Why the drive's state rules the erase out (decided from IDENTIFY,
/// before anything is sent). Each displays as one line saying what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "kebab-case")]
pub enum SecurityRefusal {
    /// Word 82 bit 1 and word 128 bit 0 clear.
    #[error("ATA security erase is not supported by this drive (IDENTIFY word 82 bit 1 and word 128 bit 0 are clear: no Security feature set); use ata-sanitize, sct-write-same or stream")]
    NotSupported,
    /// Word 128 bit 3.
    #[error("the drive's ATA security is frozen (IDENTIFY word 128 bit 3, usually the BIOS sent SECURITY FREEZE LOCK at boot): suspend and resume the host (systemctl suspend) or hot-plug the drive (unplug and replug it while the host runs), then run again")]
    Frozen,
    /// Word 128 bit 4.
    #[error("the drive's password attempt counter has expired (IDENTIFY word 128 bit 4): power-cycle the drive, then run again")]
    CountExpired,
    /// Word 128 bit 2.
    #[error("the drive is locked by a user password drivelab does not know (IDENTIFY word 128 bit 2): unlock it first (hdparm --user-master u --security-unlock PASSWORD DEV)")]
    Locked,
    /// Word 128 bit 1.
    #[error("the drive already has a user password drivelab does not know (IDENTIFY word 128 bit 1): remove it first (hdparm --user-master u --security-disable PASSWORD DEV)")]
    PasswordSet,
    /// Enhanced asked for, word 128 bit 5 clear.
    #[error("the drive does not support enhanced security erase (IDENTIFY word 128 bit 5 is clear); use ata-security-erase (normal mode)")]
    EnhancedNotSupported,
}
