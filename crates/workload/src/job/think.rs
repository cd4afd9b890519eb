//! fio's options of when a job's think time comes and what it does to a
//! rate: `thinktime_blocks_type` (the blocks are counted as they complete,
//! fio's default, or as they are issued), `thinktime_iotime` (think after
//! this long doing I/O) and `rate_ignore_thinktime` (the rate's clock runs
//! on through the pause, so the job does not catch up after it). One
//! family ([`ThinkOpts`]), read by the job loop's think time
//! ([`crate::job::io_loop::Think`]); `thinktime`, `thinktime_spin` and
//! `thinktime_blocks` are the job's own options.

use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::spec::value::parse_flag;
use crate::SpecError;

/// The think time family.
#[derive(Debug, Clone, PartialEq)]
pub struct ThinkOpts {
    /// `thinktime_blocks_type=complete` (the default): `thinktime_blocks`
    /// counts completed I/Os; false (`issue`): issued ones.
    pub on_completion: bool,
    /// `thinktime_iotime`: think after this long doing I/O, µs; 0: not.
    pub iotime_us: u64,
    /// `rate_ignore_thinktime`.
    pub rate_ignore: bool,
}

impl Default for ThinkOpts {
    fn default() -> Self {
        ThinkOpts {
            on_completion: true,
            iotime_us: 0,
            rate_ignore: false,
        }
    }
}

impl ThinkOpts {
    /// The family's options.
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "thinktime_blocks_type",
            [],
            Text,
            "complete",
            "what thinktime_blocks counts: complete (I/Os completed, fio's default: up to iodepth stay queued) or issue (I/Os issued: the depth is capped at thinktime_blocks)"
        ),
        opt!(
            "thinktime_iotime",
            [],
            Time,
            "0",
            "with thinktime: think after this long doing I/O (or after thinktime_blocks I/Os, if also given, whichever comes first); 0: by blocks only"
        ),
        opt!(
            "rate_ignore_thinktime",
            [],
            Bool,
            "0",
            "with a rate and thinktime: the rate's clock runs on through each pause, so the job does not catch up after it (by default it issues at once what the pause held back)"
        ),
    ];
}

impl OptionFamily for ThinkOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        match key {
            "thinktime_blocks_type" => {
                self.on_completion = match v.trim() {
                    "complete" => true,
                    "issue" => false,
                    _ => {
                        return Err(SpecError::BadValue {
                            key: key.to_string(),
                            value: v.to_string(),
                            expect: "complete or issue".to_string(),
                        })
                    }
                }
            }
            "thinktime_iotime" => {
                // fio: a bare number is seconds.
                let d = crate::spec::size::parse_duration(key, v)?;
                self.iotime_us = d.as_micros() as u64;
            }
            _ => self.rate_ignore = parse_flag(key, v)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_values_are_fios() {
        let mut t = ThinkOpts::default();
        assert!(t.on_completion);
        t.set("thinktime_blocks_type", "issue").unwrap();
        assert!(!t.on_completion);
        assert!(t.set("thinktime_blocks_type", "both").is_err());
        t.set("thinktime_iotime", "2").unwrap();
        assert_eq!(t.iotime_us, 2_000_000);
        t.set("thinktime_iotime", "250ms").unwrap();
        assert_eq!(t.iotime_us, 250_000);
        t.set("rate_ignore_thinktime", "1").unwrap();
        assert!(t.rate_ignore);
    }
}
