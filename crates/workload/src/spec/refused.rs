//! fio's options drivelab refuses on purpose, each under a named rule with
//! its reason. `fio --cmdhelp=all` of fio 3.33 lists 216 options
//! (`tests/data/fio-3.33-cmdhelp.txt`); each is either declared
//! ([`crate::spec::options::all`]) or listed here, and a test holds the two
//! lists to fio's. [`crate::spec::options::lookup`] answers a refused name
//! with [`crate::SpecError::Refused`]: one line naming the option, the rule
//! and the reason, exit status 2, never "unknown option".

/// One refused fio option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// fio's name of the option.
    pub name: &'static str,
    /// The rule it falls under (a short name the error shows).
    pub rule: &'static str,
    /// Why, in one line: what fio does with it and why drivelab does not.
    pub reason: &'static str,
}

pub use crate::spec::value_refusal::ValueRefusal;
use crate::spec::value_refusal::NOT_CARRIED;

/// The rule of fio's network client/server mode.
const CLIENT_SERVER: &str = "client/server only";
/// The rule of options that act on a job's own process.
const JOB_PROCESS: &str = "process per job";

/// Every refused option, by fio's name.
pub const REFUSED: &[Refusal] = &[
    Refusal {
        name: "unique_filename",
        rule: CLIENT_SERVER,
        reason: "fio prefixes a network client's file names with its address; drivelab has no fio client/server mode (--client, --server), so its names are always as written",
    },
    Refusal {
        name: "uid",
        rule: JOB_PROCESS,
        reason: "fio switches a job's process to this user; drivelab runs every job as a thread of one process, and switching one thread's user would change whose files the whole run opens",
    },
    Refusal {
        name: "gid",
        rule: JOB_PROCESS,
        reason: "fio switches a job's process to this group; drivelab runs every job as a thread of one process, and switching one thread's group would change whose files the whole run opens",
    },
    Refusal {
        name: "cgroup",
        rule: JOB_PROCESS,
        reason: "fio moves each job's process into a blkio cgroup of this name; drivelab runs every job as a thread of one process: put the whole drivelab process in the cgroup instead (e.g. systemd-run --scope -p IOWeight=…)",
    },
    Refusal {
        name: "cgroup_weight",
        rule: JOB_PROCESS,
        reason: "the blkio weight of fio's per-job cgroup; drivelab runs every job as a thread of one process: run drivelab in a cgroup with the weight you want (systemd-run --scope -p IOWeight=…)",
    },
    Refusal {
        name: "cgroup_nodelete",
        rule: JOB_PROCESS,
        reason: "keeps fio's per-job cgroup after the job; drivelab makes no cgroup (see cgroup)",
    },
    Refusal {
        name: "profile",
        rule: NOT_CARRIED,
        reason: "fio's built-in job profiles (tiobench, act) are not carried: write the profile's jobs as a job file",
    },
    Refusal {
        name: "merge_blktrace_file",
        rule: NOT_CARRIED,
        reason: "fio merges several blktrace files into one iolog before replaying it; drivelab replays one trace at a time ('drivelab replay'), and merges none",
    },
    Refusal {
        name: "merge_blktrace_scalars",
        rule: NOT_CARRIED,
        reason: "the time scale of each blktrace fio merges (see merge_blktrace_file); drivelab merges no traces",
    },
    Refusal {
        name: "merge_blktrace_iters",
        rule: NOT_CARRIED,
        reason: "how often each blktrace fio merges is repeated (see merge_blktrace_file); drivelab merges no traces",
    },
];

/// The refusal of fio's option `key`, if drivelab refuses it.
pub fn refusal(key: &str) -> Option<&'static Refusal> {
    REFUSED.iter().find(|r| r.name == key)
}

/// Every family's refused values.
pub const REFUSED_VALUES: &[&[ValueRefusal]] = &[crate::engines::registry::REFUSED_ENGINES];

/// The refusal of value `value` (any case, before a `:`) of option
/// `option` (its canonical name), if drivelab refuses it.
pub fn value_refusal(option: &str, value: &str) -> Option<&'static ValueRefusal> {
    let v = value
        .split(':')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    REFUSED_VALUES
        .iter()
        .flat_map(|f| f.iter())
        .find(|r| r.option == option && r.values.contains(&v.as_str()))
}
