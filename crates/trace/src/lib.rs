//! Block I/O traces, IPEAK-style: a small request model, streaming readers
//! and writers for the common trace formats, a one-pass analyzer (sizes,
//! queue depth, seek distance, service and inter-arrival times, throughput,
//! access map), SVG plots, a trace-to-trace comparison (the audit of a
//! replay), and a recorder built on the kernel's block tracepoints.
//!
//! Everything streams: readers yield requests as they parse, writers append,
//! the analyzer and comparison keep bounded state, so traces of any length
//! run in constant memory. Replay lives elsewhere (it needs the I/O engine);
//! it consumes [`Request`]s from these readers and can run a [`record::Recorder`]
//! alongside. [`files`] runs analyze, convert and compare on files by path.

pub mod analyze;
pub mod blkparse;
pub mod compare;
pub mod error;
pub mod fasthash;
pub mod files;
pub mod fio;
mod hist;
pub mod matcher;
pub mod model;
mod mqsim;
pub mod msr;
pub mod native;
pub mod plot;
pub mod record;
pub mod source;
mod spc;
pub mod vscsi;

use std::io::{BufRead, Read, Write};
use std::path::Path;

pub use analyze::{analyze, Analysis, Analyzer};
pub use compare::{compare, Comparison};
pub use error::{Result, TraceError};
pub use model::{Device, Flags, Op, Request};
pub use source::{ReadOptions, ReadStats, TraceReader};

/// A sink for requests in some format. Call [`TraceWriter::finish`] once at
/// the end (it flushes and writes any trailer).
pub trait TraceWriter {
    /// Append one request.
    fn write(&mut self, r: &Request) -> Result<()>;
    /// The reader's device table as it has grown: a streaming reader meets
    /// names as it goes (a fio iolog's `add` lines), so [`convert`] hands
    /// the table over again before the first request of each new device.
    /// A writer that names devices keeps the names of ids it has not
    /// written yet; the default ignores them.
    fn devices(&mut self, _devices: &[Device]) -> Result<()> {
        Ok(())
    }
    /// Flush buffered output and write any trailer.
    fn finish(&mut self) -> Result<()>;
}

/// The trace formats drivelab reads (and, where noted, writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// drivelab's native binary format (read and write); see [`native`].
    Native,
    /// blkparse default text (read and write); see [`blkparse`].
    Blkparse,
    /// fio iolog v2 or v3 (read both, write v3); see [`fio`].
    Fio,
    /// MSR Cambridge CSV (read and write); see [`msr`].
    Msr,
    /// SPC / UMass CSV (read).
    Spc,
    /// MQSim / DiskSim text (read).
    Mqsim,
    /// CloudPhysics vscsi version 1 (read).
    Vscsi1,
    /// CloudPhysics vscsi version 2 (read).
    Vscsi2,
}

