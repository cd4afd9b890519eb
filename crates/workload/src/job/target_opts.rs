//! fio's options that act on a job's targets or its memory for the run:
//! the write lifetime hint given to each target as it is opened
//! (`write_hint`), the I/O scheduler of the devices the job claims,
//! switched for its run (`ioscheduler`, checked by the plan:
//! [`TargetOpts::check_scheduler`]), and memory locked into RAM while the
//! job runs (`lockmem`). One family ([`TargetOpts`]), applied where a job
//! opens its targets and starts (`run::start`).

use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::spec::size::parse_bytes;
use crate::SpecError;

/// fio's `write_hint` words and the kernel's `RWH_WRITE_LIFE_*` value of
/// each.
const HINTS: &[(&str, u64)] = &[
    ("none", 1),
    ("short", 2),
    ("medium", 3),
    ("long", 4),
    ("extreme", 5),
];

/// The targets and memory family.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TargetOpts {
    /// `write_hint`: the `RWH_WRITE_LIFE_*` value; None: no hint given.
    pub write_hint: Option<u64>,
    /// `lockmem`: bytes locked into RAM while the job runs; 0: none.
    pub lockmem: u64,
    /// `ioscheduler`: the scheduler the job's devices run under.
    pub ioscheduler: Option<String>,
}

impl TargetOpts {
    /// The family's options.
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "write_hint",
            [],
            Text,
            "",
            "the write lifetime hint given to each target as it opens: none, short, medium, long or extreme (fcntl F_SET_RW_HINT on the inode for buffered I/O; with direct I/O fio's F_SET_FILE_RW_HINT, which kernels since 5.17 refuse, failing the job as in fio)"
        ),
        opt!(
            "ioscheduler",
            [],
            Text,
            "",
            "switch the I/O scheduler of each device the job writes (claims) to this one for the job's run, and back after it (a whole device only: not a file's filesystem device, not a partition)"
        ),
        opt!(
            "lockmem",
            [],
            Size,
            "0",
            "lock this much memory into RAM while the job runs (mlock), leaving the system that much less for its page cache"
        ),
    ];
}

impl TargetOpts {
    /// `ioscheduler`'s check of a job's targets, before anything is
    /// written: the job writes (so it claims them), each is a whole block
    /// device, and each offers the scheduler; the reason why not.
    pub fn check_scheduler(
        &self,
        writes: bool,
        targets: &[(&str, Option<&str>)],
    ) -> Result<(), String> {
        let Some(want) = &self.ioscheduler else {
            return Ok(());
        };
        if !writes {
            return Err("ioscheduler: the job only reads, so it claims no device; drivelab switches the scheduler only of a device the job writes".to_string());
        }
        for (path, dev) in targets {
            let Some(name) = dev else {
                return Err(format!("ioscheduler: {path} is not a block device; the scheduler belongs to a device, give one the job writes"));
            };
            let sys = std::path::Path::new("/sys/class/block").join(name);
            if sys.join("partition").exists() {
                return Err(format!("ioscheduler: {path} is a partition; its scheduler is its whole disk's, which the job does not claim"));
            }
            let line = std::fs::read_to_string(sys.join("queue/scheduler")).unwrap_or_default();
            let (offered, _) = drivelab_device::claim::scheduler::parse_schedulers(&line);
            if !offered.iter().any(|s| s == want) {
                return Err(format!(
                    "ioscheduler: {path} has no scheduler '{want}'; it offers {}",
                    offered.join(", ")
                ));
            }
        }
        Ok(())
    }
}

impl OptionFamily for TargetOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        match key {
            "write_hint" => {
                let word = v.trim();
                let hint = HINTS
                    .iter()
                    .find(|(w, _)| w.eq_ignore_ascii_case(word))
                    .map(|&(_, h)| h)
                    .ok_or_else(|| SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "none, short, medium, long or extreme".to_string(),
                    })?;
                self.write_hint = Some(hint);
            }
            "ioscheduler" => {
                let name = v.trim();
                if name.is_empty() || name.contains(char::is_whitespace) {
                    return Err(SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "a scheduler's name, such as mq-deadline, none, bfq or kyber"
                            .to_string(),
                    });
                }
                self.ioscheduler = Some(name.to_string());
            }
            _ => self.lockmem = parse_bytes(key, v)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_are_the_kernels_values() {
        let mut t = TargetOpts::default();
        t.set("write_hint", "short").unwrap();
        assert_eq!(t.write_hint, Some(2));
        t.set("write_hint", "extreme").unwrap();
        assert_eq!(t.write_hint, Some(5));
        assert!(t.set("write_hint", "forever").is_err());
        t.set("lockmem", "16m").unwrap();
        assert_eq!(t.lockmem, 16 << 20);
    }
}
