//! fio's options of where a job's I/Os fall and how large they are,
//! beyond `offset`, `bs` and `rw` themselves: the alignment of a
//! percentage offset (`offset_align`), block sizes of any byte count
//! within `bsrange` (`bs_unaligned`), and whether the I/Os after each
//! random offset of `rw=randread:N` continue sequentially or repeat it
//! (`rw_sequencer`), and whether an I/O waits while one it overlaps is in
//! flight (`serialize_overlap`). One family ([`OffsetOpts`]), read where the plan
//! resolves a target's region (`plan::planner`) and where the job's
//! generator is configured (`run::execute`, [`crate::job::gen`]).

use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::spec::size::parse_bytes;
use crate::spec::value::parse_flag;
use crate::SpecError;

/// The offsets and sizes family.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OffsetOpts {
    /// `offset_align`: a percentage `offset` (and `offset_increment`) is
    /// rounded up to a multiple of it; None: to the smallest block size.
    pub offset_align: Option<u64>,
    /// `bs_unaligned`: `bsrange` sizes of any byte count, not only
    /// multiples of the smallest.
    pub bs_unaligned: bool,
    /// `rw_sequencer=identical`: the I/Os after a random offset of
    /// `rw=randread:N` repeat it instead of following it.
    pub identical: bool,
    /// `serialize_overlap`: an I/O that overlaps one of the job's I/Os in
    /// flight waits for it to complete.
    pub serialize_overlap: bool,
}

impl OffsetOpts {
    /// The family's options.
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "offset_align",
            [],
            Size,
            "0",
            "round a percentage offset (offset=N%) up to a multiple of this; 0: to the smallest block size"
        ),
        opt!(
            "bs_unaligned",
            ["blocksize_unaligned"],
            Bool,
            "0",
            "with bsrange: any size in the range, not only multiples of its smallest (needs direct=0, as direct I/O needs whole sectors)"
        ),
        opt!(
            "rw_sequencer",
            [],
            Text,
            "sequential",
            "with rw=randread:N (and the other random modes): the N-1 I/Os after each random offset follow it (sequential) or repeat it (identical)"
        ),
        opt!(
            "serialize_overlap",
            [],
            Bool,
            "0",
            "an I/O that overlaps one of the job's I/Os in flight waits until that one completes (no two overlapping I/Os of the job in flight at once)"
        ),
    ];

    /// A percentage offset `raw` rounded up to `offset_align`, or to
    /// `min_bs` without it (fio's get_start_offset).
    pub fn align_up(&self, raw: u64, min_bs: u64) -> u64 {
        let a = self.offset_align.unwrap_or(min_bs).max(1);
        raw.div_ceil(a).saturating_mul(a)
    }
}

impl OptionFamily for OffsetOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        match key {
            "offset_align" => {
                let a = parse_bytes(key, v)?;
                self.offset_align = (a > 0).then_some(a);
            }
            "bs_unaligned" => self.bs_unaligned = parse_flag(key, v)?,
            "serialize_overlap" => self.serialize_overlap = parse_flag(key, v)?,
            _ => {
                self.identical = match v.trim() {
                    "sequential" => false,
                    "identical" => true,
                    _ => {
                        return Err(SpecError::BadValue {
                            key: key.to_string(),
                            value: v.to_string(),
                            expect: "sequential or identical".to_string(),
                        })
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentage_offsets_round_up_as_fio_rounds_them() {
        let mut o = OffsetOpts::default();
        // 33% of 4 MiB, to the 4 KiB block and to 64 KiB (fio: 1384448
        // and 1441792).
        let raw = 4_194_304 * 33 / 100;
        assert_eq!(o.align_up(raw, 4096), 1_384_448);
        o.set("offset_align", "64k").unwrap();
        assert_eq!(o.align_up(raw, 4096), 1_441_792);
        o.set("offset_align", "0").unwrap();
        assert_eq!(o.offset_align, None);
        o.set("rw_sequencer", "identical").unwrap();
        assert!(o.identical);
        assert!(o.set("rw_sequencer", "random").is_err());
    }
}
