//! fio's `ioengine=e4defrag` as a job sees it: the checks made before
//! anything is written and the donor files (its options are
//! [`crate::engines::opts::e4defrag`], its front
//! [`crate::engines::fronts::files`]).
//!
//! Each write of such a job moves the blocks of a donor file into the
//! I/O's range of the job's file with ext4's `EXT4_IOC_MOVE_EXT` (the
//! engine is [`drivelab_engine::e4defrag`]): what an online defragmenter
//! does, to test a filesystem and the I/O of other jobs while extents move
//! under them. The options, as fio's:
//!
//! - `donorname`: the donor's file name, in `directory` when one is given
//!   (fio joins them with a '/'); required. It is created when missing and
//!   left behind after the run, as fio leaves it. Jobs naming the same
//!   donor (`numjobs` clones, or jobs of a run) share it.
//! - `inplace`: 0 (default) allocates the donor's blocks for the job's
//!   range once, when the job starts (from its offset to the end of its
//!   largest file); 1 allocates each write's range just before its move
//!   and truncates the donor to nothing after it. (fio takes the end from
//!   `filesize` and fails the job at its start, EINVAL, when it is not
//!   given; drivelab takes the planned size of the job's files, so such a
//!   job runs.)
//!
//! Refused before anything is created, each with one line that says what
//! to do (fio would start and then fail every I/O): a job without
//! `donorname`; reads or trims (fio fails each with EINVAL); `verify` (the
//! writes carry no data, so fio's check fails); a job file or
//! donor that is not on ext4 (the ioctl exists only there: fio's jobs fail
//! with ENOTTY on tmpfs); a donor on another filesystem than the job's
//! files (EXDEV); a donor that is the job's own file (EINVAL).
//!
//! A donor is claimed like any target: [`Claim::open`] assesses it and
//! holds it locked for the run, created if missing; a donor that is also a
//! file the run does I/O on is used through that file's claim.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use drivelab_device::claim::{Claim, ClaimOptions, Consent};
use drivelab_engine::e4defrag::{self as engine, E4Defrag, Reserve};

pub use crate::engines::opts::e4defrag::DefragOpts;
use crate::plan::model::{PlannedJob, PlannedTarget};
use crate::run::error::RunError;
use crate::{Plan, PlanError, SpecError};

/// Whether a job runs the e4defrag engine.
pub fn is_defrag(spec: &crate::JobSpec) -> bool {
    spec.files.engine == Some(crate::engines::opts::files::FileEngine::Defrag)
}

/// The donor of an e4defrag job: `directory/donorname` (fio's join), or
/// `donorname` alone.
pub fn donor_path(spec: &crate::JobSpec) -> Option<PathBuf> {
    let name = spec.engine.e4defrag.donorname.as_deref()?;
    Some(match spec.directory.as_deref() {
        Some(d) if !d.is_empty() => PathBuf::from(format!("{d}/{name}")),
        _ => PathBuf::from(name),
    })
}

/// The directory a path is (or would be created) in.
fn dir_of(p: &Path) -> &Path {
    p.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The path itself when it exists, else its directory: what to ask the
/// filesystem about.
fn existing(p: &Path) -> &Path {
    if p.exists() {
        p
    } else {
        dir_of(p)
    }
}

/// The checks of an e4defrag job against its targets, before anything is
/// created or written.
pub fn check<'a>(
    spec: &crate::JobSpec,
    targets: impl IntoIterator<Item = &'a PlannedTarget>,
) -> Result<(), PlanError> {
    if !is_defrag(spec) {
        return Ok(());
    }
    let job = &spec.name;
    let invalid = |why: String| PlanError::Spec(SpecError::Invalid(why));
    let Some(donor) = donor_path(spec) else {
        return Err(invalid(format!(
            "job '{job}': ioengine=e4defrag needs donorname= (the file whose blocks each write moves into the job's file; it is created beside it)"
        )));
    };
    if spec.access_lines().iter().any(|l| l.read_pct > 0) || spec.rw.write_kind().trims() {
        return Err(invalid(format!(
            "job '{job}': ioengine=e4defrag only moves extents on writes (fio fails every read and trim with EINVAL); use rw=write or rw=randwrite"
        )));
    }
    if spec.verify.kind.is_some() {
        return Err(invalid(format!(
            "job '{job}': ioengine=e4defrag writes no data (each write moves blocks; the file keeps its contents), so there is nothing to verify; drop verify= from this job"
        )));
    }
    let on_ext4 = |p: &Path| -> Result<u64, PlanError> {
        let at = existing(p);
        let refuse = |why: String| PlanError::Target {
            path: p.display().to_string(),
            why,
        };
        if !at.exists() {
            return Err(refuse(
                "its directory does not exist; create it on an ext4 filesystem or set directory= to one".to_string(),
            ));
        }
        let magic = engine::filesystem_of(at)
            .map_err(|e| refuse(format!("cannot tell its filesystem: {e}")))?;
        if magic != engine::EXT4_SUPER_MAGIC {
            return Err(refuse(format!(
                "ioengine=e4defrag moves extents with ext4's EXT4_IOC_MOVE_EXT, and this is on {} (f_type {magic:#x}); point directory= or filename= at an ext4 filesystem",
                engine::filesystem_name(magic)
            )));
        }
        let md = std::fs::metadata(at).map_err(|e| refuse(format!("cannot stat: {e}")))?;
        Ok(md.dev())
    };
    let donor_dev = on_ext4(&donor)?;
    for t in targets {
        if t.is_block {
            return Err(PlanError::Target {
                path: t.path.display().to_string(),
                why: "ioengine=e4defrag works on files of an ext4 filesystem, not on a block device; set directory= or filename= to a file there".to_string(),
            });
        }
        if on_ext4(&t.path)? != donor_dev {
            return Err(PlanError::Target {
                path: donor.display().to_string(),
                why: format!(
                    "the donor must be on the same filesystem as the job's file {} (the kernel moves blocks only within one); use a donorname in its directory",
                    t.path.display()
                ),
            });
        }
        if same_file(&t.path, &donor) {
            return Err(PlanError::Target {
                path: donor.display().to_string(),
                why: format!("donorname names job '{job}''s own file; give the donor another name"),
            });
        }
    }
    Ok(())
}

