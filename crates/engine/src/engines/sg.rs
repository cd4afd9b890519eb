//! fio's `sg` engine: every I/O is one SCSI command sent with SG_IO to a
//! SCSI block device (/dev/sdX), synchronously, like [`crate::engines::psync::Psync`].
//! On a SCSI generic node (/dev/sgN) the engine can also run fio's
//! asynchronous mode ([`Sg::new_async`]): up to `iodepth` commands queued
//! with write() on the node and collected with read() as they complete
//! (the device crate's [`SgAsync`]); each trim is its own UNMAP there
//! (fio gathers the trims of one submission into one UNMAP).
//!
//! Reads are READ(10)/(16) and trims UNMAP with one descriptor; flushes
//! SYNCHRONIZE CACHE(10). What a write sends is the job's
//! [`SgWriteMode`] (fio's `sg_write_mode`): WRITE, WRITE AND VERIFY, WRITE
//! SAME (one block sent and written over the whole range), WRITE SAME(16)
//! with NDOB (nothing sent, the device writes zeroes), WRITE STREAM(16), or
//! VERIFY with BYTCHK 00b (medium only), 01b (the write buffer compared with
//! the medium) or 11b (one block compared with every block). The 10-byte
//! form is used while the LBA and the block count fit it, else the 16-byte
//! form, as fio does for LBAs. The CDBs come from the device crate's
//! builders and go through its [`SgDevice`], so a target can only change
//! the medium when it was built from a [`Claim`].
//!
//! A command that does not end GOOD completes with EIO (fio's error for
//! it) and is kept, with the decoded sense (key, ASC/ASCQ, information) in
//! words, in [`Sg::failures`], so the job's report can say what the device
//! answered and where.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use drivelab_device::claim::Claim;
use drivelab_device::scsi::{
    self, ByteCheck, Read, SynchronizeCache10, Unmap, UnmapParameterList, Verify, Write,
    WriteAndVerify, WriteSame, WriteStream,
};
use drivelab_device::sg::{ScsiCommand, ScsiResult, SgAsync, SgDevice, SgError};
use drivelab_device::units::Lba;

use crate::buf::{BufferPool, Fill};
use crate::engine::interface::{Caps, Completion, Engine};
use crate::io::{IoDesc, Op};

/// What a write I/O sends (fio's `sg_write_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SgWriteMode {
    /// WRITE(10)/(16) (fio's default, `write`).
    Write,
    /// WRITE AND VERIFY(10)/(16) with BYTCHK 0 (`write_and_verify`, alias `verify`).
    WriteAndVerify,
    /// WRITE SAME(10)/(16): the buffer's first block over the whole range
    /// (`write_same`, alias `same`).
    WriteSame,
    /// WRITE SAME(16) with NDOB: no data sent, the device writes zeroes
    /// (`write_same_ndob`).
    WriteSameNdob,
    /// WRITE STREAM(16) into this stream (`write_stream`, `stream_id`).
    WriteStream(u16),
    /// VERIFY with BYTCHK 00b: check the medium, compare nothing (`verify_bytchk_00`).
    VerifyBytchk00,
    /// VERIFY with BYTCHK 01b: compare the buffer with the medium (`verify_bytchk_01`).
    VerifyBytchk01,
    /// VERIFY with BYTCHK 11b: compare the buffer's first block with every
    /// block of the range (`verify_bytchk_11`).
    VerifyBytchk11,
}

