//! Output options shared by every subcommand: the format and where it goes;
//! the checks that every output path can be written, made before any I/O
//! starts; and the rescue of results whose file fails at the end.
//!
//! The rules themselves (no devices, no loop backing files, no swap, no
//! locked files, no inputs; atomic replacement) live in one place,
//! `drivelab_device::output`; this module runs them early and words the
//! refusal as bad input.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use drivelab_device::output::Output;

use crate::error::LateWriteError;

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
    /// Write the results to FILE instead of standard output (- is
    /// standard output). FILE is replaced whole when the results are
    /// complete; a device, a loop device's backing file or one of the
    /// command's inputs is refused.
    #[arg(long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl OutputArgs {
    /// Whether JSON was asked for.
    pub fn json(&self) -> bool {
        self.output_format == Format::Json
    }

    /// The results file, unless standard output was chosen (no
    /// `--output`, or `--output -`).
    pub fn file(&self) -> Option<&Path> {
        self.output.as_deref().filter(|p| !is_stdout(p))
    }

    /// Check `--output` before any I/O starts (see [`check_file`]).
    pub fn check(&self) -> anyhow::Result<()> {
        self.check_inputs(&[])
    }

    /// Check `--output` before any I/O starts, and that it is none of the
    /// command's `inputs`.
    pub fn check_inputs(&self, inputs: &[&Path]) -> anyhow::Result<()> {
        match self.file() {
            Some(p) => check_file_inputs(p, "--output", inputs),
            None => Ok(()),
        }
    }

    /// Write `text` to the chosen destination (stdout or `--output`). When
    /// the file cannot be written, the text goes to standard output instead
    /// and the error is a [`LateWriteError`]: the results are not lost.
    pub fn emit(&self, text: &str) -> anyhow::Result<()> {
        match self.file() {
            Some(p) => write_file(p, "--output", text.as_bytes()).map_err(|e| {
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

/// Whether an output path is `-`, standard output.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Write a whole file through the device crate's output rules, replacing
/// any old one atomically (see `drivelab_device::output`).
pub fn write_file(
    path: &Path,
    what: &str,
    bytes: &[u8],
) -> Result<(), drivelab_device::output::OutputError> {
    Output::new(path).option(what).write(bytes)
}

/// Check, before any I/O starts, that a result file `path` (given with the
/// option `what`, e.g. "--output") can be written (see [`check_file_inputs`]).
pub fn check_file(path: &Path, what: &str) -> anyhow::Result<()> {
    check_file_inputs(path, what, &[])
}

/// Check, before any I/O starts, that a result file `path` (given with the
/// option `what`) can be written: the device crate's rules (not a device,
/// a directory, a loop device's backing file, swap, a locked file, or one
/// of `inputs`; its directory exists), and a temporary file can be created
/// beside it (then removed). An existing file is not changed. A failure is
/// bad input (exit status 2), one line.
pub fn check_file_inputs(path: &Path, what: &str, inputs: &[&Path]) -> anyhow::Result<()> {
    let out = Output::new(path)
        .option(what)
        .inputs(inputs.iter().copied());
    let checked = out
        .check()
        .map_err(|e| crate::error::usage(e.to_string()))?;
    if checked.existing.is_some() {
        // Replacing needs no write permission on the file, but a file the
        // user cannot write is one they do not expect replaced.
        OpenOptions::new()
            .append(true)
            .open(&checked.path)
            .map(drop)
            .map_err(|e| {
                crate::error::usage(format!(
                    "{what} {}: cannot be written ({e})",
                    path.display()
                ))
            })?;
    }
    out.create()
        .map(drop)
        .map_err(|e| crate::error::usage(e.to_string()))
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
        if missing.is_none() {
            // A device or a symlink to one is refused in the claim's words.
            Output::new(at)
                .option(what)
                .check()
                .map_err(|e| crate::error::usage(e.to_string()))?;
        }
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
            // A block of data, synced: a full filesystem fails here, before
            // a journal or certificate is begun in it.
            let mut probe = Output::new(path.join(".drivelab-write-probe"))
                .option(what)
                .create()
                .map_err(|e| bad(format!("files cannot be created in it ({e})")))?;
            probe
                .write_all(&[0u8; 4096])
                .map_err(|e| e.to_string())
                .and_then(|_| probe.sync().map_err(|e| e.to_string()))
                .map_err(|e| bad(format!("files cannot be written in it ({e})")))?;
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
