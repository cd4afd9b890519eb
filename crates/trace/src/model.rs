//! The one in-memory shape every trace format is read into and written from.
//! Keeping a single small `Request` lets readers, writers, the analyzer, the
//! comparison and (later) the replayer meet without knowing each other.

use serde::{Deserialize, Serialize};

/// The operation a request performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Read data from the device.
    Read,
    /// Write data to the device.
    Write,
    /// Discard / unmap / TRIM a range.
    Trim,
    /// Flush the device's volatile write cache (length is usually 0).
    Flush,
}

impl Op {
    /// Two-bit code used by the native format.
    pub(crate) fn code(self) -> u8 {
        match self {
            Op::Read => 0,
            Op::Write => 1,
            Op::Trim => 2,
            Op::Flush => 3,
        }
    }

    pub(crate) fn from_code(c: u8) -> Op {
        match c & 3 {
            0 => Op::Read,
            1 => Op::Write,
            2 => Op::Trim,
            _ => Op::Flush,
        }
    }

    /// Lower-case name ("read", "write", "trim", "flush").
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Trim => "trim",
            Op::Flush => "flush",
        }
    }
}

/// Request flag bits (a set). Only the bits below are defined; others are
/// dropped on read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Flags(pub u8);

impl Flags {
    /// Synchronous request (REQ_SYNC, blktrace `S`).
    pub const SYNC: Flags = Flags(1);
    /// Force unit access (REQ_FUA, blktrace `F` after the op letter).
    pub const FUA: Flags = Flags(2);
    /// Filesystem metadata (REQ_META, blktrace `M`).
    pub const META: Flags = Flags(4);
    /// Every defined bit.
    pub const ALL: Flags = Flags(7);

    /// No flags.
    pub const fn empty() -> Flags {
        Flags(0)
    }
    /// Whether every bit of `other` is set in `self`.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
    /// `self` with the bits of `other` added.
    pub const fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

/// One block request as seen at the device driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Request {
    /// Issue (dispatch to the device) time, nanoseconds from the trace start.
    pub issue_ns: u64,
    /// Completion time, nanoseconds from the trace start; `None` when the
    /// source format does not carry it or the completion was not seen.
    pub complete_ns: Option<u64>,
    /// Device id: the source's disk number, or for Linux sources the kernel
    /// `dev_t` (`major << 20 | minor`). Names, where known, are in the
    /// reader's device table.
    pub device: u32,
    /// Operation.
    pub op: Op,
    /// Start offset in bytes.
    pub offset: u64,
    /// Length in bytes (0 for a flush).
    pub len: u64,
    /// Flag bits.
    pub flags: Flags,
}

impl Request {
    /// A request without completion or flags.
    pub fn new(issue_ns: u64, op: Op, offset: u64, len: u64) -> Request {
        Request {
            issue_ns,
            complete_ns: None,
            device: 0,
            op,
            offset,
            len,
            flags: Flags::empty(),
        }
    }

    /// Service time (complete - issue) in nanoseconds, when known.
    pub fn service_ns(&self) -> Option<u64> {
        self.complete_ns.map(|c| c.saturating_sub(self.issue_ns))
    }
}

/// An entry of a trace's device table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// The id used in [`Request::device`].
    pub id: u32,
    /// A name: a path (`/dev/sdb`), a fio file name, an MSR host name, or
    /// `maj,min`.
    pub name: String,
}

/// Kernel-internal `dev_t` encoding (`major << 20 | minor`), as used in the
/// block tracepoints and in [`Request::device`] for Linux sources.
pub fn kernel_dev(major: u32, minor: u32) -> u32 {
    (major << 20) | (minor & 0xF_FFFF)
}

/// Split a kernel-internal `dev_t` into (major, minor).
pub fn split_kernel_dev(dev: u32) -> (u32, u32) {
    (dev >> 20, dev & 0xF_FFFF)
}

