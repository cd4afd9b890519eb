//! SCSI LOG SENSE (4Dh): the CDB, the log page and parameter-list parser of
//! SPC-5 (7.3 "Log parameters"), and the decoders of the pages a drive's
//! health shows in: supported pages (00h), write / read / verify error
//! counters (02h / 03h / 05h), non-medium errors (06h), temperature (0Dh),
//! start-stop cycles (0Eh), self-test results (10h) and informational
//! exceptions (2Fh).
//!
//! A log page is a 4-byte header (byte 0 bits 5:0 page code, byte 1
//! subpage, bytes 2-3 page length) and parameters, each a 4-byte header
//! (bytes 0-1 parameter code, byte 2 control bits, byte 3 length) and that
//! many value bytes. Counters are big-endian of any length up to 8 bytes.

use serde::Serialize;

use crate::scsi::asc_ascq_name;
use crate::scsi::sg::{ScsiCommand, SgDevice, SgError};

/// The LOG SENSE opcode.
pub const LOG_SENSE: u8 = 0x4D;

/// Page codes decoded here.
pub mod page {
    /// Supported log pages.
    pub const SUPPORTED: u8 = 0x00;
    /// Write error counter.
    pub const WRITE_ERRORS: u8 = 0x02;
    /// Read error counter.
    pub const READ_ERRORS: u8 = 0x03;
    /// Verify error counter.
    pub const VERIFY_ERRORS: u8 = 0x05;
    /// Non-medium error.
    pub const NON_MEDIUM: u8 = 0x06;
    /// Temperature.
    pub const TEMPERATURE: u8 = 0x0D;
    /// Start-stop cycle counter.
    pub const START_STOP: u8 = 0x0E;
    /// Self-test results.
    pub const SELF_TEST: u8 = 0x10;
    /// Informational exceptions.
    pub const INFORMATIONAL_EXCEPTIONS: u8 = 0x2F;
}

/// LOG SENSE CDB builder (SPC-5 6.7): byte 2 PC (7:6) and page code (5:0),
/// byte 3 subpage, bytes 5-6 parameter pointer, bytes 7-8 allocation length.
#[derive(Debug, Clone, Copy)]
pub struct LogSense {
    page: u8,
    subpage: u8,
    pc: u8,
    pointer: u16,
    alloc_len: u16,
}

impl LogSense {
    /// LOG SENSE of `page` (cumulative values, PC 01b), up to `alloc_len` bytes.
    pub fn new(page: u8, alloc_len: u16) -> Self {
        LogSense {
            page: page & 0x3F,
            subpage: 0,
            pc: 1,
            pointer: 0,
            alloc_len,
        }
    }
    /// Subpage code.
    pub fn subpage(mut self, s: u8) -> Self {
        self.subpage = s;
        self
    }
    /// Page control (2 bits): 0 current threshold, 1 cumulative, 2 default
    /// threshold, 3 default cumulative.
    pub fn pc(mut self, pc: u8) -> Self {
        self.pc = pc & 0x03;
        self
    }
    /// First parameter code to return.
    pub fn pointer(mut self, p: u16) -> Self {
        self.pointer = p;
        self
    }
    /// The 10-byte CDB.
    pub fn build(self) -> [u8; 10] {
        let p = self.pointer.to_be_bytes();
        let a = self.alloc_len.to_be_bytes();
        [
            LOG_SENSE,
            0,
            (self.pc << 6) | self.page,
            self.subpage,
            0,
            p[0],
            p[1],
            a[0],
            a[1],
            0,
        ]
    }
}

/// One log parameter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Parameter {
    /// Parameter code.
    pub code: u16,
    /// Control byte (DU, TSD, ETC, TMC, FORMAT AND LINKING).
    pub control: u8,
    /// The value bytes.
    #[serde(skip)]
    pub value: Vec<u8>,
}

