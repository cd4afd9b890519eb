//! SMART self-tests (ACS-3 7.48.4, SMART EXECUTE OFF-LINE IMMEDIATE
//! D4h): the short (01h) and extended (02h) tests run in off-line mode for
//! a set time, with their progress in SMART READ DATA byte 363 (bits 7:4
//! the execution status, Fh while running; 3:0 the tenths left); 7Fh
//! aborts the one running; 81h and 82h run them in captive mode (the
//! command returns when the test ends). Each test ends in the SMART
//! self-test log (log 06h, ACS-3 9.22: 21 descriptors of 24 bytes, byte
//! 508 the newest) and the extended one (log 07h, 9.10: descriptors of 26
//! bytes with a 48-bit LBA), newest first in neither: both are rings.
//! A drive with a sector it cannot read ([`SelfTest::bad_lba`]) fails
//! every test when the test's scan reaches it: execution status 7h (a
//! read element failed) with the tenths left, and the LBA in the logs.

use std::time::{Duration, Instant};

/// Which test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Short.
    Short,
    /// Extended.
    Extended,
}

impl Kind {
    /// Its subcommand (LBA 7:0) in off-line mode.
    pub fn code(self) -> u8 {
        match self {
            Kind::Short => 0x01,
            Kind::Extended => 0x02,
        }
    }
}

/// One logged test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The subcommand that started it (LBA 7:0).
    pub code: u8,
    /// Execution status (bits 7:4: 0 completed, 1 aborted by the host)
    /// and the tenths left (3:0).
    pub status: u8,
    /// Power-on hours when it ended.
    pub hours: u16,
    /// The LBA of the first failure, for a test that failed.
    pub failing_lba: Option<u64>,
}

/// The self-test state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SelfTest {
    /// How long the short test runs.
    pub short: Duration,
    /// How long the extended test runs.
    pub extended: Duration,
    /// The running test: what, its subcommand, since when.
    pub running: Option<(Kind, u8, Instant)>,
    /// Byte 363 when none runs: the last one's execution status.
    pub last_status: u8,
    /// Every test that ended, oldest first.
    pub log: Vec<Entry>,
    /// Off-line data collection (subcommand 00h) was run: it completes at
    /// once (byte 362 02h).
    pub offline_done: bool,
    /// A sector the drive cannot read: a test fails when its scan, which
    /// runs from LBA 0 to `blocks` over the test's time, reaches it.
    pub bad_lba: Option<u64>,
    /// The blocks a test scans.
    pub blocks: u64,
}

/// Execution status 7h: completed, a read element failed.
pub const READ_FAILURE: u8 = 0x70;

impl SelfTest {
    /// How long `k` runs.
    pub fn duration(&self, k: Kind) -> Duration {
        match k {
            Kind::Short => self.short,
            Kind::Extended => self.extended,
        }
    }

    /// End the running test if its time is up, or if its scan has
    /// reached the bad sector.
    pub fn advance(&mut self, now: Instant, hours: u16) {
        let Some((k, code, t0)) = self.running else {
            return;
        };
        let total = self.duration(k);
        let ran = now.duration_since(t0);
        if let Some(lba) = self.bad_lba.filter(|l| *l < self.blocks) {
            let at = lba as f64 / self.blocks as f64;
            if ran.as_secs_f64() >= total.as_secs_f64() * at {
                let left = ((1.0 - at) * 10.0).ceil().clamp(0.0, 9.0) as u8;
                self.end(code, READ_FAILURE | left, hours, Some(lba));
                return;
            }
        }
        if ran >= total {
            self.end(code, 0x00, hours, None);
        }
    }

    fn end(&mut self, code: u8, status: u8, hours: u16, failing_lba: Option<u64>) {
        self.running = None;
        self.last_status = status;
        self.log.push(Entry {
            code,
            status,
            hours,
            failing_lba,
        });
    }

