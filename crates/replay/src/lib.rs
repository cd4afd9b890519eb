//! Trace replay, RankDisk-style: play a recorded block trace against a
//! target with the original inter-arrival times (or faster, or closed-loop),
//! and score it.
//!
//! Timing: request i is due at `t0 + (issue_i − issue_0) / speed`, an
//! absolute deadline, so per-request errors never accumulate into drift.
//! While a request is not yet due the loop waits in the kernel for
//! completions (so latency is not inflated by late reaping) with a timeout
//! that ends a little before the deadline, then spins on the clock for the
//! last stretch. The thread's timer slack is set to 1 ns. When every slot is
//! busy a due request waits for a completion: that is a stall, counted.
//!
//! Score (Intel RankDisk, seed 001): the average "head-to-head" time, the
//! mean time from the start of one request to the start of the next in the
//! replay, in ms; and 1000 / that, in I/O per second.
//!
//! Offsets past the end of a smaller target are wrapped (`offset mod room`)
//! or scaled (`offset × target / trace extent`), then aligned down to the
//! target's logical block; lengths are rounded up to it. Both are counted.
//!
//! [`session`] runs a whole replay from paths: trace, target checks,
//! optional recording of the replay, report.

pub mod session;

use std::sync::atomic::AtomicBool;

use drivelab_engine::engine::Engine;
use drivelab_engine::io::{IoDesc, Op};
use drivelab_engine::ioloop::{self, After, Done, Driver, LoopConfig, Next};
use drivelab_stats::{LatencyHistogram, Welford};
use drivelab_trace::{Op as TOp, Request};
use serde::Serialize;

/// How requests are timed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Timing {
    /// Each request at its original time divided by `speed` (1.0 = as recorded).
    Original {
        /// Time compression factor (> 0).
        speed: f64,
    },
    /// As fast as free slots allow, in trace order.
    NoStall,
    /// Closed loop: keep exactly the engine's depth outstanding.
    ClosedLoop,
}

/// What to do with offsets beyond the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remap {
    /// `offset mod (target − len)`.
    Wrap,
    /// `offset × target size / trace extent`.
    Scale,
}

/// Replay settings.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// Timing mode.
    pub timing: Timing,
    /// Remapping of offsets beyond the target.
    pub remap: Remap,
    /// Target size, bytes.
    pub target_size: u64,
    /// Target logical block size, bytes.
    pub logical_block: u64,
    /// Extent of the trace (largest offset + len), bytes, for `Remap::Scale`.
    pub trace_extent: u64,
}

/// A first pass over a trace: what the replay needs to size itself.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Prepass {
    /// Requests.
    pub requests: u64,
    /// Largest request, bytes.
    pub max_len: u64,
    /// Largest offset + len.
    pub extent: u64,
    /// Span of issue times, ns.
    pub span_ns: u64,
    /// Requests that modify the target (writes and trims).
    pub modifying: u64,
}

/// Scan a trace once.
pub fn prepass<I: Iterator<Item = drivelab_trace::Result<Request>>>(
    reqs: I,
) -> drivelab_trace::Result<Prepass> {
    let mut p = Prepass::default();
    let mut first: Option<u64> = None;
    for r in reqs {
        let r = r?;
        p.requests += 1;
        p.max_len = p.max_len.max(r.len);
        p.extent = p.extent.max(r.offset + r.len);
        p.modifying += u64::from(matches!(r.op, TOp::Write | TOp::Trim));
        let f = *first.get_or_insert(r.issue_ns);
        p.span_ns = p.span_ns.max(r.issue_ns.saturating_sub(f));
    }
    Ok(p)
}

/// Latency-like statistics, ns.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Dist {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    /// Smallest.
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
}

impl Dist {
    fn from(h: &LatencyHistogram, w: &Welford) -> Dist {
        let p = |q: f64| h.percentile(q).unwrap_or(0);
        Dist {
            count: h.count(),
            mean: w.mean(),
            stddev: w.stddev(),
            min: h.min().unwrap_or(0),
            p50: p(50.0),
            p90: p(90.0),
            p99: p(99.0),
            p999: p(99.9),
            max: h.max().unwrap_or(0),
        }
    }
}

