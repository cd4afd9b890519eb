//! Value parsers every option family shares: fio's 0/1 flags, its
//! per-direction `READ,WRITE,TRIM` lists and whole numbers in a range.
//! They sit apart from the option blocks so that
//! every block can use them without reaching back into [`crate::spec::jobspec`].

use crate::SpecError;

/// A 0/1 option as fio spells it (bare: on); every option module's flags
/// parse through this one.
pub(crate) fn parse_flag(key: &str, v: &str) -> Result<bool, SpecError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "" | "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: "1 or 0".to_string(),
        }),
    }
}

/// Split fio's per-direction value `READ[,WRITE[,TRIM]]`. One value applies
/// to every direction; an empty part leaves that direction as it was; a
/// missing trim part follows the write part.
pub(crate) fn per_direction(v: &str) -> [Option<&str>; 3] {
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    fn some(s: &str) -> Option<&str> {
        (!s.is_empty()).then_some(s)
    }
    match parts.as_slice() {
        [one] => [some(one), some(one), some(one)],
        [r, w] => [some(r), some(w), some(w)],
        [r, w, t, ..] => [some(r), some(w), some(t).or(some(w))],
        [] => [None, None, None],
    }
}

/// A whole number in `min..=max`.
pub(crate) fn parse_in(key: &str, v: &str, min: u64, max: u64) -> Result<u64, SpecError> {
    v.trim()
        .parse::<u64>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: format!("a whole number from {min} to {max}"),
        })
}
