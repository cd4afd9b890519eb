//! SCT Command Transport (ACS-3 8): an SCT command is a 512-byte key
//! written to log E0h (SMART WRITE LOG or WRITE LOG EXT), its status read
//! back from log E0h, its data, when it has any, written to or read from
//! log E1h. Two actions are implemented. Data Tables (0005h, 8.7):
//! function 0001h (read) of table 0002h, the temperature history, which
//! the host then reads from log E1h. Write Same (0002h, 8.4): the pattern
//! functions (0001h background, 0101h foreground: a 32-bit pattern,
//! little-endian, repeated) and the sector functions (0002h, 0102h: one
//! logical sector of data, written next to log E1h, repeated). A
//! background function is carried out before the command returns, so the
//! status never shows it running. Another action, or the multi-sector
//! functions, are aborted with their extended status code (8.2.3).

use super::outcome::{MediumAction, Outcome};
use super::regs::Regs;

/// The SCT logs.
pub mod log {
    /// The SCT command / status log.
    pub const COMMAND: u8 = 0xE0;
    /// The SCT data transfer log.
    pub const DATA: u8 = 0xE1;
}

/// Extended status codes (ACS-3 table "Extended Status codes").
pub mod status {
    /// Command complete without error.
    pub const OK: u16 = 0x0000;
    /// Invalid function code.
    pub const INVALID_FUNCTION: u16 = 0x0001;
    /// Input LBA out of range.
    pub const LBA_OUT_OF_RANGE: u16 = 0x0002;
    /// SCT data transfer command issued without first issuing an SCT
    /// command.
    pub const NO_COMMAND: u16 = 0x000B;
    /// Invalid SCT action code.
    pub const INVALID_ACTION: u16 = 0x0010;
    /// Invalid table ID (Data Tables: a table not supported).
    pub const INVALID_TABLE: u16 = 0x0011;
    /// Command aborted: security locked.
    pub const LOCKED: u16 = 0x0012;
}

/// The SCT Write Same action code.
pub const ACTION_WRITE_SAME: u16 = 0x0002;
/// The SCT Data Tables action code.
pub const ACTION_DATA_TABLES: u16 = 0x0005;
/// Data Tables: the temperature history table.
pub const TABLE_TEMPERATURE_HISTORY: u16 = 0x0002;
/// Temperature limits the drive states, Celsius: recommended maximum and
/// minimum operating temperatures, and the limits beyond them.
const LIMITS: [i8; 4] = [70, 75, 0, -5];
/// Entries of the temperature history (a ring, one per minute).
const HISTORY: usize = 128;

/// The SCT state: the last command and what it did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sct {
    /// The last command's action code.
    pub action: u16,
    /// Its function code.
    pub function: u16,
    /// Its extended status.
    pub extended_status: u16,
    /// The LBA its write reached (past its last block when done).
    pub current_lba: u64,
    /// A sector-function Write Same waiting for its data (first block,
    /// blocks).
    pub pending: Option<(u64, u64)>,
    /// Write Same commands carried out: (function, first block, blocks).
    pub write_same: Vec<(u16, u64, u64)>,
    /// The table a Data Tables read asked for, which log E1h returns.
    pub table: Option<u16>,
    /// Data Tables reads answered.
    pub tables_read: u64,
}

fn word(d: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([d[2 * i], d[2 * i + 1]])
}

fn qword(d: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[2 * i..2 * i + 8]);
    u64::from_le_bytes(b)
}

/// An SCT command's failure: ABRT with the extended status in LBA 15:0
/// (ACS-3 8.2.3).
fn failed(code: u16) -> Outcome {
    let mut o = Outcome::abort();
    o.regs.lba = u64::from(code);
    o
}

impl Sct {
    /// The key sector written to log E0h by a drive of `max_blocks`
    /// addressable blocks, locked or not.
    pub fn command(&mut self, key: &[u8], max_blocks: u64, locked: bool) -> Outcome {
        let Some(key) = key.get(..512) else {
            return Outcome::abort();
        };
        self.action = word(key, 0);
        self.function = word(key, 1);
        self.pending = None;
        self.table = None;
        let code = if self.action == ACTION_DATA_TABLES {
            self.data_tables(key).map(|()| None)
        } else {
            self.write_same(key, max_blocks, locked)
        };
        self.extended_status = code.as_ref().err().copied().unwrap_or(status::OK);
        match code {
            Err(c) => failed(c),
            Ok(None) => Outcome::ok(Regs::default()),
            Ok(Some(action)) => {
                let mut o = Outcome::ok(Regs::default());
                o.medium = Some(action);
                o
            }
        }
    }

