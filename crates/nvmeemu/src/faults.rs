//! Faults on command: what the emulated controller does wrong, set by the
//! command line (`--fault`) or by lines in a control file the controller
//! re-reads whenever it changes, so a test can break a drive mid-run.
//!
//! The control file's faults are added to the command line's, and replace
//! the file's previous ones when it changes (an empty file clears them).
//! One fault per line (blank lines and `#` comments ignored):
//! - `sanitize-fail`: the next Sanitize stops half way and reports failure
//!   (Sanitize Status log SSTAT 011b); the controller is then in sanitize
//!   failure mode, refusing I/O with Sanitize Failed until a Sanitize with
//!   Exit Failure Mode, or a successful one.
//! - `sanitize-stall`: the next Sanitize stops half way and stays there:
//!   the Sanitize Status log reports it in progress (SSTAT 010b) at SPROG
//!   half for as long as the controller runs, I/O is refused with Sanitize
//!   In Progress, and the rest of the medium is never erased.
//! - `hang admin|io OPCODE`: commands with that opcode (hex, e.g. `84` or
//!   `0x02`) on that kind of queue are taken and never answered.
//! - `delay admin|io OPCODE SECONDS`: commands with that opcode on that
//!   kind of queue are carried out at once and answered SECONDS later (a
//!   drive slow to complete them); the queue serves other commands
//!   meanwhile, so Keep Alive still answers.
//! - `freeze`: no command at all is answered (the drive stops responding).
//! - `crypto-noop`: a crypto erase (Sanitize Crypto Erase, Format NVM SES 2)
//!   completes with success but keeps the media key, so every block reads
//!   back as before (the drive that reports an erase it did not do).

/// The faults in force.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    /// The next Sanitize fails half way.
    pub sanitize_fails: bool,
    /// The next Sanitize stalls half way.
    pub sanitize_stalls: bool,
    /// (admin queue?, opcode) of commands never answered.
    pub hang: Vec<(bool, u8)>,
    /// Nothing is answered.
    pub frozen: bool,
    /// A crypto erase succeeds without replacing the media key.
    pub crypto_noop: bool,
    /// (admin queue?, opcode, seconds) of commands answered late.
    pub delay: Vec<(bool, u8, u64)>,
}

/// Whether `queue` names the admin queue (true) or the I/O queues.
fn admin_queue(queue: &str) -> Result<bool, String> {
    match queue {
        "admin" => Ok(true),
        "io" => Ok(false),
        other => Err(format!("queue {other:?}: use admin or io")),
    }
}

/// An opcode in hex, with or without 0x.
fn opcode(op: &str) -> Result<u8, String> {
    let hex = op.trim_start_matches("0x").trim_start_matches("0X");
    u8::from_str_radix(hex, 16).map_err(|_| format!("opcode {op:?}: give it in hex, e.g. 84"))
}

impl Faults {
    /// Adds the fault one line names; an error says what is wrong.
    pub fn add(&mut self, line: &str) -> Result<(), String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => Ok(()),
            [w, ..] if w.starts_with('#') => Ok(()),
            ["sanitize-fail"] => {
                self.sanitize_fails = true;
                Ok(())
            }
            ["sanitize-stall"] => {
                self.sanitize_stalls = true;
                Ok(())
            }
            ["freeze"] => {
                self.frozen = true;
                Ok(())
            }
            ["crypto-noop"] => {
                self.crypto_noop = true;
                Ok(())
            }
            ["hang", queue, op] => {
                let admin = admin_queue(queue).map_err(|e| format!("hang: {e}"))?;
                let op = opcode(op).map_err(|e| format!("hang: {e}"))?;
                self.hang.push((admin, op));
                Ok(())
            }
            ["delay", queue, op, secs] => {
                let admin = admin_queue(queue).map_err(|e| format!("delay: {e}"))?;
                let op = opcode(op).map_err(|e| format!("delay: {e}"))?;
                let secs = secs
                    .parse()
                    .map_err(|_| format!("delay: {secs:?}: give whole seconds, e.g. 90"))?;
                self.delay.push((admin, op, secs));
                Ok(())
            }
            _ => Err(format!(
                "fault {line:?}: use sanitize-fail, sanitize-stall, freeze, crypto-noop, hang admin|io OPCODE, or delay admin|io OPCODE SECONDS"
            )),
        }
    }

    /// Every line of a control file's text; the first bad line is an error.
    pub fn parse(text: &str) -> Result<Faults, String> {
        let mut f = Faults::default();
        for line in text.lines() {
            f.add(line)?;
        }
        Ok(f)
    }

    /// Whether a command with `opcode` on an admin (or I/O) queue is never
    /// answered.
    pub fn hangs(&self, admin: bool, opcode: u8) -> bool {
        self.frozen || self.hang.contains(&(admin, opcode))
    }

    /// How long the completion of a command with `opcode` on an admin (or
    /// I/O) queue is held, when a fault delays it (the longest delay that
    /// names it).
    pub fn delay(&self, admin: bool, opcode: u8) -> Option<std::time::Duration> {
        self.delay
            .iter()
            .filter(|(a, o, _)| (*a, *o) == (admin, opcode))
            .map(|(_, _, s)| std::time::Duration::from_secs(*s))
            .max()
    }

    /// These faults with `other`'s added.
    pub fn with(&self, other: &Faults) -> Faults {
        Faults {
            sanitize_fails: self.sanitize_fails || other.sanitize_fails,
            sanitize_stalls: self.sanitize_stalls || other.sanitize_stalls,
            hang: [self.hang.as_slice(), &other.hang].concat(),
            frozen: self.frozen || other.frozen,
            crypto_noop: self.crypto_noop || other.crypto_noop,
            delay: [self.delay.as_slice(), &other.delay].concat(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_lines_parse_into_faults() {
        let f = Faults::parse("# a test\nsanitize-fail\nhang admin 84\nhang io 0x02\n\n").unwrap();
        assert!(f.sanitize_fails && !f.frozen);
        assert!(f.hangs(true, 0x84) && f.hangs(false, 0x02));
        assert!(!f.hangs(false, 0x84) && !f.hangs(true, 0x02));
        assert!(Faults::parse("crypto-noop").unwrap().crypto_noop);
        let st = Faults::parse("sanitize-stall").unwrap();
        assert!(st.sanitize_stalls && !st.sanitize_fails);
        assert!(f.with(&st).sanitize_stalls);
        let z = Faults::parse("freeze").unwrap();
        assert!(z.hangs(true, 0x06) && z.hangs(false, 0x01));
        for bad in [
            "hang disk 84",
            "hang io zz",
            "explode",
            "delay admin 84",
            "delay admin 84 soon",
            "delay disk 84 5",
        ] {
            assert!(Faults::parse(bad).is_err(), "{bad}");
        }
        let d = Faults::parse("delay admin 84 90\ndelay io 0x02 1\ndelay admin 84 5").unwrap();
        assert_eq!(
            d.delay(true, 0x84),
            Some(std::time::Duration::from_secs(90))
        );
        assert_eq!(
            d.delay(false, 0x02),
            Some(std::time::Duration::from_secs(1))
        );
        assert_eq!(d.delay(false, 0x84), None);
        assert!(!d.hangs(true, 0x84));
        let both = f.with(&d);
        assert!(both.sanitize_fails && both.hangs(true, 0x84));
        assert_eq!(
            both.delay(true, 0x84),
            Some(std::time::Duration::from_secs(90))
        );
    }
}
