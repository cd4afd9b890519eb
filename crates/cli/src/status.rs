//! `drivelab run --status-interval=TIME` on the command line: the value,
//! and where the snapshots go. As fio does, every snapshot is the full
//! output in the chosen format(s) (a whole JSON object, terse lines, the
//! text), written to standard output or to `--output`, and the final
//! result follows the last one in the same place; in a file they are
//! appended in order, in the temporary file the device crate's output rules
//! give it beside `--output`, which replaces the old file when the run ends
//! (so a failed run leaves the old file whole). The snapshots themselves
//! are built by `drivelab_workload::run::status`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use drivelab_device::output::{Output, OutputFile};
use drivelab_workload::run::status::MIN_INTERVAL;

use crate::error::usage;
use crate::output::OutputArgs;

/// Parse `--status-interval`'s value: bare numbers are seconds, with `ms`,
/// `s`, `m`, `h` as fio takes them; at least 1 ms (fio's lower bound).
pub fn parse_status_interval(v: &str) -> anyhow::Result<Duration> {
    let d = crate::progress::parse_interval("--status-interval", v)?;
    if d < MIN_INTERVAL {
        return Err(usage(format!(
            "--status-interval={v}: too short; give at least 1ms (e.g. 1 for every second)"
        )));
    }
    Ok(d)
}

/// Where the snapshots and then the final result are written.
pub struct Sink {
    /// `--output`, when given.
    path: Option<PathBuf>,
    /// The file, once the first snapshot created it.
    file: Option<OutputFile>,
    /// Snapshots written so far.
    written: usize,
    /// Text among the formats: outputs are separated by a blank line.
    text: bool,
    /// A snapshot that could not be written to `--output`: no more are
    /// tried, and the run ends with this error once the final result is out.
    failed: Option<String>,
}

impl Sink {
    /// A sink for `--output` `path` (None: standard output).
    pub fn new(path: Option<PathBuf>, text: bool) -> Sink {
        Sink {
            path: path.filter(|p| !crate::output::is_stdout(p)),
            file: None,
            written: 0,
            text,
            failed: None,
        }
    }

    fn separated(&self, text: &str) -> String {
        if self.text && self.written > 0 {
            format!("\n{text}")
        } else {
            text.to_string()
        }
    }

    /// Write one snapshot.
    pub fn snapshot(&mut self, text: &str) {
        if self.failed.is_some() {
            return;
        }
        let out = self.separated(text);
        let r = match &self.path {
            None => {
                let mut o = std::io::stdout().lock();
                o.write_all(out.as_bytes()).and_then(|_| o.flush())
            }
            Some(p) => {
                if self.file.is_none() {
                    // The snapshots and the result replace the file, as the
                    // final result alone would.
                    match Output::new(p).option("--output").create() {
                        Ok(f) => self.file = Some(f),
                        Err(e) => {
                            self.fail(std::io::Error::other(e.to_string()));
                            return;
                        }
                    }
                }
                match self.file.as_mut() {
                    Some(f) => f.write_all(out.as_bytes()).and_then(|_| f.flush()),
                    None => Ok(()),
                }
            }
        };
        match r {
            Ok(()) => self.written += 1,
            Err(e) => self.fail(e),
        }
    }

    fn fail(&mut self, e: std::io::Error) {
        let where_ = self
            .path
            .as_ref()
            .map_or("standard output".to_string(), |p| p.display().to_string());
        self.failed = Some(format!(
            "--status-interval: cannot write a snapshot to {where_}: {e}; no more snapshots were written"
        ));
    }

    /// Write the final result `text` after the snapshots: appended to the
    /// file that holds them, else as `out` writes results.
    pub fn finish(mut self, out: &OutputArgs, text: &str) -> anyhow::Result<()> {
        let text = self.separated(text);
        match self.file.take() {
            Some(mut f) if self.failed.is_none() => {
                let done = f
                    .write_all(text.as_bytes())
                    .map_err(|e| e.to_string())
                    .and_then(|_| f.commit().map_err(|e| e.to_string()));
                done.map_err(|e| {
                    let what = format!(
                        "cannot write the results to {}: {e}",
                        self.path
                            .as_ref()
                            .map_or(String::new(), |p| p.display().to_string())
                    );
                    crate::output::rescue(&text, what)
                })?;
            }
            _ => out.emit(&text)?,
        }
        match self.failed {
            Some(msg) => Err(anyhow::Error::new(crate::error::LateWriteError(msg))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_fio_times_of_at_least_a_millisecond() {
        assert_eq!(parse_status_interval("1").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_status_interval("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(
            parse_status_interval("500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(
            parse_status_interval("1m").unwrap(),
            Duration::from_secs(60)
        );
        for bad in ["0", "soon", "-1", "0.5ms", ""] {
            let e = parse_status_interval(bad).unwrap_err().to_string();
            assert!(e.starts_with("--status-interval="), "{bad}: {e}");
            assert_eq!(
                crate::error::exit_status(&parse_status_interval(bad).unwrap_err()),
                2
            );
        }
    }

    #[test]
    fn snapshots_and_the_final_result_share_the_output_file() {
        let dir = std::env::temp_dir().join(format!("drivelab-status-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.txt");
        std::fs::write(&path, "old contents\n").unwrap();
        let out = OutputArgs {
            output: Some(path.clone()),
            ..OutputArgs::default()
        };
        let mut s = Sink::new(Some(path.clone()), true);
        s.snapshot("one\n");
        s.snapshot("two\n");
        s.finish(&out, "final\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "one\n\ntwo\n\nfinal\n"
        );
        // No snapshot: the final result replaces the file as without the option.
        let s = Sink::new(Some(path.clone()), false);
        s.finish(&out, "{}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
