//! fio's error policy: which failed I/Os end a job and which it counts and
//! goes past (`continue_on_error`, `ignore_error`, `error_dump`).
//!
//! fio sorts an error by kind: EILSEQ (a failed verify) is a *verify*
//! error, any other errno of a read a *read* error, of a write, trim or
//! sync a *write* error. `continue_on_error` names the kinds a job may go
//! past; within a kind only the errnos of that kind's list are passed —
//! by default EIO and EILSEQ, or the list `ignore_error` gives (which also
//! turns continuing on for its kind). A passed error is counted (fio's
//! `total_err`, the first one's errno is `first_error`) and the job goes
//! on; any other error ends the job, and is counted too. drivelab keeps
//! each passed error's I/O (op, offset, LBAs) with the job's errors, as it
//! keeps the one that ends a job.
//!
//! The options are applied in the order they are read, as fio does:
//! `continue_on_error` sets the kinds, `ignore_error` adds its kinds.
//!
//! This module also holds the parsed values of the other option families
//! this helper adds (verify extras, dedupe), so the job spec carries them
//! in one field ([`ErrKeys`]).

pub use crate::job::types::ErrorCount;
use crate::spec::decl::{opt, OptionDecl};
use crate::spec::value::parse_flag;
use crate::SpecError;
use drivelab_engine::io::Op;

/// fio's error kinds (bit numbers of `continue_on_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A failed read.
    Read = 0,
    /// A failed write, trim or sync.
    Write = 1,
    /// A failed verify check (EILSEQ).
    Verify = 2,
}

impl ErrorKind {
    /// The kind of an error `errno` of an I/O `op`, as fio sorts it.
    pub fn of(op: Op, errno: i32) -> ErrorKind {
        if errno == libc::EILSEQ {
            ErrorKind::Verify
        } else if op == Op::Read {
            ErrorKind::Read
        } else {
            ErrorKind::Write
        }
    }
}

/// What a job does with a failed I/O or check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorPolicy {
    /// Bit per [`ErrorKind`]: errors of that kind may be passed.
    pub continue_mask: u8,
    /// The errnos passed per kind; None: EIO and EILSEQ (fio's default).
    pub ignore: [Option<Vec<i32>>; 3],
    /// Print every error, also the passed ones (`error_dump`, default on).
    pub dump: bool,
}

impl Default for ErrorPolicy {
    fn default() -> Self {
        ErrorPolicy {
            continue_mask: 0,
            ignore: [None, None, None],
            dump: true,
        }
    }
}

/// fio's errno names, Linux numbering.
const ERRNO_NAMES: &[(&str, i32)] = &[
    ("EPERM", 1),
    ("ENOENT", 2),
    ("ESRCH", 3),
    ("EINTR", 4),
    ("EIO", 5),
    ("ENXIO", 6),
    ("E2BIG", 7),
    ("ENOEXEC", 8),
    ("EBADF", 9),
    ("ECHILD", 10),
    ("EAGAIN", 11),
    ("EWOULDBLOCK", 11),
    ("ENOMEM", 12),
    ("EACCES", 13),
    ("EFAULT", 14),
    ("ENOTBLK", 15),
    ("EBUSY", 16),
    ("EEXIST", 17),
    ("EXDEV", 18),
    ("ENODEV", 19),
    ("ENOTDIR", 20),
    ("EISDIR", 21),
    ("EINVAL", 22),
    ("ENFILE", 23),
    ("EMFILE", 24),
    ("ENOTTY", 25),
    ("ETXTBSY", 26),
    ("EFBIG", 27),
    ("ENOSPC", 28),
    ("ESPIPE", 29),
    ("EROFS", 30),
    ("EMLINK", 31),
    ("EPIPE", 32),
    ("EDOM", 33),
    ("ERANGE", 34),
    ("EDEADLK", 35),
    ("EDEADLOCK", 35),
    ("ENAMETOOLONG", 36),
    ("ENOLCK", 37),
    ("ENOSYS", 38),
    ("ENOTEMPTY", 39),
    ("ELOOP", 40),
    ("ENOMSG", 42),
    ("EIDRM", 43),
    ("ENOSTR", 60),
    ("ENODATA", 61),
    ("ETIME", 62),
    ("ENOSR", 63),
    ("ENOLINK", 67),
    ("EPROTO", 71),
    ("EBADMSG", 74),
    ("EOVERFLOW", 75),
    ("EILSEQ", 84),
    ("EUSERS", 87),
    ("ENOTSOCK", 88),
    ("EMSGSIZE", 90),
    ("EOPNOTSUPP", 95),
    ("ENOBUFS", 105),
    ("ETIMEDOUT", 110),
    ("ECONNREFUSED", 111),
    ("ESTALE", 116),
    ("EUCLEAN", 117),
    ("EREMOTEIO", 121),
    ("EDQUOT", 122),
    ("ENOMEDIUM", 123),
    ("EMEDIUMTYPE", 124),
    ("ECANCELED", 125),
    ("EHWPOISON", 133),
];

