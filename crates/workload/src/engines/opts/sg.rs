//! The options of fio's `sg` engine (`sg_write_mode`, `stream_id`,
//! `readfua`, `writefua`) as one block of the job spec, turned into the
//! engine's [`SgOptions`] when the job starts. They mean something only
//! with `ioengine=sg`; with another engine the plan refuses them, naming
//! the key (fio: "Bad option").

use crate::spec::decl::{opt, OptionDecl};
use drivelab_engine::sg::{SgOptions, SgWriteMode};

use crate::SpecError;

/// The sg engine's options of one job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SgSpec {
    /// `sg_write_mode` as parsed (None: fio's default, `write`).
    pub write_mode: Option<SgWriteMode>,
    /// `stream_id`: the stream of `write_stream` (default 0).
    pub stream_id: u16,
    /// `readfua`: FUA on reads (default 0).
    pub readfua: bool,
    /// `writefua`: FUA on writes (default 0).
    pub writefua: bool,
}

/// The sg engine's options (fio's names and units), set by
/// [`SgSpec::set`].
pub const OPTIONS: &[OptionDecl] = &[
    opt!(
        "sg_write_mode",
        [],
        Text,
        "write",
        "ioengine=sg: what writes send: write, write_and_verify, write_same, write_same_ndob, write_stream, verify_bytchk_00, verify_bytchk_01 or verify_bytchk_11"
    ),
    opt!(
        "stream_id",
        [],
        Int,
        "0",
        "ioengine=sg: the stream of sg_write_mode=write_stream",
        0,
        65535,
        ""
    ),
    opt!("readfua", [], Bool, "0", "ioengine=sg: force unit access on reads"),
    opt!("writefua", [], Bool, "0", "ioengine=sg: force unit access on writes"),
];

impl SgSpec {
    /// Set one of [`OPTIONS`] from its value.
    pub fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let bad = |expect: &str| SpecError::BadValue {
            key: key.to_string(),
            value: v.to_string(),
            expect: expect.to_string(),
        };
        match key {
            "sg_write_mode" => {
                self.write_mode = Some(SgWriteMode::parse(v, 0).ok_or_else(|| {
                    bad("write, write_and_verify (or verify), write_same (or same), write_same_ndob, write_stream, verify_bytchk_00, verify_bytchk_01 or verify_bytchk_11")
                })?)
            }
            "stream_id" => {
                self.stream_id = v
                    .trim()
                    .parse()
                    .map_err(|_| bad("a stream identifier 0..=65535"))?
            }
            "readfua" | "writefua" => {
                let on = match v.trim().to_ascii_lowercase().as_str() {
                    "" | "1" | "true" | "yes" | "on" => true,
                    "0" | "false" | "no" | "off" => false,
                    _ => return Err(bad("1 or 0")),
                };
                if key == "readfua" {
                    self.readfua = on;
                } else {
                    self.writefua = on;
                }
            }
            _ => return Err(bad("an sg engine option")),
        }
        Ok(())
    }

    /// The engine's options.
    pub fn options(&self) -> SgOptions {
        let mode = match self.write_mode.unwrap_or(SgWriteMode::Write) {
            SgWriteMode::WriteStream(_) => SgWriteMode::WriteStream(self.stream_id),
            m => m,
        };
        SgOptions {
            write_mode: mode,
            readfua: self.readfua,
            writefua: self.writefua,
        }
    }

    /// Whether the job's writes leave the medium as it was (the VERIFY
    /// modes compare, they do not write).
    pub fn writes_read_only(&self) -> bool {
        !self.options().write_mode.changes_medium()
    }
}
