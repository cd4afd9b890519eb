//! fio iolog traces, versions 2 and 3 (fio's `read_iolog` / `write_iolog`).
//! Header `fio version 2 iolog` or `fio version 3 iolog`; then lines
//! `[timestamp_us] filename action [offset length]` where the timestamp is
//! present in version 3 only (microseconds from the run start), actions are
//! `add`/`open`/`close` (file management), `read`/`write`/`trim`,
//! `sync`/`datasync` (flushes) and, in version 2, `wait` (offset = a delay
//! in microseconds, which advances the clock). Offsets and lengths are bytes.
//! File names become devices (ids in order of first appearance). No
//! completions.

use std::collections::HashMap;
use std::io::Write;

use crate::error::Result;
use crate::model::{Device, Flags, Op, Request};
use crate::source::{parse_u64, show, trim, ws_fields, LineOutcome, LineParser, ReadStats};
use crate::TraceWriter;

/// Most distinct file names a fio log may name.
const MAX_FILES: usize = 4096;
/// Longest file name, bytes (PATH_MAX less its NUL).
const MAX_NAME: usize = 4095;

pub(crate) struct FioParser {
    version: Option<u8>,
    clock_ns: u64,
    files: Vec<String>,
}

impl FioParser {
    pub(crate) fn new() -> Self {
        FioParser {
            version: None,
            clock_ns: 0,
            files: Vec::new(),
        }
    }

    fn file_id(&mut self, name: &[u8]) -> std::result::Result<u32, String> {
        // Checked as stored (invalid UTF-8 becomes U+FFFD, 3 bytes each).
        let name = String::from_utf8_lossy(name);
        if name.len() > MAX_NAME {
            return Err(format!(
                "file name of {} bytes; a Linux path has at most {MAX_NAME}",
                name.len()
            ));
        }
        if let Some(i) = self.files.iter().position(|f| *f == name) {
            return Ok(i as u32);
        }
        if self.files.len() >= MAX_FILES {
            return Err(format!("more than {MAX_FILES} distinct file names"));
        }
        self.files.push(name.into_owned());
        Ok((self.files.len() - 1) as u32)
    }
}

impl LineParser for FioParser {
    const NAME: &'static str = "fio";

    fn parse(
        &mut self,
        line: &[u8],
        _stats: &mut ReadStats,
    ) -> std::result::Result<LineOutcome, String> {
        let t = trim(line);
        if t.is_empty() {
            return Ok(LineOutcome::Skip);
        }
        let Some(version) = self.version else {
            return match t {
                b"fio version 2 iolog" => {
                    self.version = Some(2);
                    Ok(LineOutcome::Skip)
                }
                b"fio version 3 iolog" => {
                    self.version = Some(3);
                    Ok(LineOutcome::Skip)
                }
                _ => Err(format!(
                    "expected the header 'fio version 2 iolog' or 'fio version 3 iolog', found '{}'",
                    show(t)
                )),
            };
        };
        // The fields in place (no allocation a line: a replay reads one
        // line per request it issues); a sixth means too many.
        let mut all: [&[u8]; 6] = [b""; 6];
        let mut n = 0;
        for x in ws_fields(t).take(all.len()) {
            all[n] = x;
            n += 1;
        }
        let mut f = &all[..n];
        if version == 3 {
            if f.len() < 3 {
                return Err("expected 'timestamp filename action [offset length]'".into());
            }
            let us = parse_u64(f[0], "timestamp")?;
            self.clock_ns = us
                .checked_mul(1000)
                .ok_or_else(|| "timestamp too large".to_string())?;
            f = &f[1..];
        }
        if f.len() < 2 {
            return Err("expected 'filename action [offset length]'".into());
        }
        let (name, action) = (f[0], f[1]);
        match action {
            b"add" | b"open" | b"close" => {
                if f.len() != 2 {
                    return Err(format!("'{}' takes no offset or length", show(action)));
                }
                self.file_id(name)?;
                return Ok(LineOutcome::Skip);
            }
            b"wait" => {
                let us = parse_u64(f.get(2).copied().unwrap_or(b""), "wait delay")?;
                self.clock_ns = self
                    .clock_ns
                    .checked_add(us.saturating_mul(1000))
                    .ok_or_else(|| "clock overflow".to_string())?;
                return Ok(LineOutcome::Skip);
            }
            _ => {}
        }
        let op = match action {
            b"read" => Op::Read,
            b"write" => Op::Write,
            b"trim" => Op::Trim,
            b"sync" | b"datasync" => Op::Flush,
            other => return Err(format!("unknown action '{}'", show(other))),
        };
        let (offset, len) = if op == Op::Flush && f.len() == 2 {
            (0, 0)
        } else {
            if f.len() != 4 {
                return Err(format!("'{}' needs an offset and a length", show(action)));
            }
            (parse_u64(f[2], "offset")?, parse_u64(f[3], "length")?)
        };
        let device = self.file_id(name)?;
        Ok(LineOutcome::Request(Request {
            issue_ns: self.clock_ns,
            complete_ns: None,
            device,
            op,
            offset,
            len,
            flags: Flags::empty(),
        }))
    }

