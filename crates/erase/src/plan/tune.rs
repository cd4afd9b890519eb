//! Transfer length and queue depth for streamed writes, chosen and adjusted
//! while the erase runs (the thesis's dynamic load balancing).
//!
//! The start follows the thesis's finding that the best transfer length
//! shrinks as drives are added: the bytes in flight across all drives are
//! budgeted (32 MiB), each drive gets its share, the transfer length starts
//! at the drive's `max_sectors_kb` (the largest request the block layer
//! passes unsplit, at most 1 MiB) and the queue depth fills the share.
//! Then a hill-climb: every window (≥ 250 ms and ≥ 8 completions) the
//! throughput of the current setting is measured; a neighbour setting
//! (depth ×2, ÷2; length ×2, ÷2) is tried for one window and kept only if it
//! is at least 3% faster. When no neighbour helps the tuner holds for a
//! while, then probes again, so it follows a drive whose speed changes.

use std::time::Instant;

/// Largest transfer length the tuner uses, bytes.
pub const MAX_LEN: u32 = 1 << 20;
/// Smallest transfer length the tuner uses, bytes.
pub const MIN_LEN: u32 = 64 << 10;
/// Bytes in flight across all drives the start is budgeted for.
pub const INFLIGHT_BUDGET: u64 = 32 << 20;

/// The tuner's starting point and limits for one drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Start {
    /// Transfer length, bytes.
    pub len: u32,
    /// Queue depth.
    pub depth: u32,
    /// Slots (buffers) to allocate: the largest depth the tuner may use.
    pub max_depth: u32,
}

fn pow2_floor(x: u64) -> u64 {
    if x == 0 {
        0
    } else {
        1u64 << (63 - x.leading_zeros())
    }
}

/// The start for a drive with `max_sectors_kb` (None = unknown) when
/// `drives` drives are written at once, with logical block `lbs` bytes.
pub fn start(max_sectors_kb: Option<u32>, drives: usize, lbs: u32) -> Start {
    let drives = drives.max(1) as u64;
    let limit = max_sectors_kb
        .map(|k| u64::from(k) * 1024)
        .unwrap_or(u64::from(MAX_LEN));
    let mut len = pow2_floor(limit.clamp(u64::from(MIN_LEN), u64::from(MAX_LEN)));
    len = len.max(u64::from(lbs));
    let share = (INFLIGHT_BUDGET / drives).max(2 * u64::from(MIN_LEN));
    // At least two commands in flight per drive: shrink the length first.
    while share / len < 2 && len > u64::from(MIN_LEN) {
        len /= 2;
    }
    let depth = (share / len).clamp(1, 32) as u32;
    // Room to grow: twice the start depth, at most 64 slots, at most 64 MiB.
    let max_depth = (depth * 2)
        .clamp(4, 64)
        .min((64 << 20) / len as u32)
        .max(depth);
    Start {
        len: len as u32,
        depth,
        max_depth,
    }
}

/// The adaptive state.
#[derive(Debug, Clone)]
pub struct Tuner {
    len: u32,
    depth: u32,
    max_depth: u32,
    max_len: u32,
    min_len: u32,
    fixed: bool,
    window_start: Instant,
    window_bytes: u64,
    window_ios: u64,
    best: (u32, u32, f64),
    probing: bool,
    next_move: usize,
    misses: u32,
    hold: u32,
    changes: u32,
}

impl Tuner {
    /// A tuner from `s`. `fixed` keeps the start (user-given values).
    pub fn new(s: Start, lbs: u32, fixed: bool) -> Tuner {
        Tuner {
            len: s.len,
            depth: s.depth,
            max_depth: s.max_depth,
            max_len: if fixed {
                s.len
            } else {
                s.len.max(MAX_LEN.min(s.len.saturating_mul(4)))
            },
            min_len: MIN_LEN.max(lbs).min(s.len),
            fixed,
            window_start: Instant::now(),
            window_bytes: 0,
            window_ios: 0,
            best: (s.len, s.depth, 0.0),
            probing: false,
            next_move: 0,
            misses: 0,
            hold: 0,
            changes: 0,
        }
    }

