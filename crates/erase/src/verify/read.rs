//! The read-back: O_DIRECT reads of a [`SamplePlan`] through io_uring, each
//! block checked against the pattern. Reads bypass the page cache, so what
//! is checked is what the drive returns, not what the kernel remembers
//! writing. A read that keeps failing is narrowed down to its unreadable
//! blocks with synchronous reads. The read-back is a [`Reader`], a driver
//! of the engine's one I/O loop: it says what to read next and what a
//! completion means; blocks are checked while the next reads are in flight.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use drivelab_engine::buf::Fill;
use drivelab_engine::engine::{Target, Uring};
use drivelab_engine::io::{IoDesc, Op};
use drivelab_engine::ioloop::{self, After, Done, Driver, LoopConfig, Next};
use drivelab_engine::narrow::narrow;
use drivelab_patterns::Generator;

use super::sample::SamplePlan;
use crate::aligned;

/// Largest single read, bytes.
pub const READ_LEN: u64 = 1 << 20;
/// Reads in flight.
const DEPTH: u32 = 16;

/// What a verification found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyResult {
    /// Bytes read and checked.
    pub bytes_read: u64,
    /// Read commands.
    pub reads: u64,
    /// First mismatch: LBA and what differed.
    pub mismatch: Option<(u64, String)>,
    /// Blocks that could not be read (first LBA, blocks, error).
    pub unreadable: Vec<(u64, u64, String)>,
    /// Errors met, including ones a retry cured.
    pub errors: Vec<String>,
    /// Retries that succeeded.
    pub retried: u64,
    /// Stopped by the stop flag.
    pub stopped: bool,
    /// Stopped because reads in a row failed in every block: the drive
    /// no longer answers (gone, or failing everything), and narrowing the
    /// rest of it block by block would only take time.
    pub gone: bool,
}

/// Reads in a row whose every block fails when read one by one that stop
/// the read-back (real medium errors come in clusters far smaller than a
/// read).
pub(crate) const WHOLLY_FAILED_GONE: u32 = 2;

/// How read errors are handled.
#[derive(Debug, Clone, Copy)]
pub struct ReadPolicy {
    /// Retries per failing read.
    pub retries: u32,
    /// After a read fails its retries it is narrowed down to the unreadable
    /// blocks either way; then go on (retry-skip, true), or stop (abort,
    /// false) with the unreadable blocks of that read recorded.
    pub skip: bool,
}

fn errno_text(e: i32) -> String {
    let s = std::io::Error::from_raw_os_error(e);
    format!("read error: {s}")
}

/// The plan's regions in pieces of at most READ_LEN bytes, in plan order:
/// (first LBA, blocks).
fn pieces(plan: &SamplePlan, lbs: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
    plan.regions.iter().flat_map(move |r| {
        let per = READ_LEN / lbs;
        (0..r.blocks.div_ceil(per)).map(move |k| {
            let first = r.first + k * per;
            (first, per.min(r.first + r.blocks - first))
        })
    })
}

fn read_io(first: u64, blocks: u64, lbs: u64) -> IoDesc {
    IoDesc {
        target: 0,
        op: Op::Read,
        offset: first * lbs,
        len: (blocks * lbs) as u32,
    }
}

/// Read `plan` from `path` with O_DIRECT and check every block against
/// `gen`. `progress(bytes)` is called as reads complete; `stop()` ends early.
pub fn read_back(
    path: &Path,
    lbs: u32,
    plan: &SamplePlan,
    gen: &Generator,
    policy: ReadPolicy,
    mut progress: impl FnMut(u64),
    stop: impl Fn() -> bool,
) -> std::io::Result<VerifyResult> {
    // The drive is claimed by the erase; reading needs no claim.
    let side = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)?;
    let target = Target::read_only(path, true)?;
    // Reads land in these buffers: nothing to fill. No more buffers than
    // there are reads (a small drive is one read), since a station verifies
    // every drive at once.
    let depth = pieces(plan, u64::from(lbs))
        .take(DEPTH as usize)
        .count()
        .max(1) as u32;
    let mut eng = Uring::new(vec![target], depth, READ_LEN as usize, false, Fill::Zeroed)?;
    let lbs = u64::from(lbs);
    let mut r = Reader {
        lbs,
        gen,
        policy,
        side,
        pieces: pieces(plan, lbs),
        progress: &mut progress,
        stop: &stop,
        res: VerifyResult::default(),
        wholly_failed: 0,
    };
    ioloop::run(&mut eng, &mut r, &LoopConfig::default())?;
    Ok(r.res)
}

