//! The messages the station's threads send its main loop: the watcher's
//! device events, the workers' state changes and results, the operator's
//! commands (keys on the screen, lines on standard input). A leaf.

use crate::drive::state::View;
use crate::watch::Seen;

/// One message to the main loop.
#[derive(Debug)]
pub enum Msg {
    /// A whole-disk event from the kernel.
    Seen(Seen),
    /// A drive's state changed (or its progress crossed a tenth).
    Changed {
        /// What is shown now.
        view: Box<View>,
        /// Whether it is progress within a state rather than a new state.
        progress: bool,
    },
    /// A drive's erase ended: its result, for the store.
    Result(Box<DriveResult>),
    /// An operator command.
    Command(Command),
    /// A key pressed on the screen.
    Key(crossterm::event::KeyEvent),
}

/// An operator command about one drive (by kernel name, node or serial),
/// or the whole station.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Hold a drive (stop its erase, journal kept).
    Hold(String),
    /// Let a held drive go on.
    Resume(String),
    /// Confirm erasing what held a drive (its partitions, filesystem, hidden area).
    Confirm(String),
    /// Stop a drive's erase for good (not erased, journal kept).
    Abort(String),
    /// Set a drive's asset tag (policy `certificate.asset_tag = "operator"`).
    Tag(String, String),
    /// Quit: stop every erase (journals kept) and exit.
    Quit,
}

impl Command {
    /// Parse a control line: `hold DRIVE`, `resume DRIVE`, `confirm DRIVE`,
    /// `abort DRIVE`, `tag DRIVE TEXT`, `quit`.
    pub fn parse(line: &str) -> Result<Command, String> {
        let line = line.trim();
        let (verb, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        let drive = || {
            if rest.is_empty() {
                Err(format!(
                    "{verb}: name the drive (kernel name, /dev node or serial)"
                ))
            } else {
                Ok(rest.to_string())
            }
        };
        match verb {
            "hold" => drive().map(Command::Hold),
            "resume" => drive().map(Command::Resume),
            "confirm" => drive().map(Command::Confirm),
            "abort" => drive().map(Command::Abort),
            "tag" => match rest.split_once(char::is_whitespace) {
                Some((d, t)) if !t.trim().is_empty() => Ok(Command::Tag(d.into(), t.trim().into())),
                _ => Err("tag: write tag DRIVE TEXT".into()),
            },
            "quit" => Ok(Command::Quit),
            _ => Err(format!(
                "unknown command '{verb}': use hold, resume, confirm, abort, tag or quit"
            )),
        }
    }
}

/// A drive's erase as it ended, with where it was.
#[derive(Debug)]
pub struct DriveResult {
    /// The drive as shown when it ended.
    pub view: View,
    /// The erase library's summary of this one drive.
    pub summary: drivelab_erase::Summary,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_lines_parse_or_say_what_to_write() {
        assert_eq!(
            Command::parse("confirm loop3"),
            Ok(Command::Confirm("loop3".into()))
        );
        assert_eq!(
            Command::parse(" hold /dev/sdb \n"),
            Ok(Command::Hold("/dev/sdb".into()))
        );
        assert_eq!(
            Command::parse("tag sdb A-17 rack 2"),
            Ok(Command::Tag("sdb".into(), "A-17 rack 2".into()))
        );
        assert_eq!(Command::parse("quit"), Ok(Command::Quit));
        assert!(Command::parse("confirm")
            .unwrap_err()
            .contains("name the drive"));
        assert!(Command::parse("wipe sdb")
            .unwrap_err()
            .contains("unknown command"));
    }
}
