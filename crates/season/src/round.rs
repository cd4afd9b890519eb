//! One timed run of a workload on the claimed drive: a round of the
//! overwrite stage, or a fresh/used comparison run. The workload is the
//! workload crate's ([`JobSpec`], planned by [`drivelab_workload::plan::planner`],
//! run by its job loop on the one I/O loop) on the claim season already
//! holds.
//!
//! A workload is written as a preset name (`4k-rand-write`), a fio job
//! file, or fio-style options separated by spaces (`rw=randwrite bs=4k
//! iodepth=32`, a leading `--` is allowed), applied in order over the
//! default: 4 KiB random writes at queue depth 32, io_uring, O_DIRECT.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

use drivelab_device::claim::Claim;
use drivelab_engine::buf::Fill;
use drivelab_engine::engine::{Psync, Target, Uring};
use drivelab_stats::{LatencyHistogram, Welford};
use drivelab_workload::job::io_loop::run_job;
use drivelab_workload::job::outcome::JobOutcome;
use drivelab_workload::{EngineKind, JobSpec, PlanOptions};

use crate::result::Metrics;
use crate::SeasonError;

/// The default workload of the rounds (PTS IOPS test's write corner).
pub const DEFAULT_WORKLOAD: &str = "rw=randwrite bs=4k iodepth=32";

/// Parse a workload (see the module doc). Bad input is a
/// [`SeasonError::BadOption`] naming `what` (the option).
///
/// A word that exists as a path, has a '/' or a job file's extension
/// (`.fio`, `.ini`, `.job`) is a job file: one that cannot be read is named
/// as such, not taken for an unknown option.
pub fn parse(what: &str, text: &str) -> Result<JobSpec, SeasonError> {
    fn names_a_file(tok: &str) -> bool {
        let p = Path::new(tok);
        p.symlink_metadata().is_ok()
            || tok.contains('/')
            || p.extension()
                .is_some_and(|e| e == "fio" || e == "ini" || e == "job")
    }
    let bad = |e: String| SeasonError::BadOption(format!("{what} '{text}': {e}"));
    let mut spec = JobSpec::default();
    for (k, v) in [
        ("ioengine", "io_uring"),
        ("direct", "1"),
        ("rw", "randwrite"),
        ("bs", "4k"),
        ("iodepth", "32"),
    ] {
        spec.set(k, Some(v)).map_err(|e| bad(e.to_string()))?;
    }
    spec.name = "season".into();
    for tok in text.split_whitespace() {
        let tok = tok.trim_start_matches("--");
        if let Some((k, v)) = tok.split_once('=') {
            if k == "filename" || k == "runtime" || k == "time_based" {
                return Err(bad(format!(
                    "{k} is set by season (the drive, --round-time); leave it out"
                )));
            }
            spec.set(k, Some(v)).map_err(|e| bad(e.to_string()))?;
        } else if names_a_file(tok) {
            let jobs = drivelab_workload::spec::jobfile::read_file(Path::new(tok))
                .map_err(|e| bad(e.to_string()))?;
            let [job] = <[_; 1]>::try_from(jobs).map_err(|j| {
                bad(format!(
                    "the job file has {} jobs; season runs one",
                    j.len()
                ))
            })?;
            spec = job.spec;
            spec.filenames.clear();
        } else if let Ok(p) = drivelab_workload::spec::presets::find(tok) {
            p.apply(&mut spec);
        } else {
            spec.set(tok, None).map_err(|e| bad(e.to_string()))?;
        }
    }
    if spec.numjobs > 1 {
        return Err(bad(
            "numjobs must be 1 (season runs one job per drive)".into()
        ));
    }
    // The drive is named per run; any name satisfies the check here.
    let mut named = spec.clone();
    named.filenames = vec!["drive".into()];
    named.validate().map_err(|e| bad(e.to_string()))?;
    Ok(spec)
}