impl Format {
    /// Every format, in the order shown in help text.
    pub const ALL: [Format; 8] = [
        Format::Native,
        Format::Blkparse,
        Format::Fio,
        Format::Msr,
        Format::Spc,
        Format::Mqsim,
        Format::Vscsi1,
        Format::Vscsi2,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::Blkparse => "blkparse",
            Format::Fio => "fio",
            Format::Msr => "msr",
            Format::Spc => "spc",
            Format::Mqsim => "mqsim",
            Format::Vscsi1 => "vscsi1",
            Format::Vscsi2 => "vscsi2",
        }
    }

    /// Parse a command-line name (`auto` is not a format: see [`detect`]).
    pub fn from_name(s: &str) -> Result<Format> {
        let s = s.to_ascii_lowercase();
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .or(match s.as_str() {
                "iolog" => Some(Format::Fio),
                "umass" => Some(Format::Spc),
                "disksim" => Some(Format::Mqsim),
                "vscsi" => Some(Format::Vscsi1),
                "dlt" => Some(Format::Native),
                _ => None,
            })
            .ok_or_else(|| {
                TraceError::BadFormat(format!(
                    "unknown trace format '{s}'; known: auto, {}",
                    Format::ALL.map(Format::name).join(", ")
                ))
            })
    }

    /// Whether drivelab can write this format.
    pub fn writable(self) -> bool {
        matches!(
            self,
            Format::Native | Format::Blkparse | Format::Fio | Format::Msr
        )
    }

    /// The format a file name suggests for writing: `.dlt` native, `.iolog`
    /// fio, `.csv` MSR, `.blkparse`/`.txt` blkparse.
    pub fn from_extension(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "dlt" | "dltrace" => Some(Format::Native),
            "iolog" | "fio" => Some(Format::Fio),
            "csv" => Some(Format::Msr),
            "blkparse" | "txt" => Some(Format::Blkparse),
            _ => None,
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes examined by [`detect`].
pub const DETECT_BYTES: usize = 64 * 1024;

/// Tell the format from the first bytes of a trace (up to
/// [`DETECT_BYTES`]): the native magic; vscsi by record validity (version
/// byte and opcode of the first 16 records); for text, the shape of the
/// first non-empty lines (up to 8), which must all agree.
pub fn detect(head: &[u8]) -> Result<Format> {
    if head.starts_with(native::MAGIC) {
        return Ok(Format::Native);
    }
    if head.is_empty() {
        return Err(TraceError::UnknownFormat("the trace is empty".into()));
    }
    let binary = head
        .iter()
        .take(4096)
        .any(|b| *b == 0 || (*b < 0x20 && !b"\t\r\n".contains(b)));
    if binary {
        if vscsi::plausible(vscsi::VscsiVersion::V2, head, 16) {
            return Ok(Format::Vscsi2);
        }
        if vscsi::plausible(vscsi::VscsiVersion::V1, head, 16) {
            return Ok(Format::Vscsi1);
        }
        return Err(TraceError::UnknownFormat(
            "binary content that is neither a drivelab native trace nor vscsi records".into(),
        ));
    }
    // Only complete lines, unless the whole input fits.
    let text = if head.len() >= DETECT_BYTES {
        match head.iter().rposition(|c| *c == b'\n') {
            Some(p) => &head[..p],
            None => head,
        }
    } else {
        head
    };
    let lines: Vec<&[u8]> = text
        .split(|c| *c == b'\n')
        .map(source::trim)
        .filter(|l| !l.is_empty())
        .take(8)
        .collect();
    let Some(first) = lines.first() else {
        return Err(TraceError::UnknownFormat("no non-empty line".into()));
    };
    if first.starts_with(b"fio version") {
        return Ok(Format::Fio);
    }
    let candidates = [Format::Blkparse, Format::Msr, Format::Spc, Format::Mqsim];
    for f in candidates {
        if lines.iter().all(|l| line_shape(f, l)) {
            return Ok(f);
        }
    }
    Err(TraceError::UnknownFormat(format!(
        "first line '{}' matches no known text format",
        source::show(first)
    )))
}

fn line_shape(f: Format, l: &[u8]) -> bool {
    let num = |s: &[u8]| source::parse_u64(s, "").is_ok();
    match f {
        Format::Blkparse => {
            let w: Vec<&[u8]> = source::ws_fields(l).take(7).collect();
            (w.len() >= 7 && blkparse::parse_majmin(w[0]).is_some() && num(w[1]) && num(w[2]))
                || l.starts_with(b"CPU")
                || l.starts_with(b"Total")
        }
        Format::Msr => {
            let c: Vec<&[u8]> = l.split(|c| *c == b',').collect();
            c.len() == 7
                && num(c[0])
                && num(c[2])
                && (c[3].eq_ignore_ascii_case(b"read") || c[3].eq_ignore_ascii_case(b"write"))
        }
        Format::Spc => {
            let c: Vec<&[u8]> = l.split(|c| *c == b',').collect();
            c.len() >= 5
                && num(c[0])
                && num(c[1])
                && matches!(source::trim(c[3]), b"R" | b"r" | b"W" | b"w")
                && source::parse_seconds_ns(c[4], "").is_ok()
        }
        Format::Mqsim => {
            let w: Vec<&[u8]> = source::ws_fields(l).collect();
            w.len() == 5 && w[..4].iter().all(|x| num(x)) && matches!(w[4], b"0" | b"1")
        }
        _ => false,
    }
}

/// Open a streaming reader. With `format` `None` the format is detected
/// from the first [`DETECT_BYTES`] (see [`detect`]). Returns the format used.
pub fn open_reader<'a, R: BufRead + 'a>(
    mut input: R,
    format: Option<Format>,
    opts: ReadOptions,
) -> Result<(Format, Box<dyn TraceReader + 'a>)> {
    let format = match format {
        Some(f) => f,
        None => {
            let mut head = Vec::with_capacity(DETECT_BYTES);
            (&mut input)
                .take(DETECT_BYTES as u64)
                .read_to_end(&mut head)?;
            let f = detect(&head)?;
            let chained = std::io::Cursor::new(head).chain(input);
            return Ok((f, reader_for(chained, f, opts)?));
        }
    };
    Ok((format, reader_for(input, format, opts)?))
}

fn reader_for<'a, R: BufRead + 'a>(
    input: R,
    f: Format,
    opts: ReadOptions,
) -> Result<Box<dyn TraceReader + 'a>> {
    use source::LineReader;
    Ok(match f {
        Format::Native => Box::new(native::NativeReader::new(input)?),
        Format::Blkparse => Box::new(blkparse::BlkparseReader::new(input, opts)),
        Format::Fio => Box::new(LineReader::new(input, fio::FioParser::new(), opts)),
        Format::Msr => Box::new(LineReader::new(input, msr::MsrParser::new(), opts)),
        Format::Spc => Box::new(LineReader::new(input, spc::SpcParser, opts)),
        Format::Mqsim => Box::new(LineReader::new(input, mqsim::MqsimParser, opts)),
        Format::Vscsi1 => Box::new(vscsi::VscsiReader::new(
            input,
            vscsi::VscsiVersion::V1,
            opts,
        )),
        Format::Vscsi2 => Box::new(vscsi::VscsiReader::new(
            input,
            vscsi::VscsiVersion::V2,
            opts,
        )),
    })
}

