//! [`Psync`]: `pread`/`pwrite`, one I/O at a time, for comparison;
//! `preadv2`/`pwritev2` with fio's pvsync2 flags ([`PsyncOptions`]).

use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::time::Duration;

use crate::buf::{BufferPool, Fill};
use crate::engine::interface::{drain, Caps, Completion, Engine};
use crate::io::{IoDesc, Op};
use crate::openset::Opener;
use crate::target::{trim_sync, Target};

/// fio's pvsync2 options: flags of every `preadv2`/`pwritev2`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PsyncOptions {
    /// `hipri`: RWF_HIPRI (the kernel polls for the completion where the
    /// device has poll queues). Default off.
    pub hipri: bool,
    /// `nowait`: RWF_NOWAIT (an I/O that would block fails with EAGAIN).
    /// Default off.
    pub nowait: bool,
    /// `hipri_percentage`: with `hipri`, the share of I/Os (0-100) that
    /// carry RWF_HIPRI, each I/O drawn at random as fio does. None: every
    /// I/O (fio's default, 100).
    pub hipri_percentage: Option<u8>,
}

/// The seed of the `hipri_percentage` draws: any nonzero value.
const HIPRI_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// pread/pwrite, one I/O per commit.
pub struct Psync {
    /// Per target: open (always, unless made over an [`Opener`]).
    targets: Vec<Option<Target>>,
    opener: Option<Opener>,
    pool: BufferPool,
    pending: VecDeque<(u32, IoDesc)>,
    done: VecDeque<Completion>,
    /// preadv2 flags of every read; 0: plain pread.
    read_flags: i32,
    /// pwritev2 flags of every write (RWF_DSYNC with FUA); 0: plain pwrite.
    write_flags: i32,
    /// `hipri_percentage` below 100 with `hipri`: the share of I/Os that
    /// keep RWF_HIPRI, and the state of the generator that draws them.
    hipri_share: Option<(u8, u64)>,
}

impl Psync {
    /// A synchronous engine over `targets` (depth is always 1, as fio's psync).
    pub fn new(
        targets: Vec<Target>,
        max_len: usize,
        fua: bool,
        fill: Fill,
    ) -> std::io::Result<Psync> {
        Ok(Psync {
            targets: targets.into_iter().map(Some).collect(),
            opener: None,
            pool: BufferPool::new(1, max_len, fill)?,
            pending: VecDeque::with_capacity(1),
            done: VecDeque::with_capacity(1),
            read_flags: 0,
            write_flags: if fua { libc::RWF_DSYNC } else { 0 },
            hipri_share: None,
        })
    }

    /// Every write also carries `flags` (RWF_SYNC or RWF_DSYNC: fio's
    /// `sync`, which the kernel turns into the same per-write flags).
    pub fn with_write_flags(mut self, flags: i32) -> Psync {
        self.write_flags |= flags;
        self
    }

    /// Reads and writes become `preadv2`/`pwritev2` with `opts`' flags
    /// (fio's pvsync2).
    pub fn with_options(mut self, opts: PsyncOptions) -> Psync {
        let mut f = 0;
        if opts.hipri {
            f |= libc::RWF_HIPRI;
        }
        if opts.nowait {
            f |= libc::RWF_NOWAIT;
        }
        self.read_flags = f;
        self.write_flags |= f;
        self.hipri_share = match opts.hipri_percentage {
            Some(p) if opts.hipri && p < 100 => Some((p, HIPRI_SEED)),
            _ => None,
        };
        self
    }

    /// The flags of the next read and write: RWF_HIPRI kept on a draw of
    /// 1..=100 at most the `hipri_percentage` (fio's pvsync2), otherwise
    /// the flags as set.
    fn next_flags(&mut self) -> (i32, i32) {
        let Some((share, state)) = self.hipri_share.as_mut() else {
            return (self.read_flags, self.write_flags);
        };
        // xorshift64: a cheap, fixed-seed sequence (fio seeds its own the same way each run).
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        let draw = (*state % 100) as u8 + 1;
        if draw <= *share {
            (self.read_flags, self.write_flags)
        } else {
            (
                self.read_flags & !libc::RWF_HIPRI,
                self.write_flags & !libc::RWF_HIPRI,
            )
        }
    }

    /// A synchronous engine over the files `opener` opens when told
    /// (fio's `openfiles`); none is open at first.
    pub fn over_opener(
        opener: Opener,
        max_len: usize,
        fua: bool,
        fill: Fill,
    ) -> std::io::Result<Psync> {
        let mut p = Psync::new(Vec::new(), max_len, fua, fill)?;
        p.targets = (0..opener.targets()).map(|_| None).collect();
        p.opener = Some(opener);
        Ok(p)
    }

