//! fio's `read_iolog` of a blktrace binary file (what `blktrace -o` writes,
//! one file per CPU or the files merged with `blkparse -d`), read as fio
//! 3.33's blktrace.c reads it: every event is a `struct blk_io_trace`
//! (48 bytes, the writer's byte order, followed by `pdu_len` bytes of
//! payload); only queue events (`Q`) are replayed, notify events are
//! passed over, a discard is a trim, a flush a sync of its device and any
//! other a read or write of `bytes` at `sector` × 512. The gap before an
//! I/O is its event's time after the previous queue event's (scaled by
//! `replay_time_scale`; none when time went back), so an event
//! `replay_skip` leaves out takes its gap with it, as in fio. Each device
//! (major:minor) is the block device the kernel has with that number
//! (its /dev node), or `replay_redirect`. `replay_scale` divides offsets,
//! `replay_align` aligns them down and rounds lengths up. The job's
//! iodepth, unless given, is the trace's ([`Loaded::depth`]).

use drivelab_engine::io::{IoDesc, Op};

use crate::job::types::Loaded;
use crate::SpecError;

/// `BLK_IO_TRACE_MAGIC`, in the top 24 bits of an event's first word.
const MAGIC: u32 = 0x6561_7400;
/// `BLK_IO_TRACE_VERSION`, in its low 8 bits.
const VERSION: u32 = 0x07;
/// Bytes of one event before its payload.
const EVENT: usize = 48;
/// The action's category bits start here (`BLK_TC_SHIFT`).
const TC_SHIFT: u32 = 16;
const TC_READ: u32 = 1 << 0;
const TC_WRITE: u32 = 1 << 1;
const TC_FLUSH: u32 = 1 << 2;
const TC_NOTIFY: u32 = 1 << 10;
const TC_DISCARD: u32 = 1 << 13;
/// `__BLK_TA_QUEUE`: a request queued (blkparse's `Q`).
const TA_QUEUE: u32 = 1;
/// `__BLK_TA_BACKMERGE` and `__BLK_TA_FRONTMERGE`: merged into a queued one.
const TA_BACKMERGE: u32 = 2;
const TA_FRONTMERGE: u32 = 3;
/// `__BLK_TA_COMPLETE`.
const TA_COMPLETE: u32 = 8;

/// fio's probe of a trace's depth, per direction (read, write, trim): the
/// requests queued since the last completion, and the most seen.
#[derive(Default)]
struct Depth {
    now: [u32; 3],
    most: [u32; 3],
}

impl Depth {
    fn see(&mut self, action: u32) {
        let cat = action >> TC_SHIFT;
        let dir = if cat & TC_READ != 0 {
            0
        } else if cat & TC_WRITE != 0 {
            1
        } else if cat & TC_DISCARD != 0 {
            2
        } else {
            return;
        };
        match action & 0xffff {
            TA_QUEUE => self.now[dir] += 1,
            TA_BACKMERGE | TA_FRONTMERGE => self.now[dir] = self.now[dir].saturating_sub(1),
            TA_COMPLETE => {
                self.most[dir] = self.most[dir].max(self.now[dir]);
                self.now[dir] = 0;
            }
            _ => {}
        }
    }

    /// The job's depth: the deepest direction, at most 1024, at least 1
    /// for a direction with I/O (`ios`, per direction).
    fn of(&self, ios: [u64; 3]) -> u32 {
        (0..3)
            .map(|d| match self.most[d] {
                m if m > 1024 => 1024,
                0 if ios[d] > 0 => 1,
                m => m,
            })
            .max()
            .unwrap_or(1)
            .max(1)
    }
}

fn bad(path: &str, why: impl std::fmt::Display) -> SpecError {
    SpecError::Invalid(format!("read_iolog {path}: {why}"))
}

/// Whether `head` (a file's first bytes) starts a blktrace file, in either
/// byte order.
pub fn is_blktrace(head: &[u8]) -> bool {
    let Some(w) = head.get(..4) else {
        return false;
    };
    let w = [w[0], w[1], w[2], w[3]];
    u32::from_le_bytes(w) & !0xff == MAGIC || u32::from_be_bytes(w) & !0xff == MAGIC
}

/// One event's fields fio uses.
struct Event {
    time: u64,
    sector: u64,
    bytes: u32,
    action: u32,
    device: u32,
}

