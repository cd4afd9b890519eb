//! fio's options that act on a job's targets or its memory for the run:
//! the write lifetime hint given to each target as it is opened
//! (`write_hint`) and memory locked into RAM while the job runs
//! (`lockmem`). One family ([`TargetOpts`]), applied where a job opens its
//! targets and starts (`run::start`).

use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::spec::size::parse_bytes;
use crate::SpecError;

/// fio's `write_hint` words and the kernel's `RWH_WRITE_LIFE_*` value of
/// each.
const HINTS: &[(&str, u64)] = &[
    ("none", 1),
    ("short", 2),
    ("medium", 3),
    ("long", 4),
    ("extreme", 5),
];

/// The targets and memory family.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TargetOpts {
    /// `write_hint`: the `RWH_WRITE_LIFE_*` value; None: no hint given.
    pub write_hint: Option<u64>,
    /// `lockmem`: bytes locked into RAM while the job runs; 0: none.
    pub lockmem: u64,
}

impl TargetOpts {
    /// The family's options.
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "write_hint",
            [],
            Text,
            "",
            "the write lifetime hint given to each target as it opens: none, short, medium, long or extreme (fcntl F_SET_RW_HINT on the inode for buffered I/O; with direct I/O fio's F_SET_FILE_RW_HINT, which kernels since 5.17 refuse, failing the job as in fio)"
        ),
        opt!(
            "lockmem",
            [],
            Size,
            "0",
            "lock this much memory into RAM while the job runs (mlock), leaving the system that much less for its page cache"
        ),
    ];
}

impl OptionFamily for TargetOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        match key {
            "write_hint" => {
                let word = v.trim();
                let hint = HINTS
                    .iter()
                    .find(|(w, _)| w.eq_ignore_ascii_case(word))
                    .map(|&(_, h)| h)
                    .ok_or_else(|| SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: "none, short, medium, long or extreme".to_string(),
                    })?;
                self.write_hint = Some(hint);
            }
            _ => self.lockmem = parse_bytes(key, v)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_are_the_kernels_values() {
        let mut t = TargetOpts::default();
        t.set("write_hint", "short").unwrap();
        assert_eq!(t.write_hint, Some(2));
        t.set("write_hint", "extreme").unwrap();
        assert_eq!(t.write_hint, Some(5));
        assert!(t.set("write_hint", "forever").is_err());
        t.set("lockmem", "16m").unwrap();
        assert_eq!(t.lockmem, 16 << 20);
    }
}
