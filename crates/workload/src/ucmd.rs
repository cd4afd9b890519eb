//! fio's `io_uring_cmd` engine (`ioengine=io_uring_cmd`, `cmd_type=nvme`)
//! in the job spec: its options (`cmd_type`, `hipri`, `fixedbufs`,
//! `registerfiles`, `sqthread_poll`, `sqthread_poll_cpu`, `nonvectored`)
//! as one block, the plan's mapping of a job's `/dev/ngXnY` onto the
//! namespace's block device (which is what gets claimed), and the
//! engine's targets when the job starts. With another engine the options
//! are refused, naming the key.

use std::path::{Path, PathBuf};

use drivelab_engine::ucmd::UcmdOptions;

use crate::SpecError;

/// The io_uring_cmd engine's options of one job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UcmdSpec {
    /// The engine's options as set.
    pub opts: UcmdOptions,
    /// The first of these keys the job set (for the refusal with another
    /// engine).
    pub first_key: Option<&'static str>,
}

/// The keys this block handles.
pub const KEYS: &[&str] = &[
    "cmd_type",
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "nonvectored",
];

fn flag(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "" | "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

impl UcmdSpec {
    /// Set one of [`KEYS`] from its value.
    pub fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let bad = |expect: &str| SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: expect.to_string(),
        };
        let o = &mut self.opts;
        match key {
            // fio 3.33 knows one command type.
            "cmd_type" => match v.trim().to_ascii_lowercase().as_str() {
                "nvme" => {}
                _ => return Err(bad("nvme (the one command type fio 3.33 has)")),
            },
            "sqthread_poll_cpu" => {
                o.sqthread_poll_cpu = Some(
                    v.trim()
                        .parse()
                        .map_err(|_| bad("a CPU number (0, 1, ...)"))?,
                )
            }
            _ => {
                let on = flag(v).ok_or_else(|| bad("1 or 0"))?;
                match key {
                    "hipri" => o.hipri = on,
                    "fixedbufs" => o.fixedbufs = on,
                    "registerfiles" => o.registerfiles = on,
                    "sqthread_poll" => o.sqthread_poll = on,
                    "nonvectored" => o.nonvectored = on,
                    _ => return Err(bad("an io_uring_cmd engine option")),
                }
            }
        }
        self.first_key.get_or_insert(key);
        Ok(())
    }
}

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

/// The plan's check of a job's engine against its io_uring_cmd options:
/// they need `ioengine=io_uring_cmd`.
pub fn check_engine(spec: &crate::JobSpec) -> Result<(), crate::PlanError> {
    if spec.ioengine == crate::EngineKind::IoUringCmd {
        return Ok(());
    }
    match spec.ucmd.first_key {
        Some(k) => Err(crate::PlanError::Spec(SpecError::Invalid(format!(
            "job '{}': {k} is an option of ioengine=io_uring_cmd (this job uses {}); drop it or set ioengine=io_uring_cmd",
            spec.name,
            spec.ioengine.name()
        )))),
        None => Ok(()),
    }
}

/// The job's targets for the engine: each of its `/dev/ngXnY` opened
/// through its namespace's claim when the job writes, else read-only.
pub(crate) fn open_targets(
    plan: &crate::Plan,
    claims: &[Option<drivelab_device::claim::Claim>],
    job: &crate::plan::PlannedJob,
) -> Result<Vec<drivelab_engine::ucmd::UcmdTarget>, crate::exec::RunError> {
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
        out.push(opened.map_err(|e| crate::exec::RunError::Open {
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

    #[test]
    fn fios_options_set_the_engines() {
        let mut s = UcmdSpec::default();
        s.set("cmd_type", "nvme").unwrap();
        s.set("sqthread_poll", "1").unwrap();
        s.set("sqthread_poll_cpu", "0").unwrap();
        s.set("nonvectored", "1").unwrap();
        s.set("registerfiles", "").unwrap();
        s.set("fixedbufs", "0").unwrap();
        s.set("hipri", "1").unwrap();
        assert_eq!(s.first_key, Some("cmd_type"));
        assert_eq!(
            s.opts,
            UcmdOptions {
                hipri: true,
                fixedbufs: false,
                registerfiles: true,
                sqthread_poll: true,
                sqthread_poll_cpu: Some(0),
                nonvectored: true,
            }
        );
        let e = s.set("cmd_type", "scsi").unwrap_err().to_string();
        assert!(e.contains("cmd_type") && e.contains("nvme"), "{e}");
        assert!(s.set("sqthread_poll_cpu", "x").is_err());
        assert!(s.set("nonvectored", "maybe").is_err());
    }

    #[test]
    fn fios_uring_cmd_examples_parse_with_their_options() {
        let ng = crate::jobfile::parse(
            "uring-cmd-ng.fio",
            include_str!("../../../tests/data/fio-jobs/uring-cmd/uring-cmd-ng.orig.fio"),
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
        let o: Vec<UcmdOptions> = ng.iter().map(|j| j.spec.ucmd.opts).collect();
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
        let zoned = crate::jobfile::parse(
            "uring-cmd-zoned.fio",
            include_str!("../../../tests/data/fio-jobs/uring-cmd/uring-cmd-zoned.orig.fio"),
        )
        .unwrap();
        assert_eq!(zoned.len(), 3);
        for j in &zoned {
            assert_eq!(j.spec.ioengine, crate::EngineKind::IoUringCmd);
            assert_eq!(j.spec.iodepth, 1);
            assert!(j.spec.verify.is_some());
        }
        assert!(zoned[2].spec.ucmd.opts.nonvectored && zoned[2].spec.ucmd.opts.registerfiles);
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