    fn devices(&self) -> Vec<Device> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, n)| Device {
                id: i as u32,
                name: n.clone(),
            })
            .collect()
    }
}

/// Writes fio iolog version 3 (timestamps in microseconds, sub-µs parts
/// truncated). Devices are named from the device table given to `new`, else
/// `dev<id>`; each file is added and opened before its first request and
/// closed at the end. Flushes are written as `sync`.
pub struct FioWriter<W: Write> {
    out: W,
    names: HashMap<u32, String>,
    opened: Vec<u32>,
    last_us: u64,
    started: bool,
}

impl<W: Write> FioWriter<W> {
    /// A writer; file names come from `devices` (whitespace and control
    /// characters replaced by `_`: a name is one field of a text line, and
    /// a control byte would make the file read as binary).
    pub fn new(out: W, devices: &[Device]) -> Self {
        let mut w = FioWriter {
            out,
            names: HashMap::new(),
            opened: Vec::new(),
            last_us: 0,
            started: false,
        };
        w.learn(devices);
        w
    }

    /// Name the devices not written yet.
    fn learn(&mut self, devices: &[Device]) {
        for d in devices {
            if self.opened.contains(&d.id) {
                continue;
            }
            let name = d.name.split_whitespace().collect::<Vec<_>>().join("_");
            self.names
                .insert(d.id, name.replace(|c: char| c.is_control(), "_"));
        }
    }

    fn name(&self, id: u32) -> String {
        match self.names.get(&id) {
            Some(n) if !n.is_empty() => n.clone(),
            _ => format!("dev{id}"),
        }
    }
}

impl<W: Write> TraceWriter for FioWriter<W> {
    fn devices(&mut self, devices: &[Device]) -> Result<()> {
        self.learn(devices);
        Ok(())
    }

    fn write(&mut self, r: &Request) -> Result<()> {
        if !self.started {
            self.out.write_all(b"fio version 3 iolog\n")?;
            self.started = true;
        }
        let us = r.issue_ns / 1000;
        self.last_us = self.last_us.max(us);
        if !self.opened.contains(&r.device) {
            let n = self.name(r.device);
            writeln!(self.out, "{us} {n} add\n{us} {n} open")?;
            self.opened.push(r.device);
        }
        let n = self.name(r.device);
        match r.op {
            Op::Flush => writeln!(self.out, "{us} {n} sync 0 0")?,
            op => writeln!(self.out, "{us} {n} {} {} {}", op.name(), r.offset, r.len)?,
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        if !self.started {
            self.out.write_all(b"fio version 3 iolog\n")?;
            self.started = true;
        }
        for id in std::mem::take(&mut self.opened) {
            let n = self.name(id);
            writeln!(self.out, "{} {n} close", self.last_us)?;
        }
        self.out.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{convert, open_reader, open_writer, Format, ReadOptions};

    /// Convert `text` (a fio iolog) to `to` and read the result back: its
    /// device table and each request's device name.
    fn through(text: &str, to: Format) -> (Vec<String>, Vec<String>) {
        let (_, mut r) =
            open_reader(text.as_bytes(), Some(Format::Fio), ReadOptions::default()).unwrap();
        let mut out = Vec::new();
        {
            let mut w = open_writer(&mut out, to, &r.devices()).unwrap();
            convert(r.as_mut(), w.as_mut()).unwrap();
        }
        let (_, mut back) = open_reader(&out[..], Some(to), ReadOptions::default()).unwrap();
        let reqs: Vec<_> = back.by_ref().map(|q| q.unwrap()).collect();
        let table = back.devices();
        let name = |id: u32| {
            table
                .iter()
                .find(|d| d.id == id)
                .map(|d| d.name.clone())
                .unwrap_or_default()
        };
        (
            table.iter().map(|d| d.name.clone()).collect(),
            reqs.iter().map(|q| name(q.device)).collect(),
        )
    }

    #[test]
    fn converting_an_iolog_keeps_its_file_names() {
        // The issue's case: every file became `dev0` (the writer was made
        // before the reader had met a name).
        let v2 = "fio version 2 iolog\n/tmp/a.bin add\n/tmp/b.bin add\n/tmp/a.bin open\n\
                  /tmp/b.bin open\n/tmp/a.bin write 0 4096\n/tmp/b.bin read 4096 4096\n\
                  /tmp/c.bin add\n/tmp/c.bin open\n/tmp/c.bin write 0 512\n/tmp/a.bin close\n";
        let (table, per_request) = through(v2, Format::Fio);
        assert_eq!(
            per_request,
            ["/tmp/a.bin", "/tmp/b.bin", "/tmp/c.bin"],
            "{table:?}"
        );
        // The native header is written with the first request: the files
        // added before it are named there (fio adds every file first).
        let (table, per_request) = through(v2, Format::Native);
        assert_eq!(table, ["/tmp/a.bin", "/tmp/b.bin"]);
        assert_eq!(per_request[..2], ["/tmp/a.bin", "/tmp/b.bin"]);
    }
}