/// The RankDisk score.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Score {
    /// Mean time between the starts of consecutive requests, ms.
    pub head_to_head_ms: f64,
    /// 1000 / head_to_head_ms.
    pub iops: f64,
}

/// What a replay did.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ReplayReport {
    /// Requests issued.
    pub requests: u64,
    /// Requests completed without error.
    pub completed: u64,
    /// Requests that failed.
    pub errors: u64,
    /// The first failure in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// Reads, writes, trims, flushes issued.
    pub reads: u64,
    /// Writes issued.
    pub writes: u64,
    /// Trims issued.
    pub trims: u64,
    /// Flushes issued.
    pub flushes: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// First issue to last completion, seconds.
    pub duration_s: f64,
    /// RankDisk-style score.
    pub score: Score,
    /// Service time (issue to completion), ns.
    pub service_time_ns: Dist,
    /// Issue lateness (actual − intended issue time), ns; Original timing only.
    pub lateness_ns: Dist,
    /// Requests that were due while every slot was busy.
    pub stalls: u64,
    /// Requests moved by the remap because they lay beyond the target.
    pub remapped: u64,
    /// Requests whose offset or length was aligned to the logical block.
    pub aligned: u64,
    /// Stopped early (Ctrl-C).
    pub interrupted: bool,
}

fn set_timer_slack() {
    let _ = drivelab_engine::sys::set_timer_slack(1);
}

/// Map a trace request onto the target: remap and align.
fn place(r: &Request, o: &ReplayOptions, remapped: &mut u64, aligned: &mut u64) -> IoDesc {
    let lb = o.logical_block.max(1);
    let op = match r.op {
        TOp::Read => Op::Read,
        TOp::Write => Op::Write,
        TOp::Trim => Op::Trim,
        TOp::Flush => Op::Fsync,
    };
    if op == Op::Fsync {
        return IoDesc {
            target: 0,
            op,
            offset: 0,
            len: 0,
        };
    }
    let mut len = r.len.max(1);
    if len % lb != 0 {
        len = len.div_ceil(lb) * lb;
        *aligned += 1;
    }
    let len = len.min(o.target_size);
    let mut off = r.offset;
    if off % lb != 0 {
        off -= off % lb;
        *aligned += 1;
    }
    if off + len > o.target_size {
        *remapped += 1;
        let room = o.target_size - len;
        off = match o.remap {
            Remap::Wrap => off % (room + 1),
            Remap::Scale => {
                let ext = o.trace_extent.max(1) as u128;
                ((off as u128 * o.target_size as u128 / ext) as u64).min(room)
            }
        };
        off -= off % lb;
    }
    IoDesc {
        target: 0,
        op,
        offset: off,
        len: len as u32,
    }
}

/// A replay as a driver of the engine's I/O loop: requests come from the
/// trace in order, each with its deadline (original timing) or at once.
struct ReplayDriver<'a, I: Iterator<Item = drivelab_trace::Result<Request>>> {
    reqs: std::iter::Peekable<I>,
    o: &'a ReplayOptions,
    speed: f64,
    timed: bool,
    t0: Option<u64>,
    trace_t0: Option<u64>,
    first_issue: Option<u64>,
    last_issue: u64,
    last_done: u64,
    rep: ReplayReport,
    svc: LatencyHistogram,
    svc_w: Welford,
    late: LatencyHistogram,
    late_w: Welford,
    error: Option<drivelab_trace::TraceError>,
}

