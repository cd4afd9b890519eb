//! Strict JSON for signed records.
//!
//! A signature covers what drivelab's parser keeps. serde_json keeps the
//! last of two equal keys while other JSON readers (and people) may see the
//! first, so a file with `"result": "failed"` followed by `"result":
//! "erased"` would verify while showing the forged value. [`parse`] reads a
//! JSON document into a `Value` and refuses a duplicate key at any depth,
//! so every reader sees the one value the signature covers.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Parse `text` as JSON, refusing any object that holds a key twice. The
/// error is one line naming the key and the object's path (`$.a.b[2]`).
pub fn parse(text: &str) -> Result<Value, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = Strict { path: "$".into() }
        .deserialize(&mut de)
        .map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(v)
}

/// A value at `path`, for the error message.
struct Strict {
    path: String,
}

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Strict {
            path: format!("{}[{}]", self.path, out.len()),
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let mut seen = BTreeSet::new();
        while let Some(k) = map.next_key::<String>()? {
            if !seen.insert(k.clone()) {
                return Err(de::Error::custom(format!(
                    "key {k:?} appears twice in {}",
                    self.path
                )));
            }
            let v = map.next_value_seed(Strict {
                path: format!("{}.{k}", self.path),
            })?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_at_any_depth_are_refused() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"a":1,"b":{"c":[1,2.5,"x",null,true]}}"#, None),
            (r#"{"a":1,"a":2}"#, Some("key \"a\" appears twice in $")),
            (r#"{"a":{"b":1,"b":1}}"#, Some("in $.a")),
            (r#"{"a":[{},{"r":"x","r":"y"}]}"#, Some("in $.a[1]")),
            (r#"{"a":1} x"#, Some("trailing")),
            ("{", Some("EOF")),
        ];
        for (text, want) in cases {
            match (parse(text), want) {
                (Ok(v), None) => {
                    assert_eq!(v, serde_json::from_str::<Value>(text).unwrap())
                }
                (Err(e), Some(w)) => assert!(e.contains(w), "{text}: {e}"),
                (got, _) => panic!("{text}: {got:?}"),
            }
        }
    }

    #[test]
    fn floats_round_trip_as_serde_json_reads_them() {
        for f in [0.1, 1.0 / 3.0, 99.99999999999999, 1e-300, 123456.789] {
            let text = serde_json::to_string(&serde_json::json!({ "f": f })).unwrap();
            assert_eq!(parse(&text).unwrap()["f"].as_f64(), Some(f), "{text}");
        }
    }
}
