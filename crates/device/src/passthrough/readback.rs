//! READ through SG_IO (NVMe Read on an NVMe namespace) of a block range,
//! answered with a SHA-256 of the data, or with the sense and the failing
//! LBA.

use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::common::{
    elapsed_ms, nvme_namespace, open_sg, transfer_limit, BlockRange, OpError, SHORT_TIMEOUT_MS,
};
use super::failure::Failure;
use crate::nvme::{self, NvmeDevice};
use crate::scsi;
use crate::scsi::sg::SgDevice;
use crate::units::{BlockCount, Lba};

/// Most bytes one `read` buffers: 256 MiB.
pub const MAX_READ_BYTES: u64 = 256 << 20;

/// What a read returned.
#[derive(Debug, Clone, Serialize)]
pub struct ReadBack {
    /// `"nvme"` for an NVMe Read; absent for SCSI READ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<&'static str>,
    /// First logical block.
    pub lba: Lba,
    /// Logical blocks asked for.
    pub count: BlockCount,
    /// Logical block length, bytes.
    pub block_length: u32,
    /// Bytes transferred.
    pub bytes: u64,
    /// Commands sent.
    pub commands: u64,
    /// Time the commands took, ms.
    pub duration_ms: u64,
    /// SHA-256 of the bytes transferred, 64 lowercase hex digits.
    pub sha256: String,
}

/// SHA-256 of `data` as 64 lowercase hex digits.
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Read `range` (at most [`MAX_READ_BYTES`]) and answer with its digest;
/// with `dump`, also write the data read to that file.
pub fn read(
    dev: &Path,
    range: BlockRange,
    dump: Option<&Path>,
    timeout_ms: Option<u32>,
) -> Result<ReadBack, OpError> {
    range.check()?;
    if let Some(nd) = nvme_namespace(dev) {
        return read_nvme(&nd, range, dump);
    }
    let d = open_sg(dev, timeout_ms.unwrap_or(SHORT_TIMEOUT_MS), false)?;
    let bl = block_length(&d)?;
    let mut buf = buffer(range, bl)?;
    // One READ per chunk the kernel can map (see transfer_limit).
    let per_cmd = (transfer_limit(dev) / u64::from(bl)).max(1);
    let (mut got, mut ms, mut cmds) = (0usize, 0u64, 0u64);
    for (i, chunk) in buf
        .chunks_mut((per_cmd * u64::from(bl)) as usize)
        .enumerate()
    {
        let lba = range.lba.0 + i as u64 * per_cmd;
        let n = chunk.len() as u64 / u64::from(bl);
        let r = scsi::read(&d, Lba(lba), BlockCount(n), chunk)?;
        got += r.transferred(chunk.len());
        ms += u64::from(r.duration_ms);
        cmds += 1;
    }
    let data = &buf[..got];
    let sha256 = sha256_hex(data);
    write_dump(dump, data)?;
    Ok(ReadBack {
        transport: None,
        lba: range.lba,
        count: range.count,
        block_length: bl,
        bytes: got as u64,
        commands: cmds,
        duration_ms: ms,
        sha256,
    })
}

fn read_nvme(d: &NvmeDevice, range: BlockRange, dump: Option<&Path>) -> Result<ReadBack, OpError> {
    let nsid = d.require_nsid()?;
    let ns = nvme::identify_namespace(d, nsid)?;
    let bs = ns.block_size;
    if bs == 0 {
        return Err(Failure {
            namespace: Some(ns),
            ..Failure::line("Identify Namespace reports no usable LBA format")
        }
        .into());
    }
    let mdts = nvme::identify_controller(d)
        .ok()
        .filter(|c| c.mdts > 0 && c.mdts < 20)
        .map(|c| 4096u64 << c.mdts)
        .unwrap_or(u64::MAX);
    let max = mdts.min(transfer_limit(d.path()));
    let mut buf = buffer(range, bs)?;
    let t0 = std::time::Instant::now();
    let n = nvme::read(d, range.lba, range.count, bs, max, &mut buf)?;
    let ms = elapsed_ms(t0);
    let sha256 = sha256_hex(&buf);
    write_dump(dump, &buf)?;
    Ok(ReadBack {
        transport: Some("nvme"),
        lba: range.lba,
        count: range.count,
        block_length: bs,
        bytes: buf.len() as u64,
        commands: n,
        duration_ms: ms,
        sha256,
    })
}

/// The logical block length READ CAPACITY reports, if it is usable.
pub(super) fn block_length(d: &SgDevice) -> Result<u32, OpError> {
    let cap = scsi::read_capacity(d)?;
    if cap.block_length == 0 || cap.block_length > 1 << 20 {
        return Err(Failure {
            line: format!(
                "READ CAPACITY reported a block length of {} bytes, which is not usable",
                cap.block_length
            ),
            capacity: Some(cap),
            ..Failure::default()
        }
        .into());
    }
    Ok(cap.block_length)
}

/// A zeroed buffer for `range` in blocks of `bl` bytes, refused above
/// [`MAX_READ_BYTES`].
fn buffer(range: BlockRange, bl: u32) -> Result<Vec<u8>, OpError> {
    let bytes = range
        .count
        .0
        .checked_mul(u64::from(bl))
        .filter(|&b| b <= MAX_READ_BYTES)
        .ok_or_else(|| {
            Failure::line(format!(
                "a read of {} blocks of {bl} bytes exceeds the 256 MiB this command buffers; read less",
                range.count.0
            ))
        })?;
    Ok(vec![0u8; bytes as usize])
}

fn write_dump(dump: Option<&Path>, data: &[u8]) -> Result<(), OpError> {
    if let Some(p) = dump {
        crate::claim::output::Output::new(p)
            .option("--dump")
            .write(data)
            .map_err(|e| Failure::line(e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn sha256_matches_the_fips_180_examples() {
        // FIPS 180-4 / NIST CSRC example values.
        assert_eq!(
            super::sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            super::sha256_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }
}