impl Parameter {
    /// The value as a big-endian unsigned number (`None` when empty or
    /// longer than 8 bytes).
    pub fn number(&self) -> Option<u64> {
        if self.value.is_empty() || self.value.len() > 8 {
            return None;
        }
        Some(
            self.value
                .iter()
                .fold(0u64, |a, &b| (a << 8) | u64::from(b)),
        )
    }
}

/// A parsed log page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPage {
    /// Page code (byte 0 bits 5:0).
    pub page: u8,
    /// Subpage code (byte 1; valid when SPF, byte 0 bit 6).
    pub subpage: u8,
    /// The parameters, in order.
    pub parameters: Vec<Parameter>,
}

impl LogPage {
    /// Parse a page as returned (header included); a parameter that runs
    /// past the data ends the list. `None` when the header is missing.
    pub fn parse(d: &[u8]) -> Option<LogPage> {
        if d.len() < 4 {
            return None;
        }
        let end = (4 + usize::from(u16::from_be_bytes([d[2], d[3]]))).min(d.len());
        let mut parameters = Vec::new();
        let mut at = 4;
        while at + 4 <= end {
            let len = usize::from(d[at + 3]);
            if at + 4 + len > end {
                break;
            }
            parameters.push(Parameter {
                code: u16::from_be_bytes([d[at], d[at + 1]]),
                control: d[at + 2],
                value: d[at + 4..at + 4 + len].to_vec(),
            });
            at += 4 + len;
        }
        Some(LogPage {
            page: d[0] & 0x3F,
            subpage: d[1],
            parameters,
        })
    }

    /// The parameter with `code`.
    pub fn param(&self, code: u16) -> Option<&Parameter> {
        self.parameters.iter().find(|p| p.code == code)
    }

    /// Parameter `code` as a number.
    pub fn number(&self, code: u16) -> Option<u64> {
        self.param(code).and_then(Parameter::number)
    }
}

/// The page codes listed by the Supported Log Pages page (00h): one byte
/// per page after the header.
pub fn supported_pages(d: &[u8]) -> Option<Vec<u8>> {
    if d.len() < 4 || d[0] & 0x3F != 0 {
        return None;
    }
    let end = (4 + usize::from(u16::from_be_bytes([d[2], d[3]]))).min(d.len());
    Some(d[4..end].iter().map(|b| b & 0x3F).collect())
}

/// The (page, subpage) pairs of the Supported Log Pages and Subpages page
/// (00h / FFh): two bytes each after the header.
pub fn supported_subpages(d: &[u8]) -> Option<Vec<(u8, u8)>> {
    if d.len() < 4 || d[0] & 0x3F != 0 || d[1] != 0xFF {
        return None;
    }
    let end = (4 + usize::from(u16::from_be_bytes([d[2], d[3]]))).min(d.len());
    Some(
        d[4..end]
            .chunks_exact(2)
            .map(|c| (c[0] & 0x3F, c[1]))
            .collect(),
    )
}

/// One report of the Environmental Reporting page (0Dh / 01h, SPC-5): a
/// temperature (parameters 0000h-00FFh, °C, signed) or a relative humidity
/// (0100h-01FFh, percent). Value byte 1 current, 2 lifetime maximum, 3
/// lifetime minimum, 4 maximum since power on, 5 minimum since power on;
/// 80h = not available.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EnvReport {
    /// Current value.
    pub current: Option<i8>,
    /// Lifetime maximum.
    pub lifetime_maximum: Option<i8>,
    /// Lifetime minimum.
    pub lifetime_minimum: Option<i8>,
    /// Maximum since power on.
    pub maximum_since_power_on: Option<i8>,
    /// Minimum since power on.
    pub minimum_since_power_on: Option<i8>,
}

impl EnvReport {
    fn of(value: &[u8]) -> Option<EnvReport> {
        if value.len() < 6 {
            return None;
        }
        let v = |i: usize| (value[i] != 0x80).then_some(value[i] as i8);
        Some(EnvReport {
            current: v(1),
            lifetime_maximum: v(2),
            lifetime_minimum: v(3),
            maximum_since_power_on: v(4),
            minimum_since_power_on: v(5),
        })
    }
}

