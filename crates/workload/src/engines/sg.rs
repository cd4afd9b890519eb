//! The options of fio's `sg` engine (`sg_write_mode`, `stream_id`,
//! `readfua`, `writefua`) as one block of the job spec, turned into the
//! engine's [`SgOptions`] when the job starts. They mean something only
//! with `ioengine=sg`; with another engine the plan refuses them, naming
//! the key (fio: "Bad option").

use drivelab_engine::sg::{SgOptions, SgWriteMode};

use crate::SpecError;

/// The sg engine's options of one job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SgSpec {
    /// `sg_write_mode` as parsed (None: fio's default, `write`).
    pub write_mode: Option<SgWriteMode>,
    /// `stream_id`: the stream of `write_stream` (default 0).
    pub stream_id: u16,
    /// `readfua`: FUA on reads (default 0).
    pub readfua: bool,
    /// `writefua`: FUA on writes (default 0).
    pub writefua: bool,
    /// The first of these keys the job set (for the plan's refusal with
    /// another engine).
    pub first_key: Option<&'static str>,
}

/// The keys this block handles.
pub const KEYS: &[&str] = &["sg_write_mode", "stream_id", "readfua", "writefua"];

impl SgSpec {
    /// Set one of [`KEYS`] from its value.
    pub fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let bad = |expect: &str| SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: expect.to_string(),
        };
        match key {
            "sg_write_mode" => {
                self.write_mode = Some(SgWriteMode::parse(v, 0).ok_or_else(|| {
                    bad("write, write_and_verify (or verify), write_same (or same), write_same_ndob, write_stream, verify_bytchk_00, verify_bytchk_01 or verify_bytchk_11")
                })?)
            }
            "stream_id" => {
                self.stream_id = v
                    .trim()
                    .parse()
                    .map_err(|_| bad("a stream identifier 0..=65535"))?
            }
            "readfua" | "writefua" => {
                let on = match v.trim().to_ascii_lowercase().as_str() {
                    "" | "1" | "true" | "yes" | "on" => true,
                    "0" | "false" | "no" | "off" => false,
                    _ => return Err(bad("1 or 0")),
                };
                if key == "readfua" {
                    self.readfua = on;
                } else {
                    self.writefua = on;
                }
            }
            _ => return Err(bad("an sg engine option")),
        }
        self.first_key.get_or_insert(key);
        Ok(())
    }

    /// The engine's options.
    pub fn options(&self) -> SgOptions {
        let mode = match self.write_mode.unwrap_or(SgWriteMode::Write) {
            SgWriteMode::WriteStream(_) => SgWriteMode::WriteStream(self.stream_id),
            m => m,
        };
        SgOptions {
            write_mode: mode,
            readfua: self.readfua,
            writefua: self.writefua,
        }
    }

    /// Whether the job's writes leave the medium as it was (the VERIFY
    /// modes compare, they do not write).
    pub fn writes_read_only(&self) -> bool {
        !self.options().write_mode.changes_medium()
    }
}

/// The plan's check of a job's engine against its sg options and targets:
/// sg options need `ioengine=sg`, and the sg engine needs block devices
/// (SCSI disks; SG_IO is refused on files).
pub fn check_targets<'a>(
    spec: &crate::JobSpec,
    targets: impl IntoIterator<Item = (&'a std::path::PathBuf, bool)>,
) -> Result<(), crate::PlanError> {
    let bad = |why: String| crate::PlanError::Spec(SpecError::Invalid(why));
    if spec.ioengine != crate::EngineKind::Sg {
        if let Some(k) = spec.sg.first_key {
            return Err(bad(format!(
                "job '{}': {k} is an option of ioengine=sg (this job uses {}); drop it or set ioengine=sg",
                spec.name,
                spec.ioengine.name()
            )));
        }
        return Ok(());
    }
    for (path, is_block) in targets {
        if !is_block {
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

    #[test]
    fn stream_id_reaches_write_stream_whatever_the_order() {
        let mut s = SgSpec::default();
        s.set("sg_write_mode", "write_stream").unwrap();
        s.set("stream_id", "9").unwrap();
        assert_eq!(s.options().write_mode, SgWriteMode::WriteStream(9));
        assert_eq!(s.first_key, Some("sg_write_mode"));
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
