//! fio's `io_uring_cmd` engine (`ioengine=io_uring_cmd`, `cmd_type=nvme`)
//! in the job plan: the mapping of a job's `/dev/ngXnY` onto the
//! namespace's block device (which is what gets claimed), and the
//! engine's targets when the job starts. Its options (`cmd_type`, `hipri`,
//! `fixedbufs`, …) are [`crate::engines::opts::io`]'s, shared with io_uring as in fio.

use std::path::{Path, PathBuf};

use crate::SpecError;

/// The block device a job's `/dev/ngXnY` is planned and claimed as, or
/// the one-line refusal of anything else (a file, a block device, another
/// character device).
pub(crate) fn block_of(job: &str, generic: &str) -> Result<PathBuf, crate::PlanError> {
    drivelab_device::claim::nvme_generic_block(Path::new(generic))
        .map_err(|e| crate::PlanError::Spec(SpecError::Invalid(format!("job '{job}': {e}"))))
}

/// The path whose block device describes `file` of the job: for
/// io_uring_cmd the namespace's block device of a /dev/ngXnY (when it maps
/// to one), else `file` itself.
pub(crate) fn block_path(spec: &crate::JobSpec, file: String) -> String {
    if spec.ioengine != crate::EngineKind::IoUringCmd {
        return file;
    }
    match drivelab_device::claim::nvme_generic_block(Path::new(&file)) {
        Ok(b) => b.display().to_string(),
        Err(_) => file,
    }
}

/// The job's targets for the engine: each of its `/dev/ngXnY` opened
/// through its namespace's claim when the job writes, else read-only.
pub(crate) fn open_targets(
    plan: &crate::Plan,
    claims: &[Option<drivelab_device::claim::Claim>],
    job: &crate::plan::model::PlannedJob,
) -> Result<Vec<drivelab_engine::ucmd::UcmdTarget>, crate::run::error::RunError> {
    use drivelab_engine::ucmd::UcmdTarget;
    let mut out = Vec::with_capacity(job.targets.len());
    for (k, &i) in job.targets.iter().enumerate() {
        let t = &plan.targets[i];
        let generic = job
            .spec
            .filenames
            .get(k)
            .map(PathBuf::from)
            .unwrap_or_else(|| t.path.clone());
        let opened = match (&claims[i], job.writes) {
            (Some(c), true) => UcmdTarget::claimed(c, &generic),
            _ => UcmdTarget::read_only(&generic),
        };
        out.push(opened.map_err(|e| crate::run::error::RunError::Open {
            path: generic.display().to_string(),
            source: std::io::Error::other(e.to_string()),
            hint: String::new(),
        })?);
    }
    Ok(out)
}

/// The device check of a namespace that io_uring_cmd jobs used: the
/// kernel counts passthrough commands in the disk's statistics only when
/// its queue's `iostats_passthrough` is on (Linux 6.10 and later; off by
/// default), so a device that counted fewer bytes than drivelab moved is
/// said to be that, not lost I/O.
pub(crate) fn passthrough_check(
    plan: &crate::Plan,
    device: &str,
    check: &mut drivelab_report::DeviceCheck,
) {
    let used = plan.jobs.iter().any(|j| {
        j.spec.ioengine == crate::EngineKind::IoUringCmd
            && j.targets.iter().any(|&t| {
                plan.targets[t]
                    .device
                    .as_ref()
                    .is_some_and(|d| d.name == device)
            })
    });
    if used && !check.agrees && check.device_bytes < check.reported_bytes {
        check.verdict = format!(
            "not comparable: ioengine=io_uring_cmd sends NVMe passthrough commands, which the kernel leaves out of the disk's statistics unless /sys/block/{device}/queue/iostats_passthrough is 1 (Linux 6.10 and later); the device counted {} of drivelab's {} bytes",
            check.device_bytes, check.reported_bytes
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_engine::ucmd::UcmdOptions;

    #[test]
    fn fios_uring_cmd_examples_parse_with_their_options() {
        let ng = crate::spec::jobfile::parse(
            "uring-cmd-ng.fio",
            include_str!("../../../../tests/data/fio-jobs/uring-cmd/uring-cmd-ng.orig.fio"),
        )
        .unwrap();
        let names: Vec<&str> = ng.iter().map(|j| j.spec.name.as_str()).collect();
        assert_eq!(names, ["rand-write", "rand-read", "write-opts"]);
        for j in &ng {
            assert_eq!(j.spec.ioengine, crate::EngineKind::IoUringCmd);
            assert_eq!(j.spec.filenames, ["/dev/ng0n1"]);
            assert_eq!(j.spec.iodepth, 32);
            assert!(j.stonewall);
        }
        let o: Vec<UcmdOptions> = ng
            .iter()
            .map(|j| j.spec.engine.io.ucmd(j.spec.fio_engine()))
            .collect();
        assert!(o[0].sqthread_poll && !o[0].nonvectored);
        assert_eq!(o[1], UcmdOptions::default());
        assert_eq!(
            o[2],
            UcmdOptions {
                sqthread_poll: true,
                sqthread_poll_cpu: Some(0),
                nonvectored: true,
                registerfiles: true,
                ..UcmdOptions::default()
            }
        );
        let zoned = crate::spec::jobfile::parse(
            "uring-cmd-zoned.fio",
            include_str!("../../../../tests/data/fio-jobs/uring-cmd/uring-cmd-zoned.orig.fio"),
        )
        .unwrap();
        assert_eq!(zoned.len(), 3);
        for j in &zoned {
            assert_eq!(j.spec.ioengine, crate::EngineKind::IoUringCmd);
            assert_eq!(j.spec.iodepth, 1);
            assert!(j.spec.verify.kind.is_some());
        }
        assert!(zoned[2].spec.engine.io.nonvectored && zoned[2].spec.engine.io.registerfiles);
    }

    #[test]
    fn a_file_is_refused_saying_what_to_give() {
        let p = std::env::temp_dir().join(format!("drivelab-ucmd-plan-{}", std::process::id()));
        std::fs::write(&p, b"x").unwrap();
        let e = block_of("j", &p.display().to_string())
            .unwrap_err()
            .to_string();
        std::fs::remove_file(&p).unwrap();
        assert!(
            e.contains("job 'j'") && e.contains("/dev/ngXnY") && e.contains("ioengine=io_uring"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
}
