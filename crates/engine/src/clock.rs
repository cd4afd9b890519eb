//! Time: the monotonic clock every measurement reads, absolute sleeps on
//! it, and the calendar arithmetic for the timestamps reports, logs and
//! certificates print (all UTC; no time-zone database).

/// Monotonic time in nanoseconds (CLOCK_MONOTONIC, via the vDSO: about
/// 20 ns, no system call).
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer to
    // a local; CLOCK_MONOTONIC always exists on Linux.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The time of clock `id` (a `CLOCK_*` of clock_gettime: 0 realtime, 1
/// monotonic, 7 boottime, …) in milliseconds since its epoch; fio's
/// `log_alternate_epoch_clock_id`.
pub fn clock_ms(id: i32) -> std::io::Result<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer to
    // a local; an unknown id is refused with EINVAL, nothing written.
    let rc = unsafe { libc::clock_gettime(id as libc::clockid_t, &mut ts) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000)
}

/// Sleep until the monotonic clock reaches `deadline_ns` (absolute, so
/// errors never accumulate). A signal may end it early: callers re-read
/// the clock.
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        // `as _`: time_t is 64 bits on x86_64 with glibc and with musl.
        tv_sec: (deadline_ns / 1_000_000_000) as _,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: an absolute sleep on CLOCK_MONOTONIC with a valid timespec
    // and no remainder pointer (absolute sleeps have none).
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        );
    }
}

/// Civil date (year, month 1–12, day 1–31) from days since 1970-01-01,
/// by Howard Hinnant's `civil_from_days` algorithm.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// (date, seconds into the day) of a Unix time in seconds.
pub fn civil_from_unix(secs: u64) -> ((i64, u32, u32), u64) {
    (civil_from_days((secs / 86_400) as i64), secs % 86_400)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_moves_forward_and_sleep_until_waits() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
        let deadline = b + 2_000_000;
        sleep_until(deadline);
        assert!(now_ns() >= deadline, "woke before the deadline");
        // A deadline in the past returns at once.
        let t = now_ns();
        sleep_until(t.saturating_sub(1_000_000_000));
        assert!(now_ns() - t < 1_000_000_000);
    }

    #[test]
    fn known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        // 2000-02-29 is day 11,016; 2026-11-22 is day 20,779 (counted by `date -d`).
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }
}
