//! Device Self-test (admin 14h, NVMe Base 1.4 5.8) and the Device
//! Self-test log (Get Log Page 06h, 5.14.1.6): a short (STC 1h) or
//! extended (2h) test of the controller and the namespaces NSID names
//! (FFFFFFFFh every one, 0 the controller only) runs in the background
//! for its time, one at a time (a second one gets Device Self-test In
//! Progress); STC Fh aborts it. Each ends in the log: twenty results of
//! 28 bytes, newest first, after the current operation and its percent.
//! A namespace with a block it cannot read (`bad`) fails a test that
//! covers it when the test's scan reaches the block: result 7h (a segment
//! failed), segment 2 (the media), the NSID and the failing LBA valid,
//! status Unrecovered Read Error (media, 81h).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::cmd::{put, Sqe, Status};

/// Results the log keeps.
pub const RESULTS: usize = 20;
/// Device Self-test In Progress (command specific 1Dh).
pub const IN_PROGRESS: Status = Status {
    sct: 1,
    sc: 0x1D,
    dnr: true,
};

/// Self-test codes (CDW10 bits 3:0).
pub mod stc {
    /// Short.
    pub const SHORT: u8 = 0x1;
    /// Extended.
    pub const EXTENDED: u8 = 0x2;
    /// Abort.
    pub const ABORT: u8 = 0xF;
}

/// One ended test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestResult {
    /// Its self-test code.
    pub stc: u8,
    /// Its result (0 no error, 1 aborted by a Device Self-test command,
    /// 7 a segment failed).
    pub result: u8,
    /// The NSID it covered.
    pub nsid: u32,
    /// Power-on hours when it ended.
    pub hours: u64,
    /// The failing (NSID, LBA), when one failed.
    pub failing: Option<(u32, u64)>,
}

/// The self-test state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfTest {
    /// How long the short test runs.
    pub short: Duration,
    /// How long the extended test runs.
    pub extended: Duration,
    /// A block the drive cannot read: (NSID, LBA, the namespace's blocks).
    pub bad: Option<(u32, u64, u64)>,
    /// The running test: code, NSID, since when.
    pub running: Option<(u8, u32, Instant)>,
    /// The results, newest first.
    pub log: VecDeque<TestResult>,
}

impl Default for SelfTest {
    fn default() -> SelfTest {
        SelfTest {
            short: Duration::from_secs(5),
            extended: Duration::from_secs(20),
            bad: None,
            running: None,
            log: VecDeque::new(),
        }
    }
}

impl SelfTest {
    fn duration(&self, code: u8) -> Duration {
        if code == stc::SHORT {
            self.short
        } else {
            self.extended
        }
    }

    /// Where the test of `nsid` fails: the bad block's place in the scan
    /// (0..1) and the block, when the test covers it.
    fn failure(&self, nsid: u32) -> Option<(f64, u32, u64)> {
        let (ns, lba, blocks) = self.bad?;
        (nsid == ns || nsid == u32::MAX).then(|| (lba as f64 / blocks.max(1) as f64, ns, lba))
    }

    /// End the running test if its time is up or its scan met the bad
    /// block; `hours` the power-on hours now.
    pub fn advance(&mut self, now: Instant, hours: u64) {
        let Some((code, nsid, t0)) = self.running else {
            return;
        };
        let total = self.duration(code).as_secs_f64();
        let ran = now.duration_since(t0).as_secs_f64();
        if let Some((at, ns, lba)) = self.failure(nsid) {
            if ran >= total * at {
                self.end(code, 7, nsid, hours, Some((ns, lba)));
                return;
            }
        }
        if ran >= total {
            self.end(code, 0, nsid, hours, None);
        }
    }

    fn end(&mut self, stc: u8, result: u8, nsid: u32, hours: u64, failing: Option<(u32, u64)>) {
        self.running = None;
        self.log.push_front(TestResult {
            stc,
            result,
            nsid,
            hours,
            failing,
        });
        self.log.truncate(RESULTS);
    }

