//! fio's options of what a job's write buffers hold: zeroes
//! (`zero_buffers`), new random data for every write (`refill_buffers`,
//! through the job's buffer filler, [`crate::job::dedupe::BufFiller`]), and
//! `scramble_buffers`. One family ([`BufOpts`]).

use drivelab_engine::buf::Fill;

use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::spec::value::parse_flag;
use crate::SpecError;

/// The write-buffer family.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BufOpts {
    /// Buffers hold zeroes (`zero_buffers`).
    pub zero: bool,
    /// Every write gets new random data (`refill_buffers`).
    pub refill: bool,
}

impl BufOpts {
    /// The family's options.
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "zero_buffers",
            [],
            Bool,
            "0",
            "fill the I/O buffers with zeroes (default: random data, filled once)"
        ),
        opt!(
            "refill_buffers",
            [],
            Bool,
            "0",
            "new random data in the buffer of every write (default: filled once and reused)"
        ),
        opt!(
            "scramble_buffers",
            [],
            Bool,
            "1",
            "accepted: fio stamps each reused buffer to defeat naive dedupe; drivelab does not stamp (use refill_buffers for unique data per write)"
        ),
    ];

    /// How the job's buffers are filled when they are made.
    pub fn fill(&self, seed: u64) -> Fill {
        if self.zero && !self.refill {
            Fill::Zeroed
        } else {
            Fill::Random(seed)
        }
    }
}

impl OptionFamily for BufOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let on = parse_flag(key, v)?;
        match key {
            "zero_buffers" => self.zero = on,
            "refill_buffers" => self.refill = on,
            _ => {}
        }
        Ok(())
    }
}
