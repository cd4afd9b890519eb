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

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use drivelab_engine::engine::{Completion, Engine};
use drivelab_engine::gen::{IoDesc, Op};
use drivelab_engine::job::now_ns;
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

#[derive(Clone, Copy)]
struct Slot {
    issued: u64,
}

fn set_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer; it only affects this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
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
    let depth = engine.depth();
    let mut free: Vec<u32> = (0..depth).rev().collect();
    let mut slots = vec![Slot { issued: 0 }; depth as usize];
    let mut inflight = 0u32;
    let mut rep = ReplayReport::default();
    let mut svc = LatencyHistogram::new();
    let mut svc_w = Welford::new();
    let mut late = LatencyHistogram::new();
    let mut late_w = Welford::new();
    let mut reqs = reqs.peekable();
    let mut trace_t0: Option<u64> = None;
    let t0 = now_ns();
    let mut first_issue: Option<u64> = None;
    let mut last_issue = 0u64;
    let mut last_done = t0;
    let speed = match o.timing {
        Timing::Original { speed } if speed > 0.0 => speed,
        _ => 1.0,
    };
    let timed = matches!(o.timing, Timing::Original { .. });
    // Spin the last stretch before a deadline rather than sleep through it.
    const SPIN_NS: u64 = 150_000;
    loop {
        let mut now = now_ns();
        engine.reap(|c: Completion| {
            inflight -= 1;
            free.push(c.slot);
            let s = slots[c.slot as usize];
            if c.result < 0 {
                rep.errors += 1;
                if rep.first_error.is_none() {
                    rep.first_error = Some(format!(
                        "a request failed: {}",
                        std::io::Error::from_raw_os_error(-c.result)
                    ));
                }
            } else {
                rep.completed += 1;
                let l = now.saturating_sub(s.issued);
                svc.record(l);
                svc_w.record(l as f64);
            }
            last_done = now;
        });
        if stop.load(Ordering::Relaxed) {
            rep.interrupted = true;
        }
        let mut next_deadline: Option<u64> = None;
        while !rep.interrupted {
            let r = match reqs.peek() {
                None => break,
                Some(Err(_)) => {
                    // Surface the parse error.
                    if let Some(Err(e)) = reqs.next() {
                        return Err(ReplayError::Trace(e));
                    }
                    break;
                }
                Some(Ok(r)) => *r,
            };
            let base = *trace_t0.get_or_insert(r.issue_ns);
            let due = if timed {
                t0 + ((r.issue_ns.saturating_sub(base)) as f64 / speed) as u64
            } else {
                now
            };
            if due > now {
                next_deadline = Some(due);
                break;
            }
            let Some(slot) = free.pop() else {
                rep.stalls += u64::from(timed);
                break;
            };
            reqs.next();
            let io = place(&r, o, &mut rep.remapped, &mut rep.aligned);
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
            if timed {
                let l = now.saturating_sub(due);
                late.record(l);
                late_w.record(l as f64);
            }
            slots[slot as usize] = Slot { issued: now };
            first_issue.get_or_insert(now);
            last_issue = now;
            rep.requests += 1;
            engine.queue(slot, &io);
            inflight += 1;
        }
        let finished = reqs.peek().is_none() || rep.interrupted;
        if finished && inflight == 0 {
            break;
        }
        match next_deadline {
            Some(d) if d.saturating_sub(now) > SPIN_NS => {
                let wait = Duration::from_nanos(d - now - SPIN_NS);
                if inflight > 0 {
                    engine.commit(1, Some(wait))?;
                } else {
                    engine.commit(0, None)?;
                    std::thread::sleep(wait);
                }
            }
            Some(d) => {
                // Submit what is queued, then spin to the deadline.
                engine.commit(0, None)?;
                while now < d {
                    std::hint::spin_loop();
                    now = now_ns();
                }
            }
            None => engine.commit(if inflight > 0 { 1 } else { 0 }, None)?,
        }
    }
    let end = last_done.max(last_issue);
    rep.duration_s = end.saturating_sub(first_issue.unwrap_or(t0)) as f64 / 1e9;
    if rep.requests > 1 {
        let h2h = (last_issue - first_issue.unwrap_or(last_issue)) as f64
            / (rep.requests - 1) as f64
            / 1e6;
        rep.score = Score {
            head_to_head_ms: h2h,
            iops: if h2h > 0.0 { 1000.0 / h2h } else { 0.0 },
        };
    }
    rep.service_time_ns = Dist::from(&svc, &svc_w);
    if timed {
        rep.lateness_ns = Dist::from(&late, &late_w);
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
