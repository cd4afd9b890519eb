//! fio's engine options of its io_uring, io_uring_cmd, libaio and pvsync2
//! engines in the job spec, as one block: fio declares `hipri`, `nowait`
//! and the others once per engine, and several engines share a name
//! (`hipri` is io_uring's, io_uring_cmd's and pvsync2's; `nowait` is
//! io_uring's, libaio's and pvsync2's; `hipri_percentage` is pvsync2's).
//! The block parses them, refuses each with an engine that does not take
//! it (naming the key, as fio's
//! "unrecognized option"), checks what fio leaves to the kernel to fail
//! (`hipri` without `direct=1` on io_uring, a `sqthread_poll_cpu` that is
//! not online), and hands each engine its options. The engine note says
//! which of them drivelab's io_uring does regardless.

use crate::spec::decl::{opt, OptionDecl};
use drivelab_engine::engine::{PsyncOptions, UringOptions};
use drivelab_engine::ucmd::UcmdOptions;

use crate::SpecError;

/// The engine options of one job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineOpts {
    /// `hipri`: polled completions (io_uring, io_uring_cmd: IOPOLL;
    /// pvsync2: RWF_HIPRI). Default off.
    pub hipri: bool,
    /// `fixedbufs`: registered buffers. Default off.
    pub fixedbufs: bool,
    /// `registerfiles`: registered files. Default off.
    pub registerfiles: bool,
    /// `sqthread_poll`: a kernel thread submits (SQPOLL). Default off.
    pub sqthread_poll: bool,
    /// `sqthread_poll_cpu`: that thread's CPU. Default: unpinned.
    pub sqthread_poll_cpu: Option<u32>,
    /// `nonvectored`: non-vectored commands. Default off.
    pub nonvectored: bool,
    /// `nowait`: RWF_NOWAIT on reads and writes. Default off.
    pub nowait: bool,
    /// `force_async=N`: IOSQE_ASYNC on every Nth SQE (0: none, the default).
    pub force_async: u32,
    /// `userspace_reap` (libaio): completions reaped without a system call.
    pub userspace_reap: bool,
    /// `hipri_percentage` (pvsync2): with `hipri`, the share of I/Os (0-100)
    /// that carry RWF_HIPRI. Default (None): 100, every I/O.
    pub hipri_percentage: Option<u8>,
    /// The keys the job set, first set first.
    pub set: Vec<&'static str>,
}

/// The options of this block (fio's names and units), set by
/// [`EngineOpts::set`].
pub const OPTIONS: &[OptionDecl] = &[
    opt!(
        "cmd_type",
        [],
        Text,
        "nvme",
        "ioengine=io_uring_cmd: the passthrough command set (nvme, the only one)"
    ),
    opt!(
        "hipri",
        [],
        Bool,
        "0",
        "ioengine=io_uring, io_uring_cmd: poll for completions (IORING_SETUP_IOPOLL; io_uring needs direct=1; the device's poll queues make it polling); pvsync2: RWF_HIPRI"
    ),
    opt!(
        "hipri_percentage",
        [],
        Int,
        "100",
        "ioengine=pvsync2: with hipri, the percentage of I/Os issued with RWF_HIPRI, each I/O drawn at random",
        0,
        100,
        "%"
    ),
    opt!(
        "fixedbufs",
        [],
        Bool,
        "0",
        "ioengine=io_uring_cmd: register the I/O buffers with the ring (IORING_URING_CMD_FIXED; with nonvectored=1); io_uring: accepted, drivelab's io_uring always registers them (READ_FIXED/WRITE_FIXED)"
    ),
    opt!(
        "registerfiles",
        [],
        Bool,
        "0",
        "ioengine=io_uring_cmd: register the device with the ring (on with sqthread_poll); io_uring: accepted, drivelab's io_uring always registers its files"
    ),
    opt!(
        "sqthread_poll",
        [],
        Bool,
        "0",
        "ioengine=io_uring, io_uring_cmd: a kernel thread polls for submissions (IORING_SETUP_SQPOLL); the job enters the kernel only to wake it, and watches the completion queue"
    ),
    opt!(
        "sqthread_poll_cpu",
        [],
        Int,
        "",
        "ioengine=io_uring, io_uring_cmd: the CPU the sqthread_poll thread runs on (IORING_SETUP_SQ_AFF; an online CPU)",
        0,
        4095,
        ""
    ),
    opt!(
        "nonvectored",
        [],
        Bool,
        "0",
        "ioengine=io_uring_cmd: the command carries the buffer (NVME_URING_CMD_IO) instead of an iovec (NVME_URING_CMD_IO_VEC); io_uring: accepted, drivelab's io_uring never uses iovecs"
    ),
    opt!(
        "nowait",
        [],
        Bool,
        "0",
        "ioengine=io_uring, libaio, pvsync2: reads and writes carry RWF_NOWAIT; one that would block fails with EAGAIN"
    ),
    opt!(
        "force_async",
        [],
        Int,
        "0",
        "ioengine=io_uring, io_uring_cmd: every Nth submission goes to the kernel's io-wq workers (IOSQE_ASYNC); 0: none",
        0,
        u32::MAX as u64,
        ""
    ),
    opt!(
        "userspace_reap",
        [],
        Bool,
        "0",
        "ioengine=libaio: reap completions without a system call; accepted, drivelab's io_uring always reaps them from the ring it shares with the kernel"
    ),
];

