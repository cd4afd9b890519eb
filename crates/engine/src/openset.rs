//! fio's `openfiles`: a job whose files are not all open at once. The
//! files are a claimed [`FileSet`]; the job loop's open set says when file
//! `i` is opened and when it is closed ([`crate::engine::Engine::open_file`],
//! [`crate::engine::Engine::close_file`]), and an [`Opener`] gives the
//! engine the descriptor, opened through the set (created first under
//! fio's `create_on_open`).
//!
//! The engines keep a table of the job's files sized once (per file: its
//! open [`Target`] or none). io_uring registers a sparse table of as many
//! entries as files may be open at once and points an entry at a file's
//! descriptor when it opens (`IORING_REGISTER_FILES_UPDATE`), and back at
//! nothing when it closes; nothing is allocated per I/O.

use std::sync::Arc;

use drivelab_device::claim::FileSet;

use crate::target::Target;

/// Opens the files of a job, each through its claimed set.
#[derive(Debug, Clone)]
pub struct Opener {
    set: Arc<FileSet>,
    /// Per target of the job: its place in the set.
    index: Vec<usize>,
    direct: bool,
    create: bool,
    /// Files open at once at most.
    limit: u32,
}

impl Opener {
    /// The job's targets are `index` in `set`; `direct` opens them
    /// `O_DIRECT`, `create` creates a missing one (fio's `create_on_open`);
    /// at most `limit` are open at once.
    pub fn new(
        set: Arc<FileSet>,
        index: Vec<usize>,
        direct: bool,
        create: bool,
        limit: u32,
    ) -> Opener {
        Opener {
            set,
            index,
            direct,
            create,
            limit: limit.max(1),
        }
    }

    /// How many targets the job has.
    pub fn targets(&self) -> usize {
        self.index.len()
    }

    /// The most files open at once.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Open target `t` for I/O.
    pub fn open(&self, t: u32) -> std::io::Result<Target> {
        let i = *self
            .index
            .get(t as usize)
            .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        Target::from_set(&self.set, i, self.direct, self.create)
    }
}