/// The errno an `ignore_error` entry names: a symbol (`ENOSPC`) or a
/// number (decimal or 0x hex; a sign is dropped, as fio does).
pub fn parse_errno(s: &str) -> Option<i32> {
    let s = s.trim();
    if s.starts_with('E') {
        return ERRNO_NAMES.iter().find(|(n, _)| *n == s).map(|&(_, v)| v);
    }
    let t = s.trim_start_matches(['-', '+']);
    let n = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16).ok()?,
        None => t.parse::<i64>().ok()?,
    };
    (n > 0 && n < 4096).then_some(n as i32)
}

impl ErrorPolicy {
    /// `continue_on_error=VALUE`: replaces the kinds passed.
    pub fn set_continue(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        self.continue_mask = match v.trim().to_ascii_lowercase().as_str() {
            "none" | "0" => 0,
            "read" => 1,
            "write" => 2,
            "io" => 3,
            "verify" => 4,
            "all" | "1" | "" => 7,
            _ => {
                return Err(SpecError::BadValue {
                    key: key.to_string(),
                    value: v.to_string(),
                    expect: "none, read, write, io, verify, all, 0 or 1".to_string(),
                })
            }
        };
        Ok(())
    }

    /// `ignore_error=READ_LIST,WRITE_LIST,VERIFY_LIST` (each list of
    /// errnos joined by ':'): a kind given a list is passed, for those
    /// errnos only.
    pub fn set_ignore(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        let parts: Vec<&str> = v.split(',').collect();
        if parts.len() > 3 {
            return Err(SpecError::BadValue {
                key: key.to_string(),
                value: v.to_string(),
                expect: "at most three lists, READ,WRITE,VERIFY (e.g. ignore_error=,ENOSPC:122)"
                    .to_string(),
            });
        }
        for (kind, part) in parts.iter().enumerate() {
            let mut list = Vec::new();
            for e in part.split(':') {
                if e.trim().is_empty() {
                    // fio stops a list at an empty entry.
                    break;
                }
                list.push(parse_errno(e).ok_or_else(|| SpecError::BadValue {
                    key: key.to_string(),
                    value: v.to_string(),
                    expect: format!(
                        "errno names such as ENOSPC or numbers; '{}' is neither",
                        e.trim()
                    ),
                })?);
            }
            if !list.is_empty() {
                self.continue_mask |= 1 << kind;
                self.ignore[kind] = Some(list);
            }
        }
        Ok(())
    }

    /// Whether continuing is on at all (fio then reports `total_err` and
    /// `first_error`).
    pub fn continues(&self) -> bool {
        self.continue_mask != 0
    }

    /// Whether errors of the kind of `errno` of an I/O `op` may be passed.
    pub fn continues_kind(&self, op: Op, errno: i32) -> bool {
        self.continue_mask & (1 << ErrorKind::of(op, errno) as u8) != 0
    }

    /// Whether the job goes past error `errno` of an I/O `op`.
    pub fn passes(&self, op: Op, errno: i32) -> bool {
        let kind = ErrorKind::of(op, errno) as usize;
        if self.continue_mask & (1 << kind) == 0 {
            return false;
        }
        match &self.ignore[kind] {
            Some(l) => l.contains(&errno),
            None => errno == libc::EIO || errno == libc::EILSEQ,
        }
    }

    /// The option values as fio's `job options` would show them.
    pub fn describe(&self) -> Option<String> {
        if !self.continues() {
            return None;
        }
        Some(
            match self.continue_mask {
                1 => "read",
                2 => "write",
                3 => "io",
                4 => "verify",
                _ => "all",
            }
            .to_string(),
        )
    }
}

/// The options this module's families add to a job, parsed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrKeys {
    /// `continue_on_error`, `ignore_error`, `error_dump`.
    pub policy: ErrorPolicy,
    /// `verify_backlog`, `verify_fatal`, `verify_dump`, `verify_async`…
    pub verify: crate::job::types::VerifyExtras,
    /// The dedupe and compression family.
    pub dedupe: crate::job::dedupe::DedupeSpec,
}

impl ErrKeys {
    /// Whether `key` (fio's canonical name) is one of these options.
    pub fn handles(key: &str) -> bool {
        Self::OPTIONS.iter().any(|d| d.name == key)
    }

    /// Set option `key` to `v`.
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        match key {
            "continue_on_error" => self.policy.set_continue(key, v),
            "ignore_error" => self.policy.set_ignore(key, v),
            "error_dump" => {
                self.policy.dump = parse_flag(key, v)?;
                Ok(())
            }
            k if crate::job::types::VerifyExtras::handles(k) => self.verify.set(key, v),
            _ => self.dedupe.set(key, v),
        }
    }
}

