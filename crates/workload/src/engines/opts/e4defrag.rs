//! The e4defrag engine's options (`donorname`, `inplace`); the engine is
//! [`crate::engines::e4defrag`].

use crate::SpecError;

/// The e4defrag engine's options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DefragOpts {
    /// The donor's name (`donorname`), in `directory` when given.
    pub donorname: Option<String>,
    /// Allocate and free the donor's blocks per write (`inplace=1`);
    /// default 0: the job's whole range once, at its start.
    pub inplace: bool,
}

impl DefragOpts {
    /// Keys this module sets.
    pub const KEYS: &'static [&'static str] = &["donorname", "inplace"];

    /// Set `donorname` or `inplace` (value as written).
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), SpecError> {
        let t = v.trim();
        match key {
            "donorname" => {
                if t.is_empty() {
                    return Err(SpecError::MissingValue(key.to_string()));
                }
                self.donorname = Some(t.to_string());
            }
            "inplace" => {
                self.inplace = match t {
                    "0" => false,
                    "1" => true,
                    _ => {
                        return Err(SpecError::BadValue {
                            key: key.to_string(),
                            value: v.to_string(),
                            expect: "0 (allocate the donor once) or 1 (per write)".to_string(),
                        })
                    }
                }
            }
            _ => {
                return Err(SpecError::Invalid(format!(
                    "{key} is not an e4defrag option"
                )))
            }
        }
        Ok(())
    }
}
