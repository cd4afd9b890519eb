//! The write-same step (DMM's WriteSameSCSI / WriteSameSATA): one logical
//! block of the pattern is sent with a command that makes the drive write it
//! to every block of a range, so the drive copies the data itself instead of
//! receiving it over the bus block by block. Timed like a streamed write
//! step, so the two can be compared on the same drive.
//!
//! - SCSI (SAS, virtio-scsi, scsi_debug): WRITE SAME(10) when the LBA fits
//!   32 bits, the length 16 bits and the device takes (10), else WRITE
//!   SAME(16); commands are cut to the Block Limits VPD page's MAXIMUM WRITE
//!   SAME LENGTH (and to [`SCSI_CAP_BLOCKS`] so one command's time stays
//!   bounded).
//! - SATA behind a SCSI-to-ATA translation layer: SCT Write Same function
//!   0102h, which repeats a whole sector sent through the SCT data log (not
//!   only the 32-bit pattern of function 0101h), in the foreground, cut to
//!   [`SCT_CAP_BYTES`] per command.
//!
//! Every command goes through the claim ([`SgDevice::claimed`]). What the
//! drive supports is asked (the device crate's capability probe) when the
//! step is planned, so a drive that has neither command is refused before
//! anything of the sequence is written. A command that fails its retries is
//! narrowed down to its bad blocks with write-same commands of the halves.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use drivelab_device::ata::{self, SctWriteSame, SctWriteSameFunction};
use drivelab_device::caps::{self, Transport};
use drivelab_device::scsi;
use drivelab_device::sg::SgDevice;
use drivelab_device::units::{BlockCount, Lba};
use drivelab_engine::narrow::narrow;
use drivelab_patterns::Pattern;
use drivelab_stats::{LatencyHistogram, Welford};

use crate::result::{BadRange, Failure, Findings, PassResult};
use crate::spec::OnError;

/// Most blocks per SCSI WRITE SAME when the device sets no lower limit
/// (2^21: 1 GiB of 512-byte blocks), so one command ends within its timeout.
pub const SCSI_CAP_BLOCKS: u64 = 1 << 21;
/// Most bytes per SCT Write Same command (1 GiB).
pub const SCT_CAP_BYTES: u64 = 1 << 30;
/// Timeout of one command, ms (ten minutes).
pub const COMMAND_TIMEOUT_MS: u32 = 600_000;

/// The command a write-same step sends, chosen from what the drive says it
/// supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SameMethod {
    /// SCSI WRITE SAME.
    Scsi {
        /// WRITE SAME(10) is usable.
        ws10: bool,
        /// WRITE SAME(16) is usable.
        ws16: bool,
        /// Blocks per command.
        chunk: u64,
    },
    /// ATA SCT Write Same of one sector (function 0102h).
    Sct {
        /// Blocks per command.
        chunk: u64,
    },
}

impl SameMethod {
    /// Ask the drive at `path` (reads only) which write-same command it
    /// takes for a range ending before block `end`; `Err` is the refusal
    /// line: what the drive lacks, and what to use instead.
    pub fn probe(path: &Path, block_size: u32, end: u64) -> Result<SameMethod, String> {
        let shown = path.display();
        let c = caps::probe(path).map_err(|e| {
            format!("cannot ask {shown} which commands it supports ({e}); use --step write")
        })?;
        match c.transport {
            Transport::Scsi => {
                let (ws10, ws16) = (c.scsi_write_same_10, c.scsi_write_same_16);
                if !ws10 && !ws16 {
                    return Err(format!(
                        "{shown} does not support SCSI WRITE SAME(10) or (16) (basis: {}); use --step write",
                        c.scsi_write_same_basis
                    ));
                }
                if !ws16 && end > 1 << 32 {
                    return Err(format!(
                        "{shown} supports only WRITE SAME(10), whose LBA field ends at block 2^32; lower --start/--count or use --step write"
                    ));
                }
                Ok(SameMethod::Scsi {
                    ws10,
                    ws16,
                    chunk: scsi_chunk(ws16, c.max_write_same_blocks),
                })
            }
            Transport::AtaViaSat => {
                if !c.ata_sct_write_same {
                    return Err(format!(
                        "{shown} is a SATA drive without SCT Write Same (IDENTIFY DEVICE word 206 bit 2 clear); use --step write"
                    ));
                }
                if block_size % 512 != 0 || block_size / 512 > 255 {
                    return Err(format!(
                        "{shown}: a {block_size}-byte sector cannot go through the SCT data log; use --step write"
                    ));
                }
                Ok(SameMethod::Sct {
                    chunk: (SCT_CAP_BYTES / u64::from(block_size)).max(1),
                })
            }
            Transport::Nvme => Err(format!(
                "{shown} is an NVMe namespace: NVMe has no WRITE SAME with data (only Write Zeroes); use --step write"
            )),
            Transport::Other => Err(format!(
                "{shown} answers neither SCSI nor ATA commands (loop, zram, dm, md, virtio-blk), so it has no WRITE SAME; use --step write"
            )),
        }
    }