/// Open a writer for a writable format (see [`Format::writable`]).
/// `devices` names the device ids (used by native and fio).
pub fn open_writer<'a, W: Write + 'a>(
    out: W,
    format: Format,
    devices: &[Device],
) -> Result<Box<dyn TraceWriter + 'a>> {
    Ok(match format {
        Format::Native => Box::new(native::NativeWriter::new(out, devices)?),
        Format::Fio => Box::new(fio::FioWriter::new(out, devices)),
        Format::Msr => Box::new(msr::MsrWriter::new(out, "drivelab")),
        Format::Blkparse => Box::new(blkparse::BlkparseWriter::new(out)),
        other => {
            return Err(TraceError::BadFormat(format!(
                "drivelab cannot write {other}; writable formats: native, fio, msr, blkparse"
            )))
        }
    })
}

/// Copy every request from `reader` to `writer` and finish it. Returns the
/// number of requests written.
pub fn convert(reader: &mut dyn TraceReader, writer: &mut dyn TraceWriter) -> Result<u64> {
    let mut n = 0;
    let mut seen: Vec<u32> = Vec::new();
    while let Some(r) = reader.next() {
        let r = r?;
        if !seen.contains(&r.device) {
            seen.push(r.device);
            writer.devices(&reader.devices())?;
        }
        writer.write(&r)?;
        n += 1;
    }
    writer.finish()?;
    Ok(n)
}

/// Open a trace file for reading with a large buffer: a regular file
/// (`drivelab_device::input`), streamed, so of any size.
pub fn open_file(
    path: &Path,
    format: Option<Format>,
    opts: ReadOptions,
) -> Result<(Format, Box<dyn TraceReader>)> {
    let f = drivelab_device::input::open(path, drivelab_device::input::Kind::Trace)?;
    open_reader(
        std::io::BufReader::with_capacity(256 * 1024, f),
        format,
        opts,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_text_shape() {
        assert_eq!(
            detect(b"fio version 2 iolog\n/dev/sda add\n").unwrap(),
            Format::Fio
        );
        assert_eq!(
            detect(b"128166372003061629,wdev,0,Read,3154152448,4096,2030\n").unwrap(),
            Format::Msr
        );
        assert_eq!(
            detect(b"0,20941264,8192,W,0.551706\n").unwrap(),
            Format::Spc
        );
        assert_eq!(detect(b"11413000 0 657728 16 1\n").unwrap(), Format::Mqsim);
        assert_eq!(
            detect(b"  8,16   5        2     0.000001850 18615  Q   R 1444645666 + 256 [java]\n")
                .unwrap(),
            Format::Blkparse
        );
        assert!(matches!(
            detect(b"hello world\n"),
            Err(TraceError::UnknownFormat(_))
        ));
        assert!(matches!(detect(b""), Err(TraceError::UnknownFormat(_))));
    }

    #[test]
    fn format_names_roundtrip() {
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()).unwrap(), f);
        }
        assert!(Format::from_name("nope").is_err());
    }
}
