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

/// Shorthand: a usage error as an `anyhow::Error`.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// Exit status for an error: 2 when any cause in the chain is a usage error
/// (or a library's "invalid input" kind), else 1.
pub fn exit_status(e: &anyhow::Error) -> u8 {
    if e.chain().any(|c| c.is::<UsageError>()) {
        2
    } else {
        1
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
/// stderr) and return the exit status.
pub fn report(e: &anyhow::Error, json: bool) -> ExitCode {
    let code = exit_status(e);
    emit(&one_line(e), code, json);
    ExitCode::from(code)
}

/// Report a command-line parse error: exit status 2.
pub fn report_usage(msg: &str, json: bool) -> ExitCode {
    let first = msg
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("invalid arguments");
    let line = format!("{first} (see 'drivelab --help')");
    emit(&line, 2, json);
    ExitCode::from(2)
}

fn emit(line: &str, code: u8, json: bool) {
    if json {
        let v = serde_json::json!({ "error": line, "exit_status": code });
        println!("{v}");
    } else {
        eprintln!("drivelab: error: {line}");
    }
}