    /// Start `k` (off-line mode); `false` when one is already running.
    pub fn start(&mut self, k: Kind, now: Instant) -> bool {
        self.start_with_code(k, k.code(), now)
    }

    /// Start `k`, logged with `code` (the SCSI self-test code on the SAS
    /// personality); `false` when one is already running.
    pub fn start_with_code(&mut self, k: Kind, code: u8, now: Instant) -> bool {
        if self.running.is_some() {
            return false;
        }
        self.running = Some((k, code, now));
        true
    }

    /// Abort the running test (7Fh): logged as aborted by the host.
    pub fn abort(&mut self, hours: u16) {
        if let Some((_, code, _)) = self.running {
            self.end(code, 0x10, hours, None);
        }
    }

    /// Byte 363 now: Fh with the tenths left while one runs.
    pub fn execution_status(&self, now: Instant) -> u8 {
        match self.running {
            Some((k, _, t0)) => {
                let total = self.duration(k).as_secs_f64().max(0.001);
                let done = now.duration_since(t0).as_secs_f64() / total;
                let left = ((1.0 - done.min(1.0)) * 10.0).ceil() as u8;
                0xF0 | left.clamp(1, 9)
            }
            None => self.last_status,
        }
    }

    /// The polling times in minutes SMART READ DATA gives (bytes 372,
    /// 373): at least one.
    pub fn polling_minutes(&self) -> (u8, u8) {
        let m = |d: Duration| d.as_secs().div_ceil(60).clamp(1, 254) as u8;
        (m(self.short), m(self.extended))
    }

    /// The newest 21 (log 06h) or 19 per page (log 07h) entries, and the
    /// index of the newest among them.
    fn ring(&self, slots: usize) -> (Vec<Entry>, usize) {
        let n = self.log.len();
        // Slot i holds entry number k with k % slots == i.
        let mut out = vec![None; slots];
        for (k, e) in self.log.iter().enumerate().skip(n.saturating_sub(slots)) {
            out[k % slots] = Some(*e);
        }
        let newest = if n == 0 { 0 } else { (n - 1) % slots + 1 };
        (
            out.into_iter()
                .map(|e| {
                    e.unwrap_or(Entry {
                        code: 0,
                        status: 0,
                        hours: 0,
                        failing_lba: None,
                    })
                })
                .collect(),
            newest,
        )
    }

    /// The SMART self-test log (06h), one 512-byte page.
    pub fn smart_log(&self) -> Vec<u8> {
        let mut d = vec![0u8; 512];
        d[0..2].copy_from_slice(&1u16.to_le_bytes());
        let (slots, newest) = self.ring(21);
        if newest > 0 {
            for (i, e) in slots.iter().enumerate().filter(|(_, e)| e.code != 0) {
                let at = 2 + 24 * i;
                d[at] = e.code;
                d[at + 1] = e.status;
                d[at + 2..at + 4].copy_from_slice(&e.hours.to_le_bytes());
                // The failing LBA (28 bits; none: 0).
                let lba = e.failing_lba.unwrap_or(0).min(0x0FFF_FFFF) as u32;
                d[at + 5..at + 9].copy_from_slice(&lba.to_le_bytes());
            }
        }
        d[508] = newest as u8;
        checksum(&mut d);
        d
    }

    /// The extended self-test log (07h), page 0 (19 descriptors).
    pub fn extended_log(&self) -> Vec<u8> {
        let mut d = vec![0u8; 512];
        d[0] = 1; // version
        let (slots, newest) = self.ring(19);
        d[2..4].copy_from_slice(&(newest as u16).to_le_bytes());
        if newest > 0 {
            for (i, e) in slots.iter().enumerate().filter(|(_, e)| e.code != 0) {
                let at = 4 + 26 * i;
                d[at] = e.code;
                d[at + 1] = e.status;
                d[at + 2..at + 4].copy_from_slice(&e.hours.to_le_bytes());
                let lba = e.failing_lba.unwrap_or(0).to_le_bytes();
                d[at + 5..at + 11].copy_from_slice(&lba[..6]);
            }
        }
        checksum(&mut d);
        d
    }
}