    fn run_one(&mut self, slot: u32, io: &IoDesc) -> i32 {
        let (read_flags, write_flags) = self.next_flags();
        let Some(Some(t)) = self.targets.get(io.target as usize) else {
            return -libc::EBADF;
        };
        let fd = t.file.as_raw_fd();
        let len = io.len as usize;
        let buf = match io.op {
            Op::Read | Op::Write => match self.pool.io_ptr(slot as usize, len) {
                Some(p) => p,
                None => return -libc::EINVAL,
            },
            Op::Fsync | Op::Fdatasync | Op::SyncRange(_) | Op::Trim => std::ptr::null_mut(),
        };
        let off = io.offset as libc::off_t;
        let iov = libc::iovec {
            iov_base: buf.cast(),
            iov_len: len,
        };
        // SAFETY: for reads and writes `buf` (and `iov`, which describes
        // it) points at slot buffer `slot`, which `io_ptr` checked holds
        // `len` bytes; the fd is open.
        let r: isize = unsafe {
            match io.op {
                Op::Read if read_flags != 0 => libc::preadv2(fd, &iov, 1, off, read_flags),
                Op::Read => libc::pread(fd, buf.cast(), len, off),
                Op::Write if write_flags != 0 => libc::pwritev2(fd, &iov, 1, off, write_flags),
                Op::Write => libc::pwrite(fd, buf.cast(), len, off),
                Op::Fsync => libc::fsync(fd) as isize,
                Op::Fdatasync => libc::fdatasync(fd) as isize,
                Op::SyncRange(flags) => {
                    libc::sync_file_range(fd, off, len as libc::off_t, flags) as isize
                }
                Op::Trim => return trim_sync(t, io.offset, u64::from(io.len)),
            }
        };
        if r < 0 {
            -std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)
        } else {
            r.min(i32::MAX as isize) as i32
        }
    }
}

impl Engine for Psync {
    fn name(&self) -> &'static str {
        "psync"
    }

    fn caps(&self) -> Caps {
        Caps {
            asynchronous: false,
            real_io: true,
        }
    }

    fn depth(&self) -> u32 {
        1
    }

    fn queue(&mut self, slot: u32, io: &IoDesc) {
        self.pending.push_back((slot, *io));
    }

    fn commit(&mut self, _wait: u32, _timeout: Option<Duration>) -> std::io::Result<()> {
        while let Some((slot, io)) = self.pending.pop_front() {
            let result = self.run_one(slot, &io);
            self.done.push_back(Completion { slot, result });
        }
        Ok(())
    }

    fn reap<F: FnMut(Completion)>(&mut self, f: F) -> usize {
        drain(&mut self.done, f)
    }

    fn buffer(&mut self, slot: u32) -> &mut [u8] {
        self.pool.slice(slot as usize)
    }

    fn open_file(&mut self, target: u32) -> std::io::Result<()> {
        let Some(opener) = &self.opener else {
            return Ok(());
        };
        match self.targets.get_mut(target as usize) {
            Some(t @ None) => {
                *t = Some(opener.open(target)?);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn close_file(&mut self, target: u32) -> std::io::Result<()> {
        if self.opener.is_some() {
            if let Some(t) = self.targets.get_mut(target as usize) {
                *t = None;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::tests::{one, read, Scratch};

    #[test]
    fn hipri_percentage_keeps_rwf_hipri_on_its_share_of_ios() {
        // (hipri, hipri_percentage, least and most I/Os of 1000 with RWF_HIPRI)
        let table: [(bool, Option<u8>, u32, u32); 5] = [
            (true, None, 1000, 1000),
            (true, Some(100), 1000, 1000),
            (true, Some(0), 0, 0),
            (true, Some(25), 200, 300),
            (false, Some(50), 0, 0),
        ];
        for (hipri, pct, lo, hi) in table {
            let f = Scratch::new("hipri-pct");
            let o = PsyncOptions {
                hipri,
                hipri_percentage: pct,
                ..PsyncOptions::default()
            };
            let mut p = Psync::new(f.target(), 4096, false, Fill::Zeroed)
                .unwrap()
                .with_options(o);
            let n = (0..1000)
                .filter(|_| {
                    let (r, w) = p.next_flags();
                    assert_eq!(r & libc::RWF_HIPRI, w & libc::RWF_HIPRI);
                    r & libc::RWF_HIPRI != 0
                })
                .count() as u32;
            assert!((lo..=hi).contains(&n), "{hipri} {pct:?}: {n}");
        }
    }

    #[test]
    fn pvsync2_flags_go_to_preadv2_and_pwritev2() {
        let f = Scratch::new("pv2");
        let o = PsyncOptions {
            hipri: true,
            nowait: true,
            ..PsyncOptions::default()
        };
        let mut p = Psync::new(f.target(), 4096, true, Fill::Zeroed)
            .unwrap()
            .with_options(o);
        let f2 = libc::RWF_HIPRI | libc::RWF_NOWAIT;
        assert_eq!((p.read_flags, p.write_flags), (f2, f2 | libc::RWF_DSYNC));
        // Buffered and cached: RWF_HIPRI is no error, RWF_NOWAIT does not block.
        assert_eq!(one(&mut p, read(4096)), 4096);
        assert_eq!(p.buffer(0)[..4096], [7u8; 4096]);
    }
}