impl SgWriteMode {
    /// fio's value for `sg_write_mode`, with its deprecated aliases
    /// (`verify`, `same`); `stream_id` is the stream of `write_stream`.
    pub fn parse(v: &str, stream_id: u16) -> Option<SgWriteMode> {
        Some(match v.trim().to_ascii_lowercase().as_str() {
            "write" => SgWriteMode::Write,
            "write_and_verify" | "verify" => SgWriteMode::WriteAndVerify,
            "write_same" | "same" => SgWriteMode::WriteSame,
            "write_same_ndob" => SgWriteMode::WriteSameNdob,
            "write_stream" => SgWriteMode::WriteStream(stream_id),
            "verify_bytchk_00" => SgWriteMode::VerifyBytchk00,
            "verify_bytchk_01" => SgWriteMode::VerifyBytchk01,
            "verify_bytchk_11" => SgWriteMode::VerifyBytchk11,
            _ => return None,
        })
    }

    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            SgWriteMode::Write => "write",
            SgWriteMode::WriteAndVerify => "write_and_verify",
            SgWriteMode::WriteSame => "write_same",
            SgWriteMode::WriteSameNdob => "write_same_ndob",
            SgWriteMode::WriteStream(_) => "write_stream",
            SgWriteMode::VerifyBytchk00 => "verify_bytchk_00",
            SgWriteMode::VerifyBytchk01 => "verify_bytchk_01",
            SgWriteMode::VerifyBytchk11 => "verify_bytchk_11",
        }
    }

    /// Whether the mode's commands change the medium (the VERIFY modes only
    /// read it).
    pub fn changes_medium(self) -> bool {
        !matches!(
            self,
            SgWriteMode::VerifyBytchk00 | SgWriteMode::VerifyBytchk01 | SgWriteMode::VerifyBytchk11
        )
    }
}

/// The sg engine's options (fio's `sg_write_mode`, `readfua`, `writefua`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SgOptions {
    /// What writes send.
    pub write_mode: SgWriteMode,
    /// FUA on READs.
    pub readfua: bool,
    /// FUA on WRITEs and WRITE STREAMs.
    pub writefua: bool,
}

impl Default for SgOptions {
    fn default() -> Self {
        SgOptions {
            write_mode: SgWriteMode::Write,
            readfua: false,
            writefua: false,
        }
    }
}

/// One SCSI device the engine sends commands to, with its logical block size.
#[derive(Debug)]
pub struct SgTarget {
    port: Port,
    block: u32,
}

/// How commands reach a target: SG_IO, one at a time, or the sg driver's
/// asynchronous interface on /dev/sgN.
#[derive(Debug)]
enum Port {
    Sync(SgDevice),
    Async(SgAsync),
}

impl SgTarget {
    /// The claimed device: every command may be sent.
    pub fn claimed(claim: &Claim) -> Result<SgTarget, SgError> {
        SgTarget::new(SgDevice::claimed(claim)?)
    }

    /// The SCSI generic node `sg` (/dev/sgN) of the disk `claim` holds:
    /// every command may be sent, and the node takes queued commands
    /// ([`Sg::new_async`]).
    pub fn claimed_generic(claim: &Claim, sg: &Path) -> Result<SgTarget, SgError> {
        SgTarget::new(SgDevice::claimed_generic(claim, sg)?)
    }

    /// `path` opened read-only: commands that change the medium are
    /// refused before they are sent (reads and VERIFY go through).
    pub fn read_only(path: &Path) -> Result<SgTarget, SgError> {
        SgTarget::new(SgDevice::open(path)?)
    }

    fn new(dev: SgDevice) -> Result<SgTarget, SgError> {
        let cap = scsi::read_capacity(&dev)?;
        let block = Some(cap.block_length)
            .filter(|b| b.is_power_of_two())
            .ok_or_else(|| {
                SgError::InvalidRequest(format!(
                    "{} reports a logical block of {} bytes",
                    dev.path().display(),
                    cap.block_length
                ))
            })?;
        Ok(SgTarget {
            port: Port::Sync(dev),
            block,
        })
    }

    /// The logical block size in bytes (fio's `sd->bs`).
    pub fn block_size(&self) -> u32 {
        self.block
    }

    /// Whether it is a SCSI generic node (/dev/sgN), which takes queued
    /// commands.
    pub fn is_generic(&self) -> bool {
        match &self.port {
            Port::Sync(d) => d.is_char(),
            Port::Async(_) => true,
        }
    }
}

/// A command that did not complete GOOD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SgFailure {
    /// The I/O it carried.
    pub io: IoDesc,
    /// What failed, in words: the command, the device's status and sense
    /// (key, ASC/ASCQ, information) and the CDB bytes.
    pub detail: String,
}

