//! fio job files, in fio's syntax: `[global]` plus job sections,
//! `key=value` or bare `key` lines, comments starting with `#` or `;` — on
//! their own line or after a value (`runtime=30  # seconds`) —,
//! `include FILE` (relative to the including file) and `${VAR}` replaced by
//! the environment variable VAR.
//!
//! Keys are the ones in [`crate::spec::options::all`] (see `drivelab run
//! --help`), plus `stonewall`/`wait_for_previous` (start this job after the
//! ones before it finish). A `[global]` section applies to the jobs after it.
//! Where fio's defaults differ from drivelab's command line, a job file gets
//! fio's: `randommap` on (unless a non-uniform `random_distribution` is
//! asked for), and a job without `filename` works on its own file
//! `$jobname.$jobnum.$filenum` (in `directory` when given). Any other key is
//! an error naming the key and its line: a job file that silently did less
//! than it says would lie.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use drivelab_device::input::{self, InputError, Kind};

use crate::{Distribution, JobSpec, SpecError};

/// fio's name for the files of a job without `filename`.
pub const DEFAULT_FILENAME_FORMAT: &str = "$jobname.$jobnum.$filenum";

/// How deep `include` may nest.
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

/// How many `include` lines one job file may follow in all, and how many
/// bytes the files they name may hold together: a file that includes
/// another twice, which includes a third twice, … grows as 2^depth.
const MAX_INCLUDES: usize = 1024;
const MAX_INCLUDED_BYTES: usize = 16 * 1024 * 1024;

/// Reads an included file (given its path): the job-file reader or a test's.
pub type IncludeReader<'a> = &'a dyn Fn(&Path) -> Result<String, InputError>;

/// Where the include walk is: the files being read (outermost first, for
/// cycles), and what all includes have cost so far.
struct Walk<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    read: IncludeReader<'a>,
    chain: Vec<PathBuf>,
    includes: usize,
    bytes: usize,
}