/// The keys fio leaves out of a job's `job options` when given bare
/// (fio's FIO_OPT_STR_SET engine options: `hipri` is not shown, `hipri=1`
/// is).
pub const UNSHOWN_BARE: &[&str] = &[
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "userspace_reap",
];

/// Per fio engine name, the keys of [`OPTIONS`] it takes in drivelab.
pub(super) fn takes(engine: &str) -> &'static [&'static str] {
    match engine {
        "io_uring" => &[
            "cmd_type",
            "hipri",
            "fixedbufs",
            "registerfiles",
            "sqthread_poll",
            "sqthread_poll_cpu",
            "nonvectored",
            "nowait",
            "force_async",
        ],
        "io_uring_cmd" => &[
            "cmd_type",
            "hipri",
            "fixedbufs",
            "registerfiles",
            "sqthread_poll",
            "sqthread_poll_cpu",
            "nonvectored",
            "force_async",
        ],
        "libaio" => &["userspace_reap", "nowait"],
        "pvsync2" => &["hipri", "hipri_percentage", "nowait"],
        _ => &[],
    }
}

/// The fio engines that take `key` (fio 3.33), for the refusal.
pub(super) fn engines_of(key: &str) -> &'static str {
    match key {
        "hipri" => "io_uring, io_uring_cmd and pvsync2",
        "nowait" => "io_uring, libaio and pvsync2 (and fio's io_uring_cmd, not drivelab's yet)",
        "force_async" => "io_uring and io_uring_cmd",
        "userspace_reap" => "libaio",
        "hipri_percentage" => "pvsync2",
        _ => "io_uring and io_uring_cmd",
    }
}

impl EngineOpts {
    /// Set one of [`OPTIONS`] from its value.
    pub fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let bad = |expect: &str| SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: expect.to_string(),
        };
        match key {
            // fio 3.33 knows one command type.
            "cmd_type" => match v.trim().to_ascii_lowercase().as_str() {
                "nvme" => {}
                _ => return Err(bad("nvme (the one command type fio 3.33 has)")),
            },
            "sqthread_poll_cpu" => {
                self.sqthread_poll_cpu = Some(
                    v.trim()
                        .parse()
                        .map_err(|_| bad("a CPU number (0, 1, ...)"))?,
                )
            }
            "hipri_percentage" => {
                let pct: u8 = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or_else(|| bad("a percentage of I/Os, 0 to 100"))?;
                self.hipri_percentage = Some(pct);
            }
            "force_async" => {
                self.force_async = v
                    .trim()
                    .parse()
                    .map_err(|_| bad("a count of SQEs (0: none)"))?
            }
            _ => {
                let on = crate::spec::value::parse_flag(key, v)?;
                match key {
                    "hipri" => self.hipri = on,
                    "fixedbufs" => self.fixedbufs = on,
                    "registerfiles" => self.registerfiles = on,
                    "sqthread_poll" => self.sqthread_poll = on,
                    "nonvectored" => self.nonvectored = on,
                    "nowait" => self.nowait = on,
                    "userspace_reap" => self.userspace_reap = on,
                    _ => return Err(bad("an engine option of io_uring, libaio or pvsync2")),
                }
            }
        }
        if !self.set.contains(&key) {
            self.set.push(key);
        }
        Ok(())
    }

    /// The block as fio's `engine` sees it: each option it does not take
    /// at its default, so that a key inherited from a `[global]` of
    /// another engine does nothing, as in fio.
    fn taken_by(&self, engine: &str) -> EngineOpts {
        let on = |key| takes(engine).contains(&key);
        let d = EngineOpts::default();
        EngineOpts {
            hipri: self.hipri && on("hipri"),
            fixedbufs: self.fixedbufs && on("fixedbufs"),
            registerfiles: self.registerfiles && on("registerfiles"),
            sqthread_poll: self.sqthread_poll && on("sqthread_poll"),
            sqthread_poll_cpu: self.sqthread_poll_cpu.filter(|_| on("sqthread_poll_cpu")),
            nonvectored: self.nonvectored && on("nonvectored"),
            nowait: self.nowait && on("nowait"),
            force_async: if on("force_async") {
                self.force_async
            } else {
                d.force_async
            },
            userspace_reap: self.userspace_reap && on("userspace_reap"),
            hipri_percentage: self.hipri_percentage.filter(|_| on("hipri_percentage")),
            set: Vec::new(),
        }
    }

    /// The io_uring_cmd engine's options, as fio's `engine` takes them.
    pub fn ucmd(&self, engine: &str) -> UcmdOptions {
        let o = self.taken_by(engine);
        UcmdOptions {
            hipri: o.hipri,
            fixedbufs: o.fixedbufs,
            registerfiles: o.registerfiles,
            sqthread_poll: o.sqthread_poll,
            sqthread_poll_cpu: o.sqthread_poll_cpu,
            nonvectored: o.nonvectored,
            force_async: o.force_async,
        }
    }

    /// The io_uring engine's options (libaio's `nowait` too), as fio's
    /// `engine` takes them.
    pub fn uring(&self, engine: &str) -> UringOptions {
        let o = self.taken_by(engine);
        UringOptions {
            hipri: o.hipri,
            sqthread_poll: o.sqthread_poll,
            sqthread_poll_cpu: o.sqthread_poll_cpu,
            nowait: o.nowait,
            force_async: o.force_async,
        }
    }

    /// The psync engine's flags (pvsync2's `hipri`, `hipri_percentage`
    /// and `nowait`), as fio's `engine` takes them.
    pub fn psync(&self, engine: &str) -> PsyncOptions {
        let o = self.taken_by(engine);
        PsyncOptions {
            hipri: o.hipri,
            nowait: o.nowait,
            hipri_percentage: o.hipri_percentage,
        }
    }
}

