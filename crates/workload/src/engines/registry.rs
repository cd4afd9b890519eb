//! Every fio engine drivelab runs, listed once: `ioengine=NAME` is looked
//! up here ([`lookup`]). Adding an engine is a front under
//! `engines/fronts/` and its line in [`ENGINES`].

use crate::engines::front::EngineFront;
use crate::engines::fronts::{block, files, net, noio, sg, ucmd};

/// The fronts, in the order `drivelab run --help` names them.
pub static ENGINES: &[&dyn EngineFront] = &[
    &block::IO_URING,
    &block::PSYNC,
    &block::NULL,
    &sg::SG,
    &ucmd::IO_URING_CMD,
    &net::NET,
    &files::FILECREATE,
    &files::FILESTAT,
    &files::FILEDELETE,
    &files::DIRCREATE,
    &files::DIRSTAT,
    &files::DIRDELETE,
    &files::FTRUNCATE,
    &files::FALLOC,
    &files::E4DEFRAG,
    &noio::CPUIO,
    &noio::EXEC,
];

/// The front answering to fio's engine name `name` (any case, spaces
/// trimmed), if drivelab runs it.
pub fn lookup(name: &str) -> Option<&'static dyn EngineFront> {
    let name = name.trim().to_ascii_lowercase();
    ENGINES
        .iter()
        .copied()
        .find(|f| f.names().contains(&name.as_str()))
}