/// The name an include is compared by: the file itself, links resolved.
fn identity(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// A leading UTF-8 byte-order mark is not part of the first line.
fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

impl Walk<'_> {
    /// Read the lines of `path`'s `text`, following includes.
    fn collect(&mut self, path: &str, text: &str, out: &mut Vec<Line>) -> Result<(), SpecError> {
        for (i, raw) in strip_bom(text).lines().enumerate() {
            let lineno = i + 1;
            let line = strip_comment(raw).trim();
            if line.is_empty() {
                continue;
            }
            let line = expand_env(line, self.env).map_err(|e| wrap(path, lineno, e))?;
            if let Some(file) = line.strip_prefix("include ").map(str::trim) {
                self.include(path, lineno, file, out)?;
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

    /// Follow `include file` on line `lineno` of `path`.
    fn include(
        &mut self,
        path: &str,
        lineno: usize,
        file: &str,
        out: &mut Vec<Line>,
    ) -> Result<(), SpecError> {
        let bad = |why: String| wrap(path, lineno, SpecError::Invalid(why));
        if self.chain.len() > MAX_INCLUDE_DEPTH {
            return Err(bad(format!(
                "include nested more than {MAX_INCLUDE_DEPTH} deep; flatten the includes"
            )));
        }
        self.includes += 1;
        if self.includes > MAX_INCLUDES {
            return Err(bad(format!(
                "more than {MAX_INCLUDES} includes in all; include each file once"
            )));
        }
        let base = Path::new(path).parent().unwrap_or(Path::new(""));
        let inc = base.join(file);
        let id = identity(&inc);
        if self.chain.contains(&id) {
            return Err(bad(format!(
                "include {} is a cycle: it is already being read; remove the include",
                inc.display()
            )));
        }
        let inc_text = (self.read)(&inc).map_err(|e| bad(format!("include: {e}")))?;
        self.bytes += inc_text.len();
        if self.bytes > MAX_INCLUDED_BYTES {
            return Err(bad(format!(
                "the included files hold more than {} MiB in all; include less",
                MAX_INCLUDED_BYTES >> 20
            )));
        }
        self.chain.push(id);
        let r = self.collect(&inc.display().to_string(), &inc_text, out);
        self.chain.pop();
        r
    }
}

/// Read and parse the job file at `path` (at most
/// [`Kind::JobFile`]'s bound, a regular file, as every include);
/// variables come from the process environment.
pub fn read_file(path: &Path) -> Result<Vec<FileJob>, SpecError> {
    let text =
        input::read_string(path, Kind::JobFile).map_err(|e| SpecError::Invalid(e.to_string()))?;
    parse(&path.display().to_string(), &text)
}

/// Parse job-file text. `path` names it in messages and anchors includes;
/// variables come from the process environment.
pub fn parse(path: &str, text: &str) -> Result<Vec<FileJob>, SpecError> {
    parse_with(path, text, &|k| std::env::var(k).ok(), &|p| {
        input::read_string(p, Kind::JobFile)
    })
}

/// fio reads a section's `kb_base` before its other options (the option
/// is sorted first), so it decides how every size of the section is read
/// wherever it stands: move each section's `kb_base` lines to its start.
fn kb_base_first(lines: &mut [Line]) {
    let is_kb = |l: &Line| {
        l.text
            .split_once('=')
            .is_some_and(|(k, _)| k.trim() == "kb_base")
    };
    let mut start = 0;
    while start < lines.len() {
        let body = start + usize::from(lines[start].text.starts_with('['));
        let end = lines[body..]
            .iter()
            .position(|l| l.text.starts_with('['))
            .map_or(lines.len(), |p| body + p);
        // A stable sort on "not kb_base" keeps the order otherwise.
        lines[body..end].sort_by_key(|l| !is_kb(l));
        start = end;
    }
}

/// A job as fio starts one, where fio's defaults differ from drivelab's
/// command line: the random map on. For a job file's sections and an fio
/// command-line job (`--name`); [`fio_job_rules`] finishes it.
pub fn fio_defaults() -> JobSpec {
    JobSpec {
        randommap: true,
        ..JobSpec::default()
    }
}

/// fio's rules for a job once its options are set (`given` says whether a
/// key was): the random map off for a non-uniform distribution unless a
/// map option was given, and a job without `filename` on its own files
/// ([`DEFAULT_FILENAME_FORMAT`]).
pub fn fio_job_rules(spec: &mut JobSpec, given: &dyn Fn(&str) -> bool) {
    let map_given = ["randommap", "norandommap", "random_generator"]
        .iter()
        .any(|k| given(k));
    if !map_given && spec.random_distribution != Distribution::Random {
        spec.randommap = false;
    }
    if spec.filenames.is_empty() && spec.filename_format.is_none() {
        spec.filename_format = Some(DEFAULT_FILENAME_FORMAT.to_string());
    }
}

/// [`parse`] with the environment and the file reader given.
pub fn parse_with(
    path: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    read: IncludeReader<'_>,
) -> Result<Vec<FileJob>, SpecError> {
    let mut lines = Vec::new();
    let mut walk = Walk {
        env,
        read,
        chain: vec![identity(Path::new(path))],
        includes: 0,
        bytes: 0,
    };
    walk.collect(path, text, &mut lines)?;
    kb_base_first(&mut lines);
    let mut global = fio_defaults();
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
                // The engine options [global] set are checked against its
                // engine; the job's own against the job's (as in fio).
                crate::engines::opts::check_keys(&global).map_err(|e| wrap(path, lineno, e))?;
                let mut spec = global.clone();
                spec.engine.keys_set.clear();
                spec.name = name.to_string();
                spec.global_given = spec.given.len();
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
                if let Ok(d) = crate::spec::options::lookup(key) {
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
        fio_job_rules(spec, &|k| keys.contains(k));
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
        let text = "[global]\nbs=4k\n[j]\nfilename=/tmp/a\nno_such_option=1\n";
        let e = parse("job.fio", text).unwrap_err().to_string();
        assert!(e.starts_with("job.fio:5:"), "{e}");
        assert!(e.contains("no_such_option"), "{e}");
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

    fn env(k: &str) -> Option<String> {
        (k == "SCRATCH").then(|| "/scratch".to_string())
    }

    fn no_files(p: &Path) -> Result<String, InputError> {
        Err(InputError::Missing {
            what: "job file",
            path: p.to_path_buf(),
        })
    }

    #[test]
    fn inline_comment_after_a_file_name_is_not_part_of_it() {
        let text = "[j]\nfilename=/tmp/x.dat   # the scratch file\nnumjobs=4\t; four clones\nruntime=3600  # an hour\n";
        let jobs = parse_with("j.fio", text, &env, &no_files).unwrap();
        assert_eq!(jobs[0].spec.filenames, vec!["/tmp/x.dat"]);
        assert_eq!(jobs[0].spec.numjobs, 4);
        assert_eq!(
            jobs[0].spec.runtime,
            Some(std::time::Duration::from_secs(3600))
        );
        // A '#' inside a value (no space before it) stays.
        let jobs = parse_with(
            "j.fio",
            "[j]\ndescription=disk#1\nfilename=a\n",
            &env,
            &no_files,
        )
        .unwrap();
        assert_eq!(jobs[0].spec.description.as_deref(), Some("disk#1"));
    }

    #[test]
    fn environment_variables_expand_and_an_unset_one_is_named() {
        let jobs = parse_with("j.fio", "[j]\ndirectory=${SCRATCH}/d\n", &env, &no_files).unwrap();
        assert_eq!(jobs[0].spec.directory.as_deref(), Some("/scratch/d"));
        let e = parse_with("j.fio", "[j]\nfilename=${NOPE}\n", &env, &no_files)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("j.fio:2:") && e.contains("NOPE"), "{e}");
    }

    #[test]
    fn include_reads_the_file_beside_the_job_file() {
        let read = |p: &Path| -> Result<String, InputError> {
            assert_eq!(p, Path::new("/jobs/common.inc"));
            Ok("bs=64k   ; shared\nrw=write\n".to_string())
        };
        let jobs = parse_with(
            "/jobs/a.fio",
            "[global]\ninclude common.inc\n[j]\nfilename=x\n",
            &env,
            &read,
        )
        .unwrap();
        assert_eq!(jobs[0].spec.bs, 65536);
        assert_eq!(jobs[0].spec.rw, RwMode::Write);
        let e = parse_with("/jobs/a.fio", "[j]\ninclude missing.inc\n", &env, &no_files)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.inc"), "{e}");
        let looped =
            |_: &Path| -> Result<String, InputError> { Ok("include self.inc\n".to_string()) };
        let e = parse_with("/jobs/a.fio", "[j]\ninclude self.inc\n", &env, &looped)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cycle"), "{e}");
    }

    #[test]
    fn fio_defaults_apply_in_job_files() {
        let jobs = parse_with(
            "j.fio",
            "[global]\nstonewall\n[a]\nrw=randread\n[b]\nrw=randread\nrandom_distribution=zipf:1.1\n[c]\nrandom_distribution=zipf:1.1\nrandommap\n",
            &env,
            &no_files,
        )
        .unwrap();
        // Files named by fio's default; random map on unless non-uniform.
        assert_eq!(
            jobs[0].spec.filename_format.as_deref(),
            Some(DEFAULT_FILENAME_FORMAT)
        );
        assert!(jobs[0].spec.randommap);
        assert!(!jobs[1].spec.randommap);
        assert!(jobs[2].spec.randommap);
        // A stonewall in [global] applies to every job.
        assert!(jobs.iter().all(|j| j.stonewall));
    }

    #[test]
    fn include_that_doubles_at_each_level_stops_at_the_include_bound() {
        // Each level includes the next twice: 2^16 includes unbounded.
        let read = |p: &Path| -> Result<String, InputError> {
            let n: u32 = p
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            Ok(format!("include {}.inc\ninclude {}.inc\n", n + 1, n + 1))
        };
        let e = parse_with("/jobs/a.fio", "[j]\ninclude 0.inc\n", &env, &read)
            .unwrap_err()
            .to_string();
        assert!(e.contains("includes in all") || e.contains("deep"), "{e}");
    }

    #[test]
    fn leading_byte_order_mark_is_skipped() {
        let jobs = parse("j.fio", "\u{feff}[global]\nbs=8k\n[j]\nfilename=x\n").unwrap();
        assert_eq!(jobs[0].spec.bs, 8192);
    }

    #[test]
    fn engine_options_belong_to_the_engine_of_their_own_section_as_in_fio() {
        // fio 3.33 runs a job of another engine under a [global] of
        // e4defrag with its donorname (examples/e4defrag2.fio).
        let text = "[global]\nioengine=e4defrag\ndonorname=x\n[j]\nioengine=libaio\nfilename=f\n";
        let jobs = parse("j.fio", text).unwrap();
        assert!(jobs[0].spec.validate().is_ok());
        // fio: "Bad option <donorname=x>" in a [global] of io_uring, and in
        // a job's own section of libaio.
        let text = "[global]\ndonorname=x\n[j]\nioengine=libaio\nfilename=f\n";
        let e = parse("j.fio", text).unwrap_err().to_string();
        assert!(
            e.contains("donorname is not an option of ioengine=io_uring"),
            "{e}"
        );
        let text = "[j]\nioengine=libaio\nfilename=f\ndonorname=x\n";
        let e = parse("j.fio", text).unwrap()[0]
            .spec
            .validate()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("donorname is not an option of ioengine=libaio"),
            "{e}"
        );
    }
}
