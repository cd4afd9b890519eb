//! fio's `ioscheduler`: the I/O scheduler of a claimed whole block device,
//! switched for a run through sysfs (`/sys/block/NAME/queue/scheduler`)
//! and switched back when the run lets go of it. Only a claim's own
//! device: a regular file's filesystem device or a partition's disk is
//! shared with what else uses it, so neither is switched.

use std::path::PathBuf;

use super::Claim;

/// Why the scheduler was not switched.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// The claim is of a regular file.
    #[error("ioscheduler: {0} is a file; the scheduler belongs to a block device, give one the job writes")]
    NotDevice(PathBuf),
    /// The claim is of a partition, whose scheduler is its disk's.
    #[error("ioscheduler: {0} is a partition; its scheduler is its whole disk's, which the job does not claim")]
    Partition(String),
    /// The device does not offer the scheduler asked for.
    #[error("ioscheduler: {device} has no scheduler '{asked}'; it offers {offered}")]
    Unknown {
        /// The device's kernel name.
        device: String,
        /// The name asked for.
        asked: String,
        /// What the device's scheduler file lists.
        offered: String,
    },
    /// Reading or writing the sysfs file failed.
    #[error("ioscheduler: {path}: {source}")]
    Io {
        /// The sysfs file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// A switched scheduler: the one in use before is written back on drop.
#[derive(Debug)]
pub struct SchedulerSwitch {
    path: PathBuf,
    before: String,
}

/// The schedulers a `queue/scheduler` line lists, and the one in use
/// (in brackets): "[none] mq-deadline kyber" → (["none", "mq-deadline",
/// "kyber"], "none").
pub fn parse_schedulers(line: &str) -> (Vec<String>, Option<String>) {
    let mut current = None;
    let names = line
        .split_whitespace()
        .map(
            |w| match w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                Some(n) => {
                    current = Some(n.to_string());
                    n.to_string()
                }
                None => w.to_string(),
            },
        )
        .collect();
    (names, current)
}

impl Claim {
    /// Switch the claimed device's I/O scheduler to `name` until the
    /// returned value is dropped.
    pub fn switch_scheduler(&self, name: &str) -> Result<SchedulerSwitch, SchedulerError> {
        let dev = self
            .device()
            .ok_or_else(|| SchedulerError::NotDevice(self.path().to_path_buf()))?;
        let sys = PathBuf::from("/sys/class/block").join(&dev.name);
        if sys.join("partition").exists() {
            return Err(SchedulerError::Partition(dev.name.clone()));
        }
        let path = sys.join("queue/scheduler");
        let io = |source| SchedulerError::Io {
            path: path.clone(),
            source,
        };
        let line = std::fs::read_to_string(&path).map_err(io)?;
        let (names, current) = parse_schedulers(&line);
        if !names.iter().any(|n| n == name) {
            return Err(SchedulerError::Unknown {
                device: dev.name.clone(),
                asked: name.to_string(),
                offered: names.join(", "),
            });
        }
        let before = current.unwrap_or_else(|| "none".to_string());
        std::fs::write(&path, name).map_err(io)?;
        Ok(SchedulerSwitch { path, before })
    }
}

impl SchedulerSwitch {
    /// The scheduler in use before the switch.
    pub fn before(&self) -> &str {
        &self.before
    }
}

impl Drop for SchedulerSwitch {
    fn drop(&mut self) {
        // Nothing to report to on drop: a device gone since keeps nothing.
        let _ = std::fs::write(&self.path, &self.before);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bracketed_scheduler_is_the_one_in_use() {
        let (names, cur) = parse_schedulers("[none] mq-deadline kyber bfq\n");
        assert_eq!(names, ["none", "mq-deadline", "kyber", "bfq"]);
        assert_eq!(cur.as_deref(), Some("none"));
        let (_, cur) = parse_schedulers("none [mq-deadline]");
        assert_eq!(cur.as_deref(), Some("mq-deadline"));
    }
}
