//! SEND DIAGNOSTIC (1Dh, SPC-5 6.42) on the SAS personality: the
//! self-test codes (table "SELF-TEST CODE field") 001b background short,
//! 010b background extended, 100b abort the background one, 101b
//! foreground short, 110b foreground extended; and SELFTEST with code
//! 000b, the default self-test, which passes at once. A background test
//! runs the drive's short or extended time while the drive serves on; a
//! foreground one holds the command until it ends. Each ends in the
//! self-test results log page (10h, SPC-5 7.3.19), built here from the
//! same self-test state the SATA personality keeps
//! ([`crate::ata::selftest`]): twenty parameters, 0001h the newest.

use std::time::Instant;

use crate::ata::selftest::{Entry, Kind, SelfTest};
use crate::sense::Sense;

/// A decoded SEND DIAGNOSTIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendDiagnostic {
    /// SELF-TEST CODE (byte 1 bits 7:5).
    pub code: u8,
    /// SELFTEST (byte 1 bit 2).
    pub selftest: bool,
    /// PARAMETER LIST LENGTH (bytes 3-4).
    pub list_len: u16,
}

impl SendDiagnostic {
    /// Decode the 6-byte CDB.
    pub fn parse(b: &[u8]) -> Result<SendDiagnostic, Sense> {
        if b.len() < 6 {
            return Err(Sense::INVALID_FIELD_IN_CDB);
        }
        Ok(SendDiagnostic {
            code: b[1] >> 5,
            selftest: b[1] & 0x04 != 0,
            list_len: u16::from_be_bytes([b[3], b[4]]),
        })
    }
}

/// What the drive does for a SEND DIAGNOSTIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Done (GOOD now).
    Done,
    /// A foreground test of this long: the command returns when it ends.
    Foreground(std::time::Duration),
}

/// Self-test results (byte 0 bits 3:0 of a parameter).
mod result {
    pub const ABORTED_BY_HOST: u8 = 0x1;
    pub const IN_PROGRESS: u8 = 0xF;
}

/// Carry out `d` on the drive's self-test state at `now`: an unknown
/// code, SELFTEST with a code, a parameter list, or a test while one
/// runs: INVALID FIELD IN CDB.
pub fn execute(
    d: SendDiagnostic,
    st: &mut SelfTest,
    now: Instant,
    hours: u16,
) -> Result<Action, Sense> {
    if d.list_len != 0 || (d.selftest && d.code != 0) {
        return Err(Sense::INVALID_FIELD_IN_CDB);
    }
    let start = |st: &mut SelfTest, k: Kind, code: u8| {
        if st.start_with_code(k, code, now) {
            Ok(())
        } else {
            Err(Sense::INVALID_FIELD_IN_CDB)
        }
    };
    match d.code {
        0 if d.selftest => Ok(Action::Done),
        1 => start(st, Kind::Short, 1).map(|()| Action::Done),
        2 => start(st, Kind::Extended, 2).map(|()| Action::Done),
        4 => {
            st.abort(hours);
            Ok(Action::Done)
        }
        c @ (5 | 6) => {
            let k = if c == 5 { Kind::Short } else { Kind::Extended };
            start(st, k, c)?;
            Ok(Action::Foreground(st.duration(k)))
        }
        _ => Err(Sense::INVALID_FIELD_IN_CDB),
    }
}

/// One self-test results parameter's 16 bytes for `e` (None: the running
/// test, `running` its code).
fn parameter(e: Option<&Entry>, running: u8, hours: u16) -> [u8; 16] {
    let mut v = [0u8; 16];
    let (code, res, h, lba) = match e {
        // The ATA-style status of the shared state: 0 completed, 1x
        // aborted by the host, 7x a read failure (a segment failed).
        Some(e) => (
            e.code,
            match e.status >> 4 {
                0 => 0,
                1 => result::ABORTED_BY_HOST,
                _ => 0x7,
            },
            e.hours,
            e.failing_lba,
        ),
        None => (running, result::IN_PROGRESS, hours, None),
    };
    v[0] = (code << 5) | res;
    v[1] = u8::from(e.is_some_and(|e| e.failing_lba.is_some()));
    v[2..4].copy_from_slice(&h.to_be_bytes());
    v[4..12].copy_from_slice(&lba.unwrap_or(u64::MAX).to_be_bytes());
    if lba.is_some() {
        // MEDIUM ERROR, UNRECOVERED READ ERROR.
        v[12] = 0x03;
        v[13] = 0x11;
    }
    v
}