/// Parse a blktrace / tracefs rwbs string ("WS", "FWFS", "R", "D", "FF",
/// "RM") into an op and flags. `None` for requests that are neither read,
/// write, discard nor flush (`N`, driver-private passthrough).
pub fn parse_rwbs(s: &[u8]) -> Option<(Op, Flags)> {
    let mut i = 0;
    let mut preflush = false;
    // A leading F followed by an op letter is REQ_PREFLUSH.
    if s.len() > 1 && s[0] == b'F' && matches!(s[1], b'W' | b'R' | b'D' | b'F' | b'N') {
        preflush = true;
        i = 1;
    }
    let op = match s.get(i)? {
        b'R' => Op::Read,
        b'W' => Op::Write,
        b'D' => Op::Trim,
        b'F' => Op::Flush,
        _ => {
            return None;
        }
    };
    i += 1;
    if op == Op::Trim && s.get(i) == Some(&b'E') {
        i += 1; // secure erase
    }
    let mut flags = Flags::empty();
    for &c in &s[i..] {
        match c {
            b'F' => flags = flags.with(Flags::FUA),
            b'S' => flags = flags.with(Flags::SYNC),
            b'M' => flags = flags.with(Flags::META),
            _ => {}
        }
    }
    // A write with only a preflush stays a write; the flush is implied.
    let _ = preflush;
    Some((op, flags))
}

/// [`parse_rwbs`] for a request of `nr_sectors` sectors: an empty request
/// with REQ_PREFLUSH ("FWS" + 0 sectors) is how the kernel sends a cache
/// flush, and reads as [`Op::Flush`].
pub fn parse_rwbs_sized(s: &[u8], nr_sectors: u64) -> Option<(Op, Flags)> {
    let (op, flags) = parse_rwbs(s)?;
    let preflush = s.len() > 1 && s[0] == b'F' && s[1] != b'F';
    if nr_sectors == 0 && preflush && op != Op::Flush {
        return Some((Op::Flush, flags));
    }
    Some((op, flags))
}

/// The rwbs string written for an op and flags (inverse of [`parse_rwbs`]).
pub fn rwbs(op: Op, flags: Flags) -> String {
    let mut s = String::with_capacity(4);
    s.push(match op {
        Op::Read => 'R',
        Op::Write => 'W',
        Op::Trim => 'D',
        Op::Flush => 'F',
    });
    // "FF" would read back as preflush + flush, so a flush never shows FUA.
    if flags.contains(Flags::FUA) && op != Op::Flush {
        s.push('F');
    }
    if flags.contains(Flags::SYNC) {
        s.push('S');
    }
    if flags.contains(Flags::META) {
        s.push('M');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rwbs_table() {
        // (string, op, flags) from the kernel's blk_fill_rwbs order:
        // [F preflush] op [F fua] [A] [S] [M]
        let table: &[(&str, Op, u8)] = &[
            ("R", Op::Read, 0),
            ("W", Op::Write, 0),
            ("WS", Op::Write, 1),
            ("FWFS", Op::Write, 3),
            ("WFS", Op::Write, 3),
            ("RM", Op::Read, 4),
            ("RA", Op::Read, 0),
            ("D", Op::Trim, 0),
            ("DE", Op::Trim, 0),
            ("F", Op::Flush, 0),
            ("FF", Op::Flush, 0),
        ];
        for (s, op, f) in table {
            assert_eq!(parse_rwbs(s.as_bytes()), Some((*op, Flags(*f))), "{s}");
        }
        assert_eq!(parse_rwbs(b"N"), None);
        assert_eq!(parse_rwbs(b""), None);
        for op in [Op::Read, Op::Write, Op::Trim, Op::Flush] {
            for f in 0..8 {
                let s = rwbs(op, Flags(f));
                let want = if op == Op::Flush {
                    Flags(f & !Flags::FUA.0)
                } else {
                    Flags(f)
                };
                assert_eq!(parse_rwbs(s.as_bytes()), Some((op, want)), "{s}");
            }
        }
    }

    #[test]
    fn an_empty_preflush_write_is_a_flush() {
        assert_eq!(parse_rwbs_sized(b"FWS", 0), Some((Op::Flush, Flags::SYNC)));
        assert_eq!(parse_rwbs_sized(b"FWS", 8), Some((Op::Write, Flags::SYNC)));
        assert_eq!(parse_rwbs_sized(b"WS", 0), Some((Op::Write, Flags::SYNC)));
        assert_eq!(
            parse_rwbs_sized(b"FF", 0),
            Some((Op::Flush, Flags::empty()))
        );
    }

    #[test]
    fn kernel_dev_roundtrip() {
        assert_eq!(kernel_dev(8, 16), (8 << 20) | 16);
        assert_eq!(split_kernel_dev(kernel_dev(259, 3)), (259, 3));
    }
}