/// The Environmental Reporting page (0Dh / 01h): the first temperature
/// and relative humidity reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Environment {
    /// Temperature report 0000h, °C.
    pub temperature: Option<EnvReport>,
    /// Relative humidity report 0100h, percent.
    pub relative_humidity: Option<EnvReport>,
}

impl Environment {
    /// Decode the page.
    pub fn of(p: &LogPage) -> Environment {
        Environment {
            temperature: p.param(0).and_then(|q| EnvReport::of(&q.value)),
            relative_humidity: p.param(0x100).and_then(|q| EnvReport::of(&q.value)),
        }
    }
}

/// An error counter page (02h, 03h, 05h; SBC-4 / SPC-5 parameter codes
/// 0000h-0006h).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ErrorCounters {
    /// 0000h: errors corrected without substantial delay.
    pub corrected_fast: Option<u64>,
    /// 0001h: errors corrected with possible delays.
    pub corrected_delayed: Option<u64>,
    /// 0002h: total (rewrites or rereads).
    pub total_retries: Option<u64>,
    /// 0003h: total errors corrected.
    pub total_corrected: Option<u64>,
    /// 0004h: total times the correction algorithm was processed.
    pub correction_algorithm_runs: Option<u64>,
    /// 0005h: total bytes processed.
    pub bytes_processed: Option<u64>,
    /// 0006h: total uncorrected errors.
    pub total_uncorrected: Option<u64>,
}

impl ErrorCounters {
    /// Decode an error counter page.
    pub fn of(p: &LogPage) -> ErrorCounters {
        ErrorCounters {
            corrected_fast: p.number(0),
            corrected_delayed: p.number(1),
            total_retries: p.number(2),
            total_corrected: p.number(3),
            correction_algorithm_runs: p.number(4),
            bytes_processed: p.number(5),
            total_uncorrected: p.number(6),
        }
    }
}

/// The temperature page (0Dh): parameter 0000h byte 1 of its value is the
/// current temperature, 0001h's the reference (the drive's maximum
/// operating temperature); FFh = not available.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Temperature {
    /// Current temperature, °C.
    pub current_c: Option<u8>,
    /// Reference temperature, °C.
    pub reference_c: Option<u8>,
}

impl Temperature {
    /// Decode the page.
    pub fn of(p: &LogPage) -> Temperature {
        let t = |code: u16| {
            p.param(code)
                .and_then(|q| q.value.get(1).copied())
                .filter(|&v| v != 0xFF)
        };
        Temperature {
            current_c: t(0),
            reference_c: t(1),
        }
    }
}

/// The start-stop cycle counter page (0Eh).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StartStop {
    /// 0001h: date of manufacture, "YYYY-WW".
    pub manufactured: Option<String>,
    /// 0003h: specified start-stop cycles over the device's lifetime.
    pub specified_cycles: Option<u64>,
    /// 0004h: accumulated start-stop cycles.
    pub accumulated_cycles: Option<u64>,
    /// 0005h: specified load-unload cycles over the lifetime.
    pub specified_load_unload: Option<u64>,
    /// 0006h: accumulated load-unload cycles.
    pub accumulated_load_unload: Option<u64>,
}

impl StartStop {
    /// Decode the page.
    pub fn of(p: &LogPage) -> StartStop {
        let manufactured = p.param(1).filter(|q| q.value.len() >= 6).and_then(|q| {
            let s = std::str::from_utf8(&q.value[..6]).ok()?;
            (s.chars().all(|c| c.is_ascii_digit())).then(|| format!("{}-{}", &s[..4], &s[4..]))
        });
        StartStop {
            manufactured,
            specified_cycles: p.number(3),
            accumulated_cycles: p.number(4),
            specified_load_unload: p.number(5),
            accumulated_load_unload: p.number(6),
        }
    }
}