    /// Write Same's key: the medium action of a pattern function, none
    /// for a sector function (its data follows), or the extended status.
    fn write_same(
        &mut self,
        key: &[u8],
        max_blocks: u64,
        locked: bool,
    ) -> Result<Option<MediumAction>, u16> {
        if self.action != ACTION_WRITE_SAME {
            return Err(status::INVALID_ACTION);
        }
        if locked {
            return Err(status::LOCKED);
        }
        let (start, count) = (qword(key, 2), qword(key, 6));
        if start >= max_blocks {
            return Err(status::LBA_OUT_OF_RANGE);
        }
        // A count of zero: to the end of the drive.
        let count = if count == 0 {
            max_blocks - start
        } else {
            count
        };
        if start.checked_add(count).is_none_or(|e| e > max_blocks) {
            return Err(status::LBA_OUT_OF_RANGE);
        }
        match self.function {
            0x0001 | 0x0101 => {
                let pattern = u32::from(word(key, 10)) | (u32::from(word(key, 11)) << 16);
                Ok(Some(self.done(
                    start,
                    count,
                    MediumAction::Pattern(pattern),
                )))
            }
            0x0002 | 0x0102 => {
                self.pending = Some((start, count));
                Ok(None)
            }
            _ => Err(status::INVALID_FUNCTION),
        }
    }

    /// A Data Tables key: function 0001h (read table) of the temperature
    /// history; else the extended status.
    fn data_tables(&mut self, key: &[u8]) -> Result<(), u16> {
        if self.function != 0x0001 {
            return Err(status::INVALID_FUNCTION);
        }
        if word(key, 2) != TABLE_TEMPERATURE_HISTORY {
            return Err(status::INVALID_TABLE);
        }
        self.table = Some(TABLE_TEMPERATURE_HISTORY);
        Ok(())
    }

    /// Log E1h read: the table the last Data Tables command named, of a
    /// drive at `temperature_c` since it powered on `minutes` ago; `None`
    /// when no table was asked for.
    pub fn read_table(&mut self, temperature_c: u8, minutes: u64) -> Option<Vec<u8>> {
        self.table?;
        self.tables_read += 1;
        Some(temperature_history(temperature_c, minutes))
    }

    /// The sector a sector-function Write Same repeats, written to log
    /// E1h; `block` is the logical sector's length.
    pub fn data(&mut self, data: &[u8], block: usize) -> Outcome {
        let Some((start, count)) = self.pending.take() else {
            self.extended_status = status::NO_COMMAND;
            return failed(status::NO_COMMAND);
        };
        let Some(sector) = data.get(..block) else {
            return Outcome::abort();
        };
        let mut o = Outcome::ok(Regs::default());
        o.medium = Some(self.done(start, count, MediumAction::Block(sector.to_vec())));
        o
    }

    fn done(&mut self, start: u64, count: u64, with: MediumAction) -> MediumAction {
        self.current_lba = start + count;
        self.extended_status = status::OK;
        self.write_same.push((self.function, start, count));
        MediumAction::Blocks {
            lba: start,
            blocks: count,
            with: Box::new(with),
        }
    }

    /// The SCT status (log E0h read, ACS-3 8.2.2 "SCT Status Response"),
    /// with the drive at `temperature_c`.
    pub fn status(&self, temperature_c: u8) -> Vec<u8> {
        let mut d = vec![0u8; 512];
        d[0..2].copy_from_slice(&3u16.to_le_bytes()); // format version
        d[2..4].copy_from_slice(&1u16.to_le_bytes()); // SCT version
        d[4..6].copy_from_slice(&1u16.to_le_bytes()); // SCT spec
        d[10] = 0; // device state: active, no SCT command running
        d[14..16].copy_from_slice(&self.extended_status.to_le_bytes());
        d[16..18].copy_from_slice(&self.action.to_le_bytes());
        d[18..20].copy_from_slice(&self.function.to_le_bytes());
        d[40..48].copy_from_slice(&self.current_lba.to_le_bytes());
        // The temperature now, its minimum and maximum this power cycle
        // and over the drive's life (it has stayed the same); no interval
        // over or under the limits (206-213).
        d[200..205].fill(temperature_c);
        d
    }
}