/// Failed commands kept (the job stops at the first, as fio does).
const MAX_FAILURES: usize = 16;

/// The sg engine: SG_IO one command at a time ([`Sg::new`]), or, on
/// /dev/sgN nodes, up to the depth queued at once ([`Sg::new_async`]).
pub struct Sg {
    // Dropped first: an asynchronous port waits for its commands in
    // flight, which use the buffers below.
    targets: Vec<SgTarget>,
    pool: BufferPool,
    /// Per slot: the UNMAP parameter list of a trim.
    params: Box<[[u8; 24]]>,
    /// Per slot, while its command is queued on a node: the I/O, its CDB
    /// and the bytes its data phase moves.
    flight: Vec<Option<Flight>>,
    opts: SgOptions,
    pending: VecDeque<(u32, IoDesc)>,
    done: VecDeque<Completion>,
    failures: Vec<SgFailure>,
    depth: u32,
}

/// A command in flight on a node.
#[derive(Debug, Clone, Copy)]
struct Flight {
    io: IoDesc,
    cdb: [u8; 16],
    cdb_len: usize,
    want: usize,
}

/// A built command: its CDB (10 or 16 bytes used) and how much of the
/// slot's buffer goes with it, which way.
struct Built {
    cdb: [u8; 16],
    cdb_len: usize,
    data: Dir,
}

enum Dir {
    None,
    In(usize),
    Out(usize),
}

fn cdb10_or_16(c10: Option<[u8; 10]>, c16: impl FnOnce() -> [u8; 16]) -> ([u8; 16], usize) {
    match c10 {
        Some(c) => {
            let mut b = [0u8; 16];
            b[..10].copy_from_slice(&c);
            (b, 10)
        }
        None => (c16(), 16),
    }
}

