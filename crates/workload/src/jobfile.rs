//! fio job files: `[global]` plus job sections, `key=value` or bare `key`
//! lines, comments starting with `#` or `;`.
//!
//! Supported subset: the keys in [`crate::options::OPTIONS`] (see
//! `drivelab run --help`), plus `stonewall`/`wait_for_previous` (start this
//! job after the ones before it finish) and `thread` (accepted: drivelab
//! always runs jobs as threads). A `[global]` section applies to the jobs
//! after it. Any other key is an error naming the key and its line: a job
//! file that silently did less than it says would lie.

use crate::{JobSpec, SpecError};

/// One job from a job file, with whether it waits for the jobs before it.
#[derive(Debug, Clone, PartialEq)]
pub struct FileJob {
    /// The job.
    pub spec: JobSpec,
    /// `stonewall`: start only after all earlier jobs have finished.
    pub stonewall: bool,
}

/// Parse job-file text. `path` is only used in error messages.
pub fn parse(path: &str, text: &str) -> Result<Vec<FileJob>, SpecError> {
    let mut global = JobSpec::default();
    let mut jobs: Vec<FileJob> = Vec::new();
    // Section being filled: None before the first header.
    enum Sec {
        None,
        Global,
        Job(usize),
    }
    let mut sec = Sec::None;
    let wrap = |line: usize, e: SpecError| SpecError::JobFile {
        path: path.to_string(),
        line,
        source: Box::new(e),
    };
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.strip_suffix(']').ok_or_else(|| {
                wrap(
                    lineno,
                    SpecError::Invalid(format!("section header '{line}' lacks ']'")),
                )
            })?;
            let name = name.trim();
            if name.is_empty() {
                return Err(wrap(
                    lineno,
                    SpecError::Invalid("empty section name".to_string()),
                ));
            }
            if name == "global" {
                sec = Sec::Global;
            } else {
                let mut spec = global.clone();
                spec.name = name.to_string();
                jobs.push(FileJob {
                    spec,
                    stonewall: false,
                });
                sec = Sec::Job(jobs.len() - 1);
            }
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (line, None),
        };
        let target: &mut JobSpec = match sec {
            Sec::None => {
                return Err(wrap(
                    lineno,
                    SpecError::Invalid(format!(
                        "'{key}' comes before any section; start with [global] or [jobname]"
                    )),
                ))
            }
            Sec::Global => &mut global,
            Sec::Job(j) => &mut jobs[j].spec,
        };
        match key {
            "stonewall" | "wait_for_previous" => match sec {
                Sec::Job(j) => jobs[j].stonewall = true,
                _ => {
                    return Err(wrap(
                        lineno,
                        SpecError::Invalid("stonewall belongs in a job section".to_string()),
                    ))
                }
            },
            "thread" => {}
            _ => target.set(key, value).map_err(|e| wrap(lineno, e))?,
        }
    }
    if jobs.is_empty() {
        return Err(SpecError::Invalid(format!(
            "{path}: no job sections; add one such as [job1] after [global]"
        )));
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RwMode;

    #[test]
    fn global_applies_to_later_jobs_and_jobs_override() {
        let text = "\
; a comment
[global]
ioengine=psync
bs=8k
direct=1
time_based
runtime=3

[reader]
rw=randread
iodepth=4
filename=/tmp/a

[writer]
stonewall
rw=write
bs=64k
filename=/tmp/b
";
        let jobs = parse("x.fio", text).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].spec.name, "reader");
        assert_eq!(jobs[0].spec.rw, RwMode::RandRead);
        assert_eq!(jobs[0].spec.bs, 8192);
        assert_eq!(jobs[0].spec.iodepth, 4);
        assert!(jobs[0].spec.time_based);
        assert!(!jobs[0].stonewall);
        assert_eq!(jobs[1].spec.bs, 65536);
        assert_eq!(jobs[1].spec.iodepth, 1);
        assert!(jobs[1].stonewall);
    }

    #[test]
    fn unknown_key_names_key_and_line() {
        let text = "[global]\nbs=4k\n[j]\nfilename=/tmp/a\nexitall_on_error=1\n";
        let e = parse("job.fio", text).unwrap_err().to_string();
        assert!(e.starts_with("job.fio:5:"), "{e}");
        assert!(e.contains("exitall_on_error"), "{e}");
    }

    #[test]
    fn bad_value_names_line() {
        let e = parse("j.fio", "[j]\nbs=4x\n").unwrap_err().to_string();
        assert!(e.starts_with("j.fio:2:") && e.contains("bs"), "{e}");
    }

    #[test]
    fn no_jobs_is_an_error() {
        assert!(parse("j.fio", "[global]\nbs=4k\n").is_err());
        assert!(parse("j.fio", "bs=4k\n[j]\n").is_err());
    }
}
