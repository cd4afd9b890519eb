//! The engines, one file each; every one implements
//! [`Engine`](crate::engine::interface::Engine).
//!
//! - [`uring`]: io_uring with registered files and buffers, fio's io_uring
//!   options; [`ring`]: the ring plumbing it shares with [`ucmd`].
//! - [`psync`]: `pread`/`pwrite` and fio's pvsync2.
//! - [`null`]: completes every I/O at once: the pipeline's own cost.
//! - [`sg`]: fio's `sg` engine: each I/O one SCSI command through SG_IO,
//!   with fio's `sg_write_mode`s (WRITE SAME, VERIFY with BYTCHK, ...).
//! - [`ucmd`]: fio's `io_uring_cmd` engine: each I/O one NVMe Read or
//!   Write sent through io_uring passthrough to /dev/ngXnY.
//! - [`fileops`]: fio's filesystem engines (filecreate, filestat,
//!   filedelete, their directory twins, ftruncate, falloc): one file
//!   operation per I/O.
//! - [`e4defrag`]: fio's e4defrag engine: each write an ext4
//!   `EXT4_IOC_MOVE_EXT` moving a donor file's blocks under the target.
//! - [`oneshot`]: the engine shape of the synchronous engines above (and
//!   the net engine): one operation per I/O, at depth 1, written once.

pub mod e4defrag;
pub mod fileops;
pub mod null;
pub mod oneshot;
pub mod psync;
pub mod ring;
pub mod sg;
pub mod ucmd;
pub mod uring;

#[cfg(test)]
mod tests;
