//! fio's submission and completion batching (`iodepth_batch_submit`,
//! `iodepth_batch_complete_min`/`_max`, `iodepth_low`) as the I/O loop's
//! [`LoopConfig`] fields, with fio 3.33's fix-ups: a submit batch of 0 or
//! above `iodepth` is `iodepth`, a low mark of 0 or above `iodepth` is
//! `iodepth` (refill at once), a complete_max below complete_min is
//! complete_min. Options not given leave the loop as it is (everything
//! queued in a turn goes in with its one wait, for one completion, and
//! every ready completion is taken), except that without
//! `iodepth_batch_submit` the loop keeps the job's I/Os apart
//! ([`LoopConfig::keep_apart`]): fio's default batch of 1 enters the
//! kernel for each I/O, so the block layer never merges two of a job's
//! I/Os into one request, and a sequential job's device sees every I/O
//! the job counts. Given a batch, fio hands the kernel that many at once,
//! and contiguous ones may merge; so may they here.

use crate::spec::decl::{opt, OptionDecl};
use drivelab_engine::engine::MAX_DEPTH;
use drivelab_engine::ioloop::LoopConfig;

/// The batching options as given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchOpts {
    /// `iodepth_batch` / `iodepth_batch_submit`.
    pub submit: Option<u32>,
    /// `iodepth_batch_complete_min` / `iodepth_batch_complete`.
    pub complete_min: Option<u32>,
    /// `iodepth_batch_complete_max`.
    pub complete_max: Option<u32>,
    /// `iodepth_low`.
    pub low: Option<u32>,
}

/// The loop's batching for a job of depth `iodepth`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Batching {
    /// Enter the kernel after this many queued.
    pub submit: Option<u32>,
    /// Wait for this many completions.
    pub complete_min: Option<u32>,
    /// Hand over at most this many completions a turn.
    pub complete_max: Option<u32>,
    /// Refill only at or below this depth once full.
    pub low: Option<u32>,
}

impl BatchOpts {
    /// fio's fix-ups against `iodepth`.
    pub fn resolve(&self, iodepth: u32) -> Batching {
        let depth = iodepth.max(1);
        let cap = |n: u32| if n == 0 || n > depth { depth } else { n };
        let complete_min = self.complete_min;
        Batching {
            submit: self.submit.map(cap),
            complete_min,
            complete_max: match (self.complete_max, complete_min) {
                (Some(mx), Some(mn)) if mn > mx => Some(mn),
                (mx, _) => mx,
            },
            low: self.low.map(cap).filter(|&l| l < depth),
        }
    }
}

impl Batching {
    /// Set the loop's fields.
    pub fn apply(&self, lc: &mut LoopConfig) {
        lc.submit_batch = self.submit;
        lc.complete_min = self.complete_min;
        lc.complete_max = self.complete_max;
        lc.depth_low = self.low;
        lc.keep_apart = self.submit.is_none();
    }
}

impl BatchOpts {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "iodepth_batch",
            ["iodepth_batch_submit"],
            Int,
            "unset: each turn's I/Os go in with its one wait, but no two the block layer could merge",
            "enter the kernel to submit each time this many I/Os are queued (0 or above iodepth: iodepth)",
            0,
            MAX_DEPTH as u64,
            "I/Os"
        ),
        opt!(
            "iodepth_batch_complete_min",
            ["iodepth_batch_complete"],
            Int,
            "1",
            "when waiting, wait for this many completions (at most those in flight; 0: 1, as fio 3.33 when the queue is full)",
            0,
            MAX_DEPTH as u64,
            "I/Os"
        ),
        opt!(
            "iodepth_batch_complete_max",
            [],
            Int,
            "unset: every ready completion",
            "take at most this many completions per turn, leaving the rest for the next (at least iodepth_batch_complete_min)",
            0,
            MAX_DEPTH as u64,
            "I/Os"
        ),
        opt!(
            "iodepth_low",
            [],
            Int,
            "iodepth",
            "once the queue is full, queue no more until this few I/Os are in flight (fio's low watermark)",
            0,
            MAX_DEPTH as u64,
            "I/Os"
        ),
    ];
}

impl crate::spec::family::OptionFamily for BatchOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), crate::SpecError> {
        let n = Some(crate::spec::decl::parse_in(Self::OPTIONS, key, v)? as u32);
        match key {
            "iodepth_batch" => self.submit = n,
            "iodepth_batch_complete_min" => self.complete_min = n,
            "iodepth_batch_complete_max" => self.complete_max = n,
            _ => self.low = n,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fios_fixups() {
        let b = BatchOpts {
            submit: Some(0),
            complete_min: Some(8),
            complete_max: Some(2),
            low: Some(40),
        }
        .resolve(16);
        assert_eq!(b.submit, Some(16));
        assert_eq!(b.complete_max, Some(8));
        // A low mark at or above the depth refills at once: no mark.
        assert_eq!(b.low, None);
        let b = BatchOpts {
            submit: Some(4),
            low: Some(0),
            ..Default::default()
        }
        .resolve(16);
        assert_eq!((b.submit, b.low), (Some(4), None));
        let b = BatchOpts {
            low: Some(4),
            ..Default::default()
        }
        .resolve(16);
        assert_eq!(b.low, Some(4));
        assert_eq!(BatchOpts::default().resolve(8), Batching::default());
    }
}
