//! The resume journal: what part of a drive an erase has finished, kept on
//! disk as it goes so a crash or Ctrl-C loses at most a second of work.
//!
//! Every method writes a drive front to back, so the state of a pass is one
//! watermark (every byte below it is written) plus the ranges skipped after
//! errors. The journal is a small text file next to the certificates, named
//! after the drive's serial (or its path when it has none) and size, so a
//! rerun of the same command finds it:
//!
//! ```text
//! drivelab-erase-journal 1 {"device":"/dev/sdb",...}   header (JSON)
//! R 1763790000                                         a run started (unix s)
//! D 0 1073741824                                       pass 0 done below byte
//! S 0 4096 8192 EIO                                    pass 0 skipped [4096, 8192)
//! P 123456 9f86d0…                                     a block sampled before the erase
//! Q 1002                                               the sample complete: 1002 blocks
//! N NVMe Sanitize given up at 50.0 %: …                an event, in words
//! ```
//!
//! The `P` lines (an erase whose data is the drive's choice: the LBA and
//! the SHA-256 of what it held, `0` or `F` for a blank block) and their
//! closing `Q` are written and fsync'd before the erase sends anything; a
//! sample without its `Q` (a crash while it was written) is not used.
//!
//! `N` lines say what happened to a command that left no watermark (a
//! sanitize given up on: where its progress stood); a resume reads past
//! them. Watermark lines are written at most once a second and fsync'd with them;
//! skipped ranges are written and fsync'd at once. [`DriveJournal`] is the
//! journal stage of one drive's erase: begun (or resumed, after checking it
//! is for the same erase) before the first write, removed once the drive is
//! certified.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use drivelab_device::blockdev::BlockDevice;
use drivelab_device::input::{self, InputError, Kind};
use drivelab_device::output::Output;

use serde::{Deserialize, Serialize};

use crate::verify::content::Content;
use crate::EraseError;

const MAGIC: &str = "drivelab-erase-journal 1 ";

/// What the journal was started for; a resume must match it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalHeader {
    /// Device node.
    pub device: String,
    /// Serial, when the drive has one.
    pub serial: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// Method name.
    pub method: String,
    /// Pattern name.
    pub pattern: String,
    /// Passes.
    pub passes: u32,
    /// Seed of per-block patterns.
    pub seed: u64,
    /// When the first run started (RFC 3339 UTC).
    pub started: String,
    /// Who the drive is, so `--resume` continues only on the same drive;
    /// absent in journals written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<DriveIdentity>,
}

/// What tells one drive from another that may take its device node later:
/// its serial, WWN, model and size, and for a loop device (no serial) its
/// backing file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriveIdentity {
    /// Serial number.
    pub serial: Option<String>,
    /// World-wide name.
    pub wwid: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Size, bytes.
    pub size: u64,
    /// A loop device's backing file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing: Option<BackingFile>,
}

/// A loop device's backing file: its path and the file itself (device and
/// inode), so another image put at the same path is another drive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackingFile {
    /// The path the kernel shows.
    pub path: PathBuf,
    /// The filesystem's device number.
    pub device: u64,
    /// The inode.
    pub inode: u64,
}

impl DriveIdentity {
    /// The identity of `dev` (whose serial, as the plan knows it, is
    /// `serial`) as sysfs and the backing file show it now.
    pub fn of(dev: &BlockDevice, serial: Option<&str>, size: u64) -> DriveIdentity {
        use std::os::unix::fs::MetadataExt;
        let clean = |s: &Option<String>| {
            s.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
        };
        let backing = dev.loop_backing_file.as_ref().map(|p| {
            let (device, inode) = std::fs::metadata(p)
                .map(|m| (m.dev(), m.ino()))
                .unwrap_or((0, 0));
            BackingFile {
                path: p.clone(),
                device,
                inode,
            }
        });
        DriveIdentity {
            serial: serial.map(String::from),
            wwid: clean(&dev.wwid),
            model: clean(&dev.model),
            size,
            backing,
        }
    }

    /// Whether anything tells this drive apart from another of its model
    /// and size: a serial, a WWN or a backing file.
    pub fn established(&self) -> bool {
        self.serial.is_some()
            || self.wwid.is_some()
            || self.backing.as_ref().is_some_and(|b| b.inode != 0)
    }

