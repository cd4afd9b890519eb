//! SPC / UMass trace repository CSV: `ASU,LBA,Size,Opcode,Timestamp[,…]`.
//! ASU is the device, LBA in 512-byte blocks, Size in bytes, Opcode `R`/`W`
//! (either case), Timestamp in decimal seconds from the trace start (kept as
//! given). Extra trailing fields are ignored. No completions.

use crate::model::{Flags, Op, Request};
use crate::source::{parse_seconds_ns, parse_u64, show, trim, LineOutcome, LineParser, ReadStats};

pub(crate) struct SpcParser;

impl LineParser for SpcParser {
    const NAME: &'static str = "spc";

    fn parse(
        &mut self,
        line: &[u8],
        _stats: &mut ReadStats,
    ) -> std::result::Result<LineOutcome, String> {
        if trim(line).is_empty() {
            return Ok(LineOutcome::Skip);
        }
        let [asu, lba, size, opc, ts] = crate::msr::csv_fields::<5>(line)?;
        let device =
            u32::try_from(parse_u64(asu, "ASU")?).map_err(|_| "ASU exceeds 32 bits".to_string())?;
        let lba = parse_u64(lba, "LBA")?;
        let offset = lba
            .checked_mul(512)
            .ok_or_else(|| "LBA too large".to_string())?;
        let len = parse_u64(size, "Size")?;
        let op = match trim(opc) {
            b"R" | b"r" => Op::Read,
            b"W" | b"w" => Op::Write,
            other => return Err(format!("Opcode '{}' is neither R nor W", show(other))),
        };
        let issue_ns = parse_seconds_ns(ts, "Timestamp")?;
        Ok(LineOutcome::Request(Request {
            issue_ns,
            complete_ns: None,
            device,
            op,
            offset,
            len,
            flags: Flags::empty(),
        }))
    }
}
