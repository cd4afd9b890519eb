//! fio job files, in fio's syntax: `[global]` plus job sections,
//! `key=value` or bare `key` lines, comments starting with `#` or `;` — on
//! their own line or after a value (`runtime=30  # seconds`) —,
//! `include FILE` (relative to the including file) and `${VAR}` replaced by
//! the environment variable VAR.
//!
//! Keys are the ones in [`crate::options::OPTIONS`] (see `drivelab run
//! --help`), plus `stonewall`/`wait_for_previous` (start this job after the
//! ones before it finish). A `[global]` section applies to the jobs after it.
//! Where fio's defaults differ from drivelab's command line, a job file gets
//! fio's: `randommap` on (unless a non-uniform `random_distribution` is
//! asked for), and a job without `filename` works on its own file
//! `$jobname.$jobnum.$filenum` (in `directory` when given). Any other key is
//! an error naming the key and its line: a job file that silently did less
//! than it says would lie.

use std::collections::HashSet;
use std::path::Path;

use crate::{Distribution, JobSpec, SpecError};

/// fio's name for the files of a job without `filename`.
pub const DEFAULT_FILENAME_FORMAT: &str = "$jobname.$jobnum.$filenum";

/// How deep `include` may nest (an include loop stops here).
const MAX_INCLUDE_DEPTH: usize = 16;

/// One job from a job file, with whether it waits for the jobs before it.
#[derive(Debug, Clone, PartialEq)]
pub struct FileJob {
    /// The job.
    pub spec: JobSpec,
    /// `stonewall`: start only after all earlier jobs have finished.
    pub stonewall: bool,
}

/// One logical line: where it came from and its text, comments stripped
/// and variables expanded.
struct Line {
    path: String,
    lineno: usize,
    text: String,
}

fn wrap(path: &str, line: usize, e: SpecError) -> SpecError {
    SpecError::JobFile {
        path: path.to_string(),
        line,
        source: Box::new(e),
    }
}

/// Cut a comment: `#` or `;` at the start or after white space.
fn strip_comment(raw: &str) -> &str {
    let mut prev_space = true;
    for (i, c) in raw.char_indices() {
        if (c == '#' || c == ';') && prev_space {
            return &raw[..i];
        }
        prev_space = c.is_whitespace();
    }
    raw
}

/// Replace `${VAR}` by the environment variable VAR; an unset one is an error.
fn expand_env(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, SpecError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after.find('}').ok_or_else(|| {
            SpecError::Invalid(format!("'${{' without a closing '}}' in '{text}'"))
        })?;
        let name = &after[..end];
        let value = env(name).ok_or_else(|| {
            SpecError::Invalid(format!(
                "environment variable {name} is not set; set it (export {name}=...) or write the value"
            ))
        })?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Read the lines of `path`'s `text`, following includes.
fn collect_lines(
    path: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
    depth: usize,
    out: &mut Vec<Line>,
) -> Result<(), SpecError> {
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        let line = expand_env(line, env).map_err(|e| wrap(path, lineno, e))?;
        if let Some(file) = line.strip_prefix("include ").map(str::trim) {
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(wrap(
                    path,
                    lineno,
                    SpecError::Invalid(format!(
                        "include nested more than {MAX_INCLUDE_DEPTH} deep (does it include itself?)"
                    )),
                ));
            }
            let base = Path::new(path).parent().unwrap_or(Path::new(""));
            let inc = base.join(file);
            let inc_text = read(&inc).map_err(|e| {
                wrap(
                    path,
                    lineno,
                    SpecError::Invalid(format!("cannot read included file {}: {e}", inc.display())),
                )
            })?;
            collect_lines(
                &inc.display().to_string(),
                &inc_text,
                env,
                read,
                depth + 1,
                out,
            )?;
            continue;
        }
        out.push(Line {
            path: path.to_string(),
            lineno,
            text: line,
        });
    }
    Ok(())
}

/// Parse job-file text. `path` names it in messages and anchors includes;
/// variables come from the process environment.
pub fn parse(path: &str, text: &str) -> Result<Vec<FileJob>, SpecError> {
    parse_with(path, text, &|k| std::env::var(k).ok(), &|p| {
        std::fs::read_to_string(p)
    })
}

/// [`parse`] with the environment and the file reader given.
pub fn parse_with(
    path: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    read: &dyn Fn(&Path) -> std::io::Result<String>,
) -> Result<Vec<FileJob>, SpecError> {
    let mut lines = Vec::new();
    collect_lines(path, text, env, read, 0, &mut lines)?;
    // fio's defaults where they differ from drivelab's command line.
    let mut global = JobSpec {
        randommap: true,
        ..JobSpec::default()
    };
    let mut global_keys: HashSet<&'static str> = HashSet::new();
    let mut jobs: Vec<FileJob> = Vec::new();
    let mut job_keys: Vec<HashSet<&'static str>> = Vec::new();
    // Section being filled: None before the first header.
    enum Sec {
        None,
        Global,
        Job(usize),
    }
    let mut sec = Sec::None;
    for Line { path, lineno, text } in &lines {
        let (path, lineno, line) = (path.as_str(), *lineno, text.as_str());
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.strip_suffix(']').ok_or_else(|| {
                wrap(
                    path,
                    lineno,
                    SpecError::Invalid(format!("section header '{line}' lacks ']'")),
                )
            })?;
            let name = name.trim();
            if name.is_empty() {
                return Err(wrap(
                    path,
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
                job_keys.push(global_keys.clone());
                sec = Sec::Job(jobs.len() - 1);
            }
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (line, None),
        };
        let (target, keys): (&mut JobSpec, &mut HashSet<&'static str>) = match sec {
            Sec::None => {
                return Err(wrap(
                    path,
                    lineno,
                    SpecError::Invalid(format!(
                        "'{key}' comes before any section; start with [global] or [jobname]"
                    )),
                ))
            }
            Sec::Global => (&mut global, &mut global_keys),
            Sec::Job(j) => (&mut jobs[j].spec, &mut job_keys[j]),
        };
        match key {
            "stonewall" | "wait_for_previous" => {
                let on = value.is_none_or(|v| !matches!(v.trim(), "0" | "false" | "off"));
                match sec {
                    Sec::Job(j) => jobs[j].stonewall = on,
                    // fio: a stonewall in [global] makes every job wait for the ones before.
                    _ => {
                        if on {
                            global_keys.insert("stonewall");
                        }
                    }
                }
            }
            _ => {
                target.set(key, value).map_err(|e| wrap(path, lineno, e))?;
                if let Ok(d) = crate::options::lookup(key) {
                    keys.insert(d.name);
                }
            }
        }
    }
    if jobs.is_empty() {
        return Err(SpecError::Invalid(format!(
            "{path}: no job sections; add one such as [job1] after [global]"
        )));
    }
    for (job, keys) in jobs.iter_mut().zip(&job_keys) {
        let spec = &mut job.spec;
        if keys.contains("stonewall") && !job.stonewall {
            job.stonewall = true;
        }
        // fio turns its random map off for non-uniform distributions.
        let map_given = ["randommap", "norandommap", "random_generator"]
            .iter()
            .any(|k| keys.contains(k));
        if !map_given && spec.random_distribution != Distribution::Random {
            spec.randommap = false;
        }
        if spec.filenames.is_empty() && spec.filename_format.is_none() {
            spec.filename_format = Some(DEFAULT_FILENAME_FORMAT.to_string());
        }
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