    /// How the drive `now` differs from this one, the journal's, in words;
    /// None when it is the same drive.
    pub fn differs(&self, now: &DriveIdentity) -> Option<String> {
        let show = |s: &Option<String>| s.clone().unwrap_or_else(|| "none".into());
        let mut diff = Vec::new();
        for (what, was, is) in [
            ("serial", &self.serial, &now.serial),
            ("WWN", &self.wwid, &now.wwid),
            ("model", &self.model, &now.model),
        ] {
            if was != is {
                diff.push(format!(
                    "{what} {} (the drive now: {})",
                    show(was),
                    show(is)
                ));
            }
        }
        if self.size != now.size {
            diff.push(format!("size {} (the drive now: {})", self.size, now.size));
        }
        match (&self.backing, &now.backing) {
            (Some(a), Some(b)) if a == b => {}
            (None, None) => {}
            (a, b) => {
                let show = |x: &Option<BackingFile>| {
                    x.as_ref()
                        .map(|f| format!("{} (inode {})", f.path.display(), f.inode))
                        .unwrap_or_else(|| "none".into())
                };
                diff.push(format!(
                    "backing file {} (the drive now: {})",
                    show(a),
                    show(b)
                ));
            }
        }
        (!diff.is_empty()).then(|| diff.join(", "))
    }
}

/// One range skipped after errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// Pass number (0-based).
    pub pass: u32,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// The error.
    pub error: String,
}

/// A journal read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalState {
    /// The header.
    pub header: JournalHeader,
    /// Watermark per pass (bytes below are done).
    pub done: BTreeMap<u32, u64>,
    /// Skipped ranges.
    pub skipped: Vec<Skipped>,
    /// Start times (unix seconds) of every run so far.
    pub runs: Vec<u64>,
    /// The blocks sampled before the erase (LBA, what it held), when a
    /// complete sample was kept.
    pub prior: Option<Vec<(u64, Content)>>,
}

impl JournalState {
    /// Bytes of pass `pass` already done.
    pub fn watermark(&self, pass: u32) -> u64 {
        self.done.get(&pass).copied().unwrap_or(0)
    }
}

/// An open journal being appended to.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
    pending: Option<(u32, u64)>,
    last_sync: Instant,
}

/// The journal file for a drive: `erase-<serial or name>-<size>.journal`.
pub fn path_for(dir: &Path, serial: Option<&str>, device: &Path, size: u64) -> PathBuf {
    dir.join(format!("erase-{}-{size}.journal", file_key(serial, device)))
}

/// A file-name-safe key for a drive: its serial, else its device name.
pub fn file_key(serial: Option<&str>, device: &Path) -> String {
    let raw = match serial {
        Some(s) if !s.trim().is_empty() => s.trim().to_string(),
        _ => device
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "device".into()),
    };
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn io_err(path: &Path, e: std::io::Error) -> EraseError {
    EraseError::Journal {
        path: path.to_path_buf(),
        why: e.to_string(),
    }
}

/// Parse a journal's text.
pub fn parse(text: &str, path: &Path) -> Result<JournalState, EraseError> {
    let bad = |why: String| EraseError::Journal {
        path: path.to_path_buf(),
        why,
    };
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    let json = first
        .strip_prefix(MAGIC)
        .ok_or_else(|| bad("not a drivelab erase journal (bad first line)".into()))?;
    let header: JournalHeader =
        serde_json::from_str(json).map_err(|e| bad(format!("bad header: {e}")))?;
    let mut st = JournalState {
        header,
        done: BTreeMap::new(),
        skipped: Vec::new(),
        runs: Vec::new(),
        prior: None,
    };
    let mut sampled = Vec::new();
    for line in lines {
        let mut it = line.splitn(5, ' ');
        let tag = it.next().unwrap_or("");
        let mut num = || it.next().and_then(|s| s.parse::<u64>().ok());
        match tag {
            "R" => {
                if let Some(t) = num() {
                    st.runs.push(t);
                }
            }
            "D" => {
                // A torn last line (crash mid-write) is ignored.
                if let (Some(p), Some(end)) = (num(), num()) {
                    let e = st.done.entry(p as u32).or_insert(0);
                    *e = (*e).max(end);
                }
            }
            "P" => {
                let lba = num();
                if let (Some(l), Some(c)) = (lba, it.next().and_then(Content::from_token)) {
                    sampled.push((l, c));
                }
            }
            "Q" if num() == Some(sampled.len() as u64) && !sampled.is_empty() => {
                st.prior = Some(std::mem::take(&mut sampled));
            }
            "S" => {
                if let (Some(p), Some(s), Some(e)) = (num(), num(), num()) {
                    let error = it.next().unwrap_or("").to_string();
                    st.skipped.push(Skipped {
                        pass: p as u32,
                        start: s,
                        end: e,
                        error,
                    });
                }
            }
            _ => {}
        }
    }
    Ok(st)
}

