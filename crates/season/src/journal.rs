//! The season's resume journal: one small file per drive (next to the
//! result, in the state dir) that says which stages are done, where the
//! current fill pass stands, and every finished round, so an interrupted
//! season resumes at the stage and round where it stopped.
//!
//! Its first line is the header (what was asked: a resume must ask the
//! same), every other line one JSON entry, appended and fsync'd as it
//! happens (fill watermarks at most once a second):
//!
//! ```text
//! drivelab-season-journal 1 {"device":"/dev/sdb","size":...}
//! {"purge":{...}}
//! {"fill_mark":{"pass":0,"offset":1073741824}}
//! {"fill_pass":{"pass":1,...}}
//! {"round":{"round":1,"iops":...}}
//! ```
//!
//! The file is named like erase's journals (the drive's serial, else its
//! path, and its size) so a rerun finds it. A torn last line (a crash
//! while appending) is ignored.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use drivelab_device::input::{self, InputError, Kind};
use drivelab_device::output::Output;
use serde::{Deserialize, Serialize};

use crate::result::{Image, Metrics, Pass, Purge, Round, WritePoint};
use crate::SeasonError;

const MAGIC: &str = "drivelab-season-journal 1 ";

/// What the season was started for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Device node.
    pub device: String,
    /// Serial.
    pub serial: Option<String>,
    /// Size, bytes.
    pub size: u64,
    /// Stages asked for.
    pub stages: Vec<String>,
    /// Fill passes.
    pub fill_passes: u32,
    /// The rounds' workload.
    pub workload: String,
    /// Round length, seconds.
    pub round_seconds: f64,
    /// Round limit.
    pub max_rounds: usize,
    /// The image or trace restored.
    pub image: Option<String>,
    /// The compare workload.
    pub compare: Option<String>,
}

/// One journal entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Entry {
    /// The purge is done.
    Purge(Purge),
    /// The fresh compare run is done.
    CompareFresh(Metrics),
    /// Fill pass `pass` (0-based) is written below `offset`.
    FillMark {
        /// Pass, 0-based.
        pass: u32,
        /// Watermark, bytes.
        offset: u64,
    },
    /// A fill pass is done.
    FillPass {
        /// The pass.
        pass: Pass,
        /// Its series.
        series: Vec<WritePoint>,
    },
    /// The image is restored.
    Image(Image),
    /// A round is done.
    Round(Round),
    /// The rounds are over (steady, or the limit).
    RoundsDone,
    /// The used compare run is done.
    CompareUsed(Metrics),
}

/// What earlier runs left.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    /// The entries, in order.
    pub entries: Vec<Entry>,
}

impl State {
    /// The purge, if done.
    pub fn purge(&self) -> Option<&Purge> {
        self.entries.iter().find_map(|e| match e {
            Entry::Purge(p) => Some(p),
            _ => None,
        })
    }

    /// The fresh compare run, if done.
    pub fn compare_fresh(&self) -> Option<Metrics> {
        self.entries.iter().find_map(|e| match e {
            Entry::CompareFresh(m) => Some(*m),
            _ => None,
        })
    }

    /// The used compare run, if done.
    pub fn compare_used(&self) -> Option<Metrics> {
        self.entries.iter().find_map(|e| match e {
            Entry::CompareUsed(m) => Some(*m),
            _ => None,
        })
    }

    /// Finished fill passes with their series.
    pub fn fill_passes(&self) -> Vec<(Pass, Vec<WritePoint>)> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                Entry::FillPass { pass, series } => Some((pass.clone(), series.clone())),
                _ => None,
            })
            .collect()
    }

    /// The watermark of fill pass `pass` (0-based), 0 when not started.
    pub fn fill_mark(&self, pass: u32) -> u64 {
        self.entries
            .iter()
            .filter_map(|e| match e {
                Entry::FillMark { pass: p, offset } if *p == pass => Some(*offset),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// The image restore, if done.
    pub fn image(&self) -> Option<&Image> {
        self.entries.iter().find_map(|e| match e {
            Entry::Image(i) => Some(i),
            _ => None,
        })
    }

    /// Finished rounds.
    pub fn rounds(&self) -> Vec<Round> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                Entry::Round(r) => Some(*r),
                _ => None,
            })
            .collect()
    }

    /// Whether the rounds are over.
    pub fn rounds_done(&self) -> bool {
        self.entries.iter().any(|e| matches!(e, Entry::RoundsDone))
    }
}