/// The workload of overwrite round `n` (1-based): `spec` with its offset
/// seed mixed with the round number. With one seed for every round (fio's
/// `randrepeat`, the default) each round rewrites the pages the first
/// round wrote, in the same order, so a round shorter than the drive
/// keeps overwriting one hot set and the drive never reaches the state
/// uniformly random overwrites bring it to (the simulated SSD's cleaning
/// then finds whole blocks of stale pages and runs near its fresh rate).
/// The seed depends on `n` alone, so a resumed round is the round it
/// replaces.
pub fn for_round(spec: &JobSpec, n: usize) -> JobSpec {
    let mut s = spec.clone();
    s.randseed = spec
        .randseed
        .wrapping_add((n as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
    s
}

/// Run `spec` on the claimed drive for `seconds` (time-based). None when
/// stopped before the end (the run does not count).
pub fn run(
    claim: &Claim,
    spec: &JobSpec,
    seconds: f64,
    stop: &AtomicBool,
    done_ios: &AtomicU64,
) -> Result<Option<(Metrics, u64)>, SeasonError> {
    let dev = claim.path().display().to_string();
    let bad = |e: String| SeasonError::BadOption(format!("workload on {dev}: {e}"));
    let mut spec = spec.clone();
    spec.filenames = vec![dev.clone()];
    spec.runtime = Some(Duration::from_secs_f64(seconds));
    spec.time_based = true;
    let plan = drivelab_workload::plan(&[(spec.clone(), false)], &PlanOptions { force: true })
        .map_err(|e| bad(e.to_string()))?;
    let job = plan
        .jobs
        .first()
        .ok_or_else(|| bad("the workload plans no job".into()))?;
    let cfg = drivelab_workload::run::execute::job_config(job, 1);
    let io_err = |what: &str, e: std::io::Error| SeasonError::Io {
        device: dev.clone(),
        what: what.to_string(),
        source: e,
    };
    let target = Target::claimed(claim, job.direct).map_err(|e| io_err("open for writing", e))?;
    let max_bs = spec.max_bs() as usize;
    let t0 = drivelab_workload::job::io_loop::now_ns();
    let (out, logs) = match spec.ioengine {
        EngineKind::Psync => {
            let mut e = Psync::new(vec![target], max_bs, spec.fua, Fill::Random(spec.randseed))
                .map_err(|e| io_err("set up psync", e))?;
            run_job(&mut e, &cfg, t0, stop, done_ios)
        }
        _ => {
            let mut e = Uring::new(
                vec![target],
                spec.iodepth,
                max_bs,
                spec.fua,
                Fill::Random(spec.randseed),
            )
            .map_err(|e| io_err("set up io_uring", e))?;
            run_job(&mut e, &cfg, t0, stop, done_ios)
        }
    }
    .map_err(|e| SeasonError::Command {
        device: dev.clone(),
        what: "workload".into(),
        why: e.to_string(),
    })?;
    logs.finish(drivelab_workload::job::io_loop::now_ns(), out.runtime_ns)
        .map_err(|why| SeasonError::Command {
            device: dev.clone(),
            what: "workload logs".into(),
            why,
        })?;
    if let Some(f) = out.errors.first() {
        return Err(SeasonError::Command {
            device: dev,
            what: "workload".into(),
            why: format!(
                "{:?} of {} bytes at byte {} failed: {}",
                f.op,
                f.len,
                f.offset,
                std::io::Error::from_raw_os_error(f.errno)
            ),
        });
    }
    if out.interrupted {
        return Ok(None);
    }
    Ok(Some(metrics(&out)))
}

/// The figures of a job's outcome (all directions), and bytes written.
pub fn metrics(o: &JobOutcome) -> (Metrics, u64) {
    let mut lat = LatencyHistogram::new();
    let mut mom = Welford::new();
    let (mut ios, mut bytes) = (0u64, 0u64);
    for d in &o.dirs[..3] {
        ios += d.ios;
        bytes += d.bytes;
        lat.merge(&d.lat);
        mom.merge(&d.moments);
    }
    let secs = o.runtime_ns as f64 / 1e9;
    let per_s = |v: u64| if secs > 0.0 { v as f64 / secs } else { 0.0 };
    (
        Metrics {
            iops: per_s(ios),
            bw_bytes: per_s(bytes),
            lat_mean_ns: if mom.count() > 0 { mom.mean() } else { 0.0 },
            lat_p99_ns: lat.percentile(99.0).unwrap_or(0) as f64,
            seconds: secs,
        },
        o.dirs[1].bytes,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_4k_random_write_qd32() {
        let s = parse("--workload", DEFAULT_WORKLOAD).unwrap();
        assert_eq!(s.iodepth, 32);
        assert_eq!(s.max_bs(), 4096);
        assert_eq!(s.rw.name(), "randwrite");
        assert_eq!(s.ioengine, EngineKind::IoUring);
    }

    #[test]
    fn each_round_has_its_own_offsets_and_a_rerun_round_the_same() {
        let s = parse("--workload", DEFAULT_WORKLOAD).unwrap();
        let seeds: Vec<u64> = (1..=25).map(|n| for_round(&s, n).randseed).collect();
        let mut uniq = seeds.clone();
        uniq.sort_unstable();
        uniq.dedup();
        assert_eq!(uniq.len(), seeds.len(), "{seeds:?}");
        assert!(!seeds.contains(&s.randseed));
        assert_eq!(for_round(&s, 3).randseed, for_round(&s, 3).randseed);
        // Only the seed changes.
        let mut back = for_round(&s, 7);
        back.randseed = s.randseed;
        assert_eq!(format!("{back:?}"), format!("{s:?}"));
    }

    #[test]
    fn presets_and_options_apply_in_order() {
        let s = parse("--workload", "fileserver --iodepth=4").unwrap();
        assert_eq!(s.iodepth, 4);
        assert_eq!(s.max_bs(), 64 * 1024);
        let s = parse("--workload", "bs=16k rate_iops=500").unwrap();
        assert_eq!(s.max_bs(), 16 * 1024);
    }

    #[test]
    fn bad_workloads_say_what_is_wrong() {
        for (w, needle) in [
            ("bs=banana", "bs"),
            ("nosuchthing", "nosuchthing"),
            ("runtime=5", "--round-time"),
            ("numjobs=2", "numjobs"),
        ] {
            let e = parse("--workload", w).unwrap_err();
            assert!(
                matches!(e, SeasonError::BadOption(_)) && e.to_string().contains(needle),
                "{w}: {e}"
            );
        }
    }
}