/// Read a journal if it exists.
pub fn load(path: &Path) -> Result<Option<JournalState>, EraseError> {
    match input::read_string(path, Kind::Journal) {
        Ok(t) => parse(&t, path).map(Some),
        Err(InputError::Missing { .. }) => Ok(None),
        Err(e) => Err(EraseError::Journal {
            path: path.to_path_buf(),
            why: e.to_string(),
        }),
    }
}

impl Journal {
    /// Start a new journal (replacing any old one), header fsync'd. The
    /// header is written to a temporary file renamed into place, so a
    /// journal that cannot be written (a full disk) leaves no empty or
    /// torn journal behind for `--resume` to trip on.
    pub fn create(path: &Path, h: &JournalHeader) -> Result<Journal, EraseError> {
        let json = serde_json::to_string(h).map_err(|e| EraseError::Journal {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        Output::new(path)
            .option("journal")
            .write(format!("{MAGIC}{json}\n").as_bytes())?;
        Journal::append(path)
    }

    /// Continue an existing journal.
    pub fn append(path: &Path) -> Result<Journal, EraseError> {
        if !path.is_file() {
            return Err(io_err(
                path,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ));
        }
        let file = Output::new(path).option("journal").open_in_place(true)?;
        Ok(Journal {
            file,
            path: path.to_path_buf(),
            pending: None,
            last_sync: Instant::now(),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn line(&mut self, s: &str) -> Result<(), EraseError> {
        writeln!(self.file, "{s}").map_err(|e| io_err(&self.path, e))
    }

    /// Record that a run started at `unix_secs`.
    pub fn run_started(&mut self, unix_secs: u64) -> Result<(), EraseError> {
        self.line(&format!("R {unix_secs}"))?;
        self.sync()
    }

    /// Pass `pass` is done below byte `end`; written within a second.
    pub fn done(&mut self, pass: u32, end: u64) -> Result<(), EraseError> {
        // A new pass: the previous pass's last watermark must not be lost.
        if let Some((p, e)) = self.pending {
            if p != pass {
                self.line(&format!("D {p} {e}"))?;
            }
        }
        self.pending = Some((pass, end));
        if self.last_sync.elapsed().as_millis() >= 1000 {
            self.sync()?;
        }
        Ok(())
    }

    /// Record the blocks sampled before the erase, then their count
    /// (written and fsync'd now).
    pub fn prior(&mut self, blocks: &[(u64, Content)]) -> Result<(), EraseError> {
        for (lba, c) in blocks {
            self.line(&format!("P {lba} {}", c.token()))?;
        }
        self.line(&format!("Q {}", blocks.len()))?;
        self.sync()
    }

    /// Record an event in words, on one line (written and fsync'd now).
    pub fn note(&mut self, text: &str) -> Result<(), EraseError> {
        self.line(&format!("N {}", text.replace('\n', " ")))?;
        self.sync()
    }

    /// Record a skipped range (written and fsync'd now).
    pub fn skipped(&mut self, s: &Skipped) -> Result<(), EraseError> {
        let err = s.error.replace('\n', " ");
        self.line(&format!("S {} {} {} {err}", s.pass, s.start, s.end))?;
        self.sync()
    }

    /// Write the pending watermark and fsync.
    pub fn sync(&mut self) -> Result<(), EraseError> {
        if let Some((p, end)) = self.pending.take() {
            self.line(&format!("D {p} {end}"))?;
        }
        self.file.sync_data().map_err(|e| io_err(&self.path, e))?;
        self.last_sync = Instant::now();
        Ok(())
    }
}

/// One drive's journal for this run: begun fresh, or continued from an
/// interrupted run whose state it keeps. The journal stage of an erase.
#[derive(Debug)]
pub struct DriveJournal {
    /// The file.
    pub path: PathBuf,
    /// This run's header.
    pub header: JournalHeader,
    /// What earlier runs left (`--resume` and a journal was there).
    pub earlier: Option<JournalState>,
    /// The open journal this run appends to.
    pub journal: Journal,
}

impl DriveJournal {
    /// Begin the journal for `header` in `dir`, replacing any old one; with
    /// `resume`, continue the one there instead, which must be for the same
    /// erase (size, method, pattern, passes). Records this run's start.
    pub fn begin(
        dir: &Path,
        header: JournalHeader,
        resume: bool,
        run_start_unix: u64,
    ) -> Result<DriveJournal, EraseError> {
        let device = Path::new(&header.device);
        let path = path_for(dir, header.serial.as_deref(), device, header.size);
        let earlier = if resume { load(&path)? } else { None };
        if let Some(why) = earlier
            .as_ref()
            .and_then(|st| mismatch(&st.header, &header))
        {
            return Err(EraseError::ResumeMismatch {
                device: header.device.clone(),
                path,
                why,
            });
        }
        let mut journal = match &earlier {
            Some(_) => Journal::append(&path)?,
            None => Journal::create(&path, &header)?,
        };
        journal.run_started(run_start_unix)?;
        Ok(DriveJournal {
            path,
            header,
            earlier,
            journal,
        })
    }

    /// Bytes of pass `pass` done by earlier runs.
    pub fn watermark(&self, pass: u32) -> u64 {
        self.earlier
            .as_ref()
            .map(|s| s.watermark(pass))
            .unwrap_or(0)
    }

    /// Bytes of every pass done by earlier runs.
    pub fn resumed_bytes(&self) -> u64 {
        (0..self.header.passes)
            .map(|p| self.watermark(p).min(self.header.size))
            .sum()
    }

    /// The sample earlier runs kept from before the erase.
    pub fn prior(&self) -> Option<&[(u64, Content)]> {
        self.earlier.as_ref().and_then(|s| s.prior.as_deref())
    }

    /// Ranges earlier runs skipped.
    pub fn skipped(&self) -> Vec<Skipped> {
        self.earlier
            .as_ref()
            .map(|s| s.skipped.clone())
            .unwrap_or_default()
    }

    /// The erase is certified: the journal has done its job.
    pub fn remove(self) {
        let path = self.path.clone();
        drop(self);
        let _ = std::fs::remove_file(path);
    }
}

/// How a journal's header differs from this run's, in words; None when a
/// resume may continue it.
fn mismatch(old: &JournalHeader, new: &JournalHeader) -> Option<String> {
    let mut diff = Vec::new();
    if old.size != new.size {
        diff.push(format!("size {} (drive is {})", old.size, new.size));
    }
    if old.method != new.method {
        diff.push(format!("method {} (now {})", old.method, new.method));
    }
    if old.pattern != new.pattern {
        diff.push(format!("pattern {} (now {})", old.pattern, new.pattern));
    }
    if old.passes != new.passes {
        diff.push(format!("{} passes (now {})", old.passes, new.passes));
    }
    (!diff.is_empty()).then(|| diff.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> JournalHeader {
        JournalHeader {
            device: "/dev/loop7".into(),
            serial: None,
            size: 1 << 20,
            method: "stream".into(),
            pattern: "allzeros".into(),
            passes: 2,
            seed: 7,
            started: "2026-01-01T00:00:00Z".into(),
            identity: None,
        }
    }

    #[test]
    fn journal_round_trips_and_ignores_a_torn_line() {
        let dir = std::env::temp_dir().join(format!("dl-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = path_for(&dir, None, Path::new("/dev/loop7"), 1 << 20);
        assert!(p.ends_with("erase-loop7-1048576.journal"));
        let mut j = Journal::create(&p, &header()).unwrap();
        j.run_started(100).unwrap();
        j.done(0, 4096).unwrap();
        j.sync().unwrap();
        j.skipped(&Skipped {
            pass: 0,
            start: 4096,
            end: 8192,
            error: "EIO (Input/output error)".into(),
        })
        .unwrap();
        j.done(0, 65536).unwrap();
        j.note("NVMe Sanitize given up at 50.0 %:\nunmoved")
            .unwrap();
        j.done(1, 512).unwrap();
        j.sync().unwrap();
        drop(j);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("\nN NVMe Sanitize given up at 50.0 %: unmoved\n"));
        // A crash mid-line leaves a torn record.
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        write!(f, "D 1 99").unwrap();
        drop(f);
        let mut j = Journal::append(&p).unwrap();
        j.run_started(200).unwrap();
        drop(j);
        let st = load(&p).unwrap().unwrap();
        assert_eq!(st.header, header());
        assert_eq!(st.watermark(0), 65536);
        // "D 1 99R 200" is torn: pass 1 keeps 512, the run line is lost
        // with it, which only drops a timestamp.
        assert_eq!(st.watermark(1), 512);
        assert_eq!(st.skipped.len(), 1);
        assert_eq!(st.skipped[0].error, "EIO (Input/output error)");
        assert_eq!(st.runs, vec![100]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn resume_continues_the_same_erase_and_refuses_another() {
        let dir = std::env::temp_dir().join(format!("dl-journal-resume-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut j = DriveJournal::begin(&dir, header(), false, 100).unwrap();
        j.journal.done(0, 8192).unwrap();
        j.journal.sync().unwrap();
        drop(j);
        let j = DriveJournal::begin(&dir, header(), true, 200).unwrap();
        assert_eq!(j.watermark(0), 8192);
        assert_eq!(j.resumed_bytes(), 8192);
        assert_eq!(j.earlier.as_ref().unwrap().runs, vec![100]);
        drop(j);
        let mut other = header();
        other.pattern = "allones".into();
        other.passes = 1;
        let e = DriveJournal::begin(&dir, other, true, 300).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("pattern allzeros (now allones)") && msg.contains("2 passes (now 1)"),
            "{msg}"
        );
        // Without --resume a new journal replaces the old one.
        let j = DriveJournal::begin(&dir, header(), false, 400).unwrap();
        assert!(j.earlier.is_none());
        let p = j.path.clone();
        j.remove();
        assert!(!p.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_resumed_journal_keeps_the_sample_from_before_the_erase_only_when_complete() {
        let dir = std::env::temp_dir().join(format!("dl-journal-prior-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut block = [0x5Au8; 512];
        block[0] = 1;
        let sample = vec![
            (0, Content::of(&block)),
            (77, Content::Zero),
            (2047, Content::Ones),
        ];
        let mut j = DriveJournal::begin(&dir, header(), false, 100).unwrap();
        j.journal.prior(&sample).unwrap();
        j.journal.done(0, 4096).unwrap();
        j.journal.sync().unwrap();
        drop(j);
        let j = DriveJournal::begin(&dir, header(), true, 200).unwrap();
        assert_eq!(j.prior(), Some(sample.as_slice()));
        assert_eq!(j.watermark(0), 4096);
        let p = j.path.clone();
        drop(j);
        // Torn while the sample was written: no closing count, no sample.
        let text = std::fs::read_to_string(&p).unwrap();
        let torn: String = text
            .lines()
            .filter(|l| !l.starts_with('Q'))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&p, torn).unwrap();
        let j = DriveJournal::begin(&dir, header(), true, 300).unwrap();
        assert_eq!(j.prior(), None);
        assert_eq!(j.watermark(0), 4096);
        // A fresh journal has none.
        drop(j);
        let j = DriveJournal::begin(&dir, header(), false, 400).unwrap();
        assert_eq!(j.prior(), None);
        j.remove();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn keys_are_file_name_safe() {
        assert_eq!(
            file_key(Some(" WD-AB/12 34 "), Path::new("/dev/sda")),
            "WD-AB_12_34"
        );
        assert_eq!(file_key(Some(""), Path::new("/dev/nvme0n1")), "nvme0n1");
    }

    #[test]
    fn identities_differ_by_serial_wwn_model_size_or_backing_file() {
        let base = DriveIdentity {
            serial: None,
            wwid: None,
            model: Some("M".into()),
            size: 1 << 20,
            backing: Some(BackingFile {
                path: "/tmp/a.img".into(),
                device: 2049,
                inode: 11,
            }),
        };
        let with = |f: &dyn Fn(&mut DriveIdentity)| {
            let mut d = base.clone();
            f(&mut d);
            d
        };
        let cases: Vec<(&str, DriveIdentity, Option<&str>)> = vec![
            ("same", base.clone(), None),
            (
                "serial",
                with(&|d| d.serial = Some("S2".into())),
                Some("serial none (the drive now: S2)"),
            ),
            (
                "wwn",
                with(&|d| d.wwid = Some("naa.5".into())),
                Some("WWN none"),
            ),
            (
                "model",
                with(&|d| d.model = Some("N".into())),
                Some("model M (the drive now: N)"),
            ),
            ("size", with(&|d| d.size = 2 << 20), Some("size 1048576")),
            (
                "another image at the same path",
                with(&|d| d.backing.as_mut().unwrap().inode = 12),
                Some("backing file /tmp/a.img (inode 11)"),
            ),
            (
                "no backing file now",
                with(&|d| d.backing = None),
                Some("(the drive now: none)"),
            ),
        ];
        for (name, now, want) in cases {
            match (base.differs(&now), want) {
                (None, None) => {}
                (Some(d), Some(w)) => assert!(d.contains(w), "{name}: {d}"),
                (got, _) => panic!("{name}: {got:?}"),
            }
        }
        assert!(base.established());
        let bare = DriveIdentity {
            backing: None,
            ..base.clone()
        };
        assert!(
            !bare.established(),
            "a model and a size tell no drive apart"
        );
    }
}
