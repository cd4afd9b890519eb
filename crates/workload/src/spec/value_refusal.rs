//! The shape of a refused option value and the rule names shared by the
//! option families that declare them ([`crate::spec::refused`] collects
//! the lists); a file of its own, so that a family declaring refused values
//! and the collection need not import each other.

/// The rule of fio features this build does not carry.
pub(crate) const NOT_CARRIED: &str = "not carried";

/// Values of an option drivelab carries that it refuses on purpose, under
/// a named rule with the reason. Each is declared beside its option's
/// family and listed in [`crate::spec::refused::REFUSED_VALUES`]; `JobSpec::set` answers one
/// with [`crate::SpecError::RefusedValue`] (one line, exit status 2),
/// never "bad value".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueRefusal {
    /// fio's name of the option.
    pub option: &'static str,
    /// The values (fio's names; a value's `:ARG` tail is not part of it).
    pub values: &'static [&'static str],
    /// The rule they fall under.
    pub rule: &'static str,
    /// Why, in one line.
    pub reason: &'static str,
}
