//! MQSim / DiskSim ASCII traces: `arrival_ns dev lba size_sectors type`,
//! whitespace-separated, lba and size in 512-byte sectors, type 1 = read,
//! 0 = write. Arrival times are kept as given (nanoseconds). No completions.

use crate::model::{Flags, Op, Request};
use crate::source::{parse_u64, show, trim, ws_fields, LineOutcome, LineParser, ReadStats};

pub(crate) struct MqsimParser;

impl LineParser for MqsimParser {
    const NAME: &'static str = "mqsim";

    fn parse(
        &mut self,
        line: &[u8],
        _stats: &mut ReadStats,
    ) -> std::result::Result<LineOutcome, String> {
        if trim(line).is_empty() {
            return Ok(LineOutcome::Skip);
        }
        let mut f = ws_fields(line);
        let mut next = |what: &str| {
            f.next().ok_or_else(|| {
                format!("missing field {what} (expected 'arrival_ns dev lba size_sectors type')")
            })
        };
        let t = parse_u64(next("arrival_ns")?, "arrival_ns")?;
        let dev = parse_u64(next("dev")?, "dev")?;
        let lba = parse_u64(next("lba")?, "lba")?;
        let size = parse_u64(next("size_sectors")?, "size_sectors")?;
        let ty = next("type")?;
        let op = match ty {
            b"1" => Op::Read,
            b"0" => Op::Write,
            other => {
                return Err(format!(
                    "type '{}' is neither 1 (read) nor 0 (write)",
                    show(other)
                ))
            }
        };
        if f.next().is_some() {
            return Err("more than 5 fields".into());
        }
        Ok(LineOutcome::Request(Request {
            issue_ns: t,
            complete_ns: None,
            device: u32::try_from(dev).map_err(|_| "dev exceeds 32 bits".to_string())?,
            op,
            offset: lba
                .checked_mul(512)
                .ok_or_else(|| "lba too large".to_string())?,
            len: size
                .checked_mul(512)
                .ok_or_else(|| "size too large".to_string())?,
            flags: Flags::empty(),
        }))
    }
}
