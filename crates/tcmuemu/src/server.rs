//! The serving loop: take every command the kernel put in the ring, have
//! the drive answer it, complete it, tell the kernel, write the state
//! file, and sleep on the UIO device until more arrive. A command a fault
//! delays is carried out at once (the state file then written) and
//! answered after its delay, the loop serving nothing meanwhile.

use std::path::PathBuf;

use drivelab_device::block::uio::{UioError, UioMap};

use crate::disk::Disk;
use crate::faults::Faults;
use crate::ring::{Ring, RingError};

/// What stopped the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The ring.
    #[error(transparent)]
    Ring(#[from] RingError),
    /// Waiting on or notifying the UIO device.
    #[error(transparent)]
    Uio(#[from] UioError),
    /// The state file.
    #[error("state file {path}: {source}")]
    State {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Answer every command now in the ring, except those a fault holds;
/// returns how many were answered. A command a fault delays is carried
/// out at once and `held` is shown the drive (the state file written, so
/// a test sees the command arrive) before its answer waits.
pub fn drain<M: crate::ring::Shared>(
    ring: &mut Ring<M>,
    disk: &mut Disk,
    faults: &Faults,
    held: &mut dyn FnMut(&Disk),
) -> Result<usize, RingError> {
    let mut n = 0;
    while let Some(req) = ring.take()? {
        if faults.hangs(&req.cdb) {
            disk.counters.unanswered += 1;
            continue;
        }
        let out = if crate::cdb::is_data_out(&req.cdb) {
            ring.data_out(&req)?
        } else {
            Vec::new()
        };
        let rsp = disk.execute(&req.cdb, &out);
        if let Some(d) = faults.delay(&req.cdb) {
            held(disk);
            std::thread::sleep(d);
        }
        ring.complete(&req, &rsp)?;
        n += 1;
    }
    Ok(n)
}

/// Where faults come from: the command line's, and a control file's.
#[derive(Debug, Clone, Default)]
pub struct FaultSource {
    /// `--fault` lines.
    pub fixed: Faults,
    /// `--control FILE`.
    pub control: Option<PathBuf>,
}

impl FaultSource {
    /// The control file's text, when it has changed since `seen` (its
    /// modification time, updated).
    fn changed(&self, seen: &mut Option<std::time::SystemTime>) -> Option<String> {
        let p = self.control.as_ref()?;
        let m = std::fs::metadata(p).and_then(|m| m.modified()).ok()?;
        if *seen == Some(m) {
            return None;
        }
        *seen = Some(m);
        std::fs::read_to_string(p).ok()
    }
}

/// Arm the one-shot faults `f` names: the next sanitize (failed or
/// stalled), the next SECURITY ERASE UNIT.
fn arm(disk: &mut Disk, f: &Faults) {
    if f.sanitize_fail {
        disk.sanitize_mut().fail_next = true;
    }
    if f.sanitize_stall {
        disk.sanitize_mut().stall_next = true;
    }
    if let Some(a) = disk.ata.as_mut().filter(|_| f.erase_fail) {
        a.security.fail_next_erase = true;
    }
}

/// Serve the drive on `ring` until an error: drain, notify, record, wait.
/// A control file that changes is read before the next batch; a bad line
/// there is reported on stderr and the faults stay as they were.
pub fn serve(
    mut ring: Ring<UioMap>,
    mut disk: Disk,
    state: Option<PathBuf>,
    source: FaultSource,
) -> Result<(), ServeError> {
    let record = |disk: &Disk| -> Result<(), ServeError> {
        match &state {
            Some(p) => crate::state::write(p, disk).map_err(|source| ServeError::State {
                path: p.clone(),
                source,
            }),
            None => Ok(()),
        }
    };
    let mut faults = source.fixed.clone();
    let mut seen = None;
    arm(&mut disk, &faults);
    record(&disk)?;
    loop {
        if let Some(text) = source.changed(&mut seen) {
            match Faults::parse(&text) {
                Ok(f) => {
                    faults = source.fixed.with(&f);
                    arm(&mut disk, &f);
                }
                Err(e) => eprintln!("drivelab-tcmuemu: control file: {e}"),
            }
        }
        let before = disk.counters.unanswered;
        let mut held = |d: &Disk| {
            if let Err(e) = record(d) {
                eprintln!("drivelab-tcmuemu: {e}");
            }
        };
        if drain(&mut ring, &mut disk, &faults, &mut held)? > 0 {
            ring.mem_mut().notify()?;
            record(&disk)?;
        } else if disk.counters.unanswered != before {
            record(&disk)?;
        }
        if !ring.pending()? {
            ring.mem_mut().wait()?;
        }
    }
}