/// The spec's check of a job's engine options beyond which engine takes
/// them ([`super::check_keys`]), needing no target: io_uring's `hipri`
/// needs `direct=1` (the kernel polls only O_DIRECT I/O: fio's job fails
/// every I/O with EOPNOTSUPP).
pub fn validate(spec: &crate::JobSpec) -> Result<(), SpecError> {
    let engine = spec.fio_engine();
    if engine == "io_uring" && spec.engine.io.hipri && spec.direct != Some(true) {
        return Err(SpecError::Invalid(format!(
            "job '{}': hipri polls for completions, which the kernel does only for O_DIRECT I/O: add direct=1 (fio fails every I/O of this job with EOPNOTSUPP)",
            spec.name
        )));
    }
    Ok(())
}

/// The block's check against a job: `hipri` with direct I/O
/// ([`validate`]), and `sqthread_poll_cpu` an online CPU of this machine
/// ([`check_cpu`]).
pub fn check(spec: &crate::JobSpec) -> Result<(), SpecError> {
    validate(spec)?;
    check_cpu(spec)
}

/// The kernel's list of online CPUs.
const ONLINE: &str = "/sys/devices/system/cpu/online";

/// The plan's check, against this machine: with `sqthread_poll`, a
/// `sqthread_poll_cpu` must be an online CPU (the kernel's ring setup
/// would fail with EINVAL).
pub fn check_cpu(spec: &crate::JobSpec) -> Result<(), SpecError> {
    if spec.engine.io.sqthread_poll_cpu.is_none() || !spec.engine.io.sqthread_poll {
        return Ok(());
    }
    let online = std::fs::read_to_string(ONLINE).map_err(|e| {
        SpecError::Invalid(format!(
            "job '{}': sqthread_poll_cpu: cannot read {ONLINE} to check the CPU: {e}",
            spec.name
        ))
    })?;
    check_cpu_in(spec, &online)
}

/// [`check_cpu`] against `online`, a kernel CPU list (`0-3,8`).
fn check_cpu_in(spec: &crate::JobSpec, online: &str) -> Result<(), SpecError> {
    let Some(cpu) = spec.engine.io.sqthread_poll_cpu else {
        return Ok(());
    };
    if spec.engine.io.sqthread_poll && !cpu_in_list(online, cpu) {
        return Err(SpecError::Invalid(format!(
            "job '{}': sqthread_poll_cpu={cpu} is not an online CPU (online: {}); give one of those",
            spec.name,
            online.trim()
        )));
    }
    Ok(())
}