/// The command for `io` on a device of `block`-byte blocks; Err(errno)
/// when it cannot be expressed (not block aligned: EINVAL, as fio).
fn build(io: &IoDesc, block: u32, o: &SgOptions) -> Result<Built, i32> {
    let bs = u64::from(block);
    if !io.op.is_sync() && (io.offset % bs != 0 || u64::from(io.len) % bs != 0) {
        return Err(libc::EINVAL);
    }
    let lba = Lba(io.offset / bs);
    let blocks = io.len / block;
    let len = io.len as usize;
    let one = block as usize;
    let ((cdb, cdb_len), data) = match io.op {
        Op::Read => {
            let b = Read::new(lba, blocks).fua(o.readfua);
            (cdb10_or_16(b.build10(), || b.build16()), Dir::In(len))
        }
        Op::Fsync | Op::Fdatasync | Op::SyncRange(_) => {
            let c = SynchronizeCache10::new().build();
            (cdb10_or_16(Some(c), || [0; 16]), Dir::None)
        }
        Op::Trim => {
            // The parameter list is built in `run_one`; 24 bytes.
            let c = Unmap::new(24).build();
            (cdb10_or_16(Some(c), || [0; 16]), Dir::Out(24))
        }
        Op::Write => match o.write_mode {
            SgWriteMode::Write => {
                let b = Write::new(lba, blocks).fua(o.writefua);
                (cdb10_or_16(b.build10(), || b.build16()), Dir::Out(len))
            }
            SgWriteMode::WriteAndVerify => {
                let b = WriteAndVerify::new(lba, blocks);
                (cdb10_or_16(b.build10(), || b.build16()), Dir::Out(len))
            }
            SgWriteMode::WriteSame => {
                let b = WriteSame::new(lba, blocks);
                (cdb10_or_16(b.build10(), || b.build16()), Dir::Out(one))
            }
            SgWriteMode::WriteSameNdob => {
                let c = WriteSame::new(lba, blocks).ndob(true).build16();
                ((c, 16), Dir::None)
            }
            SgWriteMode::WriteStream(id) => {
                let n = u16::try_from(blocks).map_err(|_| libc::EINVAL)?;
                let c = WriteStream::new(lba, n, id).fua(o.writefua).build();
                ((c, 16), Dir::Out(len))
            }
            SgWriteMode::VerifyBytchk00 => {
                let b = Verify::new(lba, blocks);
                (cdb10_or_16(b.build10(), || b.build16()), Dir::None)
            }
            SgWriteMode::VerifyBytchk01 => {
                let b = Verify::new(lba, blocks).bytchk(ByteCheck::Each);
                (cdb10_or_16(b.build10(), || b.build16()), Dir::Out(len))
            }
            SgWriteMode::VerifyBytchk11 => {
                let b = Verify::new(lba, blocks).bytchk(ByteCheck::Same);
                (cdb10_or_16(b.build10(), || b.build16()), Dir::Out(one))
            }
        },
    };
    Ok(Built { cdb, cdb_len, data })
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Sg {
    /// A synchronous SG_IO engine over `targets` (depth 1, as fio's sg on
    /// a block device), with one buffer of `max_len` bytes.
    pub fn new(
        targets: Vec<SgTarget>,
        max_len: usize,
        opts: SgOptions,
        fill: Fill,
    ) -> std::io::Result<Sg> {
        Sg::with_depth(targets, 1, max_len, opts, fill)
    }

    /// An asynchronous engine over /dev/sgN `targets`, as fio's sg engine
    /// on a character device without `direct` or `sync`: up to `depth`
    /// commands queued at once with write() on the nodes, collected with
    /// read() as they complete. A target that is not a node is refused.
    pub fn new_async(
        targets: Vec<SgTarget>,
        depth: u32,
        max_len: usize,
        opts: SgOptions,
        fill: Fill,
    ) -> std::io::Result<Sg> {
        let depth = depth.clamp(1, crate::engine::interface::MAX_DEPTH);
        let mut out = Vec::with_capacity(targets.len());
        for t in targets {
            let port = match t.port {
                Port::Sync(d) => {
                    Port::Async(SgAsync::new(d, depth).map_err(std::io::Error::other)?)
                }
                p => p,
            };
            out.push(SgTarget {
                port,
                block: t.block,
            });
        }
        Sg::with_depth(out, depth, max_len, opts, fill)
    }

    fn with_depth(
        targets: Vec<SgTarget>,
        depth: u32,
        max_len: usize,
        opts: SgOptions,
        fill: Fill,
    ) -> std::io::Result<Sg> {
        let n = depth as usize;
        Ok(Sg {
            targets,
            pool: BufferPool::new(n, max_len, fill)?,
            params: vec![[0u8; 24]; n].into_boxed_slice(),
            flight: vec![None; n],
            opts,
            pending: VecDeque::with_capacity(n),
            done: VecDeque::with_capacity(n),
            failures: Vec::new(),
            depth,
        })
    }

    /// The commands that failed, in order (at most 16 kept).
    pub fn failures(&self) -> &[SgFailure] {
        &self.failures
    }

    fn fail(&mut self, io: &IoDesc, detail: String, errno: i32) -> i32 {
        if self.failures.len() < MAX_FAILURES {
            self.failures.push(SgFailure { io: *io, detail });
        }
        -errno
    }

    /// Send `io` from `slot`: done at once over SG_IO (its result), or
    /// queued on a node (None; its result comes from [`Sg::collect`]).
    fn start(&mut self, slot: u32, io: &IoDesc) -> Option<i32> {
        let Some(t) = self.targets.get_mut(io.target as usize) else {
            return Some(-libc::EINVAL);
        };
        let block = t.block;
        let b = match build(io, block, &self.opts) {
            Ok(b) => b,
            Err(e) => {
                let why = format!(
                    "{} of {} bytes at offset {} is not in whole {}-byte blocks (or too long for the command)",
                    op_name(io.op),
                    io.len,
                    io.offset,
                    block
                );
                return Some(self.fail(io, why, e));
            }
        };
        let cdb = &b.cdb[..b.cdb_len];
        let params = &mut self.params[slot as usize];
        let buf = self.pool.slice(slot as usize);
        let mut cmd = ScsiCommand::new(cdb);
        let want = match b.data {
            Dir::None => 0,
            Dir::In(n) if n <= buf.len() => {
                cmd = cmd.data_in(&mut buf[..n]);
                n
            }
            Dir::Out(n) if io.op == Op::Trim => {
                let bs = u64::from(block);
                let list = UnmapParameterList::new()
                    .range(Lba(io.offset / bs), io.len / block)
                    .build();
                params.copy_from_slice(&list[..24]);
                cmd = cmd.data_out(&params[..n]);
                n
            }
            Dir::Out(n) if n <= buf.len() => {
                cmd = cmd.data_out(&buf[..n]);
                n
            }
            Dir::In(_) | Dir::Out(_) => return Some(-libc::EINVAL),
        };
        let r = match &mut t.port {
            Port::Sync(d) => d.execute(&mut cmd),
            Port::Async(q) => {
                // SAFETY: the data buffer is this slot's: the pool's buffer
                // or `params[slot]`, both on the heap, owned by this engine
                // and dropped after `targets` (whose Drop collects every
                // command in flight). The I/O loop does not touch a slot's
                // buffer while its I/O is in flight, and this engine
                // neither, until `collect` has received the slot's
                // completion.
                match unsafe { q.submit(slot, &mut cmd) } {
                    Ok(()) => {
                        self.flight[slot as usize] = Some(Flight {
                            io: *io,
                            cdb: b.cdb,
                            cdb_len: b.cdb_len,
                            want,
                        });
                        return None;
                    }
                    Err(e) => Err(e),
                }
            }
        };
        Some(self.finish(io, &b.cdb[..b.cdb_len], want, r))
    }

    /// The completion result of a command that carried `io`.
    fn finish(
        &mut self,
        io: &IoDesc,
        cdb: &[u8],
        want: usize,
        r: Result<ScsiResult, SgError>,
    ) -> i32 {
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                let errno = match &e {
                    SgError::Ioctl { source, .. } | SgError::Queue { source, .. } => {
                        source.raw_os_error().unwrap_or(libc::EIO)
                    }
                    SgError::Unclaimed { .. } | SgError::Permission { .. } => libc::EPERM,
                    _ => libc::EIO,
                };
                let detail = format!("{e}; cdb: {}", hex(cdb));
                return self.fail(io, detail, errno);
            }
        };
        if let Err(e) = r.check(cdb) {
            let detail = format!("{e}; cdb: {}", hex(cdb));
            return self.fail(io, detail, libc::EIO);
        }
        match io.op {
            Op::Fsync | Op::Fdatasync | Op::SyncRange(_) => 0,
            // The residual counts against the transfer when all of it moves.
            Op::Read | Op::Write if want == io.len as usize => {
                r.transferred(want).min(i32::MAX as usize) as i32
            }
            _ => io.len.min(i32::MAX as u32) as i32,
        }
    }

    /// Receive every completion ready on the nodes; how many.
    fn collect(&mut self) -> std::io::Result<usize> {
        let mut n = 0;
        for ti in 0..self.targets.len() {
            loop {
                let got = match &mut self.targets[ti].port {
                    Port::Async(q) => q.receive().map_err(std::io::Error::other)?,
                    Port::Sync(_) => None,
                };
                let Some((slot, r)) = got else { break };
                let Some(f) = self.flight.get_mut(slot as usize).and_then(Option::take) else {
                    continue;
                };
                let result = self.finish(&f.io, &f.cdb[..f.cdb_len], f.want, Ok(r));
                self.done.push_back(Completion { slot, result });
                n += 1;
            }
        }
        Ok(n)
    }

    fn in_flight(&self) -> u32 {
        self.targets
            .iter()
            .map(|t| match &t.port {
                Port::Async(q) => q.outstanding(),
                Port::Sync(_) => 0,
            })
            .sum()
    }

    /// Wait until a node has a completion ready, or `timeout` passes.
    fn wait_ready(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        // One node: wait on it. Several: wait on the first with commands
        // in flight for a short while, so the others are looked at too.
        let busy: Vec<&SgAsync> = self
            .targets
            .iter()
            .filter_map(|t| match &t.port {
                Port::Async(q) if q.outstanding() > 0 => Some(q),
                _ => None,
            })
            .collect();
        match busy.as_slice() {
            [] => Ok(()),
            [q] => q.wait(timeout).map_err(std::io::Error::other),
            [q, ..] => {
                let step = Duration::from_millis(1);
                q.wait(Some(timeout.map_or(step, |t| t.min(step))))
                    .map_err(std::io::Error::other)
            }
        }
    }
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
        Op::Trim => "trim",
        Op::Fsync | Op::Fdatasync | Op::SyncRange(_) => "flush",
    }
}