    /// Largest transfer length it may ask for (buffer size).
    pub fn max_len(&self) -> u32 {
        self.max_len
    }

    /// Current transfer length, bytes.
    pub fn transfer_len(&self) -> u32 {
        self.len
    }

    /// Current queue depth.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// How many times the setting changed.
    pub fn changes(&self) -> u32 {
        self.changes
    }

    fn candidate(&self, m: usize) -> Option<(u32, u32)> {
        let (l, d) = (self.best.0, self.best.1);
        let c = match m % 4 {
            0 => (l, d.saturating_mul(2)),
            1 => (l, d / 2),
            2 => (l.saturating_mul(2), d),
            _ => (l / 2, d),
        };
        let ok = c.1 >= 1
            && c.1 <= self.max_depth
            && c.0 >= self.min_len
            && c.0 <= self.max_len
            && (c.0, c.1) != (l, d);
        ok.then_some(c)
    }

    /// Record `bytes` completed; returns true when the setting changed.
    pub fn observe(&mut self, bytes: u64) -> bool {
        self.window_bytes += bytes;
        self.window_ios += 1;
        if self.fixed {
            return false;
        }
        let el = self.window_start.elapsed();
        if el.as_millis() < 250 || self.window_ios < 8 {
            return false;
        }
        let rate = self.window_bytes as f64 / el.as_secs_f64();
        self.window_start = Instant::now();
        self.window_bytes = 0;
        self.window_ios = 0;
        if self.probing {
            self.probing = false;
            if rate > self.best.2 * 1.03 {
                self.best = (self.len, self.depth, rate);
                self.misses = 0;
                return false;
            }
            self.misses += 1;
            self.len = self.best.0;
            self.depth = self.best.1;
            if self.misses >= 4 {
                self.misses = 0;
                self.hold = 8;
            }
            self.changes += 1;
            return true;
        }
        // Measuring the best setting: refresh its figure (drives slow down
        // towards the inner tracks), then maybe probe a neighbour.
        self.best.2 = if self.best.2 == 0.0 {
            rate
        } else {
            0.5 * self.best.2 + 0.5 * rate
        };
        if self.hold > 0 {
            self.hold -= 1;
            return false;
        }
        for _ in 0..4 {
            let m = self.next_move;
            self.next_move += 1;
            if let Some((l, d)) = self.candidate(m) {
                self.len = l;
                self.depth = d;
                self.probing = true;
                self.changes += 1;
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_shrinks_with_more_drives_and_respects_the_device_limit() {
        let one = start(Some(1280), 1, 512);
        assert_eq!(one.len, 1 << 20);
        assert_eq!(one.depth, 32);
        let eight = start(Some(1280), 8, 512);
        assert_eq!(eight.len, 1 << 20);
        assert_eq!(eight.depth, 4);
        let many = start(Some(1280), 256, 512);
        // 128 KiB share: two 64 KiB commands.
        assert_eq!((many.len, many.depth), (64 << 10, 2));
        let small = start(Some(128), 1, 512);
        assert_eq!(small.len, 128 << 10);
        for s in [one, eight, many, small] {
            assert!(s.max_depth >= s.depth);
            assert!(u64::from(s.max_depth) * u64::from(s.len) <= 64 << 20);
        }
    }

    #[test]
    fn hill_climb_keeps_a_faster_neighbour_and_reverts_a_slower_one() {
        // A fake drive: throughput grows with depth up to 8, flat after.
        let s = Start {
            len: 1 << 20,
            depth: 2,
            max_depth: 32,
        };
        let mut t = Tuner::new(s, 512, false);
        let speed = |d: u32| f64::from(d.min(8)) * 100e6;
        for _ in 0..200 {
            // Feed one window's worth at the modelled speed.
            let secs = 0.26;
            let bytes = speed(t.depth()) * secs;
            for _ in 0..7 {
                t.observe(0);
            }
            std::thread::sleep(std::time::Duration::from_millis(260));
            t.observe(bytes as u64);
            if t.best.1 >= 8 && !t.probing {
                break;
            }
        }
        assert!(t.best.1 >= 8, "tuner stuck at depth {}", t.best.1);
        assert!(t.changes() > 0);
    }
}
