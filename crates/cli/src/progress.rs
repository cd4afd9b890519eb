//! `run`'s progress line on stderr, in fio's style:
//! `Jobs: 1 (f=1): [R(1)][45.0%][r=123MiB/s][r=31.5k IOPS][eta 00m:11s]`.
//! It is drawn from the counts the job loops already publish (read once a
//! second by the thread that waits for the jobs), never written to stdout.

use std::io::Write;
use std::time::Duration;

use drivelab_workload::Progress;

use crate::error::usage;

/// fio's `--eta`: when to show the progress line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Eta {
    /// When stderr is a terminal and the results are read by a person.
    #[default]
    Auto,
    /// Always, terminal or not.
    Always,
    /// Never.
    Never,
}

impl Eta {
    /// Parse `--eta`'s value.
    pub fn parse(v: &str) -> anyhow::Result<Eta> {
        match v {
            "auto" => Ok(Eta::Auto),
            "always" => Ok(Eta::Always),
            "never" => Ok(Eta::Never),
            _ => Err(usage(format!(
                "--eta={v}: use always, never or auto (fio's choices)"
            ))),
        }
    }

    /// Whether to show the line, given whether stderr is a terminal and
    /// whether only machine-readable output was asked for.
    pub fn show(self, stderr_tty: bool, machine: bool) -> bool {
        match self {
            Eta::Always => true,
            Eta::Never => false,
            Eta::Auto => stderr_tty && !machine,
        }
    }
}

/// A time option's value: bare numbers are seconds; `ms`, `s`, `m`, `h`
/// suffixes as fio takes them. Zero is refused.
pub fn parse_interval(what: &str, v: &str) -> anyhow::Result<Duration> {
    let bad = || {
        usage(format!(
            "{what}={v}: give a time, e.g. 2 (seconds), 500ms or 1m"
        ))
    };
    let t = v.trim().to_ascii_lowercase();
    let (num, scale_ms) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60_000.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3_600_000.0)
    } else {
        (t.as_str(), 1000.0)
    };
    let n: f64 = num.trim().parse().map_err(|_| bad())?;
    if !n.is_finite() || n <= 0.0 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(n * scale_ms / 1000.0))
}

/// fio's one-letter job state for a running job of mode `rw` (fio's name).
pub fn state_letter(rw: &str) -> char {
    match rw {
        "read" => 'R',
        "randread" => 'r',
        "write" => 'W',
        "randwrite" => 'w',
        "rw" | "readwrite" => 'M',
        "randrw" => 'm',
        "trim" => 'D',
        "randtrim" => 'd',
        _ => 'R',
    }
}

/// fio's job-state field: runs of the same letter as `X(n)`, e.g. `[r(2)W(1)]`.
pub fn states(letters: &[char]) -> String {
    let mut s = String::new();
    let mut i = 0;
    while i < letters.len() {
        let c = letters[i];
        let n = letters[i..].iter().take_while(|&&x| x == c).count();
        s.push_str(&format!("{c}({n})"));
        i += n;
    }
    s
}

/// Bytes per second in fio's style: `812KiB/s`, `123MiB/s`, `1.2GiB/s`.
pub fn bw_text(bps: f64) -> String {
    const K: f64 = 1024.0;
    let (v, unit) = if bps >= K * K * K {
        (bps / (K * K * K), "GiB")
    } else if bps >= K * K {
        (bps / (K * K), "MiB")
    } else {
        (bps / K, "KiB")
    };
    if v >= 100.0 || unit == "KiB" {
        format!("{v:.0}{unit}/s")
    } else {
        format!("{v:.1}{unit}/s")
    }
}

/// I/Os per second in fio's style: `912`, `31.5k`, `1.2M`.
pub fn iops_text(iops: f64) -> String {
    if iops >= 1e6 {
        format!("{:.1}M", iops / 1e6)
    } else if iops >= 1e4 {
        format!("{:.1}k", iops / 1e3)
    } else {
        format!("{iops:.0}")
    }
}

/// fio's ETA: `00m:11s`, or with hours `1h:02m:03s`.
pub fn eta_text(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    let (h, m, sec) = (s / 3600, (s / 60) % 60, s % 60);
    if h > 0 {
        format!("{h}h:{m:02}m:{sec:02}s")
    } else {
        format!("{m:02}m:{sec:02}s")
    }
}

/// The share of the run done, 0..=1, and the seconds left, when known:
/// from the time for time-bound runs, from the bytes for size-bound ones
/// (whichever is further along when both bound it).
pub fn done_and_eta(pr: &Progress) -> (Option<f64>, Option<f64>) {
    let by_time = pr.planned_s.filter(|&p| p > 0.0).map(|p| {
        let f = (pr.elapsed_s / p).clamp(0.0, 1.0);
        (f, (p - pr.elapsed_s).max(0.0))
    });
    let bw: f64 = pr.dir_bw.iter().sum();
    let by_bytes = pr.bytes_planned.filter(|&b| b > 0).map(|b| {
        let f = (pr.bytes_done as f64 / b as f64).clamp(0.0, 1.0);
        let left = b.saturating_sub(pr.bytes_done) as f64;
        (f, if bw > 0.0 { left / bw } else { f64::NAN })
    });
    match (by_time, by_bytes) {
        (Some(t), Some(b)) if b.0 > t.0 => (Some(b.0), Some(b.1).filter(|x| x.is_finite())),
        (Some(t), _) => (Some(t.0), Some(t.1)),
        (None, Some(b)) => (Some(b.0), Some(b.1).filter(|x| x.is_finite())),
        (None, None) => (None, None),
    }
}