    /// Device Self-test: CDW10 STC, the command's NSID; `namespaces` how
    /// many there are.
    pub fn command(&mut self, sqe: &Sqe, namespaces: u32, now: Instant, hours: u64) -> Status {
        self.advance(now, hours);
        let nsid = sqe.nsid();
        if nsid != 0 && nsid != u32::MAX && nsid > namespaces {
            return Status::INVALID_NS;
        }
        match (sqe.cdw(10) & 0xF) as u8 {
            c @ (stc::SHORT | stc::EXTENDED) => {
                if self.running.is_some() {
                    return IN_PROGRESS;
                }
                self.running = Some((c, nsid, now));
                Status::SUCCESS
            }
            stc::ABORT => {
                if let Some((c, n, _)) = self.running {
                    self.end(c, 1, n, hours, None);
                }
                Status::SUCCESS
            }
            _ => Status::INVALID_FIELD,
        }
    }

    /// The Device Self-test log (564 bytes) at `now`.
    pub fn log_page(&self, now: Instant) -> Vec<u8> {
        let mut d = vec![0u8; 4 + 28 * RESULTS];
        if let Some((code, _, t0)) = self.running {
            let done =
                now.duration_since(t0).as_secs_f64() / self.duration(code).as_secs_f64().max(0.001);
            d[0] = code;
            d[1] = (done.min(0.99) * 100.0) as u8;
        }
        for i in 0..RESULTS {
            let e = &mut d[4 + 28 * i..4 + 28 * (i + 1)];
            let Some(r) = self.log.get(i) else {
                e[0] = 0x0F; // unused
                continue;
            };
            e[0] = (r.stc << 4) | r.result;
            put(e, 4, &r.hours.to_le_bytes());
            if let Some((ns, lba)) = r.failing {
                e[1] = 2; // the segment that failed: the media
                e[2] = 0x0F; // NSID, FLBA, SCT and SC valid
                put(e, 8, &ns.to_le_bytes());
                put(e, 16, &lba.to_le_bytes());
                e[24] = 2; // media and data integrity errors
                e[25] = 0x81; // Unrecovered Read Error
            } else {
                e[2] = 0x01;
                put(e, 8, &r.nsid.to_le_bytes());
            }
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(code: u32, nsid: u32) -> Sqe {
        Sqe::new(0x14, 1).with_nsid(nsid).with_cdw(10, code)
    }

    #[test]
    fn a_test_runs_then_fails_at_the_bad_block() {
        let mut st = SelfTest {
            short: Duration::from_secs(10),
            bad: Some((1, 600, 1000)),
            ..SelfTest::default()
        };
        let t0 = Instant::now();
        assert_eq!(st.command(&cmd(1, 1), 2, t0, 3), Status::SUCCESS);
        assert_eq!(st.command(&cmd(2, 1), 2, t0, 3), IN_PROGRESS);
        let p = st.log_page(t0 + Duration::from_secs(5));
        assert_eq!(
            (p[0], p[1], p[4]),
            (1, 50, 0x0F),
            "running, 50 %, no result yet"
        );
        // The scan reaches block 600 of 1000 at 6 s.
        st.advance(t0 + Duration::from_secs(5), 3);
        assert!(st.running.is_some());
        st.advance(t0 + Duration::from_secs(6), 3);
        let p = st.log_page(t0);
        let lba = u64::from_le_bytes(p[20..28].try_into().expect("8 bytes"));
        assert_eq!((p[0], p[4], p[5], p[6], lba), (0, 0x17, 2, 0x0F, 600));
        assert_eq!(
            (p[12], p[28], p[29]),
            (1, 2, 0x81),
            "NSID 1, Unrecovered Read Error"
        );
        // Namespace 2 has no bad block: its test passes; an abort.
        st.command(&cmd(1, 2), 2, t0, 3);
        st.advance(t0 + Duration::from_secs(10), 4);
        st.command(&cmd(2, 2), 2, t0, 4);
        st.command(&cmd(0xF, 0), 2, t0, 4);
        let p = st.log_page(t0);
        assert_eq!((p[4], p[32], p[60]), (0x21, 0x10, 0x17));
        assert_eq!(p[4 + 28 * 3], 0x0F, "unused");
        // Another code, or a namespace that does not exist.
        assert_eq!(st.command(&cmd(3, 1), 2, t0, 4), Status::INVALID_FIELD);
        assert_eq!(st.command(&cmd(1, 3), 2, t0, 4), Status::INVALID_NS);
    }
}
