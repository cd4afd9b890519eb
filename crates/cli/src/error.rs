//! How failures reach the user: one line, saying what to do, and an exit
//! status that scripts can rely on (2 = bad input or refused, 1 = the work
//! failed).

use std::process::ExitCode;

/// An error in what the user asked for (bad option, missing target, unsafe
/// write refused). Reported as one line with exit status 2, before anything
/// was written.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A write that failed once the results were complete: the results went to
/// standard output instead (or were delivered, and a side file such as a
/// log failed). Reported as one line on stderr, even in JSON mode, so that
/// standard output holds only the results; exit status 1.
#[derive(Debug)]
pub struct LateWriteError(pub String);

impl std::fmt::Display for LateWriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LateWriteError {}

/// Shorthand: a usage error as an `anyhow::Error`.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// Exit status for an error: 2 when any cause in the chain is a usage error
/// or a library error that says the input was bad, else 1.
pub fn exit_status(e: &anyhow::Error) -> u8 {
    let bad_input = |c: &(dyn std::error::Error + 'static)| {
        c.is::<UsageError>()
            || c.is::<drivelab_device::input::InputError>()
            || c.downcast_ref::<drivelab_trace::TraceError>()
                .is_some_and(|t| t.is_bad_input())
            || c.downcast_ref::<drivelab_device::output::OutputError>()
                .is_some_and(|o| o.is_refusal())
    };
    if e.chain().any(bad_input) {
        2
    } else {
        1
    }
}

/// Check that `path` names a device node (block or character device), so
/// that a missing path or a file given where a device belongs is bad input
/// (exit status 2) rather than a failed device command.
pub fn device_node(path: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let md = std::fs::metadata(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            usage(format!(
                "{}: no such device; list devices with 'drivelab devices'",
                path.display()
            ))
        } else {
            usage(format!("cannot open {}: {e}", path.display()))
        }
    })?;
    let t = md.file_type();
    if t.is_block_device() || t.is_char_device() {
        Ok(())
    } else {
        Err(usage(format!(
            "{} is not a device node; give /dev/sdX, /dev/sgN, /dev/nvmeXnY or /dev/nvmeX",
            path.display()
        )))
    }
}

/// One line: the context chain joined by ": ".
pub fn one_line(e: &anyhow::Error) -> String {
    let mut s = String::new();
    for (i, c) in e.chain().enumerate() {
        if i > 0 {
            s.push_str(": ");
        }
        s.push_str(&c.to_string());
    }
    s.replace('\n', " ")
}

/// Print the error (as JSON on stdout when JSON was asked for, else on
/// stderr; on stderr after a late write failure) and return the exit status.
pub fn report(e: &anyhow::Error, json: bool) -> ExitCode {
    let code = exit_status(e);
    // After a late write failure standard output holds the results: the
    // error goes to stderr alone, even in JSON mode.
    let late = e.chain().any(|c| c.is::<LateWriteError>());
    emit(&one_line(e), code, json && !late);
    ExitCode::from(code)
}

/// Report an alias that appeared over a claimed target while it was
/// written (the writers stopped): one line on stderr, whatever the output
/// format (standard output holds what was done until then), and exit
/// status 1, a failure while running.
pub fn report_alias(alias: &drivelab_device::watch::Alias) -> ExitCode {
    emit(&alias.to_string(), 1, false);
    ExitCode::from(1)
}

/// Report a command-line parse error: exit status 2.
pub fn report_usage(msg: &str, json: bool) -> ExitCode {
    let line = usage_line(msg);
    emit(&line, 2, json);
    ExitCode::from(2)
}

/// One line from clap's message: its first line without clap's own
/// "error: " (ours adds one), the items a first line ending in ':' lists
/// (the required arguments not given), clap's tip when it has one (such as
/// the option meant), and where to read more.
fn usage_line(msg: &str) -> String {
    let mut lines = msg
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .peekable();
    let first = lines.next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let mut items = Vec::new();
    if first.ends_with(':') {
        while let Some(l) = lines.next_if(|l| !l.starts_with("tip:") && !l.starts_with("Usage:")) {
            items.push(l);
        }
    }
    let first = if items.is_empty() {
        first.to_string()
    } else {
        format!("{} {}", first, items.join(", "))
    };
    let tip = lines.find_map(|l| l.strip_prefix("tip: "));
    match tip {
        Some(t) => format!("{first}; {t} (see 'drivelab --help')"),
        None => format!("{first} (see 'drivelab --help')"),
    }
}

fn emit(line: &str, code: u8, json: bool) {
    use std::io::Write;
    // Written, not printed: a closed stdout (`| head`) must not turn an
    // error report into a panic.
    if json {
        let v = serde_json::json!({ "error": line, "exit_status": code });
        let _ = writeln!(std::io::stdout(), "{v}");
    } else {
        let _ = writeln!(std::io::stderr(), "drivelab: error: {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::{device_node, exit_status, usage_line};

    #[test]
    fn a_missing_or_directory_trace_is_bad_input() {
        for p in ["/nonexistent/t.trace", "/"] {
            let e = drivelab_trace::open_file(std::path::Path::new(p), None, Default::default())
                .err()
                .unwrap_or_else(|| panic!("{p} opened as a trace"));
            assert_eq!(exit_status(&anyhow::Error::new(e)), 2, "{p}");
        }
        let io = drivelab_trace::TraceError::Io(std::io::Error::other("EIO"));
        assert_eq!(exit_status(&anyhow::Error::new(io)), 1);
    }

    #[test]
    fn a_missing_path_or_a_directory_is_not_a_device() {
        for p in ["/nonexistent-device", "/", "/etc/hostname"] {
            let e = device_node(std::path::Path::new(p)).unwrap_err();
            assert_eq!(exit_status(&e), 2, "{p}");
        }
        assert!(device_node(std::path::Path::new("/dev/null")).is_ok());
    }

    #[test]
    fn clap_messages_become_one_line_with_their_tip() {
        let msg = "error: unexpected argument '--transfer' found\n\n  tip: a similar argument exists: '--transfer-length'\n\nUsage: drivelab erase [OPTIONS] [DEVICES]...\n\nFor more information, try '--help'.\n";
        assert_eq!(
            usage_line(msg),
            "unexpected argument '--transfer' found; a similar argument exists: '--transfer-length' (see 'drivelab --help')"
        );
        assert_eq!(
            usage_line("error: a value is required\n"),
            "a value is required (see 'drivelab --help')"
        );
        assert_eq!(usage_line(""), "invalid arguments (see 'drivelab --help')");
    }

    #[test]
    fn missing_required_arguments_are_named() {
        let msg = "error: the following required arguments were not provided:\n  --html <FILE>\n  <INPUT>...\n\nUsage: drivelab report --html <FILE> <INPUT>...\n\nFor more information, try '--help'.\n";
        assert_eq!(
            usage_line(msg),
            "the following required arguments were not provided: --html <FILE>, <INPUT>... (see 'drivelab --help')"
        );
    }
}
