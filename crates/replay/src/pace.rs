//! When each request of a timed sequence is due, by the open-loop timing
//! rules: the trace's clock laid onto the engine's ([`Pace::Original`]),
//! each gap kept after the previous request's issue ([`Pace::Gaps`], fio's
//! `read_iolog`), or none ([`Pace::NoStall`]). `trace replay` and fio's
//! `read_iolog` jobs both ask a [`Pacer`], so a log played either way is
//! issued on the same schedule.
//!
//! Times are nanoseconds: a request's own time on the trace's clock (any
//! origin), and `now` and the returned deadline on the engine's clock.

/// An open-loop timing rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Request i is due at `t0 + (time_i − time_0) / speed`, `t0` the
    /// moment the first was asked for: an absolute schedule, so a request
    /// issued late is followed by others closer behind it (the replay
    /// catches up).
    Original {
        /// Time compression (> 0; 2.0 plays twice as fast).
        speed: f64,
    },
    /// Request i is due `(time_i − time_{i−1}) / speed` after request i−1
    /// was issued: no gap is ever shorter than the trace's, and a request
    /// issued late delays every later one. fio 3.33's `read_iolog`
    /// (`iolog_delay`, `delay_since_ttime`, with `replay_time_scale` as the
    /// speed in percent); fio also takes its previous sleep's overshoot off
    /// the next gap, where the replay loop spins the last stretch of a
    /// wait so that a request is seldom woken late.
    Gaps {
        /// Time compression (> 0).
        speed: f64,
    },
    /// Each as soon as the engine has a free slot.
    NoStall,
}

/// The state of one paced sequence: ask [`Pacer::due`] for the next
/// request's deadline, and tell [`Pacer::issued`] when it went out.
#[derive(Debug, Clone)]
pub struct Pacer {
    pace: Pace,
    /// Original: (engine time of the first request, its trace time).
    origin: Option<(u64, u64)>,
    /// Gaps: (engine time the previous request was issued, its trace time).
    last: Option<(u64, u64)>,
}

impl Pacer {
    /// A pacer for a sequence not yet started.
    pub fn new(pace: Pace) -> Pacer {
        Pacer {
            pace,
            origin: None,
            last: None,
        }
    }

    /// Whether requests have deadlines (any rule but [`Pace::NoStall`]).
    #[inline]
    pub fn timed(&self) -> bool {
        self.pace != Pace::NoStall
    }

    /// The engine time at which the request with trace time `time` is
    /// due, asked at engine time `now` (the first request asked for is
    /// due at once). Asking again for the same request gives the same
    /// deadline.
    #[inline]
    pub fn due(&mut self, time: u64, now: u64) -> u64 {
        match self.pace {
            Pace::NoStall => now,
            Pace::Original { speed } => {
                let (t0, base) = *self.origin.get_or_insert((now, time));
                t0.saturating_add(scaled(time.saturating_sub(base), speed))
            }
            Pace::Gaps { speed } => match self.last {
                Some((at, was)) => at.saturating_add(scaled(time.saturating_sub(was), speed)),
                None => now,
            },
        }
    }

    /// The request with trace time `time` was issued at engine time `now`.
    #[inline]
    pub fn issued(&mut self, time: u64, now: u64) {
        if let Pace::Gaps { .. } = self.pace {
            self.last = Some((now, time));
        }
    }
}

/// `gap / speed`, with speed 1 exact.
#[inline]
fn scaled(gap: u64, speed: f64) -> u64 {
    if speed == 1.0 {
        gap
    } else {
        (gap as f64 / speed) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue each of `times` at its deadline plus the lateness given for
    /// it; the deadlines seen.
    fn play(pace: Pace, times: &[u64], late: &[u64]) -> Vec<u64> {
        let mut p = Pacer::new(pace);
        let mut now = 1_000;
        let mut dues = Vec::new();
        for (i, &t) in times.iter().enumerate() {
            let due = p.due(t, now);
            assert_eq!(p.due(t, now), due, "asking twice moves nothing");
            dues.push(due);
            now = now.max(due) + late[i];
            p.issued(t, now);
        }
        dues
    }

    #[test]
    fn original_timing_catches_up_after_a_late_issue() {
        // The second request goes out 500 late: the third keeps its place
        // on the schedule.
        let d = play(
            Pace::Original { speed: 1.0 },
            &[5_000, 6_000, 7_000],
            &[0, 500, 0],
        );
        assert_eq!(d, [1_000, 2_000, 3_000]);
    }

    #[test]
    fn gaps_are_kept_after_a_late_issue_as_fio_keeps_them() {
        let d = play(
            Pace::Gaps { speed: 1.0 },
            &[5_000, 6_000, 7_000],
            &[0, 500, 0],
        );
        assert_eq!(d, [1_000, 2_000, 3_500]);
    }

    #[test]
    fn speed_divides_each_gap() {
        let d = play(Pace::Gaps { speed: 2.0 }, &[0, 1_000, 3_000], &[0, 0, 0]);
        assert_eq!(d, [1_000, 1_500, 2_500]);
        let d = play(Pace::Original { speed: 4.0 }, &[0, 1_000, 3_000], &[0; 3]);
        assert_eq!(d, [1_000, 1_250, 1_750]);
    }

    #[test]
    fn no_stall_is_due_at_once() {
        let d = play(Pace::NoStall, &[0, 1_000_000, 9_000_000], &[7, 7, 7]);
        assert_eq!(d, [1_000, 1_007, 1_014]);
        assert!(!Pacer::new(Pace::NoStall).timed());
    }
}
