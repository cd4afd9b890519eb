//! The range methods: one device command per range, front to back, through
//! one loop ([`Ctx::chunked`]). zeroout (BLKZEROOUT), discard (io_uring
//! trims), SCSI WRITE SAME, ATA SCT Write Same and NVMe Write Zeroes differ
//! only in the command a range becomes and the range's length.

use std::time::Duration;

use drivelab_device::blockdev::BlockDevice;
use drivelab_device::units::{BlockCount, Lba};

use drivelab_patterns::Generator;

use super::{Ctx, Flow};
use crate::method;
use crate::EraseError;

impl Ctx<'_> {
    /// Front-to-back commands of at most `chunk` bytes from `start`: `op`
    /// sends one (returning how many device commands it took), a failing
    /// one is retried, then given up ([`Ctx::give_up`]). `sends_data`: the
    /// command carries the range's bytes over the bus (bus limit).
    pub(super) fn chunked(
        &mut self,
        pass: u32,
        start: u64,
        chunk: u64,
        sends_data: bool,
        name: &str,
        mut op: impl FnMut(u64, u64) -> Result<u64, String>,
    ) -> Result<Flow, EraseError> {
        let size = self.drive.size;
        let lbs = u64::from(self.drive.lbs);
        // A command that carries data holds the bus for as long as the
        // limit needs to carry it: no longer than the drive's budget.
        let chunk = match self.shared.bus_budget(lbs) {
            Some(b) if sends_data => chunk.min(b),
            _ => chunk,
        };
        let chunk = (chunk / lbs).max(1) * lbs;
        let mut pos = start;
        while pos < size {
            if self.stopped() {
                return Ok(Flow::Stopped);
            }
            let len = chunk.min(size - pos);
            let mut attempts = 0u32;
            loop {
                if !self.before_command(if sends_data { len } else { 0 }) {
                    self.after_command();
                    return Ok(Flow::Stopped);
                }
                let r = op(pos, len);
                self.after_command();
                attempts += 1;
                match r {
                    Ok(n) => {
                        self.rec.command(name, n, len);
                        self.rec.bytes += len;
                        if attempts > 1 {
                            self.rec.retried += 1;
                        }
                        break;
                    }
                    Err(e) => {
                        let lba = pos / lbs;
                        self.rec
                            .errors
                            .push(format!("{name} at LBA {lba} +{}: {e}", len / lbs));
                        if attempts <= self.opts.retries {
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        }
                        let sub = |o: u64, l: u64| op(o, l).map(|_| ());
                        self.give_up(pass, pos, len, attempts, e, sub)?;
                        break;
                    }
                }
            }
            pos += len;
            self.mark(pass, pos)?;
        }
        Ok(Flow::Done)
    }

    /// BLKZEROOUT, offloaded or not; notices a device that turns the
    /// offload off while running.
    pub(super) fn zeroout(&mut self, pass: u32, start: u64) -> Result<Flow, EraseError> {
        let off = self.drive.offers.zeroout_offload;
        let wz_max = self.drive.offers.write_zeroes_max_bytes;
        // Round-robin hands the turn on after each command: one device
        // command (the kernel's write-zeroes limit) per turn, as the
        // thesis's strategy sends one command per disk; otherwise 1 GiB per
        // ioctl.
        let rr = self.shared.turn.is_some();
        let offl_chunk = if rr && wz_max > 0 { wz_max } else { 1u64 << 30 };
        let (chunk, name) = if off {
            (
                offl_chunk,
                format!(
                    "BLKZEROOUT ioctl (blkdev_issue_zeroout), offloaded as REQ_OP_WRITE_ZEROES (write_zeroes_max_bytes {wz_max})"
                ),
            )
        } else {
            (
                64u64 << 20,
                "BLKZEROOUT ioctl (blkdev_issue_zeroout), NOT offloaded: the kernel wrote zero pages"
                    .to_string(),
            )
        };
        let first_chunk = start == 0 && pass == 0;
        let claim = self.claim;
        let flow = self.chunked(pass, start, chunk, !off, &name, |o, l| {
            claim.zeroout(o, l).map(|()| 1).map_err(|e| e.to_string())
        })?;
        self.check_offload(off, &name, first_chunk);
        Ok(flow)
    }

    /// A device can refuse REQ_OP_WRITE_ZEROES (a loop device over tmpfs
    /// does: EOPNOTSUPP); the kernel then sets write_zeroes_max_bytes to 0
    /// and writes zero pages instead. Look again rather than trust the
    /// plan, and say so in the record.
    fn check_offload(&mut self, planned: bool, name: &str, first_chunk: bool) {
        let now = BlockDevice::from_path(&self.drive.dev.path)
            .map(|d| d.write_zeroes_max_bytes.0)
            .unwrap_or(0);
        if planned && now == 0 {
            self.rec.offloaded = Some(false);
            let moved = self.rec.commands.remove(name).unwrap_or((0, 0));
            self.rec.command(
                "BLKZEROOUT ioctl (blkdev_issue_zeroout): the device refused REQ_OP_WRITE_ZEROES (EOPNOTSUPP), the kernel turned offload off (write_zeroes_max_bytes now 0) and wrote zero pages",
                moved.0,
                moved.1,
            );
            self.rec.errors.push(
                "write zeroes offload refused by the device; the kernel fell back to writing zero pages".into(),
            );
        } else if self.rec.offloaded.is_none() || first_chunk {
            self.rec.offloaded = Some(planned && now > 0);
        }
    }

    /// Discard (BLKDISCARD's io_uring trim) from `start`, 1 GiB at a time.
    pub(super) fn discard_range(&mut self, pass: u32, start: u64) -> Result<Flow, EraseError> {
        let gran = self
            .drive
            .dev
            .discard_granularity
            .0
            .max(u64::from(self.drive.lbs));
        let chunk = ((1u64 << 30) / gran).max(1) * gran;
        let claim = self.claim;
        self.chunked(pass, start, chunk, false, "BLKDISCARD", |o, l| {
            claim.discard(o, l).map(|()| 1).map_err(|e| e.to_string())
        })
    }

    /// SCSI WRITE SAME(16) or (10) with one pattern block per command.
    pub(super) fn write_same(
        &mut self,
        pass: u32,
        start: u64,
        gen: &Generator,
    ) -> Result<Flow, EraseError> {
        use drivelab_device::{scsi, sg::SgDevice};
        let d = self.drive;
        let mut sg = SgDevice::claimed(self.claim)
            .map_err(|e| self.command_error("open for SCSI passthrough", e.to_string()))?;
        sg.set_timeout_ms(300_000);
        let use16 = d.offers.write_same_16;
        let lbs = u64::from(d.lbs);
        let cap = if use16 { 1u64 << 21 } else { 65_535 };
        let blocks = d
            .offers
            .max_write_same_blocks
            .filter(|&b| b > 0)
            .unwrap_or(cap)
            .min(cap);
        let mut block = vec![0u8; d.lbs as usize];
        gen.fill(&mut block, 0);
        let name = format!(
            "SCSI WRITE SAME({}) (opcode {}) via SG_IO, one {}-byte pattern block per command",
            if use16 { 16 } else { 10 },
            if use16 { "93h" } else { "41h" },
            d.lbs
        );
        self.chunked(pass, start, blocks * lbs, false, &name, |o, l| {
            scsi::write_same(&sg, Lba(o / lbs), BlockCount(l / lbs), &block, use16)
                .map(|_| 1)
                .map_err(|e| e.to_string())
        })
    }

    /// ATA SCT Write Same, foreground, with the pattern's 32-bit word.
    pub(super) fn sct_write_same(&mut self, pass: u32, start: u64) -> Result<Flow, EraseError> {
        use drivelab_device::ata::{self, SctWriteSame, SctWriteSameFunction};
        use drivelab_device::sg::SgDevice;
        let d = self.drive;
        let mut sg = SgDevice::claimed(self.claim)
            .map_err(|e| self.command_error("open for ATA PASS-THROUGH", e.to_string()))?;
        sg.set_timeout_ms(300_000);
        let word = method::pattern_dword(&self.opts.pattern, d.lbs as usize).unwrap_or(0);
        let lbs = u64::from(d.lbs);
        let name = format!(
            "ATA SCT Write Same, foreground, pattern {word:#010x} (SMART WRITE LOG E0h via ATA PASS-THROUGH(16) 85h)"
        );
        self.chunked(pass, start, 256 << 20, false, &name, |o, l| {
            let ws = SctWriteSame::new(
                SctWriteSameFunction::PatternForeground,
                Lba(o / lbs),
                BlockCount(l / lbs),
            )
            .pattern(word);
            ata::sct_write_same(&sg, &ws)
                .map(|_| 1)
                .map_err(|e| e.to_string())
        })
    }

    /// NVMe Write Zeroes, one command per chunk (its NLB field holds at
    /// most 65,536 blocks), so progress, the journal and the round-robin
    /// turn move per command.
    pub(super) fn nvme_write_zeroes(&mut self, pass: u32, start: u64) -> Result<Flow, EraseError> {
        use drivelab_device::nvme::{self, NvmeDevice};
        let d = self.drive;
        let dev = NvmeDevice::claimed(self.claim)
            .map_err(|e| self.command_error("open for NVMe passthrough", e.to_string()))?;
        let lbs = u64::from(d.lbs);
        self.chunked(
            pass,
            start,
            65_536 * lbs,
            false,
            "NVMe Write Zeroes (I/O opcode 08h), up to 65536 blocks per command",
            |o, l| {
                nvme::write_zeroes(&dev, Lba(o / lbs), BlockCount(l / lbs), false)
                    .map_err(|e| e.to_string())
            },
        )
    }
}
