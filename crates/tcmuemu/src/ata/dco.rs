//! The Device Configuration Overlay feature set (ACS-2 4.8, DEVICE
//! CONFIGURATION B1h, 7.10): an overlay that makes the drive report less
//! than its factory capacity as its native max. DEVICE CONFIGURATION
//! IDENTIFY (C2h) reports the factory maximum, SET (C3h) lowers the native
//! max, RESTORE (C0h) undoes it, FREEZE LOCK (C1h) refuses both until a
//! power cycle. SET and RESTORE are aborted while a host protected area
//! is set (ACS-2 7.10.4, 7.10.2).

use super::device::Ata;
use super::outcome::Outcome;
use super::regs::Regs;

/// DEVICE CONFIGURATION subcommands (FEATURE).
pub mod sub {
    /// DEVICE CONFIGURATION RESTORE.
    pub const RESTORE: u16 = 0xC0;
    /// DEVICE CONFIGURATION FREEZE LOCK.
    pub const FREEZE_LOCK: u16 = 0xC1;
    /// DEVICE CONFIGURATION IDENTIFY.
    pub const IDENTIFY: u16 = 0xC2;
    /// DEVICE CONFIGURATION SET.
    pub const SET: u16 = 0xC3;
}

/// The overlay's data structure (ACS-2 table "Device Configuration
/// Overlay data structure"): revision 0002h, the maximum LBA (words 3-6),
/// the features the overlay may remove (words 7-8: SMART, security, HPA,
/// 48-bit), the integrity word.
pub fn identify(factory_blocks: u64) -> [u8; 512] {
    let mut w = [0u16; 256];
    w[0] = 0x0002;
    w[1] = 0x0007; // multiword DMA modes 0-2
    w[2] = 0x007F; // Ultra DMA modes 0-6
    for (i, v) in (factory_blocks - 1)
        .to_le_bytes()
        .chunks_exact(2)
        .take(4)
        .enumerate()
    {
        w[3 + i] = u16::from_le_bytes([v[0], v[1]]);
    }
    // Word 7, the feature sets the overlay could remove: SMART (bit 0),
    // Security (3), HPA (7), 48-bit addressing (8).
    w[7] = (1 << 0) | (1 << 3) | (1 << 7) | (1 << 8);
    super::identify::sector(&w)
}

impl Ata {
    /// One DEVICE CONFIGURATION subcommand.
    pub fn dco(&mut self, tf: &Regs, data_out: &[u8]) -> Outcome {
        let hpa_set = self.max_blocks < self.native_blocks;
        match tf.feature {
            sub::IDENTIFY => Outcome::data(identify(self.factory_blocks).to_vec()),
            sub::FREEZE_LOCK => {
                self.dco_frozen = true;
                Outcome::ok(Regs::default())
            }
            sub::RESTORE if !self.dco_frozen && !hpa_set => {
                self.native_blocks = self.factory_blocks;
                self.max_blocks = self.factory_blocks;
                Outcome::ok(Regs::default())
            }
            sub::SET if !self.dco_frozen && !hpa_set => {
                let Some(d) = data_out.get(..512) else {
                    return Outcome::abort();
                };
                let w = |i: usize| u64::from(u16::from_le_bytes([d[2 * i], d[2 * i + 1]]));
                let max = (0..4).fold(0u64, |a, i| a | (w(3 + i) << (16 * i)));
                if max >= self.factory_blocks || max == 0 {
                    return Outcome::abort();
                }
                self.native_blocks = max + 1;
                self.max_blocks = max + 1;
                Outcome::ok(Regs::default())
            }
            _ => Outcome::abort(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::health::hidden::DcoIdentify;

    fn tf(feature: u16) -> Regs {
        Regs {
            feature,
            command: 0xB1,
            ..Regs::default()
        }
    }

    fn set_block(max_lba: u64) -> Vec<u8> {
        let mut d = identify(max_lba + 1).to_vec();
        d[510] = 0;
        d[511] = 0;
        d
    }

    #[test]
    fn drivelab_reads_the_factory_max_and_set_restore_follow_the_rules() {
        let mut a = Ata::new("M", "S", "F", 1000);
        let id = DcoIdentify::parse(&a.dco(&tf(sub::IDENTIFY), &[]).data_in).expect("parses");
        assert_eq!(
            (id.revision, id.max_lba, id.checksum_ok),
            (2, 999, Some(true))
        );
        // SET lowers the native max; IDENTIFY still reports the factory's.
        assert!(!a.dco(&tf(sub::SET), &set_block(799)).failed());
        assert_eq!((a.native_blocks, a.max_blocks), (800, 800));
        let id = DcoIdentify::parse(&a.dco(&tf(sub::IDENTIFY), &[]).data_in).expect("parses");
        assert_eq!(id.max_lba, 999);
        // With an HPA set, RESTORE is aborted.
        a.max_blocks = 700;
        assert!(a.dco(&tf(sub::RESTORE), &[]).failed());
        a.max_blocks = 800;
        assert!(!a.dco(&tf(sub::RESTORE), &[]).failed());
        assert_eq!((a.native_blocks, a.max_blocks), (1000, 1000));
        // Beyond the factory max: aborted. Frozen: SET and RESTORE aborted.
        assert!(a.dco(&tf(sub::SET), &set_block(1000)).failed());
        assert!(!a.dco(&tf(sub::FREEZE_LOCK), &[]).failed());
        assert!(a.dco(&tf(sub::SET), &set_block(500)).failed());
        assert!(a.dco(&tf(sub::RESTORE), &[]).failed());
        assert_eq!(a.native_blocks, 1000);
    }
}