/// The values of log page 10h's twenty parameters (0001h first, the
/// newest; unused ones zero), at `hours`.
pub fn results(st: &SelfTest, hours: u16) -> Vec<[u8; 16]> {
    let mut out: Vec<[u8; 16]> = Vec::with_capacity(20);
    if let Some((_, code, _)) = st.running {
        out.push(parameter(None, code, hours));
    }
    for e in st.log.iter().rev() {
        if out.len() == 20 {
            break;
        }
        out.push(parameter(Some(e), 0, hours));
    }
    out.resize(20, [0u8; 16]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cdb(code: u8, selftest: bool) -> SendDiagnostic {
        SendDiagnostic::parse(&[0x1D, (code << 5) | (u8::from(selftest) << 2), 0, 0, 0, 0])
            .expect("cdb")
    }

    #[test]
    fn drivelabs_send_diagnostic_decodes() {
        use drivelab_device::health::selftest::{send_diagnostic, Kind as K};
        let d = SendDiagnostic::parse(&send_diagnostic(Some(K::Short))).expect("short");
        assert_eq!((d.code, d.selftest), (1, false));
        let d = SendDiagnostic::parse(&send_diagnostic(Some(K::Extended))).expect("extended");
        assert_eq!(d.code, 2);
        let d = SendDiagnostic::parse(&send_diagnostic(None)).expect("abort");
        assert_eq!(d.code, 4);
    }

    #[test]
    fn background_tests_run_then_land_in_page_10h() {
        let mut st = SelfTest {
            short: Duration::from_secs(4),
            extended: Duration::from_secs(16),
            ..SelfTest::default()
        };
        let t0 = Instant::now();
        assert_eq!(execute(cdb(1, false), &mut st, t0, 3), Ok(Action::Done));
        // One at a time.
        assert!(execute(cdb(2, false), &mut st, t0, 3).is_err());
        let r = results(&st, 3);
        assert_eq!((r[0][0], r[1][0]), ((1 << 5) | 0xF, 0));
        st.advance(t0 + Duration::from_secs(4), 3);
        let r = results(&st, 3);
        assert_eq!(r[0][0], 1 << 5, "short, completed");
        assert_eq!(
            &r[0][2..12],
            &[0, 3, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        );
        // An extended one aborted by code 100b.
        execute(cdb(2, false), &mut st, t0, 4).expect("extended");
        execute(cdb(4, false), &mut st, t0, 4).expect("abort");
        let r = results(&st, 4);
        assert_eq!((r[0][0], r[1][0]), ((2 << 5) | 1, 1 << 5));
        // A foreground test holds the command for the test's time.
        assert_eq!(
            execute(cdb(6, false), &mut st, t0, 4),
            Ok(Action::Foreground(Duration::from_secs(16)))
        );
        // SELFTEST: the default self-test; with a code, or a parameter
        // list, or code 3 or 7: refused.
        let mut idle = SelfTest::default();
        assert_eq!(execute(cdb(0, true), &mut idle, t0, 0), Ok(Action::Done));
        assert!(execute(cdb(1, true), &mut idle, t0, 0).is_err());
        assert!(execute(cdb(3, false), &mut idle, t0, 0).is_err());
        let mut d = cdb(1, false);
        d.list_len = 4;
        assert!(execute(d, &mut idle, t0, 0).is_err());
    }

    #[test]
    fn a_failed_test_names_its_lba_and_sense() {
        let mut st = SelfTest {
            short: Duration::from_secs(10),
            bad_lba: Some(500),
            blocks: 1000,
            ..SelfTest::default()
        };
        let t0 = Instant::now();
        execute(cdb(1, false), &mut st, t0, 2).expect("short");
        st.advance(t0 + Duration::from_secs(5), 2);
        let r = results(&st, 2);
        assert_eq!(r[0][0], (1 << 5) | 7);
        assert_eq!(u64::from_be_bytes(r[0][4..12].try_into().expect("8")), 500);
        assert_eq!((r[0][12], r[0][13]), (3, 0x11));
    }
}