/// The progress line for `pr`. `letters`: each job's state letter;
/// `dirs`: which directions (read, write, trim) the jobs move data in.
pub fn line(pr: &Progress, letters: &[char], dirs: [bool; 3]) -> String {
    let running = pr.running;
    let shown: Vec<char> = letters.iter().copied().take(running.max(1)).collect();
    let (done, eta) = done_and_eta(pr);
    let pct = done.map_or("-.-%".to_string(), |f| format!("{:.1}%", f * 100.0));
    let names = ['r', 'w', 't'];
    let mut dirs: Vec<usize> = (0..3).filter(|&k| dirs[k]).collect();
    if dirs.is_empty() {
        dirs.push(0);
    }
    let bw: Vec<String> = dirs
        .iter()
        .map(|&k| format!("{}={}", names[k], bw_text(pr.dir_bw[k])))
        .collect();
    let iops: Vec<String> = dirs
        .iter()
        .map(|&k| format!("{}={}", names[k], iops_text(pr.dir_iops[k])))
        .collect();
    let ramp = if pr.ramping { "[ramp]" } else { "" };
    format!(
        "Jobs: {running} (f={running}): [{}]{ramp}[{pct}][{}][{} IOPS][eta {}]",
        states(&shown),
        bw.join(","),
        iops.join(","),
        eta.map_or("--m:--s".to_string(), eta_text)
    )
}

/// Draws the progress line: overwritten in place (`\r`), or ended with a
/// newline every `newline_every` (`--eta-newline`).
pub struct Display {
    letters: Vec<char>,
    dirs: [bool; 3],
    newline_every: Option<Duration>,
    last_newline_s: f64,
    width: usize,
}

impl Display {
    /// A display for jobs with these state letters and directions.
    pub fn new(letters: Vec<char>, dirs: [bool; 3], newline_every: Option<Duration>) -> Display {
        Display {
            letters,
            dirs,
            newline_every,
            last_newline_s: 0.0,
            width: 0,
        }
    }

    /// Show `pr`.
    pub fn update(&mut self, pr: &Progress) {
        let text = line(pr, &self.letters, self.dirs);
        let newline = self
            .newline_every
            .is_some_and(|every| pr.elapsed_s - self.last_newline_s >= every.as_secs_f64() - 0.05);
        let pad = self.width.saturating_sub(text.len());
        let mut err = std::io::stderr().lock();
        let _ = if newline {
            self.last_newline_s = pr.elapsed_s;
            self.width = 0;
            write!(err, "\r{text}{:pad$}\n", "")
        } else {
            self.width = text.len();
            write!(err, "\r{text}{:pad$}", "")
        };
        let _ = err.flush();
    }

    /// Take the line away (or end it) once the run is over.
    pub fn finish(&mut self) {
        if self.width > 0 {
            let _ = write!(std::io::stderr(), "\r{:w$}\r", "", w = self.width);
            self.width = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr() -> Progress {
        Progress {
            elapsed_s: 4.5,
            planned_s: Some(10.0),
            iops: 31_500.0,
            running: 1,
            ramping: false,
            dir_bw: [123.0 * 1024.0 * 1024.0, 0.0, 0.0],
            dir_iops: [31_500.0, 0.0, 0.0],
            bytes_done: 0,
            bytes_planned: None,
        }
    }

    #[test]
    fn line_is_fio_shaped() {
        let l = line(&pr(), &['r'], [true, false, false]);
        assert_eq!(
            l,
            "Jobs: 1 (f=1): [r(1)][45.0%][r=123MiB/s][r=31.5k IOPS][eta 00m:06s]"
        );
        let mut p = pr();
        p.dir_bw[1] = 512.0 * 1024.0;
        p.dir_iops[1] = 128.0;
        let l = line(&p, &['m', 'm'], [true, true, false]);
        assert!(
            l.contains("[r=123MiB/s,w=512KiB/s][r=31.5k,w=128 IOPS]"),
            "{l}"
        );
    }

    #[test]
    fn size_bound_runs_count_bytes() {
        let mut p = pr();
        p.planned_s = None;
        p.bytes_planned = Some(1000);
        p.bytes_done = 250;
        p.dir_bw = [50.0, 0.0, 0.0];
        let (f, eta) = done_and_eta(&p);
        assert_eq!(f, Some(0.25));
        assert_eq!(eta, Some(15.0));
    }

    #[test]
    fn times_and_eta_choices() {
        assert_eq!(
            parse_interval("--eta-newline", "2").unwrap(),
            Duration::from_secs(2)
        );
        assert_eq!(
            parse_interval("--eta-newline", "500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert!(parse_interval("--eta-newline", "0").is_err());
        assert!(parse_interval("--eta-newline", "soon").is_err());
        assert_eq!(Eta::parse("always").unwrap(), Eta::Always);
        assert!(Eta::parse("sometimes").is_err());
        assert!(!Eta::Auto.show(true, true));
        assert!(Eta::Always.show(false, true));
        assert_eq!(eta_text(3723.0), "1h:02m:03s");
        assert_eq!(states(&['r', 'r', 'W']), "r(2)W(1)");
    }
}
