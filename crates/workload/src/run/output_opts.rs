//! fio's options of how a job's results are written out: the units of
//! the text (`kb_base`, which also decides how the job's own sizes are
//! read, `unit_base`, `significant_figures`), whether the directions are
//! reported apart, together or both (`unified_rw_reporting`), whether the
//! job is reported at all (`stats`) and the trim block lifetimes
//! (`block_error_percentiles`). One family ([`OutputOpts`]), read where a
//! job's result is built (`run::execute`) and, for `kb_base`, where the
//! job's options are set ([`crate::spec::size::with_kb_base`]).

use drivelab_report::model::TextUnits;

use crate::spec::decl::{opt, OptionDecl};
use crate::spec::family::OptionFamily;
use crate::spec::value::{parse_flag, parse_in};
use crate::SpecError;

/// fio's `unified_rw_reporting`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unified {
    /// `none`, `0`: each direction apart (the default).
    #[default]
    None,
    /// `mixed`, `1`: the directions summed into one `mixed` direction.
    Mixed,
    /// `both`, `2`: each direction apart, then the `mixed` sum.
    Both,
}

/// The output family.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputOpts {
    /// `kb_base`: 1024 (the default) or 1000.
    pub kb_base: u32,
    /// `unit_base`: 1 for bits; 0 (auto) and 8 are bytes.
    pub unit_base: u32,
    /// `significant_figures`: 1 to 10, default 4.
    pub sig_figs: u8,
    /// `unified_rw_reporting`.
    pub unified: Unified,
    /// `stats`: report the job (default on).
    pub stats: bool,
    /// `block_error_percentiles`: the trim block lifetime section.
    pub block_errors: bool,
}

impl Default for OutputOpts {
    fn default() -> Self {
        OutputOpts {
            kb_base: 1024,
            unit_base: 0,
            sig_figs: 4,
            unified: Unified::None,
            stats: true,
            block_errors: false,
        }
    }
}

impl OutputOpts {
    /// The family's options.
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "kb_base",
            [],
            Int,
            "1024",
            "1024 or 1000: with 1000 the job's sizes read k, m, g… as powers of 1000 (KiB, MiB… stay powers of 1024) and the text report puts the decimal units first",
            1000,
            1024,
            ""
        ),
        opt!(
            "unit_base",
            [],
            Int,
            "0",
            "0 (auto) or 8: bandwidth in bytes; 1: in bits (Mibit/s) in the text report",
            0,
            8,
            ""
        ),
        opt!(
            "significant_figures",
            [],
            Int,
            "4",
            "significant figures of the text report's IOPS, bandwidth and sizes",
            1,
            10,
            "digits"
        ),
        opt!(
            "unified_rw_reporting",
            [],
            Text,
            "none",
            "none/0: each direction apart; mixed/1: reads, writes and trims summed into one 'mixed' direction; both/2: each apart, then the mixed sum"
        ),
        opt!(
            "stats",
            [],
            Bool,
            "1",
            "0: the job runs but is left out of the report (text and JSON), as fio leaves it out"
        ),
        opt!(
            "block_error_percentiles",
            [],
            Bool,
            "0",
            "the trim block lifetime section of the text report (one file only); drivelab records no trim block failures, so it shows every block in its state and no percentiles"
        ),
    ];

    /// The text report's units of the job.
    pub fn text_units(&self) -> TextUnits {
        TextUnits {
            kb_base: self.kb_base,
            bits: self.unit_base == 1,
            sig_figs: self.sig_figs,
        }
    }
}

impl OptionFamily for OutputOpts {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let choice = |words: &[(&str, u32)], expect: &str| {
            words
                .iter()
                .find(|(w, _)| w.eq_ignore_ascii_case(v.trim()))
                .map(|&(_, n)| n)
                .ok_or_else(|| SpecError::BadValue {
                    key: key.to_string(),
                    value: v.to_string(),
                    expect: expect.to_string(),
                })
        };
        match key {
            "kb_base" => self.kb_base = choice(&[("1024", 1024), ("1000", 1000)], "1024 or 1000")?,
            "unit_base" => {
                self.unit_base = choice(
                    &[("0", 0), ("8", 8), ("1", 1)],
                    "0 (auto), 8 (bytes) or 1 (bits)",
                )?
            }
            "significant_figures" => self.sig_figs = parse_in(key, v, 1, 10)? as u8,
            "unified_rw_reporting" => {
                let words = [
                    ("none", 0),
                    ("0", 0),
                    ("mixed", 1),
                    ("1", 1),
                    ("both", 2),
                    ("2", 2),
                ];
                self.unified = match choice(&words, "none, mixed, both, 0, 1 or 2")? {
                    0 => Unified::None,
                    1 => Unified::Mixed,
                    _ => Unified::Both,
                };
            }
            "stats" => self.stats = parse_flag(key, v)?,
            _ => self.block_errors = parse_flag(key, v)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_values_are_fios() {
        let mut o = OutputOpts::default();
        assert_eq!(o.text_units(), TextUnits::default());
        o.set("kb_base", "1000").unwrap();
        assert!(o.set("kb_base", "1001").is_err());
        o.set("unit_base", "1").unwrap();
        assert!(o.set("unit_base", "2").is_err());
        o.set("significant_figures", "6").unwrap();
        assert!(o.set("significant_figures", "11").is_err());
        assert_eq!(
            o.text_units(),
            TextUnits {
                kb_base: 1000,
                bits: true,
                sig_figs: 6
            }
        );
        for (v, u) in [
            ("mixed", Unified::Mixed),
            ("1", Unified::Mixed),
            ("both", Unified::Both),
            ("0", Unified::None),
        ] {
            o.set("unified_rw_reporting", v).unwrap();
            assert_eq!(o.unified, u);
        }
        assert!(o.set("unified_rw_reporting", "3").is_err());
        o.set("stats", "0").unwrap();
        assert!(!o.stats);
    }
}
