//! The image restore stage (the seed's "twist of randomness"): a user's
//! image file written onto the drive sector by sector (byte `i` of the
//! image to byte `i` of the drive, as a raw copy), or the writes of a
//! block trace replayed as fast as the drive takes them (reads, trims and
//! flushes of the trace are left out; offsets past the drive wrap).
//! Both go through the one I/O loop on the drive's claim. A restore that
//! is interrupted starts again from the beginning on resume: it is the
//! same data at the same places.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Instant;

use drivelab_device::claim::Claim;
use drivelab_engine::buf::Fill;
use drivelab_engine::engine::{Target, Uring};
use drivelab_replay::{Remap, ReplayOptions, Timing};
use drivelab_trace::{Op, ReadOptions};

use crate::result::Image;
use crate::seqwrite::{self, SeqJob, Source};
use crate::SeasonError;

/// Check an image or trace before anything is written: readable, and an
/// image no larger than the drive.
pub fn check(image: Option<&Path>, trace: Option<&Path>, size: u64) -> Result<(), SeasonError> {
    if let Some(p) = image {
        let md = drivelab_device::input::check_regular(p, drivelab_device::input::Kind::Image)
            .map_err(|e| SeasonError::BadOption(format!("--image: {e}")))?;
        if md.len() > size {
            return Err(SeasonError::BadOption(format!(
                "--image {} ({} bytes) is larger than the drive ({size} bytes); give a smaller image",
                p.display(),
                md.len()
            )));
        }
    }
    if let Some(p) = trace {
        drivelab_trace::open_file(p, None, ReadOptions::default())
            .map_err(|e| SeasonError::BadOption(format!("--image-trace {}: {e}", p.display())))?;
    }
    Ok(())
}

/// Write the image `path` onto the drive. None when stopped.
pub fn restore_image(
    claim: &Claim,
    path: &Path,
    stop: &AtomicBool,
    done: &AtomicU64,
) -> Result<Option<Image>, SeasonError> {
    // Checked before the run (`check`); a file swapped since is a failure.
    let f =
        drivelab_device::input::open(path, drivelab_device::input::Kind::Image).map_err(|e| {
            SeasonError::Io {
                device: claim.path().display().to_string(),
                what: format!("open the image {}", path.display()),
                source: std::io::Error::other(e),
            }
        })?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let lbs = u64::from(claim.logical_block().max(512));
    let end = len.div_ceil(lbs) * lbs;
    let job = SeqJob {
        claim,
        start: 0,
        end: end.min(claim.size()),
        xfer: 1 << 20,
        depth: 32,
        bucket: end.max(1),
        source: Source::File(&f),
        stop,
        done,
    };
    let o = seqwrite::write(&job, &mut |_| Ok(()))?;
    if o.interrupted {
        return Ok(None);
    }
    Ok(Some(Image {
        source: path.to_path_buf(),
        kind: "image".into(),
        bytes: o.bytes,
        seconds: o.seconds,
        writes: o.writes,
    }))
}

/// Replay the writes of the trace `path` onto the drive. None when stopped.
pub fn replay_trace(
    claim: &Claim,
    path: &Path,
    stop: &AtomicBool,
) -> Result<Option<Image>, SeasonError> {
    let dev = claim.path().display().to_string();
    let bad = |e: String| SeasonError::Command {
        device: dev.clone(),
        what: format!("replay of {}", path.display()),
        why: e,
    };
    let writes = |r: &drivelab_trace::Result<drivelab_trace::Request>| {
        r.as_ref().map(|q| q.op == Op::Write).unwrap_or(true)
    };
    let (_, reader) = drivelab_trace::open_file(path, None, ReadOptions::default())
        .map_err(|e| bad(e.to_string()))?;
    let pre = drivelab_replay::prepass(reader.filter(writes)).map_err(|e| bad(e.to_string()))?;
    let lbs = u64::from(claim.logical_block().max(512));
    let max_len = pre.max_len.max(lbs).div_ceil(lbs) * lbs;
    let target = Target::claimed(claim, true).map_err(|e| SeasonError::Io {
        device: dev.clone(),
        what: "open for writing".into(),
        source: e,
    })?;
    let mut engine = Uring::new(
        vec![target],
        32,
        max_len as usize,
        false,
        Fill::Random(0x5ea5),
    )
    .map_err(|e| SeasonError::Io {
        device: dev.clone(),
        what: "set up io_uring".into(),
        source: e,
    })?;
    let o = ReplayOptions {
        timing: Timing::NoStall,
        remap: Remap::Wrap,
        target_size: claim.size(),
        logical_block: lbs,
        trace_extent: pre.extent,
    };
    let (_, reader) = drivelab_trace::open_file(path, None, ReadOptions::default())
        .map_err(|e| bad(e.to_string()))?;
    let t0 = Instant::now();
    let rep = drivelab_replay::replay(&mut engine, reader.filter(writes), &o, stop)
        .map_err(|e| bad(e.to_string()))?;
    if let Some(e) = rep.first_error {
        return Err(bad(e));
    }
    if rep.interrupted {
        return Ok(None);
    }
    claim.sync().map_err(|e| SeasonError::Io {
        device: dev.clone(),
        what: "flush".into(),
        source: e,
    })?;
    Ok(Some(Image {
        source: path.to_path_buf(),
        kind: "trace".into(),
        bytes: rep.bytes_written,
        seconds: t0.elapsed().as_secs_f64(),
        writes: rep.writes,
    }))
}
