//! The exact LBAs of a failed command, as DMM reports them: a read or write
//! that fails after its retries is re-issued in halves, synchronously and
//! with O_DIRECT (the engine's [`narrow`]), down to single logical blocks,
//! and the blocks that keep failing are listed as ranges. Reads go through
//! a second read-only descriptor, writes (of the same pattern) only through
//! the claim. For a read of a device that answers SCSI commands, one
//! single-block SCSI READ of each bad range's first LBA adds the device's
//! decoded sense.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use drivelab_device::claim::Claim;
use drivelab_device::scsi;
use drivelab_device::sg::SgDevice;
use drivelab_device::units::{BlockCount, Lba};
use drivelab_engine::narrow::{aligned, narrow};
use drivelab_patterns::Generator;

use crate::result::BadRange;

/// Most bad ranges asked for their sense (each costs one command).
const SENSE_LIMIT: usize = 16;

/// How the pieces of a failed command are re-issued.
pub enum Reissue<'a> {
    /// Read with this descriptor (O_DIRECT when the step's target is).
    Read(File),
    /// Write the step's pattern through the claim.
    Write(&'a Claim),
}

impl Reissue<'_> {
    /// A read-only descriptor of `path` for narrowing reads.
    pub fn reader(path: &Path, direct: bool) -> std::io::Result<Reissue<'static>> {
        let mut o = OpenOptions::new();
        o.read(true);
        if direct {
            o.custom_flags(libc::O_DIRECT);
        }
        Ok(Reissue::Read(o.open(path)?))
    }
}

/// What narrowing one failed command found.
#[derive(Debug, Default)]
pub struct Reissued {
    /// The blocks that keep failing.
    pub bad: Vec<BadRange>,
    /// Blocks that succeeded when re-issued.
    pub good_blocks: u64,
}

/// Re-issue the failed command `[lba, lba + blocks)` in halves down to
/// single `lbs`-byte blocks. `why`/`errno` is the command's own failure.
/// Each piece read back whole is handed to `on_read(data, first_lba)` (for
/// a compare pass to check it).
#[allow(clippy::too_many_arguments)]
pub fn reissue(
    how: &Reissue<'_>,
    scratch: &mut Vec<u8>,
    gen: &Generator,
    lbs: u64,
    lba: u64,
    blocks: u64,
    errno: i32,
    why: String,
    mut on_read: impl FnMut(&[u8], u64),
) -> Reissued {
    // narrow() deals in messages; remember which errno each one was.
    let mut errnos: Vec<(String, i32)> = vec![(why.clone(), errno)];
    let mut op = |o: u64, l: u64| -> Result<(), String> {
        let len = l as usize;
        let buf = aligned(scratch, len);
        let r = match how {
            Reissue::Read(f) => match f.read_at(buf, o) {
                Ok(k) if k == len => {
                    on_read(buf, o / lbs);
                    Ok(())
                }
                Ok(k) => Err((0, format!("short read: {k} of {len} bytes"))),
                Err(e) => Err((e.raw_os_error().unwrap_or(0), e.to_string())),
            },
            Reissue::Write(c) => {
                gen.fill(buf, o / lbs);
                c.write_at(buf, o)
                    .map_err(|e| (e.raw_os_error().unwrap_or(0), e.to_string()))
            }
        };
        r.map_err(|(n, m)| {
            if !errnos.iter().any(|(k, _)| *k == m) {
                errnos.push((m.clone(), n));
            }
            m
        })
    };
    let n = narrow(lba * lbs, blocks * lbs, lbs, why, &mut op);
    let errno_of = |m: &str| {
        errnos
            .iter()
            .find(|(k, _)| k == m)
            .map(|(_, n)| *n)
            .unwrap_or(0)
    };
    let bad = n
        .bad
        .into_iter()
        .map(|(o, l, message)| {
            let (first, count) = (o / lbs, l / lbs);
            BadRange {
                first,
                last: first + count - 1,
                count,
                errno: errno_of(&message),
                message,
                sense: None,
            }
        })
        .collect();
    Reissued {
        bad,
        good_blocks: n.good / lbs,
    }
}

/// Add the device's sense to each bad range (the first [`SENSE_LIMIT`]):
/// one single-block SCSI READ of its first LBA through a read-only handle.
/// Nothing happens for a device that does not answer SCSI commands.
pub fn add_read_sense(path: &Path, lbs: u64, bad: &mut [BadRange]) {
    let Ok(dev) = SgDevice::open(path) else {
        return;
    };
    if !dev.answers_sg() {
        return;
    }
    let mut buf = vec![0u8; lbs as usize];
    for b in bad.iter_mut().take(SENSE_LIMIT) {
        if let Err(e) = scsi::read(&dev, Lba(b.first), BlockCount(1), &mut buf) {
            b.sense = Some(match e.sense() {
                Some(s) => s.describe(),
                None => e.to_string(),
            });
        }
    }
}
