//! What a result JSON must hold before a page draws it: each result kind
//! whose struct reads leniently (every missing field defaults, see
//! [`crate::metrics::read_lenient`]) names, beside its struct, the fields
//! the page would otherwise draw as zeros or blanks, and checks them with
//! [`fields`] and [`each`]. The refusal is one line naming the field. The
//! owning crate tests its list against the struct's own serialisation, so
//! a renamed field fails a test there.

use serde_json::Value;

/// What a field must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A whole number (`u64`).
    U64,
    /// Any number.
    Num,
    /// A string.
    Str,
    /// `true` or `false`.
    Bool,
    /// A list.
    Arr,
    /// An object.
    Obj,
}

impl Want {
    fn holds(self, v: &Value) -> bool {
        match self {
            Want::U64 => v.is_u64(),
            Want::Num => v.is_number(),
            Want::Str => v.is_string(),
            Want::Bool => v.is_boolean(),
            Want::Arr => v.is_array(),
            Want::Obj => v.is_object(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Want::U64 => "a whole number",
            Want::Num => "a number",
            Want::Str => "a string",
            Want::Bool => "true or false",
            Want::Arr => "a list",
            Want::Obj => "an object",
        }
    }
}

/// Each `(path, want)` of `v` holds what it must; a path's parts are
/// joined by dots (`score.iops`) and `at` names `v` in the error
/// (`steps[0].`, or "" for the whole result).
pub fn fields(v: &Value, at: &str, list: &[(&str, Want)]) -> Result<(), String> {
    for &(path, want) in list {
        let ptr = format!("/{}", path.replace('.', "/"));
        match v.pointer(&ptr) {
            Some(x) if want.holds(x) => {}
            Some(_) => return Err(format!("{at}{path} is not {}", want.name())),
            None => return Err(format!("{at}{path} is missing")),
        }
    }
    Ok(())
}

/// Every element of the list `key` of `v` passes `each`, called with the
/// element and its name (`key[i].`); no list, nothing to check.
pub fn each(
    v: &Value,
    key: &str,
    each: impl Fn(&Value, &str) -> Result<(), String>,
) -> Result<(), String> {
    for (i, x) in v
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .enumerate()
    {
        each(x, &format!("{key}[{i}]."))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_field_missing_or_of_the_wrong_type_is_named() {
        let v = json!({"a": {"b": 1.5}, "n": 3, "list": [{"x": "s"}, {"x": 2}]});
        assert_eq!(
            fields(&v, "", &[("a.b", Want::Num), ("n", Want::U64)]),
            Ok(())
        );
        assert_eq!(
            fields(&v, "", &[("a.b", Want::U64)]),
            Err("a.b is not a whole number".into())
        );
        assert_eq!(
            fields(&v, "r.", &[("a.c", Want::Num)]),
            Err("r.a.c is missing".into())
        );
        assert_eq!(
            each(&v, "list", |x, at| fields(x, at, &[("x", Want::Str)])),
            Err("list[1].x is not a string".into())
        );
        assert_eq!(each(&v, "none", |_, _| Err("called".into())), Ok(()));
    }
}