impl<I: Iterator<Item = drivelab_trace::Result<Request>>> Driver for ReplayDriver<'_, I> {
    // Buffers were filled once (random data, as fio's); never looked at.
    const BUFFERS: bool = false;

    fn next(&mut self, now: u64, _inflight: u32, _buf: &mut [u8]) -> Next {
        let r = match self.reqs.peek() {
            None => return Next::Done,
            Some(Err(_)) => {
                if let Some(Err(e)) = self.reqs.next() {
                    self.error = Some(e);
                }
                return Next::Done;
            }
            Some(Ok(r)) => *r,
        };
        let t0 = *self.t0.get_or_insert(now);
        let base = *self.trace_t0.get_or_insert(r.issue_ns);
        let due = if self.timed {
            t0 + ((r.issue_ns.saturating_sub(base)) as f64 / self.speed) as u64
        } else {
            now
        };
        if due > now {
            return Next::At(due);
        }
        self.reqs.next();
        let rep = &mut self.rep;
        let io = place(&r, self.o, &mut rep.remapped, &mut rep.aligned);
        match io.op {
            Op::Read => {
                rep.reads += 1;
                rep.bytes_read += u64::from(io.len);
            }
            Op::Write => {
                rep.writes += 1;
                rep.bytes_written += u64::from(io.len);
            }
            Op::Trim => rep.trims += 1,
            Op::Fsync => rep.flushes += 1,
        }
        if self.timed {
            let l = now.saturating_sub(due);
            self.late.record(l);
            self.late_w.record(l as f64);
        }
        self.first_issue.get_or_insert(now);
        self.last_issue = now;
        rep.requests += 1;
        Next::Io {
            io,
            due: self.timed.then_some(due),
            tag: 0,
        }
    }

    fn complete(&mut self, d: &Done, _buf: &[u8]) -> After {
        if d.result < 0 {
            self.rep.errors += 1;
            if self.rep.first_error.is_none() {
                self.rep.first_error = Some(format!(
                    "a request failed: {}",
                    std::io::Error::from_raw_os_error(-d.result)
                ));
            }
        } else {
            self.rep.completed += 1;
            let l = d.latency();
            self.svc.record(l);
            self.svc_w.record(l as f64);
        }
        self.last_done = d.now;
        After::Release
    }
}

