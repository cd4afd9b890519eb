//! Output options shared by every subcommand: the format and where it goes;
//! the checks that every output path can be written, made before any I/O
//! starts; and the rescue of results whose file fails at the end.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Human-readable text (default; also called text).
    #[default]
    #[value(alias = "text")]
    Normal,
    /// One JSON document, with fio's field names where fio has one.
    Json,
}

/// `--output-format` and `--output`, flattened into each subcommand.
#[derive(Args, Debug, Clone, Default)]
pub struct OutputArgs {
    /// Output format: normal or json (fio's names).
    #[arg(long = "output-format", value_enum, default_value_t = Format::Normal)]
    pub output_format: Format,
    /// Write the results to FILE instead of standard output.
    #[arg(long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl OutputArgs {
    /// Whether JSON was asked for.
    pub fn json(&self) -> bool {
        self.output_format == Format::Json
    }

    /// Check `--output` before any I/O starts (see [`check_file`]).
    pub fn check(&self) -> anyhow::Result<()> {
        match &self.output {
            Some(p) => check_file(p, "--output"),
            None => Ok(()),
        }
    }

    /// Write `text` to the chosen destination (stdout or `--output`). When
    /// the file cannot be written, the text goes to standard output instead
    /// and the error is a [`LateWriteError`]: the results are not lost.
    pub fn emit(&self, text: &str) -> anyhow::Result<()> {
        match &self.output {
            Some(p) => std::fs::write(p, text).map_err(|e| {
                let what = format!("cannot write the results to {}: {e}", p.display());
                rescue(text, what)
            }),
            None => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.flush()?;
                Ok(())
            }
        }
    }
}

/// A write that failed once the results were complete: the results went to
/// standard output instead (or were delivered, and a side file such as a
/// log failed). Reported as one line on stderr, even in JSON mode, so that
/// standard output holds only the results; exit status 1.
#[derive(Debug)]
pub struct LateWriteError(pub String);

impl std::fmt::Display for LateWriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LateWriteError {}

/// Put `text` (the results) on standard output after `what` failed, and
/// return the error that says so.
pub fn rescue(text: &str, what: String) -> anyhow::Error {
    let mut out = std::io::stdout().lock();
    let msg = match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => format!("{what}; the results are on standard output instead"),
        Err(e) => format!("{what}; standard output failed too ({e}): the results are lost"),
    };
    anyhow::Error::new(LateWriteError(msg))
}

/// Check, before any I/O starts, that a result file `path` (given with the
/// option `what`, e.g. "--output") can be written: it is not a directory,
/// its directory exists, and a file can be created there (or the existing
/// one opened for writing). Nothing is left behind and an existing file is
/// not changed. A failure is bad input (exit status 2), one line.
pub fn check_file(path: &Path, what: &str) -> anyhow::Result<()> {
    let bad = |why: String| crate::error::usage(format!("{what} {}: {why}", path.display()));
    match std::fs::metadata(path) {
        Ok(md) if md.is_dir() => Err(bad("is a directory; give a file name".into())),
        Ok(_) => OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| bad(format!("cannot be written ({e})"))),
        Err(e) if missing_part(&e) => {
            let dir = parent(path);
            if dir.exists() && !dir.is_dir() {
                return Err(bad(format!("{} is not a directory", dir.display())));
            }
            if !dir.is_dir() {
                return Err(bad(format!(
                    "the directory {} does not exist; create it or give another path",
                    dir.display()
                )));
            }
            // Create it and take it away again: proves the name, the
            // permissions and a writable filesystem.
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(|e| bad(format!("cannot be created ({e})")))?;
            let _ = std::fs::remove_file(path);
            Ok(())
        }
        Err(e) => Err(bad(format!("cannot be inspected ({e})"))),
    }
}

/// Check, before any I/O starts, that files can be written into the
/// directory `path` (given with the option `what`, e.g. "--plots"): it is a
/// writable directory, or it does not exist yet and can be created (with
/// its missing parents, as the commands do). Nothing is left behind. A
/// failure is bad input (exit status 2), one line.
pub fn check_dir(path: &Path, what: &str) -> anyhow::Result<()> {
    let bad = |why: String| crate::error::usage(format!("{what} {}: {why}", path.display()));
    // The nearest part of the path that exists, and the first missing one.
    let mut missing: Option<&Path> = None;
    let mut at = path;
    let existing = loop {
        match std::fs::metadata(at) {
            Ok(md) => break md,
            Err(e) if missing_part(&e) && parent(at) != at => {
                missing = Some(at);
                at = parent(at);
            }
            Err(e) => return Err(bad(format!("cannot be inspected ({e})"))),
        }
    };
    if !existing.is_dir() {
        return Err(bad(if missing.is_none() {
            "is not a directory".to_string()
        } else {
            format!("{} is not a directory", at.display())
        }));
    }
    match missing {
        // Create the first missing directory and take it away again.
        Some(m) => {
            std::fs::create_dir(m).map_err(|e| bad(format!("cannot be created ({e})")))?;
            let _ = std::fs::remove_dir(m);
        }
        None => {
            let probe = path.join(format!(".drivelab-write-probe-{}", std::process::id()));
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&probe)
                .map_err(|e| bad(format!("files cannot be created in it ({e})")))?;
            let _ = std::fs::remove_file(&probe);
        }
    }
    Ok(())
}

/// Whether a stat failed because part of the path is missing (or a file
/// stands where a directory should be).
fn missing_part(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// The directory a path is in ("." for a bare name).
fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Scan raw arguments for `--output-format json` so that even a parse error
/// is reported as JSON.
pub fn argv_wants_json(argv: &[OsString]) -> bool {
    let mut it = argv.iter().filter_map(|a| a.to_str());
    while let Some(a) = it.next() {
        if a == "--output-format=json" {
            return true;
        }
        if a == "--output-format" && it.next() == Some("json") {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::{check_dir, check_file};
    use crate::error::exit_status;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("drivelab-output-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn checks_leave_nothing_behind_and_existing_files_unchanged() {
        let d = scratch("leave");
        check_file(&d.join("new.json"), "--output").unwrap();
        check_dir(&d.join("a/b"), "--plots").unwrap();
        check_dir(&d, "--plots").unwrap();
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
        std::fs::write(d.join("old.json"), b"kept").unwrap();
        check_file(&d.join("old.json"), "--output").unwrap();
        assert_eq!(std::fs::read(d.join("old.json")).unwrap(), b"kept");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn unwritable_places_are_bad_input() {
        let d = scratch("bad");
        let f = d.join("f");
        std::fs::write(&f, b"x").unwrap();
        let cases = [
            check_file(&d.join("missing/x.json"), "--output"),
            check_file(&d, "--output"),
            check_file(&f.join("x.json"), "--output"),
            check_dir(&f, "--plots"),
            check_dir(&f.join("sub/dir"), "--plots"),
        ];
        for (i, c) in cases.into_iter().enumerate() {
            let e = c.expect_err(&format!("case {i} passed"));
            assert_eq!(exit_status(&e), 2, "case {i}: {e}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