/// The last byte makes the 512 bytes sum to zero.
pub fn checksum(d: &mut [u8]) {
    let s = d[..511].iter().fold(0u8, |a, b| a.wrapping_add(*b));
    d[511] = 0u8.wrapping_sub(s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::health::selftest::ata_log_latest;

    #[test]
    fn a_test_runs_its_time_then_lands_in_both_logs() {
        let mut s = SelfTest {
            short: Duration::from_secs(10),
            extended: Duration::from_secs(90),
            ..SelfTest::default()
        };
        let t0 = Instant::now();
        assert!(s.start(Kind::Short, t0));
        assert!(!s.start(Kind::Extended, t0), "one at a time");
        assert_eq!(s.execution_status(t0), 0xF9);
        assert_eq!(s.execution_status(t0 + Duration::from_secs(5)), 0xF5);
        s.advance(t0 + Duration::from_secs(9), 7);
        assert!(s.running.is_some());
        s.advance(t0 + Duration::from_secs(10), 7);
        assert_eq!(s.execution_status(t0), 0x00);
        let latest = ata_log_latest(&s.smart_log()).expect("an entry");
        assert_eq!(
            (latest.code, latest.result, latest.power_on_hours),
            (1, 0, 7)
        );
        // An extended test aborted by the host.
        assert!(s.start(Kind::Extended, t0));
        s.abort(8);
        let latest = ata_log_latest(&s.smart_log()).expect("an entry");
        assert_eq!((latest.code, latest.result), (2, 1));
        assert_eq!(s.last_status, 0x10);
        let x = s.extended_log();
        assert_eq!((x[2], x[4], x[30], x[31]), (2, 1, 2, 0x10));
        assert_eq!(x.iter().fold(0u8, |a, b| a.wrapping_add(*b)), 0);
        assert_eq!(s.polling_minutes(), (1, 2));
    }

    #[test]
    fn a_test_fails_where_its_scan_meets_the_bad_sector() {
        let mut s = SelfTest {
            short: Duration::from_secs(10),
            extended: Duration::from_secs(40),
            bad_lba: Some(0x0123_4567),
            blocks: 0x0200_0000,
            ..SelfTest::default()
        };
        let t0 = Instant::now();
        assert!(s.start(Kind::Extended, t0));
        // The bad LBA is 57 % of the way: the scan reaches it at 22.8 s.
        s.advance(t0 + Duration::from_secs(22), 9);
        assert!(s.running.is_some());
        s.advance(t0 + Duration::from_secs(23), 9);
        assert_eq!(s.execution_status(t0), 0x75, "read failure, 50 % left");
        let latest = ata_log_latest(&s.smart_log()).expect("an entry");
        assert_eq!((latest.code, latest.result), (2, 7));
        assert_eq!(latest.failing_lba, Some(0x0123_4567));
        let x = s.extended_log();
        assert_eq!(&x[9..15], &[0x67, 0x45, 0x23, 0x01, 0x00, 0x00]);
        // A test that stops before the bad sector does not fail.
        s.bad_lba = Some(s.blocks);
        assert!(s.start(Kind::Short, t0));
        s.advance(t0 + Duration::from_secs(10), 9);
        assert_eq!(s.last_status, 0);
    }

    #[test]
    fn the_smart_log_is_a_ring_of_21() {
        let mut s = SelfTest::default();
        for h in 0..25u16 {
            s.start(Kind::Short, Instant::now());
            s.advance(Instant::now(), h);
        }
        let d = s.smart_log();
        // 25 tests: the newest (hours 24) is entry 25 -> slot 4 (index 4).
        assert_eq!(d[508], 4);
        let latest = ata_log_latest(&d).expect("an entry");
        assert_eq!(latest.power_on_hours, 24);
        assert_eq!(d.iter().fold(0u8, |a, b| a.wrapping_add(*b)), 0);
    }
}