impl Engine for Sg {
    fn name(&self) -> &'static str {
        "sg"
    }

    fn caps(&self) -> Caps {
        Caps {
            asynchronous: self.depth > 1,
            real_io: true,
        }
    }

    fn depth(&self) -> u32 {
        self.depth
    }

    fn queue(&mut self, slot: u32, io: &IoDesc) {
        self.pending.push_back((slot, *io));
    }

    fn commit(&mut self, wait: u32, timeout: Option<Duration>) -> std::io::Result<()> {
        while let Some((slot, io)) = self.pending.pop_front() {
            if let Some(result) = self.start(slot, &io) {
                self.done.push_back(Completion { slot, result });
            }
        }
        self.collect()?;
        let until = timeout.map(|t| std::time::Instant::now() + t);
        while (self.done.len() as u32) < wait && self.in_flight() > 0 {
            let left = match until {
                Some(u) => match u.checked_duration_since(std::time::Instant::now()) {
                    Some(d) => Some(d),
                    None => break,
                },
                None => None,
            };
            self.wait_ready(left)?;
            self.collect()?;
        }
        Ok(())
    }

    fn reap<F: FnMut(Completion)>(&mut self, mut f: F) -> usize {
        if self.in_flight() > 0 {
            // Completions that arrived since the last commit.
            let _ = self.collect();
        }
        let n = self.done.len();
        while let Some(c) = self.done.pop_front() {
            f(c);
        }
        n
    }

    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slice(slot as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(op: Op, offset: u64, len: u32) -> IoDesc {
        IoDesc {
            target: 0,
            op,
            offset,
            len,
        }
    }

    fn with(mode: SgWriteMode) -> SgOptions {
        SgOptions {
            write_mode: mode,
            ..SgOptions::default()
        }
    }

    fn bytes(b: &Built) -> &[u8] {
        &b.cdb[..b.cdb_len]
    }

    fn out(b: &Built) -> Option<usize> {
        match b.data {
            Dir::Out(n) => Some(n),
            _ => None,
        }
    }

    #[test]
    fn each_write_mode_sends_fios_command_and_data_length() {
        // 2 blocks of 512 at LBA 20: what fio 3.33's sg engine sends.
        let w = io(Op::Write, 20 * 512, 1024);
        let b = build(&w, 512, &with(SgWriteMode::Write)).unwrap();
        assert_eq!(bytes(&b), [0x2A, 0, 0, 0, 0, 20, 0, 0, 2, 0]);
        assert_eq!(out(&b), Some(1024));
        let b = build(&w, 512, &with(SgWriteMode::WriteAndVerify)).unwrap();
        assert_eq!(bytes(&b), [0x2E, 0, 0, 0, 0, 20, 0, 0, 2, 0]);
        assert_eq!(out(&b), Some(1024));
        // WRITE SAME sends one block.
        let b = build(&w, 512, &with(SgWriteMode::WriteSame)).unwrap();
        assert_eq!(bytes(&b), [0x41, 0, 0, 0, 0, 20, 0, 0, 2, 0]);
        assert_eq!(out(&b), Some(512));
        // NDOB: always the 16-byte form, nothing sent.
        let b = build(&w, 512, &with(SgWriteMode::WriteSameNdob)).unwrap();
        assert_eq!(
            bytes(&b),
            [0x93, 0x01, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 2, 0, 0]
        );
        assert!(matches!(b.data, Dir::None));
        let b = build(&w, 512, &with(SgWriteMode::WriteStream(3))).unwrap();
        assert_eq!(
            bytes(&b),
            [0x9A, 0, 0, 0, 0, 0, 0, 0, 0, 20, 0, 3, 0, 2, 0, 0]
        );
        assert_eq!(out(&b), Some(1024));
        let b = build(&w, 512, &with(SgWriteMode::VerifyBytchk00)).unwrap();
        assert_eq!(bytes(&b), [0x2F, 0x00, 0, 0, 0, 20, 0, 0, 2, 0]);
        assert!(matches!(b.data, Dir::None));
        let b = build(&w, 512, &with(SgWriteMode::VerifyBytchk01)).unwrap();
        assert_eq!(bytes(&b), [0x2F, 0x02, 0, 0, 0, 20, 0, 0, 2, 0]);
        assert_eq!(out(&b), Some(1024));
        let b = build(&w, 512, &with(SgWriteMode::VerifyBytchk11)).unwrap();
        assert_eq!(bytes(&b), [0x2F, 0x06, 0, 0, 0, 20, 0, 0, 2, 0]);
        assert_eq!(out(&b), Some(512));
    }

    #[test]
    fn reads_fua_and_large_lbas_take_the_16_byte_form() {
        let o = SgOptions {
            readfua: true,
            writefua: true,
            ..SgOptions::default()
        };
        let b = build(&io(Op::Read, 4096, 4096), 4096, &o).unwrap();
        assert_eq!(bytes(&b), [0x28, 0x08, 0, 0, 0, 1, 0, 0, 1, 0]);
        assert!(matches!(b.data, Dir::In(4096)));
        let far = (1u64 << 32) * 512;
        let b = build(&io(Op::Write, far, 512), 512, &o).unwrap();
        assert_eq!(
            bytes(&b),
            [0x8A, 0x08, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]
        );
        let b = build(&io(Op::Fsync, 0, 0), 512, &o).unwrap();
        assert_eq!(bytes(&b)[0], 0x35);
        let b = build(&io(Op::Trim, 512, 512), 512, &o).unwrap();
        assert_eq!(bytes(&b)[0], 0x42);
        assert_eq!(out(&b), Some(24));
    }

    #[test]
    fn unaligned_io_is_refused_with_einval_as_fio_does() {
        let o = SgOptions::default();
        assert_eq!(
            build(&io(Op::Write, 100, 512), 512, &o).err(),
            Some(libc::EINVAL)
        );
        assert_eq!(
            build(&io(Op::Read, 0, 700), 512, &o).err(),
            Some(libc::EINVAL)
        );
    }

    #[test]
    fn a_file_is_refused_as_not_scsi() {
        let p = std::env::temp_dir().join(format!("drivelab-sg-file-{}", std::process::id()));
        std::fs::write(&p, vec![0u8; 4096]).unwrap();
        let e = SgTarget::read_only(&p).unwrap_err();
        std::fs::remove_file(&p).unwrap();
        assert!(matches!(e, SgError::NotScsi { .. }), "{e}");
        assert!(e.to_string().contains("not a SCSI device"), "{e}");
    }

    #[test]
    fn write_modes_parse_fios_names_and_aliases() {
        for (s, m) in [
            ("write", SgWriteMode::Write),
            ("verify", SgWriteMode::WriteAndVerify),
            ("write_and_verify", SgWriteMode::WriteAndVerify),
            ("same", SgWriteMode::WriteSame),
            ("write_same", SgWriteMode::WriteSame),
            ("write_same_ndob", SgWriteMode::WriteSameNdob),
            ("write_stream", SgWriteMode::WriteStream(7)),
            ("verify_bytchk_00", SgWriteMode::VerifyBytchk00),
            ("verify_bytchk_01", SgWriteMode::VerifyBytchk01),
            ("verify_bytchk_11", SgWriteMode::VerifyBytchk11),
        ] {
            assert_eq!(SgWriteMode::parse(s, 7), Some(m), "{s}");
        }
        assert_eq!(SgWriteMode::parse("verify_bytchk_10", 0), None);
        assert!(!SgWriteMode::VerifyBytchk01.changes_medium());
        assert!(SgWriteMode::WriteSameNdob.changes_medium());
    }
}
