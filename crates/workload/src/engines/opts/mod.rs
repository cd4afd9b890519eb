//! The option blocks of the engines: each engine's options, declared in
//! its file beside the block a job spec holds, how they are set and their
//! checks against the job. They import nothing of the crate beyond the
//! spec's value parsers, declarations and kinds, so [`crate::spec`] can
//! hold and list them while the engines' own code, which reads plans and
//! runs jobs, sits above it.

pub mod e4defrag;
pub mod files;
pub mod io;
pub mod net;
pub mod noio;
pub mod sg;

use crate::spec::decl::OptionDecl;
use crate::SpecError;

/// Every engine's option block, as a job spec holds them. A key set for an
/// engine other than the one chosen is kept in its block, so that the
/// checks can refuse it by name whatever order the keys came in. An engine
/// with options of its own adds its block here, its row in [`BLOCKS`] and
/// its file beside this one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineBlocks {
    /// fio's engine options of io_uring, io_uring_cmd, libaio and pvsync2
    /// (`cmd_type`, `hipri`, `fixedbufs`, `registerfiles`, `sqthread_poll`,
    /// `sqthread_poll_cpu`, `nonvectored`, `nowait`, `force_async`,
    /// `userspace_reap`, `hipri_percentage`).
    pub io: crate::engines::opts::io::EngineOpts,
    /// The sg engine's options (`sg_write_mode`, `stream_id`, `readfua`, `writefua`).
    pub sg: sg::SgSpec,
    /// The e4defrag engine's `donorname` and `inplace`.
    pub e4defrag: e4defrag::DefragOpts,
    /// The cpuio and exec engines and their options.
    pub noio: noio::NoIoOpts,
    /// The net engine's options (`protocol`, `hostname`, `port`, …).
    pub net: net::NetOpts,
}

/// One engine's option block as the job spec sees it.
pub struct Block {
    /// The fio engines that take these options (`run --help` lists the
    /// options under them).
    pub engines: &'static str,
    /// The options, declared in the block's file.
    pub options: &'static [OptionDecl],
    /// Set one of [`Block::options`] (its canonical name) in the block.
    pub set: fn(&mut EngineBlocks, &'static str, &str) -> Result<(), SpecError>,
    /// The block's checks against the whole job, asked of every block
    /// whichever engine the job chose: a key the job's engine does not
    /// take is refused here, by name.
    pub check: fn(&crate::JobSpec) -> Result<(), SpecError>,
}

/// Every engine's option block, in the order `run --help` lists them.
pub const BLOCKS: &[Block] = &[
    Block {
        engines: "io_uring, io_uring_cmd, libaio, pvsync2",
        options: io::OPTIONS,
        set: |b, k, v| b.io.set(k, v),
        check: io::check,
    },
    Block {
        engines: "sg",
        options: sg::OPTIONS,
        set: |b, k, v| b.sg.set(k, v),
        check: sg::check,
    },
    Block {
        engines: "net",
        options: net::OPTIONS,
        set: |b, k, v| b.net.set(k, v),
        check: |_| Ok(()),
    },
    Block {
        engines: "e4defrag",
        options: e4defrag::DefragOpts::OPTIONS,
        set: |b, k, v| b.e4defrag.set(k, v),
        check: |_| Ok(()),
    },
    Block {
        engines: "cpuio",
        options: noio::CpuOpts::OPTIONS,
        set: |b, k, v| b.noio.cpu.set(k, v),
        check: |_| Ok(()),
    },
    Block {
        engines: "exec",
        options: noio::ExecOpts::OPTIONS,
        set: |b, k, v| b.noio.exec.set(k, v),
        check: |_| Ok(()),
    },
];

/// The block that declares option `key` (a canonical name), if an engine's.
pub fn block_of(key: &str) -> Option<&'static Block> {
    BLOCKS
        .iter()
        .find(|b| b.options.iter().any(|d| d.name == key))
}

/// Every engine's own options, block by block.
pub fn options() -> impl Iterator<Item = &'static OptionDecl> {
    BLOCKS.iter().flat_map(|b| b.options.iter())
}