/// One self-test result (page 10h, parameter codes 0001h-0014h, 16 value
/// bytes each).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SelfTestResult {
    /// Parameter code: 1 = the most recent.
    pub index: u16,
    /// SELF-TEST CODE (byte 4 bits 7:5): 1 background short, 2 background
    /// extended, 5 foreground short, 6 foreground extended.
    pub code: u8,
    /// SELF-TEST RESULTS (byte 4 bits 3:0): 0 passed, 1 aborted by command,
    /// 2 aborted by reset, 3 unknown error, 4-7 failed in a segment, 15 in
    /// progress.
    pub result: u8,
    /// The result in words.
    pub result_name: &'static str,
    /// SELF-TEST NUMBER (byte 5).
    pub number: u8,
    /// Accumulated power-on hours at the test (bytes 6-7).
    pub power_on_hours: u16,
    /// Address of first failure (bytes 8-15; all ones = none).
    pub first_failure_lba: Option<u64>,
    /// Sense key, ASC, ASCQ (bytes 16-18).
    pub sense: [u8; 3],
}

/// SELF-TEST RESULTS in words (SPC-5 table "SELF-TEST RESULTS field").
pub fn self_test_result_name(r: u8) -> &'static str {
    match r {
        0 => "completed without error",
        1 => "aborted by SEND DIAGNOSTIC",
        2 => "aborted by another method",
        3 => "unknown error",
        4 => "failed, segment unknown",
        5 => "failed in the first segment",
        6 => "failed in the second segment",
        7 => "failed in another segment",
        15 => "in progress",
        _ => "reserved",
    }
}

/// Decode the self-test results page; unused entries (code and result 0
/// with zero hours and number, or all zero) are left out.
pub fn self_test_results(p: &LogPage) -> Vec<SelfTestResult> {
    p.parameters
        .iter()
        .filter(|q| (1..=0x14).contains(&q.code) && q.value.len() >= 16)
        .filter(|q| q.value.iter().any(|&b| b != 0))
        .map(|q| {
            let v = &q.value;
            let mut l = [0u8; 8];
            l.copy_from_slice(&v[4..12]);
            let lba = u64::from_be_bytes(l);
            SelfTestResult {
                index: q.code,
                code: v[0] >> 5,
                result: v[0] & 0x0F,
                result_name: self_test_result_name(v[0] & 0x0F),
                number: v[1],
                power_on_hours: u16::from_be_bytes([v[2], v[3]]),
                first_failure_lba: (lba != u64::MAX).then_some(lba),
                sense: [v[12] & 0x0F, v[13], v[14]],
            }
        })
        .collect()
}

/// The informational exceptions page (2Fh), parameter 0000h: the
/// drive's own failure prediction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InformationalExceptions {
    /// INFORMATIONAL EXCEPTION ADDITIONAL SENSE CODE (value byte 0): 0 = none.
    pub asc: u8,
    /// Its qualifier (value byte 1).
    pub ascq: u8,
    /// ASC/ASCQ in words, when known (5Dh: failure prediction threshold exceeded).
    pub asc_name: Option<String>,
    /// MOST RECENT TEMPERATURE READING (value byte 2), °C; `null` for FFh.
    pub temperature_c: Option<u8>,
    /// Whether the drive predicts no failure (ASC 0).
    pub ok: bool,
}

impl InformationalExceptions {
    /// Decode the page (`None` without parameter 0000h).
    pub fn of(p: &LogPage) -> Option<InformationalExceptions> {
        let v = &p.param(0)?.value;
        let asc = *v.first()?;
        let ascq = v.get(1).copied().unwrap_or(0);
        Some(InformationalExceptions {
            asc,
            ascq,
            asc_name: (asc != 0).then(|| asc_ascq_name(asc, ascq)).flatten(),
            temperature_c: v.get(2).copied().filter(|&t| t != 0xFF),
            ok: asc == 0,
        })
    }
}

