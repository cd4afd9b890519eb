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
    /// The engine options set since the job's section began (its own
    /// section of a job file, or the command line), first set first: each
    /// must be one the job's engine takes ([`check_keys`]). One inherited
    /// from `[global]` was checked there, against its engine, and does
    /// nothing under another (as in fio).
    pub keys_set: Vec<&'static str>,
}

/// One engine's option block as the job spec sees it.
pub struct Block {
    /// The fio engines that take these options (`run --help` lists the
    /// options under them).
    pub engines: &'static str,
    /// The options, declared in the block's file.
    pub options: &'static [OptionDecl],
    /// Which engines take which key, for a block several fio engines
    /// share; None: every option is the one engine's named in
    /// [`Block::engines`].
    pub per_key: Option<PerKey>,
    /// Set one of [`Block::options`] (its canonical name) in the block.
    pub set: fn(&mut EngineBlocks, &'static str, &str) -> Result<(), SpecError>,
    /// The block's checks between its options and the rest of the job,
    /// asked of every block whichever engine the job chose (none by
    /// default).
    pub check: fn(&crate::JobSpec) -> Result<(), SpecError>,
}

/// Which of a shared block's options each fio engine takes.
pub struct PerKey {
    /// Whether fio's engine `engine` takes `key` (one of [`Block::options`]).
    pub takes: fn(&str, &str) -> bool,
    /// The fio engines that take `key`, in words, for the refusal.
    pub takers: fn(&str) -> &'static str,
}

impl Block {
    /// Whether fio's engine `engine` takes `key`.
    fn takes(&self, engine: &str, key: &str) -> bool {
        match &self.per_key {
            Some(p) => (p.takes)(engine, key),
            None => self.engines.split(", ").any(|e| e == engine),
        }
    }

    /// The fio engines that take `key`, in words.
    fn takers(&self, key: &str) -> &'static str {
        match &self.per_key {
            Some(p) => (p.takers)(key),
            None => self.engines,
        }
    }
}

/// Every engine's option block, in the order `run --help` lists them.
pub const BLOCKS: &[Block] = &[
    Block {
        engines: "io_uring, io_uring_cmd, libaio, pvsync2",
        options: io::OPTIONS,
        per_key: Some(PerKey {
            takes: |e, k| io::takes(e).contains(&k),
            takers: io::engines_of,
        }),
        set: |b, k, v| b.io.set(k, v),
        check: io::check,
    },
    Block {
        engines: "sg",
        options: sg::OPTIONS,
        per_key: None,
        set: |b, k, v| b.sg.set(k, v),
        check: |_| Ok(()),
    },
    Block {
        engines: "net, netsplice",
        options: net::OPTIONS,
        per_key: None,
        set: |b, k, v| b.net.set(k, v),
        check: |_| Ok(()),
    },
    Block {
        engines: "e4defrag",
        options: e4defrag::DefragOpts::OPTIONS,
        per_key: None,
        set: |b, k, v| b.e4defrag.set(k, v),
        check: |_| Ok(()),
    },
    Block {
        engines: "cpuio",
        options: noio::CpuOpts::OPTIONS,
        per_key: None,
        set: |b, k, v| b.noio.cpu.set(k, v),
        check: |_| Ok(()),
    },
    Block {
        engines: "exec",
        options: noio::ExecOpts::OPTIONS,
        per_key: None,
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

/// The check of the engine options set in the job's own section (or on
/// the command line): each must be one the job's engine takes; the first
/// that is not is refused by name (fio: "Bad option").
pub fn check_keys(spec: &crate::JobSpec) -> Result<(), SpecError> {
    let used = spec.fio_engine();
    for &k in &spec.engine.keys_set {
        let Some(b) = block_of(k) else { continue };
        if !b.takes(used, k) {
            return Err(SpecError::Invalid(format!(
                "job '{}': {k} is not an option of ioengine={used} ({} take it); drop it or change ioengine",
                spec.name,
                b.takers(k)
            )));
        }
    }
    Ok(())
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
            let takers = BLOCKS
                .iter()
                .find(|b| b.engines.split(", ").any(|e| e == engine))
                .unwrap_or_else(|| panic!("{engine} has no block"))
                .engines;
            for other in ["io_uring", "libaio", "psync", "null", "filecreate"] {
                let mut j = crate::JobSpec::default();
                j.set("filename", Some("f.bin")).unwrap();
                // The key may come before or after the engine.
                j.set(key, Some(v)).unwrap();
                j.set("ioengine", Some(other)).unwrap();
                let e = j.validate().unwrap_err().to_string();
                assert!(
                    e.contains(&format!(
                        "{key} is not an option of ioengine={other} ({takers} take it)"
                    )),
                    "{engine} {key} with {other}: {e}"
                );
            }
            let mut j = crate::JobSpec::default();
            j.set("filename", Some("f.bin")).unwrap();
            j.set("ioengine", Some(engine)).unwrap();
            j.set(key, Some(v)).unwrap();
            if let Err(e) = j.validate() {
                assert!(
                    !e.to_string().contains("is not an option of"),
                    "{engine}: {e}"
                );
            }
        }
    }

    #[test]
    fn every_engine_option_has_one_block() {
        let mut seen: Vec<&str> = Vec::new();
        for d in options() {
            assert!(!seen.contains(&d.name), "{} is in two blocks", d.name);
            assert!(
                crate::spec::options::OPTIONS
                    .iter()
                    .all(|o| o.name != d.name),
                "{} is in the general table too",
                d.name
            );
            assert!(block_of(d.name).is_some_and(|b| b.options.iter().any(|o| o.name == d.name)));
            seen.push(d.name);
        }
    }
}