/// Whether two paths name the same file (the same path, or one inode).
fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => (x.dev(), x.ino()) == (y.dev(), y.ino()),
        _ => false,
    }
}

/// The run's donor files, each claimed once (jobs naming the same donor
/// share it).
#[derive(Debug, Default)]
pub struct Donors {
    /// Per donor path: its own claim, or the plan target whose claim it is.
    held: Vec<(PathBuf, Held)>,
}

#[derive(Debug)]
enum Held {
    Own(Box<Claim>),
    Target(usize),
}

impl Donors {
    /// Claim the donor of every e4defrag job of `plan`: through the claim
    /// of a plan target with its path (`claims`, one per plan target), or
    /// on its own, created if missing.
    pub fn claim(plan: &Plan, claims: &[Option<Claim>]) -> Result<Donors, RunError> {
        let consent = Consent {
            force: plan.force,
            confirm: None,
        };
        let opts = ClaimOptions {
            direct: false,
            create_size: Some(0),
        };
        let mut out = Donors::default();
        for job in plan.jobs.iter().filter(|j| is_defrag(&j.spec)) {
            let Some(path) = donor_path(&job.spec) else {
                continue;
            };
            if out.held.iter().any(|(p, _)| p == &path) {
                continue;
            }
            let target = plan
                .targets
                .iter()
                .position(|t| same_file(&t.path, &path))
                .filter(|&t| claims.get(t).is_some_and(Option::is_some));
            let held = match target {
                Some(t) => Held::Target(t),
                None => Held::Own(Box::new(
                    Claim::open(&path, &consent, &opts).map_err(RunError::Claim)?,
                )),
            };
            out.held.push((path, held));
        }
        Ok(out)
    }

    /// The engine of e4defrag job `job` on its opened `targets`: its donor
    /// from this set, with fio's allocation of it (`inplace=0`: from the
    /// job's first offset to the end of its largest file, now).
    pub fn engine(
        &self,
        plan: &Plan,
        claims: &[Option<Claim>],
        job: &PlannedJob,
        targets: Vec<drivelab_engine::engine::Target>,
        max_len: usize,
    ) -> std::io::Result<E4Defrag> {
        let missing = || std::io::Error::other("the job's donor was not claimed");
        let path = donor_path(&job.spec).ok_or_else(missing)?;
        let claim = match self.held.iter().find(|(p, _)| p == &path) {
            Some((_, Held::Own(c))) => c,
            Some((_, Held::Target(t))) => claims
                .get(*t)
                .and_then(Option::as_ref)
                .ok_or_else(missing)?,
            None => return Err(missing()),
        };
        let reserve = (!job.spec.engine.e4defrag.inplace)
            .then(|| {
                let start = job.regions.iter().map(|r| r.start).min().unwrap_or(0);
                let end = job
                    .targets
                    .iter()
                    .map(|&t| plan.targets[t].size)
                    .max()
                    .unwrap_or(0);
                (end > start).then_some(Reserve {
                    offset: start,
                    len: end - start,
                })
            })
            .flatten();
        E4Defrag::new(targets, claim, reserve, max_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_take_fios_values() {
        let mut o = DefragOpts::default();
        o.set("donorname", "file.def").unwrap();
        o.set("inplace", "1").unwrap();
        assert_eq!(o.donorname.as_deref(), Some("file.def"));
        assert!(o.inplace);
        for (k, v) in [("inplace", "2"), ("inplace", "yes"), ("donorname", " ")] {
            let e = o.set(k, v).unwrap_err().to_string();
            assert!(e.contains(k), "{e}");
        }
    }

    #[test]
    fn the_donor_goes_in_the_directory_as_fio_joins_it() {
        let mut s = crate::JobSpec::default();
        assert_eq!(donor_path(&s), None);
        s.engine.e4defrag.donorname = Some("file.def".into());
        assert_eq!(donor_path(&s), Some(PathBuf::from("file.def")));
        s.directory = Some("/scratch".into());
        assert_eq!(donor_path(&s), Some(PathBuf::from("/scratch/file.def")));
    }

    #[test]
    fn a_job_without_a_donor_or_with_reads_is_refused() {
        let mut s = crate::JobSpec::default();
        s.set("ioengine", Some("e4defrag")).unwrap();
        s.set("rw", Some("write")).unwrap();
        let e = check(&s, []).unwrap_err().to_string();
        assert!(e.contains("donorname="), "{e}");
        s.set("donorname", Some("d")).unwrap();
        s.set("rw", Some("randrw")).unwrap();
        let e = check(&s, []).unwrap_err().to_string();
        assert!(e.contains("only moves extents on writes"), "{e}");
        s.set("rw", Some("write")).unwrap();
        s.set("verify", Some("md5")).unwrap();
        let e = check(&s, []).unwrap_err().to_string();
        assert!(e.contains("nothing to verify"), "{e}");
    }
}
