//! The shape of one declared option: its name, aliases, kind, default,
//! bounds, unit and help. The general table ([`crate::spec::options`]) and
//! each engine's own table (beside its option block, under
//! `engines/opts/`) are rows of it, written with [`opt`].

use crate::SpecError;

/// What kind of value an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    /// A flag: bare means on; `=0`/`=1` also accepted.
    Bool,
    /// A whole number.
    Int,
    /// A size in bytes with fio suffixes (k = 1024).
    Size,
    /// A size, or a percentage of the target.
    SizeOrPercent,
    /// A time; bare numbers are seconds.
    Time,
    /// Free text or a choice.
    Text,
}

/// One declared option.
#[derive(Debug, Clone, Copy)]
pub struct OptionDecl {
    /// fio's name.
    pub name: &'static str,
    /// Other names fio accepts for it.
    pub aliases: &'static [&'static str],
    /// Value kind.
    pub kind: OptionKind,
    /// Default, as the user would type it ("" = none).
    pub default: &'static str,
    /// Smallest and largest value of a whole-number option, inclusive.
    pub bounds: Option<(u64, u64)>,
    /// Unit of the value ("" for none or a kind's own: sizes are bytes
    /// with k = 1024, bare times are seconds).
    pub unit: &'static str,
    /// One line of help.
    pub help: &'static str,
}

impl OptionDecl {
    /// The unit as the help shows it.
    pub fn unit_text(&self) -> &'static str {
        match (self.unit, self.kind) {
            ("", OptionKind::Size) => "bytes, k = 1024",
            ("", OptionKind::SizeOrPercent) => "bytes (k = 1024) or N%",
            ("", OptionKind::Time) => "s when bare",
            (u, _) => u,
        }
    }
}

/// A whole number within the bounds `table`'s row for `key` declares
/// (any number when it declares none).
pub fn parse_in(table: &[OptionDecl], key: &str, v: &str) -> Result<u64, SpecError> {
    let bounds = table.iter().find(|d| d.name == key).and_then(|d| d.bounds);
    parse_within(key, bounds.unwrap_or((0, u64::MAX)), v)
}

/// A whole number from `min` to `max`, or the error naming `key`.
fn parse_within(key: &str, (min, max): (u64, u64), v: &str) -> Result<u64, SpecError> {
    match v.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: format!("a whole number from {min} to {max}"),
        }),
    }
}

/// One [`OptionDecl`] row: `opt!(name, [aliases], Kind, "default", "help")`,
/// or with `min, max, "unit"` after the help for a bounded whole number.
macro_rules! opt {
    ($name:literal, [$($alias:literal),*], $kind:ident, $default:literal, $help:literal) => {
        $crate::spec::decl::OptionDecl {
            name: $name,
            aliases: &[$($alias),*],
            kind: $crate::spec::decl::OptionKind::$kind,
            default: $default,
            bounds: None,
            unit: "",
            help: $help,
        }
    };
    ($name:literal, [$($alias:literal),*], $kind:ident, $default:literal, $help:literal,
     $min:expr, $max:expr, $unit:literal) => {
        $crate::spec::decl::OptionDecl {
            name: $name,
            aliases: &[$($alias),*],
            kind: $crate::spec::decl::OptionKind::$kind,
            default: $default,
            bounds: Some(($min, $max)),
            unit: $unit,
            help: $help,
        }
    };
}

pub(crate) use opt;
