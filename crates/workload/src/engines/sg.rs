//! What the sg engine's front needs beyond its options
//! ([`crate::engines::opts::sg`]): the plan's checks of a job's engine and
//! targets, the disk a /dev/sgN is claimed through, whether the job queues
//! commands (fio's asynchronous mode), and its targets opened for the run.

use crate::SpecError;

pub use crate::engines::opts::sg::SgSpec;

/// The plan's check of an sg job's targets: the sg engine needs block
/// devices (SCSI disks; SG_IO is refused on files).
pub fn check_targets<'a>(
    spec: &crate::JobSpec,
    targets: impl IntoIterator<Item = &'a crate::plan::model::PlannedTarget>,
) -> Result<(), crate::PlanError> {
    let bad = |why: String| crate::PlanError::Spec(SpecError::Invalid(why));
    for t in targets {
        if !t.is_block {
            let path = &t.path;
            return Err(bad(format!(
                "job '{}': ioengine=sg sends SCSI commands to a SCSI disk (/dev/sdX or its /dev/sgN), and {} is not one; use the disk's /dev/sdX or /dev/sgN, or another ioengine for files",
                spec.name,
                path.display()
            )));
        }
    }
    Ok(())
}

/// Whether `file` is a character device: for the sg engine, a SCSI generic
/// node (/dev/sgN), planned and claimed as its disk's block device.
pub(crate) fn is_node(file: &str) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(file).is_ok_and(|m| m.file_type().is_char_device())
}

/// The disk a job's /dev/sgN is planned and claimed as, or the one-line
/// refusal of another character device.
pub(crate) fn block_of(job: &str, sg: &str) -> Result<std::path::PathBuf, crate::PlanError> {
    drivelab_device::claim::scsi_generic_block(std::path::Path::new(sg))
        .map_err(|e| crate::PlanError::Spec(SpecError::Invalid(format!("job '{job}': {e}"))))
}

/// Whether the job runs fio's asynchronous sg mode: every target a
/// /dev/sgN node, without `direct` (fio's default for sg is buffered,
/// which on a node means queued commands). Queueing needs the node open
/// for writing (write() of the command), which drivelab does only through
/// the disk's claim: a node of a run that only reads (no claim) takes its
/// commands one at a time over SG_IO instead.
pub(crate) fn asynchronous(
    spec: &crate::JobSpec,
    claims: &[Option<drivelab_device::claim::Claim>],
    job: &crate::plan::model::PlannedJob,
) -> bool {
    spec.ioengine == crate::EngineKind::Sg
        && spec.direct != Some(true)
        && !spec.filenames.is_empty()
        && spec.filenames.iter().all(|f| is_node(f))
        && job.targets.iter().all(|&i| claims[i].is_some())
}

/// The job's targets for the sg engine: the claimed device when the job
/// writes (its claim is held), else a read-only open (commands that change
/// the medium are then refused by the device crate before they are sent).
/// A /dev/sgN the job names is opened itself, through its disk's claim.
pub(crate) fn open_targets(
    plan: &crate::Plan,
    claims: &[Option<drivelab_device::claim::Claim>],
    job: &crate::plan::model::PlannedJob,
) -> Result<Vec<drivelab_engine::sg::SgTarget>, crate::run::error::RunError> {
    use drivelab_engine::sg::SgTarget;
    let mut out = Vec::with_capacity(job.targets.len());
    for (k, &i) in job.targets.iter().enumerate() {
        let t = &plan.targets[i];
        let node = job
            .spec
            .filenames
            .get(k)
            .filter(|f| is_node(f))
            .map(std::path::PathBuf::from);
        let opened = match (&claims[i], job.writes, &node) {
            // A node is opened through the claim for reads too: queueing
            // (fio's asynchronous mode) writes commands to it.
            (Some(c), _, Some(n)) => SgTarget::claimed_generic(c, n),
            (Some(c), true, None) => SgTarget::claimed(c),
            (_, _, Some(n)) => SgTarget::read_only(n),
            _ => SgTarget::read_only(&t.path),
        };
        let shown = node.as_ref().unwrap_or(&t.path);
        out.push(opened.map_err(|e| crate::run::error::RunError::Open {
            path: shown.display().to_string(),
            source: std::io::Error::other(e.to_string()),
            hint: String::new(),
        })?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_engine::sg::SgWriteMode;

    #[test]
    fn stream_id_reaches_write_stream_whatever_the_order() {
        let mut s = SgSpec::default();
        s.set("sg_write_mode", "write_stream").unwrap();
        s.set("stream_id", "9").unwrap();
        assert_eq!(s.options().write_mode, SgWriteMode::WriteStream(9));
        let mut s = SgSpec::default();
        s.set("writefua", "1").unwrap();
        assert_eq!(s.options().write_mode, SgWriteMode::Write);
        assert!(s.options().writefua);
        assert!(!s.writes_read_only());
        s.set("sg_write_mode", "verify_bytchk_11").unwrap();
        assert!(s.writes_read_only());
        let e = s.set("sg_write_mode", "bogus").unwrap_err().to_string();
        assert!(
            e.contains("sg_write_mode") && e.contains("verify_bytchk_01"),
            "{e}"
        );
        assert!(s.set("stream_id", "70000").is_err());
    }
}