/// Whether `cpu` is in a kernel CPU list such as `0-3,8,10-11`.
fn cpu_in_list(list: &str, cpu: u32) -> bool {
    list.trim().split(',').any(|r| {
        let mut ends = r.trim().splitn(2, '-').map(|n| n.trim().parse::<u32>());
        match (ends.next(), ends.next()) {
            (Some(Ok(a)), None) => a == cpu,
            (Some(Ok(a)), Some(Ok(b))) => (a..=b).contains(&cpu),
            _ => false,
        }
    })
}

/// What the run says once about options drivelab's engine does
/// regardless, over all its jobs: io_uring's `fixedbufs`, `registerfiles`
/// and `nonvectored` (its ring always has registered buffers and files and
/// sends READ_FIXED / WRITE_FIXED), libaio's `userspace_reap` (its
/// completions are always reaped from the shared ring without a system
/// call). Empty when no job set any of them.
pub fn notes<'a>(specs: impl IntoIterator<Item = &'a crate::JobSpec>) -> Vec<String> {
    let mut uring = [false; 3];
    let mut reap = false;
    const URING: [&str; 3] = ["fixedbufs", "registerfiles", "nonvectored"];
    for spec in specs {
        let set = &spec.engine.io.set;
        match spec.fio_engine() {
            "io_uring" => {
                for (seen, k) in uring.iter_mut().zip(URING) {
                    *seen |= set.contains(&k);
                }
            }
            "libaio" => reap |= set.contains(&"userspace_reap"),
            _ => {}
        }
    }
    let mut out = Vec::new();
    let given: Vec<&str> = URING
        .into_iter()
        .zip(uring)
        .filter_map(|(k, seen)| seen.then_some(k))
        .collect();
    if let Some((last, rest)) = given.split_last() {
        let keys = match rest {
            [] => last.to_string(),
            _ => format!("{} and {last}", rest.join(", ")),
        };
        out.push(format!(
            "io_uring's {keys} {} what drivelab's io_uring does regardless (registered buffers and files, non-vectored READ_FIXED/WRITE_FIXED)",
            if rest.is_empty() { "is" } else { "are" }
        ));
    }
    if reap {
        out.push(
            "libaio's userspace_reap is what drivelab's io_uring does regardless (completions are reaped from the ring shared with the kernel, in user space)".to_string(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fios_options_set_the_engines() {
        let mut s = EngineOpts::default();
        s.set("cmd_type", "nvme").unwrap();
        s.set("sqthread_poll", "1").unwrap();
        s.set("sqthread_poll_cpu", "0").unwrap();
        s.set("nonvectored", "1").unwrap();
        s.set("registerfiles", "").unwrap();
        s.set("fixedbufs", "0").unwrap();
        s.set("hipri", "1").unwrap();
        s.set("nowait", "1").unwrap();
        s.set("force_async", "4").unwrap();
        assert_eq!(s.set[0], "cmd_type");
        assert_eq!(
            s.ucmd("io_uring_cmd"),
            UcmdOptions {
                hipri: true,
                fixedbufs: false,
                registerfiles: true,
                sqthread_poll: true,
                sqthread_poll_cpu: Some(0),
                nonvectored: true,
                force_async: 4,
            }
        );
        assert_eq!(
            s.uring("io_uring"),
            UringOptions {
                hipri: true,
                sqthread_poll: true,
                sqthread_poll_cpu: Some(0),
                nowait: true,
                force_async: 4,
            }
        );
        assert_eq!(
            s.psync("pvsync2"),
            PsyncOptions {
                hipri: true,
                nowait: true,
                hipri_percentage: None,
            }
        );
        // An engine gets only the options it takes: a `[global]`'s
        // io_uring options do nothing under libaio or psync, as in fio.
        let libaio = s.uring("libaio");
        assert!(libaio.nowait && !libaio.hipri && !libaio.sqthread_poll);
        assert_eq!(libaio.force_async, 0);
        assert_eq!(s.psync("psync"), PsyncOptions::default());
        let e = s.set("cmd_type", "scsi").unwrap_err().to_string();
        assert!(e.contains("cmd_type") && e.contains("nvme"), "{e}");
        assert!(s.set("sqthread_poll_cpu", "x").is_err());
        assert!(s.set("nonvectored", "maybe").is_err());
        assert!(s.set("force_async", "-1").is_err());
    }

    #[test]
    fn cpu_lists_as_the_kernel_writes_them() {
        assert!(cpu_in_list("0-1\n", 0) && cpu_in_list("0-1\n", 1));
        assert!(!cpu_in_list("0-1\n", 2));
        assert!(cpu_in_list("0,2-3,8", 8) && !cpu_in_list("0,2-3,8", 1));
        assert!(!cpu_in_list("", 0));
    }
}