/// The temperature history table (ACS-3 8.7.3, table 0002h): format
/// version 2, one sample a minute in a ring of 128 entries, the entry of
/// the minute now last; the minutes before power-on hold 80h (no value).
fn temperature_history(temperature_c: u8, minutes: u64) -> Vec<u8> {
    let mut d = vec![0u8; 512];
    d[0..2].copy_from_slice(&2u16.to_le_bytes());
    d[2..4].copy_from_slice(&1u16.to_le_bytes()); // sampling period, minutes
    d[4..6].copy_from_slice(&1u16.to_le_bytes()); // interval, minutes
    for (i, l) in LIMITS.iter().enumerate() {
        d[6 + i] = *l as u8;
    }
    d[30..32].copy_from_slice(&(HISTORY as u16).to_le_bytes());
    let now = (minutes % HISTORY as u64) as usize;
    d[32..34].copy_from_slice(&(now as u16).to_le_bytes());
    let ring = &mut d[34..34 + HISTORY];
    ring.fill(0x80);
    let samples = (minutes + 1).min(HISTORY as u64) as usize;
    for k in 0..samples {
        ring[(now + HISTORY - k) % HISTORY] = temperature_c;
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use drivelab_device::ata::{SctStatus, SctWriteSame, SctWriteSameFunction as F};
    use drivelab_device::units::{BlockCount, Lba};

    #[test]
    fn drivelabs_key_sectors_become_the_writes_they_name() {
        let mut s = Sct::default();
        let key = SctWriteSame::new(F::PatternForeground, Lba(8), BlockCount(16))
            .pattern(0xA5A5_5A5A)
            .build();
        let o = s.command(&key, 1000, false);
        assert_eq!(
            o.medium,
            Some(MediumAction::Blocks {
                lba: 8,
                blocks: 16,
                with: Box::new(MediumAction::Pattern(0xA5A5_5A5A)),
            })
        );
        let st = SctStatus::parse(&s.status(35)).expect("status");
        assert_eq!(
            (st.action_code, st.function_code, st.extended_status),
            (2, 0x0101, 0)
        );
        assert_eq!((st.current_lba, st.temperature_c), (24, Some(35)));
        // A count of zero runs to the end of the drive.
        let key = SctWriteSame::new(F::PatternBackground, Lba(900), BlockCount(0)).build();
        match s.command(&key, 1000, false).medium {
            Some(MediumAction::Blocks { lba, blocks, .. }) => assert_eq!((lba, blocks), (900, 100)),
            m => panic!("{m:?}"),
        }
        // A sector function: the data follows in log E1h.
        let key = SctWriteSame::new(F::SectorForeground, Lba(0), BlockCount(4)).build();
        assert_eq!(s.command(&key, 1000, false).medium, None);
        let o = s.data(&[0x11; 512], 512);
        assert_eq!(
            o.medium,
            Some(MediumAction::Blocks {
                lba: 0,
                blocks: 4,
                with: Box::new(MediumAction::Block(vec![0x11; 512])),
            })
        );
        assert_eq!(s.write_same.len(), 3);
    }

    #[test]
    fn bad_sct_commands_are_aborted_with_their_extended_status() {
        let ws = |f, lba, n| SctWriteSame::new(f, Lba(lba), BlockCount(n)).build();
        let mut other = [0u8; 512];
        other[0] = 0x03; // error recovery control: not implemented
        let cases: [(&[u8], bool, u16); 5] = [
            (
                &ws(F::PatternForeground, 990, 11),
                false,
                status::LBA_OUT_OF_RANGE,
            ),
            (
                &ws(F::PatternForeground, 1000, 0),
                false,
                status::LBA_OUT_OF_RANGE,
            ),
            (
                &ws(F::MultiSectorForeground, 0, 1),
                false,
                status::INVALID_FUNCTION,
            ),
            (&ws(F::PatternForeground, 0, 1), true, status::LOCKED),
            (&other, false, status::INVALID_ACTION),
        ];
        for (key, locked, code) in cases {
            let mut s = Sct::default();
            let o = s.command(key, 1000, locked);
            assert!(o.failed() && o.medium.is_none(), "{code:04x}");
            assert_eq!((o.regs.lba, s.extended_status), (u64::from(code), code));
        }
        // Data without a command before it.
        let mut s = Sct::default();
        assert!(s.data(&[0; 512], 512).failed());
        assert_eq!(s.extended_status, status::NO_COMMAND);
    }
}