/// Read log page `page` (cumulative values), up to 4 KiB; the returned
/// bytes are cut to the page's own length.
pub fn log_sense(dev: &SgDevice, page: u8) -> Result<Vec<u8>, SgError> {
    log_sense_sub(dev, page, 0)
}

/// Read subpage `subpage` of log page `page` (see [`log_sense`]).
pub fn log_sense_sub(dev: &SgDevice, page: u8, subpage: u8) -> Result<Vec<u8>, SgError> {
    let mut buf = vec![0u8; 4096];
    let cdb = LogSense::new(page, 4096).subpage(subpage).build();
    let r = dev.execute(&mut ScsiCommand::new(&cdb).data_in(&mut buf))?;
    r.check(&cdb)?;
    let got = r.transferred(buf.len());
    if got < 4 || buf[0] & 0x3F != page || (subpage != 0 && buf[1] != subpage) {
        return Err(SgError::ShortData {
            command: format!("LOG SENSE page 0x{page:02X} subpage 0x{subpage:02X}"),
            got,
        });
    }
    let len = (4 + usize::from(u16::from_be_bytes([buf[2], buf[3]]))).min(got);
    buf.truncate(len);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(code: u16, control: u8, value: &[u8]) -> Vec<u8> {
        let mut v = code.to_be_bytes().to_vec();
        v.push(control);
        v.push(value.len() as u8);
        v.extend_from_slice(value);
        v
    }

    fn page(code: u8, params: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = params.concat();
        let mut v = vec![code, 0];
        v.extend_from_slice(&(body.len() as u16).to_be_bytes());
        v.extend(body);
        v
    }

    #[test]
    fn log_sense_cdb_matches_spc5() {
        let c = LogSense::new(0x2F, 0x1000).build();
        assert_eq!(c, [0x4D, 0, 0x40 | 0x2F, 0, 0, 0, 0, 0x10, 0x00, 0]);
        let c = LogSense::new(0x0D, 252)
            .subpage(1)
            .pc(3)
            .pointer(0x0102)
            .build();
        assert_eq!(c, [0x4D, 0, 0xC0 | 0x0D, 1, 0, 0x01, 0x02, 0, 252, 0]);
        assert!(
            !crate::scsi::modifies_medium(&c),
            "a read on an unclaimed handle"
        );
    }

    #[test]
    fn parameter_list_parses_and_stops_at_a_truncated_parameter() {
        let mut d = page(
            0x03,
            &[
                param(0, 0x02, &[0, 0, 0, 7]),
                param(5, 0x02, &[1, 0, 0, 0, 0, 0]),
                param(6, 0x02, &[0x12]),
            ],
        );
        let p = LogPage::parse(&d).unwrap();
        assert_eq!(p.page, 3);
        assert_eq!(p.parameters.len(), 3);
        let e = ErrorCounters::of(&p);
        assert_eq!(e.corrected_fast, Some(7));
        assert_eq!(e.bytes_processed, Some(1 << 40));
        assert_eq!(e.total_uncorrected, Some(0x12));
        assert_eq!(e.total_corrected, None);
        // Claim 3 more bytes than the last parameter has: it is dropped.
        let n = d.len();
        d[n - 2] = 4;
        d[3] += 3;
        assert_eq!(LogPage::parse(&d).unwrap().parameters.len(), 2);
        assert!(LogPage::parse(&[0x03, 0]).is_none());
    }

    #[test]
    fn supported_temperature_ie_and_start_stop_pages() {
        let s = vec![0x00, 0, 0, 4, 0x00, 0x0D, 0x2F, 0x10];
        assert_eq!(supported_pages(&s), Some(vec![0x00, 0x0D, 0x2F, 0x10]));
        let t = page(0x0D, &[param(0, 3, &[0, 38]), param(1, 3, &[0, 65])]);
        let t = Temperature::of(&LogPage::parse(&t).unwrap());
        assert_eq!((t.current_c, t.reference_c), (Some(38), Some(65)));
        let t = page(0x0D, &[param(0, 3, &[0, 0xFF])]);
        assert_eq!(
            Temperature::of(&LogPage::parse(&t).unwrap()).current_c,
            None
        );
        let ie = page(0x2F, &[param(0, 3, &[0x5D, 0x10, 40, 0])]);
        let ie = InformationalExceptions::of(&LogPage::parse(&ie).unwrap()).unwrap();
        assert_eq!(
            (ie.asc, ie.ascq, ie.temperature_c, ie.ok),
            (0x5D, 0x10, Some(40), false)
        );
        let ss = page(
            0x0E,
            &[
                param(1, 0, b"202047"),
                param(3, 0, &50_000u32.to_be_bytes()),
                param(4, 0, &123u32.to_be_bytes()),
            ],
        );
        let ss = StartStop::of(&LogPage::parse(&ss).unwrap());
        assert_eq!(ss.manufactured.as_deref(), Some("2020-47"));
        assert_eq!(
            (ss.specified_cycles, ss.accumulated_cycles),
            (Some(50_000), Some(123))
        );
    }

    #[test]
    fn subpage_list_and_environmental_reports() {
        let d = vec![0x40, 0xFF, 0, 6, 0x00, 0x00, 0x0D, 0x00, 0x0D, 0x01];
        assert_eq!(
            supported_subpages(&d),
            Some(vec![(0x00, 0x00), (0x0D, 0x00), (0x0D, 0x01)])
        );
        assert_eq!(supported_subpages(&d[..2]), None);
        let mut e = page(
            0x0D,
            &[
                param(0, 3, &[0, 40, 72, 0xFF, 45, 18, 0x80, 0x80]),
                param(0x100, 3, &[0, 55, 72, 35, 55, 0x80, 0, 0]),
            ],
        );
        e[0] |= 0x40;
        e[1] = 1;
        let env = Environment::of(&LogPage::parse(&e).unwrap());
        let t = env.temperature.unwrap();
        assert_eq!(
            (t.current, t.lifetime_maximum, t.lifetime_minimum),
            (Some(40), Some(72), Some(-1))
        );
        assert_eq!(
            (t.maximum_since_power_on, t.minimum_since_power_on),
            (Some(45), Some(18))
        );
        let h = env.relative_humidity.unwrap();
        assert_eq!((h.current, h.minimum_since_power_on), (Some(55), None));
    }

    #[test]
    fn self_test_results_decode_spc5_layout() {
        let mut e1 = vec![0u8; 16];
        e1[0] = (6 << 5) | 7; // foreground extended, failed in another segment
        e1[1] = 3;
        e1[2..4].copy_from_slice(&1234u16.to_be_bytes());
        e1[4..12].copy_from_slice(&0x1_0000u64.to_be_bytes());
        e1[12] = 0x03;
        e1[13] = 0x11;
        e1[14] = 0x00;
        let mut e2 = vec![0u8; 16];
        e2[0] = 1 << 5;
        e2[2..4].copy_from_slice(&10u16.to_be_bytes());
        e2[4..12].copy_from_slice(&[0xFF; 8]);
        let d = page(
            0x10,
            &[param(1, 3, &e1), param(2, 3, &e2), param(3, 3, &[0; 16])],
        );
        let r = self_test_results(&LogPage::parse(&d).unwrap());
        assert_eq!(r.len(), 2, "the empty third entry is dropped");
        assert_eq!((r[0].code, r[0].result, r[0].number), (6, 7, 3));
        assert_eq!(r[0].power_on_hours, 1234);
        assert_eq!(r[0].first_failure_lba, Some(0x1_0000));
        assert_eq!(r[0].sense, [3, 0x11, 0]);
        assert_eq!(r[0].result_name, "failed in another segment");
        assert_eq!(
            (r[1].code, r[1].result, r[1].first_failure_lba),
            (1, 0, None)
        );
    }
}
