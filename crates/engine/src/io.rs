//! What one I/O is: the operation, the target index, offset and length.
//! Every engine queues these and every driver of the I/O loop produces them.

/// What an I/O does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Read `len` bytes at `offset`.
    Read,
    /// Write `len` bytes at `offset`.
    Write,
    /// Discard `len` bytes at `offset`.
    Trim,
    /// Flush the target's volatile cache (fsync).
    Fsync,
    /// Flush the target's data, not its metadata (fdatasync; a flush
    /// where the engine has no such distinction).
    Fdatasync,
    /// Start or wait for writeback of `len` bytes at `offset`
    /// (sync_file_range(2)); the value is its SYNC_FILE_RANGE_* flags.
    SyncRange(u32),
}

impl Op {
    /// Index into per-direction arrays: read 0, write 1, trim 2, sync 3
    /// (both syncs).
    #[inline]
    pub fn index(self) -> usize {
        match self {
            Op::Read => 0,
            Op::Write => 1,
            Op::Trim => 2,
            Op::Fsync | Op::Fdatasync | Op::SyncRange(_) => 3,
        }
    }

    /// Whether it is one of the syncs (no data; only a range sync has an
    /// offset and length).
    #[inline]
    pub fn is_sync(self) -> bool {
        matches!(self, Op::Fsync | Op::Fdatasync | Op::SyncRange(_))
    }
}

/// One I/O to issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoDesc {
    /// Index of the target in the job's target list.
    pub target: u32,
    /// The operation.
    pub op: Op,
    /// Byte offset on the target.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
}