/// What the job loop needs of these options.
#[derive(Debug, Clone, Default)]
pub struct LoopExtras {
    /// Which errors the job goes past.
    pub policy: ErrorPolicy,
    /// `verify_backlog`, `verify_fatal`, `verify_dump`.
    pub verify: crate::job::types::VerifyExtras,
    /// The targets' paths, by target index (error lines, verify dumps).
    pub target_names: Vec<String>,
    /// Write buffers built per write (dedupe, compression); None: filled once.
    pub dedupe: Option<crate::job::dedupe::DedupeSetup>,
}

impl LoopExtras {
    /// Target `i`'s path, or its number.
    pub fn target_name(&self, i: u32) -> String {
        self.target_names
            .get(i as usize)
            .cloned()
            .unwrap_or_else(|| format!("target {i}"))
    }

    /// The line for a failed I/O the job goes past (fio's `io_u error`
    /// line, printed unless `error_dump=0`). An error that ends the job is
    /// not printed here: the run's one error line names it, with its LBAs,
    /// and the JSON lists every failed I/O.
    pub fn io_error_line(
        &self,
        io: &drivelab_engine::io::IoDesc,
        errno: i32,
        passed: bool,
    ) -> Option<String> {
        if !passed || !self.policy.dump {
            return None;
        }
        Some(format!(
            "drivelab: io_u error on file {}: {}: {} offset={}, buflen={} (continuing: continue_on_error)",
            self.target_name(io.target),
            errno_text(errno),
            ["read", "write", "trim", "sync"][io.op.index()],
            io.offset,
            io.len,
        ))
    }

    /// Prints [`Self::io_error_line`] when there is one.
    pub fn report_io_error(&self, io: &drivelab_engine::io::IoDesc, errno: i32, passed: bool) {
        if let Some(line) = self.io_error_line(io, errno, passed) {
            eprintln!("{line}");
        }
    }
}

/// An errno in words, as strerror says it.
pub fn errno_text(errno: i32) -> String {
    let s = std::io::Error::from_raw_os_error(errno).to_string();
    match s.rfind(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

impl ErrKeys {
    /// The family's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "continue_on_error",
            [],
            Text,
            "none",
            "none, read, write, io, verify or all (0/1): errors of these kinds (EIO, EILSEQ unless ignore_error lists others) are counted and the job goes on"
        ),
        opt!(
            "ignore_error",
            [],
            Text,
            "",
            "READ,WRITE,VERIFY lists of errnos (names or numbers joined by ':') the job goes past, e.g. ,ENOSPC:122"
        ),
        opt!(
            "error_dump",
            [],
            Bool,
            "1",
            "print every error, also those the job goes past"
        ),
        opt!(
            "verify_backlog",
            [],
            Int,
            "0",
            "check written blocks after every N writes, during the job (0: when it is done)",
            0,
            1 << 32,
            "blocks"
        ),
        opt!(
            "verify_backlog_batch",
            [],
            Int,
            "verify_backlog",
            "blocks checked at each verify_backlog point",
            0,
            1 << 32,
            "blocks"
        ),
        opt!(
            "verify_fatal",
            [],
            Bool,
            "0",
            "end the job at the first failed check even when continue_on_error passes verify errors"
        ),
        opt!(
            "verify_dump",
            [],
            Bool,
            "0",
            "write the block read and the block expected of a failed check to FILE.OFFSET.received/.expected"
        ),
        opt!(
            "verify_async",
            [],
            Int,
            "0",
            "fio's verify threads: accepted; drivelab checks on the job's thread",
            0,
            1024,
            "threads"
        ),
        opt!(
            "dedupe_percentage",
            [],
            Int,
            "0",
            "percent of write buffers that duplicate another",
            0,
            100,
            "%"
        ),
        opt!(
            "dedupe_mode",
            [],
            Text,
            "repeat",
            "repeat (the last unique buffer) or working_set (one of the first unique buffers)"
        ),
        opt!(
            "dedupe_working_set_percentage",
            [],
            Int,
            "5",
            "working set of dedupe_mode=working_set, percent of the job's size",
            0,
            100,
            "%"
        ),
        opt!(
            "dedupe_global",
            [],
            Bool,
            "0",
            "spread the working set over the run's jobs, so they duplicate each other's blocks"
        ),
        opt!(
            "buffer_compress_percentage",
            [],
            Int,
            "0",
            "percent of each write chunk that is zeros (how far it compresses)",
            0,
            100,
            "%"
        ),
        opt!(
            "buffer_compress_chunk",
            [],
            Size,
            "512",
            "bytes per random-then-zeros chunk of buffer_compress_percentage (0: the write size)"
        ),
    ];
}

