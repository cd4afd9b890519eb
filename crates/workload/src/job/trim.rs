//! fio's trims of verified writes: `trim_percentage` of a verifying
//! job's writes are queued to be discarded, `trim_backlog` says when the
//! queue is worked off and `trim_backlog_batch` how many at a time, and
//! `trim_verify_zero` has the read-back pass check that a trimmed block
//! reads as zeroes (otherwise trimmed blocks are not read back). One
//! family ([`TrimOpts`]) and the job loop's queue ([`Trimmer`]), which
//! follows fio 3.33's `log_io_piece`, `check_get_trim` and
//! `get_next_trim` (io_u.c, trim.c, iolog.c).
//!
//! fio 3.33 carries this out only in a job that also trims of its own
//! (`rw=trimwrite`); in a write-only job its trims fail its own
//! read-only assertion (`fio_ro_check`). drivelab issues them in any
//! writing job with `verify`, on targets that take discards.

use std::collections::{HashSet, VecDeque};

use drivelab_patterns::prng::Rng;

use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::spec::value::parse_flag;
use crate::SpecError;
use drivelab_engine::io::{IoDesc, Op};

/// The trim family.
#[derive(Debug, Clone, PartialEq)]
pub struct TrimOpts {
    /// Percent of the verified writes queued for a trim (`trim_percentage`).
    pub percentage: u8,
    /// Check that trimmed blocks read back as zeroes (`trim_verify_zero`,
    /// default on); off, they are not read back.
    pub verify_zero: bool,
    /// Work off the queue when the writes logged for verify are a
    /// multiple of this (`trim_backlog`); 0: never trim.
    pub backlog: u64,
    /// Trims per turn (`trim_backlog_batch`); 0: `trim_backlog`.
    pub batch: u64,
}

impl Default for TrimOpts {
    fn default() -> Self {
        TrimOpts {
            percentage: 0,
            verify_zero: true,
            backlog: 0,
            batch: 0,
        }
    }
}

impl TrimOpts {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "trim_percentage",
            [],
            Int,
            "0",
            "with verify: percent of the written blocks queued to be trimmed (discarded) when trim_backlog says (0-100)"
        ),
        opt!(
            "trim_verify_zero",
            [],
            Bool,
            "1",
            "with trim_percentage: the read-back checks that trimmed blocks read as zeroes; 0: trimmed blocks are not read back"
        ),
        opt!(
            "trim_backlog",
            [],
            Int,
            "0",
            "with trim_percentage: trim the queued blocks when the written blocks waiting for verify are a multiple of this (0: never)"
        ),
        opt!(
            "trim_backlog_batch",
            [],
            Int,
            "0",
            "with trim_backlog: blocks trimmed at each point (0: trim_backlog)"
        ),
    ];

    /// Whether the job trims anything (a share and a backlog are set).
    pub fn active(&self) -> bool {
        self.percentage > 0 && self.backlog > 0
    }
}

impl OptionFamily for TrimOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let n = || crate::spec::value::parse_in(key, v, 0, 1 << 32);
        match key {
            "trim_percentage" => {
                self.percentage = crate::spec::value::parse_in(key, v, 0, 100)? as u8
            }
            "trim_verify_zero" => self.verify_zero = parse_flag(key, v)?,
            "trim_backlog" => self.backlog = n()?,
            _ => self.batch = n()?,
        }
        Ok(())
    }
}

/// An extent's identity: target, offset, length.
type Key = (u32, u64, u32);

fn key(io: &IoDesc) -> Key {
    (io.target, io.offset, io.len)
}

/// The trims a job did, for its read-back pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trimmed {
    /// The extents trimmed (and not written again since).
    extents: HashSet<Key>,
    /// They read back as zeroes (`trim_verify_zero`); false: they are not
    /// read back at all.
    pub verify_zero: bool,
}

impl Trimmed {
    /// Whether `io`'s extent was trimmed.
    pub fn holds(&self, io: &IoDesc) -> bool {
        self.extents.contains(&key(io))
    }

    /// Extents trimmed.
    pub fn len(&self) -> usize {
        self.extents.len()
    }

    /// Whether nothing was trimmed.
    pub fn is_empty(&self) -> bool {
        self.extents.is_empty()
    }
}

/// The job loop's trim queue, as fio keeps it: each write logged for
/// verify is queued with a chance of `trim_percentage`; when the writes
/// logged (less those trimmed without a zero check) are a multiple of
/// `trim_backlog` and the last completed I/O was not a read, a batch of
/// `trim_backlog_batch` starts, and each next I/O is a trim of the oldest
/// queued write while the batch and the queue last. A batch left unused
/// when the queue ran dry is used by the next queued writes. Writes still
/// queued when the job ends are not trimmed.
#[derive(Debug, Clone)]
pub struct Trimmer {
    queue: VecDeque<IoDesc>,
    rng: Rng,
    percentage: u64,
    backlog: u64,
    batch_size: u64,
    batch: u64,
    /// Writes logged for verify (fio's `io_hist_len`).
    logged: u64,
    done: Trimmed,
}