/// The events of `data`, in the byte order its first event shows.
fn events(path: &str, data: &[u8]) -> Result<Vec<Event>, SpecError> {
    let big = data.len() >= 4
        && u32::from_le_bytes([data[0], data[1], data[2], data[3]]) & !0xff != MAGIC;
    let u32_at = |b: &[u8], at: usize| {
        let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if big {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    };
    let u64_at = |b: &[u8], at: usize| {
        let (hi, lo) = if big {
            (u32_at(b, at), u32_at(b, at + 4))
        } else {
            (u32_at(b, at + 4), u32_at(b, at))
        };
        (u64::from(hi) << 32) | u64::from(lo)
    };
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let Some(e) = data.get(at..at + EVENT) else {
            return Err(bad(
                path,
                format!("the trace ends inside an event at byte {at}"),
            ));
        };
        let magic = u32_at(e, 0);
        if magic & !0xff != MAGIC {
            return Err(bad(
                path,
                format!("bad blktrace magic {magic:#x} at byte {at}"),
            ));
        }
        if magic & 0xff != VERSION {
            return Err(bad(
                path,
                format!(
                    "blktrace version {} at byte {at}; version 7 is read",
                    magic & 0xff
                ),
            ));
        }
        let pdu = u16::from(e[46]) | (u16::from(e[47]) << 8);
        let pdu = if big { pdu.swap_bytes() } else { pdu };
        out.push(Event {
            time: u64_at(e, 8),
            sector: u64_at(e, 16),
            bytes: u32_at(e, 24),
            action: u32_at(e, 28),
            device: u32_at(e, 36),
        });
        at += EVENT + usize::from(pdu);
    }
    Ok(out)
}

/// The replay options a blktrace is read with (fio's `replay_*`).
#[derive(Debug, Clone, Default)]
pub struct Shape<'a> {
    /// Every I/O goes here (`replay_redirect`).
    pub redirect: Option<&'a str>,
    /// Offsets divided by this (`replay_scale`; 0 or 1: not).
    pub scale: u64,
    /// Offsets aligned down, lengths up, to this (`replay_align`; 0: not).
    pub align: u64,
    /// Speed in percent of the trace's (`replay_time_scale`).
    pub time_scale: u64,
    /// Kinds left out (`replay_skip`): read, write, trim, sync.
    pub skip: [bool; 4],
}