    /// Blocks per command.
    pub fn chunk(&self) -> u64 {
        match *self {
            SameMethod::Scsi { chunk, .. } | SameMethod::Sct { chunk } => chunk,
        }
    }

    /// The command, as the log names it.
    pub fn describe(&self, block_size: u32) -> String {
        match *self {
            SameMethod::Scsi { ws10, ws16, chunk } => {
                let which = match (ws10, ws16) {
                    (true, true) => "WRITE SAME(10) 41h / (16) 93h",
                    (false, _) => "WRITE SAME(16) 93h",
                    (true, false) => "WRITE SAME(10) 41h",
                };
                format!(
                    "SCSI {which} via SG_IO, one {block_size}-byte block of the pattern, up to {chunk} blocks per command"
                )
            }
            SameMethod::Sct { chunk } => format!(
                "ATA SCT Write Same function 0102h (one {block_size}-byte sector of the pattern, foreground) via ATA PASS-THROUGH(16), up to {chunk} blocks per command"
            ),
        }
    }
}

/// Blocks per SCSI WRITE SAME: the device's MAXIMUM WRITE SAME LENGTH when
/// it reports one, at most [`SCSI_CAP_BLOCKS`]; 65,535 without (16).
pub fn scsi_chunk(ws16: bool, max_write_same: Option<u64>) -> u64 {
    let cap = if ws16 { SCSI_CAP_BLOCKS } else { 65_535 };
    max_write_same.filter(|&m| m > 0).unwrap_or(cap).min(cap)
}

/// Whether one SCSI WRITE SAME of `blocks` at `lba` goes as (16): when
/// (10) cannot express it (LBA ≥ 2^32 or more than 65,535 blocks) or the
/// device does not take (10).
pub fn use16(ws10: bool, lba: u64, blocks: u64) -> bool {
    !(ws10 && lba < 1 << 32 && blocks <= 65_535)
}

/// Refuse patterns a write-same cannot write: it repeats one block, so the
/// pattern must be alike in every block.
pub fn check_pattern(p: &Pattern) -> Result<(), String> {
    if p.is_periodic() {
        Ok(())
    } else {
        Err(format!(
            "write-same repeats one block, but the {p} pattern differs in every block; use a pattern alike in every block (incrementing, allzeros, fixed:0x…) or --step write"
        ))
    }
}

/// What one write-same run did.
#[derive(Debug)]
pub struct SameOutcome {
    /// The figures (op "write-same").
    pub result: PassResult,
    /// Latency moments of the commands.
    pub moments: Welford,
    /// Stopped by an error (stop-test / stop-sequence).
    pub stopped_on_error: bool,
    /// Stopped by the stop flag.
    pub interrupted: bool,
}

/// The parameters of one write-same run.
pub struct SameRun<'a> {
    /// The device, claimed.
    pub dev: &'a SgDevice,
    /// The command.
    pub method: SameMethod,
    /// The pattern, rendered into one logical block.
    pub block: &'a [u8],
    /// First LBA and blocks.
    pub start: u64,
    /// Blocks.
    pub count: u64,
    /// Stop-on-error policy.
    pub on_error: OnError,
    /// Retries per failed command.
    pub retries: u32,
}

