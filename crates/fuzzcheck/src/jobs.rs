//! fio job files and the command-line options they share a parser with.

use drivelab_workload::spec::options::bounds;
use drivelab_workload::spec::size::SizeSpec;
use drivelab_workload::spec::{jobfile, presets};
use drivelab_workload::{check_total_jobs, JobSpec, MAX_TOTAL_JOBS};

/// fio job files (`drivelab run FILE.fio`), each line also as a command-line
/// option (`--key=value`, `--flag`), and the text as a preset name.
///
/// Invariants: a parsed file has at least one job; every error is one
/// non-empty line; every job (and the spec after each accepted option)
/// holds what the option table promises: `bs` > 0, a `bssplit` of non-zero
/// sizes whose shares add up to 100, percentages within 0–100, `iodepth`
/// and `numjobs` within their declared bounds, a non-empty trimmed name,
/// non-empty file names, a `log_interval` of at least 1 ms, percentages of
/// `size`/`offset`/`io_size` in (0, 100], access lines whose weights add up
/// to 100; validation and the total-thread check do not panic.
pub fn jobfile(data: &[u8]) {
    // `drivelab run` reads the file with read_to_string: not UTF-8 is an
    // I/O error before the parser.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match jobfile::parse("fuzz.fio", text) {
        Ok(jobs) => {
            assert!(!jobs.is_empty(), "a job file parsed into no jobs");
            for j in &jobs {
                check_spec(&j.spec);
            }
            if let Err(e) = check_total_jobs(jobs.iter().map(|j| &j.spec)) {
                one_line(&e.to_string());
            }
        }
        Err(e) => one_line(&e.to_string()),
    }
    // The command line sets the same options through the same setter
    // (arguments are short: long lines only cost time in the edit-distance
    // suggestion for an unknown name).
    let mut spec = JobSpec::default();
    for line in text.lines().filter(|l| l.len() <= 256).take(64) {
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (line, None),
        };
        match spec.set(key, value) {
            Ok(()) => check_spec(&spec),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    if let Ok(p) = presets::find(text) {
        let mut j = JobSpec::default();
        p.apply(&mut j);
        check_spec(&j);
    }
}

fn one_line(msg: &str) {
    assert!(!msg.trim().is_empty(), "empty error message");
    assert!(!msg.contains('\n'), "error of more than one line: {msg:?}");
}

fn percent_ok(s: &Option<SizeSpec>) -> bool {
    match s {
        Some(SizeSpec::Percent(p)) => *p > 0.0 && *p <= 100.0,
        _ => true,
    }
}

/// What every accepted job spec holds.
fn check_spec(j: &JobSpec) {
    assert!(j.bs > 0, "bs 0 accepted");
    if !j.bssplit.is_empty() {
        assert!(
            j.bssplit.iter().all(|(s, w)| *s > 0 && *w > 0),
            "{:?}",
            j.bssplit
        );
        let sum: u64 = j.bssplit.iter().map(|(_, w)| u64::from(*w)).sum();
        assert_eq!(sum, 100, "bssplit shares {:?}", j.bssplit);
    }
    assert!(j.rwmixread <= 100 && j.percentage_random <= 100);
    let (lo, hi) = bounds("iodepth");
    assert!(
        (lo..=hi).contains(&u64::from(j.iodepth)),
        "iodepth {}",
        j.iodepth
    );
    assert!((1..=MAX_TOTAL_JOBS).contains(&j.numjobs));
    assert!(
        !j.name.is_empty() && j.name.trim() == j.name,
        "name {:?}",
        j.name
    );
    assert!(j.filenames.iter().all(|f| !f.is_empty()));
    assert!(j.log_interval >= std::time::Duration::from_millis(1));
    assert!(percent_ok(&j.size) && percent_ok(&j.io_size) && percent_ok(&Some(j.offset)));
    let lines = j.access_lines();
    let total: u64 = lines.iter().map(|l| u64::from(l.weight)).sum();
    assert_eq!(total, 100, "access weights {lines:?}");
    assert!(lines
        .iter()
        .all(|l| l.size > 0 && l.read_pct <= 100 && l.random_pct <= 100));
    assert!(j.min_bs() > 0 && j.min_bs() <= j.max_bs());
    if let Err(e) = j.validate() {
        one_line(&e.to_string());
    }
}
