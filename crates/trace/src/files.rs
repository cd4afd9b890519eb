//! Whole trace files by path: analyze one (and plot it), convert one into
//! another, compare two. Each error names the file it concerns.

use std::path::{Path, PathBuf};

use crate::{Analysis, Comparison, Device, Format, ReadOptions, ReadStats, TraceError};

/// A trace operation that failed, with the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Reading, parsing or writing `path` failed. (An input error names
    /// the file itself, so it is not named twice.)
    #[error("{}", file_error_line(.path, .error))]
    Trace {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: TraceError,
    },
    /// The output file is refused, or cannot be created or put in place.
    #[error(transparent)]
    Output(#[from] drivelab_device::output::OutputError),
}

impl FileError {
    fn at(path: &Path) -> impl FnOnce(TraceError) -> FileError + '_ {
        move |error| FileError::Trace {
            path: path.to_path_buf(),
            error,
        }
    }

    /// Whether the input is at fault (an unknown or wrong format, a
    /// malformed trace, a request the output format cannot hold, a device
    /// that cannot be traced) rather than I/O or the kernel.
    pub fn is_input(&self) -> bool {
        match self {
            FileError::Trace { error, .. } => error.is_bad_input(),
            FileError::Output(e) => e.is_refusal(),
        }
    }
}

fn file_error_line(path: &Path, error: &TraceError) -> String {
    match error {
        TraceError::Input { .. } | TraceError::Refused(_) => error.to_string(),
        _ => format!("{}: {error}", path.display()),
    }
}

/// A trace file analyzed.
#[derive(Debug, Clone)]
pub struct Analyzed {
    /// The analysis.
    pub analysis: Analysis,
    /// The format the file was read as.
    pub format: Format,
    /// What the reader skipped, merged or could not match.
    pub reader: ReadStats,
    /// The devices the trace names.
    pub devices: Vec<Device>,
    /// The plots written.
    pub plots: Vec<PathBuf>,
}

/// Analyze the trace at `path` (`-`: standard input; format detected when
/// `None`); with `plots`
/// `(dir, png)`, also write the SVG plots (and PNGs) into `dir`.
pub fn analyze_file(
    path: &Path,
    format: Option<Format>,
    opts: ReadOptions,
    plots: Option<(&Path, bool)>,
) -> Result<Analyzed, FileError> {
    let (format, mut reader) = if path == Path::new("-") {
        // Standard input, streamed: a trace generated or decompressed on
        // the fly, of any length.
        let stdin = std::io::BufReader::with_capacity(256 * 1024, std::io::stdin().lock());
        crate::open_reader(stdin, format, opts)
    } else {
        crate::open_file(path, format, opts)
    }
    .map_err(FileError::at(path))?;
    let analysis = crate::analyze(&mut reader).map_err(FileError::at(path))?;
    let plots = match plots {
        Some((dir, png)) => {
            crate::plot::write_plots_as(&analysis, dir, png).map_err(FileError::at(dir))?
        }
        None => Vec::new(),
    };
    Ok(Analyzed {
        reader: reader.stats(),
        devices: reader.devices(),
        analysis,
        format,
        plots,
    })
}

/// A trace file converted.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The format the input was read as.
    pub from: Format,
    /// The format written.
    pub to: Format,
    /// Requests written.
    pub requests: u64,
    /// What the reader skipped, merged or could not match.
    pub reader: ReadStats,
}

/// Convert the trace at `input` (format detected when `from` is `None`)
/// into `output` in format `to`; the devices the input names up front
/// (native, fio headers) go into the output's header. The output goes
/// through the device crate's output rules (never the input, a device or
/// a loop's backing file) and replaces an old file only once the whole
/// input was converted: a bad input leaves no output and an old one whole.
pub fn convert_file(
    input: &Path,
    from: Option<Format>,
    opts: ReadOptions,
    output: &Path,
    to: Format,
) -> Result<Converted, FileError> {
    let (from, mut reader) = crate::open_file(input, from, opts).map_err(FileError::at(input))?;
    let devices = reader.devices();
    let mut out = drivelab_device::output::Output::new(output)
        .option("OUT")
        .input(input)
        .create()?;
    let mut writer = crate::open_writer(&mut out, to, &devices).map_err(FileError::at(output))?;
    let requests =
        crate::convert(reader.as_mut(), writer.as_mut()).map_err(FileError::at(input))?;
    drop(writer);
    out.commit()?;
    Ok(Converted {
        from,
        to,
        requests,
        reader: reader.stats(),
    })
}

/// Compare trace `b` with the reference `a` (formats detected when
/// `None`) within `tolerance` (a fraction).
pub fn compare_files(
    a: (&Path, Option<Format>),
    b: (&Path, Option<Format>),
    opts: ReadOptions,
    tolerance: f64,
) -> Result<Comparison, FileError> {
    let (_, mut ra) = crate::open_file(a.0, a.1, opts).map_err(FileError::at(a.0))?;
    let (_, mut rb) = crate::open_file(b.0, b.1, opts).map_err(FileError::at(b.0))?;
    crate::compare(&mut ra, &mut rb, tolerance).map_err(FileError::at(a.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file_and_say_whether_the_input_is_at_fault() {
        let d = std::env::temp_dir().join(format!("drivelab-trace-files-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let bad = d.join("bad.iolog");
        std::fs::write(
            &bad,
            "fio version 3 iolog\n0 dev add\n0 dev open\nx dev read 0 4096\n",
        )
        .unwrap();
        let e = analyze_file(&bad, Some(Format::Fio), ReadOptions::default(), None).unwrap_err();
        assert!(e.is_input(), "{e}");
        assert!(
            e.to_string().starts_with(&format!("{}: ", bad.display())),
            "{e}"
        );
        let missing = d.join("missing.iolog");
        let e = compare_files((&bad, None), (&missing, None), ReadOptions::default(), 0.05)
            .unwrap_err();
        // A missing trace is the user's input (exit status 2), named once.
        assert!(e.is_input(), "{e}");
        assert!(e.to_string().contains("missing.iolog"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn convert_copies_every_request() {
        let d = std::env::temp_dir().join(format!("drivelab-trace-conv-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let (src, dst) = (d.join("a.iolog"), d.join("b.csv"));
        std::fs::write(
            &src,
            "fio version 3 iolog\n0 dev add\n0 dev open\n10 dev read 0 4096\n20 dev write 4096 8192\n30 dev close\n",
        )
        .unwrap();
        let c = convert_file(&src, None, ReadOptions::default(), &dst, Format::Msr).unwrap();
        assert_eq!((c.from, c.to, c.requests), (Format::Fio, Format::Msr, 2));
        let a = analyze_file(&dst, None, ReadOptions::default(), None).unwrap();
        assert_eq!(a.analysis.requests, 2);
        assert_eq!(a.analysis.bytes_written, 8192);
        let _ = std::fs::remove_dir_all(&d);
    }
}