impl Trimmer {
    /// A queue for `o`, its draws seeded by `seed`.
    pub fn new(o: &TrimOpts, seed: u64) -> Trimmer {
        Trimmer {
            queue: VecDeque::new(),
            rng: Rng::new(seed ^ 0x7472_696d_5f70_6374),
            percentage: u64::from(o.percentage),
            backlog: o.backlog.max(1),
            batch_size: if o.batch == 0 { o.backlog } else { o.batch },
            batch: 0,
            logged: 0,
            done: Trimmed {
                extents: HashSet::new(),
                verify_zero: o.verify_zero,
            },
        }
    }

    /// A write was issued: logged for verify, and perhaps queued.
    pub fn written(&mut self, io: IoDesc) {
        self.logged += 1;
        // Written again: its data is back.
        self.done.extents.remove(&key(&io));
        if self.rng.below(100) < self.percentage {
            self.queue.push_back(io);
        }
    }

    /// The next trim, if one is due now (`last_was_read`: the last
    /// completed I/O was a read).
    pub fn next(&mut self, last_was_read: bool) -> Option<IoDesc> {
        if self.queue.is_empty() {
            return None;
        }
        if self.batch > 0 {
            self.batch -= 1;
        } else if self.logged % self.backlog == 0 && !last_was_read {
            self.batch = self.batch_size;
        } else {
            return None;
        }
        let mut io = self.queue.pop_front()?;
        if !self.done.verify_zero {
            // Not read back: off the verify log.
            self.logged -= 1;
        }
        self.done.extents.insert(key(&io));
        io.op = Op::Trim;
        Some(io)
    }

    /// What was trimmed.
    pub fn into_trimmed(self) -> Trimmed {
        self.done
    }
}

/// Whether a read-back of a trimmed block read zeroes; the message names
/// the first byte that is not, as fio's "trim: verify failed".
pub fn check_zero(buf: &[u8], offset: u64, name: &str) -> Result<(), String> {
    match buf.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(at) => Err(format!(
            "trim: verify failed at file {name} offset {offset}, length {}, block offset {at}: a trimmed block does not read as zeroes",
            buf.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(o: &TrimOpts, writes: u64) -> (String, Trimmed) {
        let mut t = Trimmer::new(o, 1);
        let mut order = Vec::new();
        let mut w = 0;
        while w < writes {
            if let Some(io) = t.next(false) {
                order.push(format!("t{}", io.offset / 4096));
                continue;
            }
            t.written(IoDesc {
                target: 0,
                op: Op::Write,
                offset: w * 4096,
                len: 4096,
            });
            order.push(format!("w{w}"));
            w += 1;
        }
        while let Some(io) = t.next(false) {
            order.push(format!("t{}", io.offset / 4096));
        }
        (order.join(" "), t.into_trimmed())
    }

    #[test]
    fn the_queue_is_worked_off_as_fio_3_33_does_it() {
        // fio 3.33, rw=trimwrite, 28 blocks of 4k, trim_percentage=100,
        // trim_backlog=8, trim_backlog_batch=2, its own trim before each
        // write taken out of its write_iolog.
        let mut o = TrimOpts {
            percentage: 100,
            backlog: 8,
            batch: 2,
            ..TrimOpts::default()
        };
        let (order, done) = run(&o, 28);
        assert_eq!(
            order,
            "w0 w1 w2 w3 w4 w5 w6 w7 t0 t1 t2 t3 t4 t5 t6 t7 w8 t8 w9 w10 w11 w12 w13 w14 w15 \
             t9 t10 t11 t12 t13 t14 t15 w16 t16 w17 t17 w18 w19 w20 w21 w22 w23 \
             t18 t19 t20 t21 t22 t23 w24 w25 w26 w27"
        );
        assert_eq!(done.len(), 24);
        // trim_verify_zero=0: trimmed blocks leave the verify log.
        o.verify_zero = false;
        let (order, done) = run(&o, 28);
        assert_eq!(
            order,
            "w0 w1 w2 w3 w4 w5 w6 w7 t0 t1 t2 w8 w9 w10 t3 t4 t5 w11 w12 w13 t6 t7 t8 \
             w14 w15 w16 t9 t10 t11 w17 w18 w19 t12 t13 t14 w20 w21 w22 t15 t16 t17 \
             w23 w24 w25 t18 t19 t20 w26 w27"
        );
        assert_eq!(done.len(), 21);
        assert!(!done.verify_zero);
    }

    #[test]
    fn a_share_is_queued_and_a_rewritten_block_is_data_again() {
        let o = TrimOpts {
            percentage: 25,
            backlog: 4,
            batch: 0,
            verify_zero: true,
        };
        let (order, done) = run(&o, 4000);
        let trims = order.split(' ').filter(|s| s.starts_with('t')).count();
        assert!((800..1200).contains(&trims), "{trims} of 4000");
        assert_eq!(done.len(), trims);
        let mut t = Trimmer::new(&o, 1);
        let w = IoDesc {
            target: 0,
            op: Op::Write,
            offset: 0,
            len: 4096,
        };
        t.done.extents.insert(key(&w));
        t.written(w);
        assert!(!t.into_trimmed().holds(&w));
    }

    #[test]
    fn a_trimmed_block_must_read_as_zeroes() {
        assert_eq!(check_zero(&[0; 512], 0, "f"), Ok(()));
        let mut b = [0u8; 512];
        b[100] = 1;
        let e = check_zero(&b, 4096, "/dev/loop9").unwrap_err();
        assert!(
            e.contains("offset 4096") && e.contains("block offset 100"),
            "{e}"
        );
    }
}
