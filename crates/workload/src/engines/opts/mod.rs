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
    /// Every engine option the job set, first set first (for the checks
    /// that refuse one its engine does not take).
    pub keys_set: Vec<&'static str>,
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
        check: |s| only_with(s, "sg", sg::OPTIONS),
    },
    Block {
        engines: "net",
        options: net::OPTIONS,
        set: |b, k, v| b.net.set(k, v),
        check: |s| only_with(s, "net", net::OPTIONS),
    },
    Block {
        engines: "e4defrag",
        options: e4defrag::DefragOpts::OPTIONS,
        set: |b, k, v| b.e4defrag.set(k, v),
        check: |s| only_with(s, "e4defrag", e4defrag::DefragOpts::OPTIONS),
    },
    Block {
        engines: "cpuio",
        options: noio::CpuOpts::OPTIONS,
        set: |b, k, v| b.noio.cpu.set(k, v),
        check: |s| only_with(s, "cpuio", noio::CpuOpts::OPTIONS),
    },
    Block {
        engines: "exec",
        options: noio::ExecOpts::OPTIONS,
        set: |b, k, v| b.noio.exec.set(k, v),
        check: |s| only_with(s, "exec", noio::ExecOpts::OPTIONS),
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

/// The engine as the job names it in fio's terms: as written
/// (`libaio`, `pvsync2`), else its front's own name (`e4defrag`, `cpuio`).
pub fn fio_name(spec: &crate::JobSpec) -> &str {
    spec.ioengine_as_written
        .as_deref()
        .unwrap_or(spec.front.name())
}

/// The check of a block whose options one fio engine takes: the first of
/// `options` the job set, when the job's engine is another, is refused by
/// name (fio: "unrecognized option").
fn only_with(spec: &crate::JobSpec, engine: &str, options: &[OptionDecl]) -> Result<(), SpecError> {
    let used = fio_name(spec);
    if used == engine {
        return Ok(());
    }
    match spec
        .engine
        .keys_set
        .iter()
        .find(|k| options.iter().any(|d| d.name == **k))
    {
        Some(k) => Err(SpecError::Invalid(format!(
            "job '{}': {k} is an option of ioengine={engine} (this job uses {used}); drop it or set ioengine={engine}",
            spec.name
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One key of each block that one fio engine takes, with a value it
    /// accepts.
    const ONE_KEY: &[(&str, &str, &str)] = &[
        ("sg", "readfua", "1"),
        ("net", "hostname", "localhost"),
        ("e4defrag", "donorname", "donor.bin"),
        ("cpuio", "cpuload", "50"),
        ("exec", "program", "/bin/true"),
    ];

    #[test]
    fn an_engines_option_with_another_engine_is_refused_by_name() {
        for &(engine, key, v) in ONE_KEY {
            assert!(
                BLOCKS.iter().any(|b| b.engines == engine),
                "{engine} has no block"
            );
            for other in ["io_uring", "libaio", "psync", "null", "filecreate"] {
                let mut j = crate::JobSpec::default();
                j.set("filename", Some("f.bin")).unwrap();
                // The key may come before or after the engine.
                j.set(key, Some(v)).unwrap();
                j.set("ioengine", Some(other)).unwrap();
                let e = j.validate().unwrap_err().to_string();
                assert!(
                    e.contains(&format!(
                        "{key} is an option of ioengine={engine} (this job uses {other})"
                    )),
                    "{engine} {key} with {other}: {e}"
                );
            }
            let mut j = crate::JobSpec::default();
            j.set("filename", Some("f.bin")).unwrap();
            j.set("ioengine", Some(engine)).unwrap();
            j.set(key, Some(v)).unwrap();
            if let Err(e) = j.validate() {
                assert!(!e.to_string().contains("is an option of"), "{engine}: {e}");
            }
        }
    }

    #[test]
    fn every_engine_option_has_one_block() {
        let mut seen: Vec<&str> = Vec::new();
        for d in options() {
            assert!(!seen.contains(&d.name), "{} is in two blocks", d.name);
            assert!(
                crate::spec::options::OPTIONS.iter().all(|o| o.name != d.name),
                "{} is in the general table too",
                d.name
            );
            assert_eq!(block_of(d.name).map(|b| b.options.len() > 0), Some(true));
            seen.push(d.name);
        }
    }
}
