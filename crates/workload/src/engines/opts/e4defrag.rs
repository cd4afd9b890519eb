//! The e4defrag engine's options (`donorname`, `inplace`); the engine is
//! [`crate::engines::e4defrag`].

use crate::spec::decl::{opt, OptionDecl};
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
    /// The e4defrag engine's options (fio's names and units).
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "donorname",
            [],
            Text,
            "",
            "e4defrag: the file whose blocks each write moves into the job's file (in directory; created, shared by jobs naming it)"
        ),
        opt!(
            "inplace",
            [],
            Int,
            "0",
            "e4defrag: 0 allocates the donor's blocks once at the job's start, 1 per write (then frees them)",
            0,
            1,
            ""
        ),
    ];

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
