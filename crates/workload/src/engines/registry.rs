//! Every fio engine drivelab runs, listed once: `ioengine=NAME` is looked
//! up here ([`lookup`]). Adding an engine is a front under
//! `engines/fronts/` and its line in [`ENGINES`].

use crate::engines::front::EngineFront;
use crate::engines::fronts::{block, files, net, noio, sg, ucmd};
use crate::spec::value_refusal::{ValueRefusal, NOT_CARRIED};

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

/// fio 3.33's engines drivelab refuses (`fio --cmdhelp=ioengine`): each
/// is a client of a service or device class drivelab has no code for.
pub const REFUSED_ENGINES: &[ValueRefusal] = &[
    ValueRefusal {
        option: "ioengine",
        values: &["rbd"],
        rule: NOT_CARRIED,
        reason: "fio's rbd engine does its I/O through librbd to a Ceph cluster's image; drivelab carries no Ceph client: map the image (rbd map) and run on /dev/rbdN",
    },
    ValueRefusal {
        option: "ioengine",
        values: &["rdma"],
        rule: NOT_CARRIED,
        reason: "fio's rdma engine moves memory between two hosts over RDMA verbs (librdmacm); drivelab carries no RDMA client: use ioengine=net for a socket transfer",
    },
    ValueRefusal {
        option: "ioengine",
        values: &["gfapi", "gfapi_async"],
        rule: NOT_CARRIED,
        reason: "fio's gfapi engines do their I/O through libgfapi to a GlusterFS volume; drivelab carries no Gluster client: mount the volume and run on its files",
    },
    ValueRefusal {
        option: "ioengine",
        values: &["nbd"],
        rule: NOT_CARRIED,
        reason: "fio's nbd engine talks to an NBD server through libnbd; drivelab carries no NBD client: attach the export (nbd-client, qemu-nbd) and run on /dev/nbdN",
    },
    ValueRefusal {
        option: "ioengine",
        values: &["pmemblk", "libpmem", "dev-dax"],
        rule: NOT_CARRIED,
        reason: "fio's persistent-memory engines load and store through PMDK on a DAX mapping; drivelab moves data with system calls only: run ioengine=psync or mmap on the pmem block device",
    },
    ValueRefusal {
        option: "ioengine",
        values: &["external"],
        rule: NOT_CARRIED,
        reason: "fio's external engine loads a C engine from a shared object (external:/path/lib.so); drivelab loads no code into its process",
    },
];