/// Replay `reqs` on `engine` (one target, slot buffers at least the trace's
/// largest request). `stop` ends it early.
pub fn replay<E, I>(
    engine: &mut E,
    reqs: I,
    o: &ReplayOptions,
    stop: &AtomicBool,
) -> Result<ReplayReport, ReplayError>
where
    E: Engine,
    I: Iterator<Item = drivelab_trace::Result<Request>>,
{
    set_timer_slack();
    let timed = matches!(o.timing, Timing::Original { .. });
    let speed = match o.timing {
        Timing::Original { speed } if speed > 0.0 => speed,
        _ => 1.0,
    };
    let mut drv = ReplayDriver {
        reqs: reqs.peekable(),
        o,
        speed,
        timed,
        t0: None,
        trace_t0: None,
        first_issue: None,
        last_issue: 0,
        last_done: 0,
        rep: ReplayReport::default(),
        svc: LatencyHistogram::new(),
        svc_w: Welford::new(),
        late: LatencyHistogram::new(),
        late_w: Welford::new(),
        error: None,
    };
    // Spin the last stretch before a deadline rather than sleep through it.
    let lc = LoopConfig {
        stop: Some(stop),
        spin_ns: if timed { 150_000 } else { 0 },
        ..LoopConfig::default()
    };
    let st = ioloop::run(engine, &mut drv, &lc)?;
    if let Some(e) = drv.error {
        return Err(ReplayError::Trace(e));
    }
    let mut rep = drv.rep;
    rep.interrupted = st.interrupted;
    rep.stalls = st.stalls;
    let first = drv.first_issue.unwrap_or(st.started);
    let end = drv.last_done.max(drv.last_issue).max(first);
    rep.duration_s = end.saturating_sub(first) as f64 / 1e9;
    if rep.requests > 1 {
        let h2h = (drv.last_issue - first) as f64 / (rep.requests - 1) as f64 / 1e6;
        rep.score = Score {
            head_to_head_ms: h2h,
            iops: if h2h > 0.0 { 1000.0 / h2h } else { 0.0 },
        };
    }
    rep.service_time_ns = Dist::from(&drv.svc, &drv.svc_w);
    if timed {
        rep.lateness_ns = Dist::from(&drv.late, &drv.late_w);
    }
    Ok(rep)
}

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] drivelab_trace::TraceError),
    /// The engine failed.
    #[error("the I/O engine failed: {0}")]
    Engine(#[from] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_engine::buf::Fill;
    use drivelab_engine::engine::Null;

    fn reqs(n: u64, gap_ns: u64) -> Vec<drivelab_trace::Result<Request>> {
        (0..n)
            .map(|i| Ok(Request::new(i * gap_ns, TOp::Read, i * 4096, 4096)))
            .collect()
    }

    fn opts(timing: Timing) -> ReplayOptions {
        ReplayOptions {
            timing,
            remap: Remap::Wrap,
            target_size: 1 << 30,
            logical_block: 512,
            trace_extent: 1 << 30,
        }
    }

    #[test]
    fn original_timing_keeps_the_schedule_without_drift() {
        let mut e = Null::new(8, 4096, Fill::Random(1)).unwrap();
        let stop = AtomicBool::new(false);
        // 500 requests, 1 ms apart: 499 ms of schedule.
        let t = std::time::Instant::now();
        let r = replay(
            &mut e,
            reqs(500, 1_000_000).into_iter(),
            &opts(Timing::Original { speed: 1.0 }),
            &stop,
        )
        .unwrap();
        let el = t.elapsed().as_secs_f64();
        assert_eq!(r.requests, 500);
        assert_eq!(r.completed, 500);
        assert!(
            (0.49..0.9).contains(&el),
            "took {el}s for a 0.499 s schedule"
        );
        // Head-to-head is the original gap.
        assert!(
            (r.score.head_to_head_ms - 1.0).abs() < 0.02,
            "{:?}",
            r.score
        );
        assert!(
            r.lateness_ns.p50 < 1_000_000,
            "median lateness {} ns",
            r.lateness_ns.p50
        );
    }

    #[test]
    fn speed_compresses_time() {
        let mut e = Null::new(8, 4096, Fill::Random(1)).unwrap();
        let stop = AtomicBool::new(false);
        let r = replay(
            &mut e,
            reqs(200, 1_000_000).into_iter(),
            &opts(Timing::Original { speed: 4.0 }),
            &stop,
        )
        .unwrap();
        assert!(
            (r.score.head_to_head_ms - 0.25).abs() < 0.02,
            "{:?}",
            r.score
        );
    }

    #[test]
    fn closed_loop_ignores_timing() {
        let mut e = Null::new(4, 4096, Fill::Random(1)).unwrap();
        let stop = AtomicBool::new(false);
        let t = std::time::Instant::now();
        let r = replay(
            &mut e,
            reqs(1000, 10_000_000).into_iter(),
            &opts(Timing::ClosedLoop),
            &stop,
        )
        .unwrap();
        assert_eq!(r.completed, 1000);
        assert!(
            t.elapsed().as_secs_f64() < 1.0,
            "closed loop waited for the 10 s schedule"
        );
        assert_eq!(r.lateness_ns.count, 0);
    }

    #[test]
    fn remap_wraps_and_scales_into_the_target() {
        let o = ReplayOptions {
            timing: Timing::NoStall,
            remap: Remap::Wrap,
            target_size: 1 << 20,
            logical_block: 4096,
            trace_extent: 8 << 20,
        };
        let (mut rm, mut al) = (0, 0);
        let r = Request::new(0, TOp::Write, (5 << 20) + 512, 1000);
        let io = place(&r, &o, &mut rm, &mut al);
        assert_eq!(io.len, 4096);
        assert!(io.offset % 4096 == 0 && io.offset + 4096 <= 1 << 20);
        assert_eq!((rm, al), (1, 2));
        let o = ReplayOptions {
            remap: Remap::Scale,
            ..o
        };
        let io = place(
            &Request::new(0, TOp::Read, 4 << 20, 4096),
            &o,
            &mut rm,
            &mut al,
        );
        assert_eq!(
            io.offset,
            512 << 10,
            "half-way through the trace lands half-way through the target"
        );
    }
}
