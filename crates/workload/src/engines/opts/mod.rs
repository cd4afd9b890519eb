//! The option blocks of the engines: each engine's keys, parsed into the
//! block a job spec holds. They import nothing of the crate beyond the
//! shared value parsers, so [`crate::spec::jobspec`] can hold them while the
//! engines' own code, which reads whole job specs and plans, sits above it.

pub mod e4defrag;
pub mod files;
pub mod net;
pub mod noio;
pub mod sg;

/// Every engine's option block, as a job spec holds them. A key set for an
/// engine other than the one chosen is kept in its block, so that the
/// checks can refuse it by name whatever order the keys came in. An engine
/// with options of its own adds its block here and its file beside this one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineBlocks {
    /// fio's engine options of io_uring, io_uring_cmd, libaio and pvsync2
    /// (`cmd_type`, `hipri`, `fixedbufs`, `registerfiles`, `sqthread_poll`,
    /// `sqthread_poll_cpu`, `nonvectored`, `nowait`, `force_async`,
    /// `userspace_reap`, `hipri_percentage`).
    pub io: crate::engines::engine_opts::EngineOpts,
    /// The sg engine's options (`sg_write_mode`, `stream_id`, `readfua`, `writefua`).
    pub sg: sg::SgSpec,
    /// The e4defrag engine's `donorname` and `inplace`.
    pub e4defrag: e4defrag::DefragOpts,
    /// The cpuio and exec engines and their options.
    pub noio: noio::NoIoOpts,
    /// The net engine's options (`protocol`, `hostname`, `port`, …).
    pub net: net::NetOpts,
}