impl crate::spec::family::OptionFamily for ErrKeys {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        ErrKeys::set(self, key, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names_are_linux_numbers() {
        for (name, n) in [
            ("EIO", libc::EIO),
            ("ENOSPC", libc::ENOSPC),
            ("EDQUOT", libc::EDQUOT),
            ("EILSEQ", libc::EILSEQ),
            ("EAGAIN", libc::EAGAIN),
            ("EWOULDBLOCK", libc::EAGAIN),
            ("EREMOTEIO", libc::EREMOTEIO),
            ("ENODATA", libc::ENODATA),
            ("EOPNOTSUPP", libc::EOPNOTSUPP),
            ("EHWPOISON", libc::EHWPOISON),
        ] {
            assert_eq!(parse_errno(name), Some(n), "{name}");
        }
        assert_eq!(parse_errno("122"), Some(122));
        assert_eq!(parse_errno("-0x1c"), Some(28));
        assert_eq!(parse_errno("ENOSUCH"), None);
        assert_eq!(parse_errno("0"), None);
    }

    #[test]
    fn only_passed_errors_get_an_io_u_line_and_error_dump_0_silences_them() {
        let mut x = LoopExtras {
            target_names: vec!["/dev/loop7".into()],
            ..LoopExtras::default()
        };
        let io = drivelab_engine::io::IoDesc {
            target: 0,
            op: Op::Write,
            offset: 8192,
            len: 4096,
        };
        assert_eq!(
            x.io_error_line(&io, libc::ENOSPC, true).as_deref(),
            Some("drivelab: io_u error on file /dev/loop7: No space left on device: write offset=8192, buflen=4096 (continuing: continue_on_error)")
        );
        // The error that ends the job is the run's own one line.
        assert_eq!(x.io_error_line(&io, libc::EIO, false), None);
        x.policy.dump = false;
        assert_eq!(x.io_error_line(&io, libc::ENOSPC, true), None);
    }

    #[test]
    fn continue_on_error_passes_eio_and_eilseq_of_its_kinds() {
        let mut p = ErrorPolicy::default();
        assert!(!p.passes(Op::Write, libc::EIO));
        p.set_continue("continue_on_error", "write").unwrap();
        assert!(p.passes(Op::Write, libc::EIO));
        assert!(p.passes(Op::Trim, libc::EIO));
        assert!(!p.passes(Op::Write, libc::ENOSPC));
        assert!(!p.passes(Op::Read, libc::EIO));
        // EILSEQ is a verify error, whatever the op.
        assert!(!p.passes(Op::Write, libc::EILSEQ));
        p.set_continue("continue_on_error", "1").unwrap();
        assert!(p.passes(Op::Read, libc::EILSEQ));
        assert!(!p.passes(Op::Read, libc::EINVAL));
    }

    #[test]
    fn ignore_error_replaces_a_kinds_list_and_turns_it_on() {
        // enospc-pressure.fio: continue_on_error=write, ignore_error=,ENOSPC
        let mut p = ErrorPolicy::default();
        p.set_continue("continue_on_error", "write").unwrap();
        p.set_ignore("ignore_error", ",ENOSPC").unwrap();
        assert!(p.passes(Op::Write, libc::ENOSPC));
        assert!(!p.passes(Op::Write, libc::EIO));
        assert!(!p.passes(Op::Read, libc::ENOSPC));
        let mut p = ErrorPolicy::default();
        p.set_ignore("ignore_error", "EAGAIN,ENOSPC:122").unwrap();
        assert_eq!(p.continue_mask, 3);
        assert!(p.passes(Op::Read, libc::EAGAIN));
        assert!(p.passes(Op::Write, libc::EDQUOT));
        // continue_on_error after it replaces the kinds, as in fio.
        p.set_continue("continue_on_error", "none").unwrap();
        assert!(!p.passes(Op::Write, libc::ENOSPC));
    }

    #[test]
    fn bad_values_name_the_key() {
        let mut p = ErrorPolicy::default();
        let e = p
            .set_continue("continue_on_error", "sometimes")
            .unwrap_err();
        assert!(e.to_string().contains("continue_on_error"), "{e}");
        let e = p.set_ignore("ignore_error", ",ENOSUCH").unwrap_err();
        assert!(
            e.to_string().contains("ignore_error") && e.to_string().contains("ENOSUCH"),
            "{e}"
        );
        let e = p.set_ignore("ignore_error", "EIO,EIO,EIO,EIO").unwrap_err();
        assert!(e.to_string().contains("ignore_error"), "{e}");
    }

    #[test]
    fn the_first_error_stays_first() {
        let mut c = ErrorCount::default();
        c.add(28);
        c.add(5);
        let mut d = ErrorCount::default();
        d.merge(&c);
        d.add(84);
        assert_eq!((d.total, d.first), (3, 28));
    }
}
