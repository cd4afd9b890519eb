//! The serving loop: take every command the kernel put in the ring, have
//! the drive answer it, complete it, tell the kernel, write the state
//! file, and sleep on the UIO device until more arrive.

use std::path::PathBuf;

use drivelab_device::block::uio::{UioError, UioMap};

use crate::disk::Disk;
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

/// Answer every command now in the ring; returns how many.
pub fn drain<M: crate::ring::Shared>(
    ring: &mut Ring<M>,
    disk: &mut Disk,
) -> Result<usize, RingError> {
    let mut n = 0;
    while let Some(req) = ring.take()? {
        let out = if crate::cdb::is_data_out(&req.cdb) {
            ring.data_out(&req)?
        } else {
            Vec::new()
        };
        let rsp = disk.execute(&req.cdb, &out);
        ring.complete(&req, &rsp)?;
        n += 1;
    }
    Ok(n)
}

/// Serve the drive on `ring` until an error: drain, notify, record, wait.
pub fn serve(
    mut ring: Ring<UioMap>,
    mut disk: Disk,
    state: Option<PathBuf>,
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
    record(&disk)?;
    loop {
        if drain(&mut ring, &mut disk)? > 0 {
            ring.mem_mut().notify()?;
            record(&disk)?;
        }
        if !ring.pending()? {
            ring.mem_mut().wait()?;
        }
    }
}