/// An open journal.
#[derive(Debug)]
pub struct Journal {
    file: File,
    /// The file.
    pub path: PathBuf,
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> SeasonError {
    SeasonError::Journal {
        path: path.to_path_buf(),
        why: e.to_string(),
    }
}

/// The journal file of a drive in `dir`.
pub fn path_for(dir: &Path, h: &Header) -> PathBuf {
    let key = drivelab_erase::journal::file_key(h.serial.as_deref(), Path::new(&h.device));
    dir.join(format!("season-{key}-{}.journal", h.size))
}

/// Parse a journal's text.
pub fn parse(text: &str, path: &Path) -> Result<(Header, State), SeasonError> {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let h = first
        .strip_prefix(MAGIC)
        .ok_or_else(|| io_err(path, "not a drivelab season journal"))?;
    let header: Header = serde_json::from_str(h).map_err(|e| io_err(path, e))?;
    let mut st = State::default();
    let all: Vec<&str> = lines.collect();
    for (i, l) in all.iter().enumerate() {
        match serde_json::from_str::<Entry>(l) {
            Ok(e) => st.entries.push(e),
            // A torn last line: the crash came while appending it.
            Err(_) if i + 1 == all.len() => {}
            Err(e) => return Err(io_err(path, format!("line {}: {e}", i + 2))),
        }
    }
    Ok((header, st))
}

impl Journal {
    /// Begin the journal for `h` in `dir`: with `resume`, continue the one
    /// there (which must be for the same season) and return what it holds;
    /// else start a new one, replacing any old one.
    pub fn begin(dir: &Path, h: &Header, resume: bool) -> Result<(Journal, State), SeasonError> {
        let path = path_for(dir, h);
        if resume {
            match input::read_string(&path, Kind::Journal) {
                Ok(t) => {
                    let (old, st) = parse(&t, &path)?;
                    if let Some(why) = mismatch(&old, h) {
                        return Err(SeasonError::ResumeMismatch {
                            device: h.device.clone(),
                            path,
                            why,
                        });
                    }
                    // Rewritten with what parsed, so a torn last line
                    // does not end up in the middle.
                    let j = Journal::create(&path, &old, &st.entries)?;
                    return Ok((j, st));
                }
                Err(InputError::Missing { .. }) => {}
                Err(e) => return Err(io_err(&path, e)),
            }
        }
        Ok((Journal::create(&path, h, &[])?, State::default()))
    }

    /// Write the header and `entries` to a temporary file renamed over any
    /// old journal (so a journal that cannot be written leaves none, and a
    /// rewrite never leaves half of one), then open it for appending.
    fn create(path: &Path, h: &Header, entries: &[Entry]) -> Result<Journal, SeasonError> {
        let json = serde_json::to_string(h).map_err(|e| io_err(path, e))?;
        let mut text = format!("{MAGIC}{json}\n");
        for e in entries {
            text.push_str(&serde_json::to_string(e).map_err(|x| io_err(path, x))?);
            text.push('\n');
        }
        let out = Output::new(path).option("journal");
        out.write(text.as_bytes()).map_err(|e| io_err(path, e))?;
        let file = out.open_in_place(true).map_err(|e| io_err(path, e))?;
        Ok(Journal {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Append an entry and fsync it.
    pub fn add(&mut self, e: &Entry) -> Result<(), SeasonError> {
        let json = serde_json::to_string(e).map_err(|x| io_err(&self.path, x))?;
        writeln!(self.file, "{json}").map_err(|x| io_err(&self.path, x))?;
        self.file.sync_data().map_err(|x| io_err(&self.path, x))
    }

    /// The season is complete: the journal has done its job.
    pub fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// How `old` differs from `new`, in words; None when a resume may go on.
fn mismatch(old: &Header, new: &Header) -> Option<String> {
    let mut d = Vec::new();
    if old.size != new.size {
        d.push(format!("a drive of {} bytes", old.size));
    }
    if old.serial != new.serial {
        d.push(format!(
            "serial {}",
            old.serial.as_deref().unwrap_or("(none)")
        ));
    }
    if old.stages != new.stages {
        d.push(format!("--stages {}", old.stages.join(",")));
    }
    if old.fill_passes != new.fill_passes {
        d.push(format!("--fill-passes {}", old.fill_passes));
    }
    if old.workload != new.workload {
        d.push(format!("--workload '{}'", old.workload));
    }
    if old.round_seconds != new.round_seconds {
        d.push(format!("--round-time {}s", old.round_seconds));
    }
    if old.max_rounds != new.max_rounds {
        d.push(format!("--max-rounds {}", old.max_rounds));
    }
    if old.image != new.image {
        d.push(format!(
            "image {}",
            old.image.as_deref().unwrap_or("(none)")
        ));
    }
    if old.compare != new.compare {
        d.push(format!(
            "--compare {}",
            old.compare.as_deref().unwrap_or("(none)")
        ));
    }
    (!d.is_empty()).then(|| d.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Metrics;

    fn header() -> Header {
        Header {
            device: "/dev/loop9".into(),
            serial: None,
            size: 1 << 30,
            stages: vec!["fill".into(), "rounds".into()],
            fill_passes: 2,
            workload: "rw=randwrite".into(),
            round_seconds: 1.0,
            max_rounds: 25,
            image: None,
            compare: None,
        }
    }

    #[test]
    fn entries_round_trip_and_a_torn_line_is_ignored() {
        let dir = std::env::temp_dir().join(format!("season-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let h = header();
        let (mut j, st) = Journal::begin(&dir, &h, true).unwrap();
        assert!(st.entries.is_empty());
        j.add(&Entry::FillMark {
            pass: 0,
            offset: 4096,
        })
        .unwrap();
        let m = Metrics {
            iops: 10.0,
            bw_bytes: 40960.0,
            lat_mean_ns: 1.0,
            lat_p99_ns: 2.0,
            seconds: 1.0,
        };
        j.add(&Entry::Round(Round {
            round: 1,
            metrics: m,
            bytes_written: 40960,
        }))
        .unwrap();
        let path = j.path.clone();
        drop(j);
        let mut t = std::fs::read_to_string(&path).unwrap();
        t.push_str("{\"round\":{\"rou");
        std::fs::write(&path, t).unwrap();
        let (_, st) = Journal::begin(&dir, &h, true).unwrap();
        assert_eq!(st.fill_mark(0), 4096);
        assert_eq!(st.rounds().len(), 1);
        assert_eq!(st.rounds()[0].metrics, m);
        // A different season is refused, naming what differs.
        let mut other = h.clone();
        other.max_rounds = 7;
        let e = Journal::begin(&dir, &other, true).unwrap_err();
        assert!(e.to_string().contains("--max-rounds 25"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