/// Read blktrace file `path` (already known to be one) for a job with
/// replay options `o`.
pub fn load(path: &str, o: &Shape<'_>) -> Result<Loaded, SpecError> {
    let mut f = drivelab_device::input::open(
        std::path::Path::new(path),
        drivelab_device::input::Kind::Trace,
    )
    .map_err(|e| bad(path, e))?;
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut f, &mut data).map_err(|e| bad(path, e))?;
    let mut devices: Vec<u32> = Vec::new();
    let mut ios = Vec::new();
    let (mut last, mut due) = (0u64, 0u64);
    let (mut writes, mut trims) = (false, false);
    let mut depth = Depth::default();
    let mut dir_ios = [0u64; 3];
    for e in events(path, &data)? {
        let cat = e.action >> TC_SHIFT;
        if cat & TC_NOTIFY != 0 {
            continue;
        }
        depth.see(e.action);
        if e.action & 0xffff != TA_QUEUE {
            continue;
        }
        let gap = if last == 0 || e.time < last {
            0
        } else {
            ((e.time - last) as u128 * 100 / u128::from(o.time_scale.max(1))) as u64
        };
        last = e.time;
        let (op, kind) = if cat & TC_DISCARD != 0 {
            (Op::Trim, 2)
        } else if cat & TC_FLUSH != 0 {
            (Op::Fsync, 3)
        } else if cat & TC_WRITE != 0 {
            (Op::Write, 1)
        } else {
            (Op::Read, 0)
        };
        if o.skip[kind] || (kind < 2 && e.bytes == 0) {
            continue;
        }
        due = due.saturating_add(gap);
        let target = match o.redirect {
            Some(_) => 0,
            None => match devices.iter().position(|&d| d == e.device) {
                Some(i) => i as u32,
                None => {
                    devices.push(e.device);
                    (devices.len() - 1) as u32
                }
            },
        };
        let (offset, len) = match op {
            Op::Fsync => (0, 0),
            _ => {
                let mut offset = e.sector.saturating_mul(512);
                if o.scale > 1 {
                    offset /= o.scale;
                }
                let mut len = u64::from(e.bytes);
                if o.align > 0 {
                    offset &= !(o.align - 1);
                    len = len.div_ceil(o.align) * o.align;
                }
                let len = u32::try_from(len)
                    .map_err(|_| bad(path, format!("an I/O of {len} bytes: at most 4 GiB")))?;
                (offset, len)
            }
        };
        if kind < 3 {
            dir_ios[kind] += 1;
        }
        writes |= matches!(op, Op::Write | Op::Trim);
        trims |= op == Op::Trim;
        ios.push((
            IoDesc {
                target,
                op,
                offset,
                len,
            },
            due,
        ));
    }
    let files = match o.redirect {
        Some(r) => vec![r.to_string()],
        None => devices
            .iter()
            .map(|&d| {
                let (maj, min) = (d >> 20, d & 0xf_ffff);
                drivelab_device::blockdev::BlockDevice::from_dev_numbers(maj, min)
                    .map(|b| b.path.display().to_string())
                    .map_err(|_| {
                        bad(
                            path,
                            format!("the trace's device {maj}:{min} is not a block device here; name the device to replay on with replay_redirect"),
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    if ios.is_empty() {
        return Err(bad(path, "no queued I/O to replay in the blktrace"));
    }
    Ok(Loaded {
        path: path.to_string(),
        files,
        ios,
        writes,
        trims,
        depth: Some(depth.of(dir_ios)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One event as blktrace writes it on a little-endian host.
    fn event(time: u64, sector: u64, bytes: u32, action: u32, pdu: &[u8]) -> Vec<u8> {
        let mut e = Vec::new();
        e.extend((MAGIC | VERSION).to_le_bytes());
        e.extend(1u32.to_le_bytes()); // sequence
        e.extend(time.to_le_bytes());
        e.extend(sector.to_le_bytes());
        e.extend(bytes.to_le_bytes());
        e.extend(action.to_le_bytes());
        e.extend(7u32.to_le_bytes()); // pid
        e.extend(((7u32 << 20) | 3).to_le_bytes()); // device 7:3
        e.extend(0u32.to_le_bytes()); // cpu
        e.extend(0u16.to_le_bytes()); // error
        e.extend((pdu.len() as u16).to_le_bytes());
        e.extend(pdu);
        e
    }

    #[test]
    fn queue_events_are_replayed_with_their_gaps_and_the_rest_passed_over() {
        let q = |cat: u32| (cat << TC_SHIFT) | TA_QUEUE;
        let mut t = Vec::new();
        t.extend(event(1_000, 8, 4096, q(TC_WRITE), &[]));
        // A completion, a notify carrying a payload: passed over.
        t.extend(event(1_500, 8, 4096, (TC_WRITE << TC_SHIFT) | 8, &[]));
        t.extend(event(
            1_700,
            0,
            0,
            (TC_NOTIFY << TC_SHIFT) | TA_QUEUE,
            b"name",
        ));
        t.extend(event(3_000, 16, 8192, q(0), &[]));
        t.extend(event(4_000, 64, 4096, q(TC_DISCARD), &[]));
        t.extend(event(4_500, 0, 0, q(TC_FLUSH), &[]));
        let dir = std::env::temp_dir().join(format!("dl-blktrace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.bin");
        std::fs::write(&path, &t).unwrap();
        assert!(is_blktrace(&t));
        let o = Shape {
            redirect: Some("/x"),
            time_scale: 100,
            ..Shape::default()
        };
        let l = load(path.to_str().unwrap(), &o).unwrap();
        let got: Vec<(Op, u64, u32, u64)> = l
            .ios
            .iter()
            .map(|(i, d)| (i.op, i.offset, i.len, *d))
            .collect();
        assert_eq!(
            got,
            [
                (Op::Write, 4096, 4096, 0),
                (Op::Read, 8192, 8192, 2_000),
                (Op::Trim, 32768, 4096, 3_000),
                (Op::Fsync, 0, 0, 3_500),
            ]
        );
        assert!(l.writes && l.trims);
        assert_eq!(l.files, ["/x"]);
        // One write queued before its completion: depth 1.
        assert_eq!(l.depth, Some(1));
        // replay_skip=read: the read and its gap go; half speed doubles gaps.
        let o = Shape {
            redirect: Some("/x"),
            skip: [true, false, false, false],
            time_scale: 50,
            ..Shape::default()
        };
        let l = load(path.to_str().unwrap(), &o).unwrap();
        let got: Vec<(Op, u64)> = l.ios.iter().map(|(i, d)| (i.op, *d)).collect();
        assert_eq!(got, [(Op::Write, 0), (Op::Trim, 2_000), (Op::Fsync, 3_000)]);
        // Three reads queued, one merged, then a completion: depth 2, as
        // fio probes it.
        let r = |a: u32| (TC_READ << TC_SHIFT) | a;
        let mut deep = Vec::new();
        for (t, a) in [
            (1, TA_QUEUE),
            (2, TA_QUEUE),
            (3, TA_BACKMERGE),
            (4, TA_QUEUE),
            (5, TA_COMPLETE),
        ] {
            deep.extend(event(t, 8 * t, 4096, r(a), &[]));
        }
        std::fs::write(&path, &deep).unwrap();
        let plain = Shape {
            redirect: Some("/x"),
            time_scale: 100,
            ..Shape::default()
        };
        assert_eq!(load(path.to_str().unwrap(), &plain).unwrap().depth, Some(2));
        // A torn last event is refused.
        std::fs::write(&path, &t[..t.len() - 10]).unwrap();
        assert!(load(path.to_str().unwrap(), &o).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