impl SameRun<'_> {
    /// One command over `[lba, lba + n)`.
    fn send(&self, lba: u64, n: u64) -> Result<(), String> {
        match self.method {
            SameMethod::Scsi { ws10, .. } => scsi::write_same(
                self.dev,
                Lba(lba),
                BlockCount(n),
                self.block,
                use16(ws10, lba, n),
            )
            .map(|_| ())
            .map_err(|e| e.to_string()),
            SameMethod::Sct { .. } => {
                let ws = SctWriteSame::new(
                    SctWriteSameFunction::SectorForeground,
                    Lba(lba),
                    BlockCount(n),
                );
                ata::sct_write_same_sector(self.dev, &ws, self.block)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        }
    }

    /// Send the commands front to back, timing each; `progress` counts
    /// blocks written, `stop` ends early (between commands).
    pub fn run(
        &self,
        findings: &mut Findings,
        stop: &AtomicBool,
        progress: &AtomicU64,
    ) -> SameOutcome {
        let lbs = self.block.len() as u64;
        let chunk = self.method.chunk().max(1);
        let end = self.start + self.count;
        let mut moments = Welford::new();
        let mut hist = LatencyHistogram::new();
        let (mut ios, mut blocks) = (0u64, 0u64);
        let (mut stopped_on_error, mut interrupted) = (false, false);
        let t0 = Instant::now();
        let mut pos = self.start;
        while pos < end {
            if stop.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
            let n = chunk.min(end - pos);
            let mut tries = 0u32;
            let outcome = loop {
                let t = Instant::now();
                let r = self.send(pos, n);
                let ns = t.elapsed().as_nanos() as u64;
                match r {
                    Ok(()) => break Ok(ns),
                    Err(_) if tries < self.retries => tries += 1,
                    Err(e) => break Err(e),
                }
            };
            match outcome {
                Ok(ns) => {
                    moments.record(ns as f64);
                    hist.record(ns);
                    ios += 1;
                    blocks += n;
                }
                Err(why) => {
                    findings.io_errors += 1;
                    let mut op = |o: u64, l: u64| self.send(o / lbs, l / lbs);
                    let nr = narrow(pos * lbs, n * lbs, lbs, why.clone(), &mut op);
                    blocks += nr.good / lbs;
                    let bad: Vec<BadRange> = nr
                        .bad
                        .into_iter()
                        .map(|(o, l, message)| BadRange {
                            first: o / lbs,
                            last: (o + l) / lbs - 1,
                            count: l / lbs,
                            errno: 0,
                            sense: None,
                            message,
                        })
                        .collect();
                    findings.bad_blocks += bad.iter().map(|b| b.count).sum::<u64>();
                    findings.push(Failure::Io {
                        op: "write-same".into(),
                        lba: pos,
                        blocks: n,
                        errno: 0,
                        message: why,
                        retries: tries,
                        bad_ranges: bad,
                    });
                    if self.on_error != OnError::Continue {
                        stopped_on_error = true;
                    }
                }
            }
            pos += n;
            progress.store(pos - self.start, Ordering::Relaxed);
            if stopped_on_error {
                break;
            }
        }
        let runtime_ns = (t0.elapsed().as_nanos() as u64).max(1);
        let secs = runtime_ns as f64 / 1e9;
        let bytes = blocks * lbs;
        let result = PassResult {
            op: "write-same".into(),
            compared: false,
            runtime_ns,
            ios,
            blocks,
            bytes,
            bw_bytes: bytes as f64 / secs,
            mib_per_s: bytes as f64 / secs / 1_048_576.0,
            iops: ios as f64 / secs,
            clat_ns: moments.summary(),
            clat_percentiles_ns: hist
                .percentiles(&[50.0, 99.0, 99.9])
                .into_iter()
                .map(|(p, v)| (format!("{p:.6}"), v))
                .collect(),
        };
        SameOutcome {
            result,
            moments,
            stopped_on_error,
            interrupted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_byte_cdb_only_when_lba_and_length_fit() {
        assert!(!use16(true, 0, 65_535));
        assert!(use16(true, 0, 65_536), "length needs (16)");
        assert!(use16(true, 1 << 32, 1), "LBA needs (16)");
        assert!(!use16(true, (1 << 32) - 1, 1));
        assert!(use16(false, 0, 1), "device lacks (10)");
    }

    #[test]
    fn chunk_respects_the_block_limits_page() {
        assert_eq!(scsi_chunk(true, None), SCSI_CAP_BLOCKS);
        assert_eq!(scsi_chunk(true, Some(0)), SCSI_CAP_BLOCKS, "0 = no limit");
        assert_eq!(scsi_chunk(true, Some(65_535)), 65_535);
        assert_eq!(scsi_chunk(true, Some(1 << 40)), SCSI_CAP_BLOCKS);
        assert_eq!(scsi_chunk(false, None), 65_535);
        assert_eq!(scsi_chunk(false, Some(1024)), 1024);
    }

    #[test]
    fn patterns_that_differ_per_block_are_refused() {
        assert!(check_pattern(&Pattern::Incrementing).is_ok());
        assert!(check_pattern(&Pattern::AllZeros).is_ok());
        let e = check_pattern(&Pattern::Random).unwrap_err();
        assert!(e.contains("--step write"), "{e}");
        assert!(check_pattern(&Pattern::Stamped).is_err());
    }

    #[test]
    fn a_loop_device_or_file_is_refused_naming_what_it_lacks() {
        // A regular file is not a device: the probe refuses it.
        let p = std::env::temp_dir().join(format!("drivelab-same-{}", std::process::id()));
        std::fs::write(&p, [0u8; 4096]).unwrap();
        let e = SameMethod::probe(&p, 512, 8).unwrap_err();
        let _ = std::fs::remove_file(&p);
        assert!(e.contains("use --step write"), "{e}");
    }
}
