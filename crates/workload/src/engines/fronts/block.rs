//! The fronts of fio's block engines drivelab runs on its own loop engines:
//! io_uring (fio's `io_uring`, `libaio`, `posixaio`), psync (`psync`,
//! `sync`, `vsync`, `pvsync`, `pvsync2`, and `mmap`, `splice`, whose reads and
//! writes of the files are the same) and null (`null`, `cpp_null`).

use drivelab_engine::engine::{Null, Psync, Uring};

use crate::engines::front::EngineFront;
use crate::job::outcome::JobOutcome;
use crate::run::error::RunError;
use crate::run::start::JobRun;
use crate::spec::kinds::EngineKind;

/// io_uring with registered buffers and files.
pub struct IoUringFront;

/// The io_uring front.
pub static IO_URING: IoUringFront = IoUringFront;

impl EngineFront for IoUringFront {
    fn names(&self) -> &'static [&'static str] {
        &["io_uring", "libaio", "posixaio"]
    }

    fn choose(&self, spec: &mut crate::JobSpec, name: &str) {
        super::choose_kind(spec, EngineKind::IoUring, name);
    }

    fn queues(&self) -> bool {
        true
    }

    fn run(&self, r: JobRun<'_>) -> Result<JobOutcome, RunError> {
        let spec = &r.job.spec;
        let max_bs = spec.max_bs() as usize;
        let made = |source| RunError::Engine {
            engine: "io_uring",
            source,
        };
        let fill = spec.buffers.fill(spec.randseed);
        let o = spec.engine.io.uring(spec.fio_engine());
        let mut e = if crate::engines::files::lazy(r.job) {
            // fio's openfiles/create_on_open: the job's open set opens
            // its files through their claimed set.
            let opener = r.sets.opener(r.job).map_err(made)?;
            Uring::over_opener(opener, spec.iodepth, max_bs, spec.fua, fill, o).map_err(made)?
        } else {
            let targets = r.open_targets()?;
            Uring::with_options(targets, spec.iodepth, max_bs, spec.fua, fill, o).map_err(made)?
        }
        .with_write_flags(spec.syncs.sync.write_flags());
        r.start_and_run(&mut e)
    }
}

/// pread/pwrite, one I/O at a time per job.
pub struct PsyncFront;

/// The psync front.
pub static PSYNC: PsyncFront = PsyncFront;

impl EngineFront for PsyncFront {
    fn names(&self) -> &'static [&'static str] {
        &[
            "psync", "sync", "vsync", "pvsync", "pvsync2", "mmap", "splice",
        ]
    }

    fn choose(&self, spec: &mut crate::JobSpec, name: &str) {
        super::choose_kind(spec, EngineKind::Psync, name);
    }

    fn run(&self, r: JobRun<'_>) -> Result<JobOutcome, RunError> {
        let spec = &r.job.spec;
        let max_bs = spec.max_bs() as usize;
        let made = |source| RunError::Engine {
            engine: "psync",
            source,
        };
        let fill = spec.buffers.fill(spec.randseed);
        let mut e = if crate::engines::files::lazy(r.job) {
            // fio's openfiles/create_on_open: the job's open set opens
            // its files through their claimed set.
            let opener = r.sets.opener(r.job).map_err(made)?;
            Psync::over_opener(opener, max_bs, spec.fua, fill).map_err(made)?
        } else {
            let targets = r.open_targets()?;
            Psync::new(targets, max_bs, spec.fua, fill).map_err(made)?
        }
        .with_options(spec.engine.io.psync(spec.fio_engine()))
        .with_write_flags(spec.syncs.sync.write_flags());
        r.start_and_run(&mut e)
    }
}

/// No I/O at all: measures the pipeline.
pub struct NullFront;

/// The null front.
pub static NULL: NullFront = NullFront;

impl EngineFront for NullFront {
    fn names(&self) -> &'static [&'static str] {
        &["null", "cpp_null"]
    }

    fn choose(&self, spec: &mut crate::JobSpec, name: &str) {
        super::choose_kind(spec, EngineKind::Null, name);
    }

    fn on_targets(&self) -> bool {
        false
    }

    fn run(&self, r: JobRun<'_>) -> Result<JobOutcome, RunError> {
        let spec = &r.job.spec;
        let fill = spec.buffers.fill(spec.randseed);
        let mut e = Null::new(spec.iodepth, spec.max_bs() as usize, fill).map_err(|source| {
            RunError::Engine {
                engine: "null",
                source,
            }
        })?;
        r.start_and_run(&mut e)
    }
}