/// The state of one read-back, as a driver of the I/O loop.
struct Reader<'g, I, P, S> {
    lbs: u64,
    gen: &'g Generator,
    policy: ReadPolicy,
    /// A second descriptor for synchronous narrowing reads.
    side: File,
    pieces: I,
    progress: &'g mut P,
    stop: &'g S,
    res: VerifyResult,
    /// Failed reads in a row whose every block failed again.
    wholly_failed: u32,
}

impl<I, P, S> Driver for Reader<'_, I, P, S>
where
    I: Iterator<Item = (u64, u64)>,
    P: FnMut(u64),
    S: Fn() -> bool,
{
    /// The next piece, until the plan is done, a mismatch was found, or
    /// it was stopped.
    fn next(&mut self, _now: u64, _inflight: u32, _buf: &mut [u8]) -> Next {
        if self.res.mismatch.is_some() || self.res.stopped {
            return Next::Done;
        }
        if (self.stop)() {
            self.res.stopped = true;
            return Next::Done;
        }
        match self.pieces.next() {
            Some((first, blocks)) => Next::Io {
                io: read_io(first, blocks, self.lbs),
                due: None,
                tag: 0,
            },
            None => Next::Done,
        }
    }

    /// Every read's data is checked, while the next reads are in flight.
    fn inspects(&self, _io: &IoDesc, _tag: u64) -> bool {
        true
    }

    /// One completion: check the data, or retry the read, or narrow it
    /// down to its unreadable blocks.
    fn complete(&mut self, d: &Done, buf: &[u8]) -> After {
        let (first, blocks) = (d.io.offset / self.lbs, u64::from(d.io.len) / self.lbs);
        let len = d.io.len as usize;
        let res = &mut self.res;
        if d.is_full() {
            res.reads += 1;
            res.bytes_read += len as u64;
            (self.progress)(len as u64);
            if res.mismatch.is_none() {
                if let Err(m) = self.gen.verify(&buf[..len], first) {
                    res.mismatch = Some((m.lba, m.to_string()));
                }
            }
            if d.retries > 0 {
                res.retried += 1;
            }
            return After::Release;
        }
        let err = if d.result < 0 {
            errno_text(-d.result)
        } else {
            format!("short read: {} of {len} bytes", d.result)
        };
        res.errors.push(format!("LBA {first} +{blocks}: {err}"));
        if d.retries < self.policy.retries && !d.draining {
            return After::Retry;
        }
        // Narrow down to the unreadable blocks, checking the readable:
        // even under abort, so the failure names the first bad LBA and not
        // the (up to 1 MiB) read that contained it.
        let before = self.res.unreadable.len();
        let read_before = self.res.bytes_read;
        narrow_read(&self.side, self.lbs, first, blocks, self.gen, &mut self.res);
        if !self.policy.skip && self.res.unreadable.len() > before {
            self.res.stopped = true;
        }
        self.wholly_failed = if self.res.bytes_read == read_before && blocks > 1 {
            self.wholly_failed + 1
        } else {
            0
        };
        if self.wholly_failed >= WHOLLY_FAILED_GONE {
            self.res.gone = true;
            self.res.stopped = true;
        }
        After::Release
    }
}

/// Read `[first, first + blocks)` synchronously once more; if it still
/// fails, narrow it down to single blocks ([`narrow`]): readable pieces are
/// checked, unreadable blocks recorded (adjacent ones with the same error
/// merged).
fn narrow_read(
    f: &File,
    lbs: u64,
    first: u64,
    blocks: u64,
    gen: &Generator,
    res: &mut VerifyResult,
) {
    let mut scratch = Vec::new();
    let mut op = |o: u64, l: u64| -> Result<(), String> {
        let len = l as usize;
        let buf = aligned(&mut scratch, len);
        match f.read_at(buf, o) {
            Ok(k) if k == len => {
                res.reads += 1;
                res.bytes_read += l;
                if res.mismatch.is_none() {
                    if let Err(m) = gen.verify(buf, o / lbs) {
                        res.mismatch = Some((m.lba, m.to_string()));
                    }
                }
                Ok(())
            }
            Ok(k) => Err(format!("short read: {k} of {len} bytes")),
            Err(e) => Err(format!("read error: {e}")),
        }
    };
    let (off, len) = (first * lbs, blocks * lbs);
    let Err(why) = op(off, len) else { return };
    let n = narrow(off, len, lbs, why, &mut op);
    for (o, l, why) in n.bad {
        let (f0, k) = (o / lbs, l / lbs);
        match res.unreadable.last_mut() {
            Some(last) if last.0 + last.1 == f0 && last.2 == why => last.1 += k,
            _ => res.unreadable.push((f0, k, why)),
        }
    }
}
