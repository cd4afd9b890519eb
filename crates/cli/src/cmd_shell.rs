//! `drivelab completions SHELL` and `drivelab man`: shell completions
//! (clap_complete) and man pages (clap_mangen), generated from the same
//! declarations the command line is parsed with. `run` parses its fio
//! options by hand, so its page and completions are built here from the one
//! option table (`drivelab_workload::spec::options::all`) and `run`'s own
//! flags (`cmd_run::RUN_FLAGS`, and fio's in `fio_flags::FIO_FLAGS`).

use std::path::PathBuf;

use clap::builder::PossibleValuesParser;
use clap::{Arg, ArgAction, Args, Command, ValueHint};
use drivelab_workload::spec::options::{all as all_options, OptionKind};

use crate::cmd_run::{defaults_text, preset_names, RUN_FLAGS};
use crate::error::usage;

/// `drivelab completions SHELL`.
#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish (also elvish, powershell).
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `drivelab man [--dir DIR] [COMMAND...]`.
#[derive(Args, Debug)]
pub struct ManArgs {
    /// Write every page (drivelab.1, drivelab-run.1, drivelab-trace-record.1,
    /// …) into DIR instead of printing one page.
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub dir: Option<PathBuf>,
    /// The page to print: a subcommand, e.g. `run` or `trace record`
    /// (none: drivelab.1).
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// fio's `rw` names (each one `RwMode::parse` takes; a test checks).
pub const RW_NAMES: &[&str] = &[
    "read",
    "write",
    "randread",
    "randwrite",
    "rw",
    "readwrite",
    "randrw",
    "trim",
    "randtrim",
];

/// The `ioengine` names drivelab takes (a test checks each).
pub const IOENGINE_NAMES: &[&str] = &[
    "io_uring", "libaio", "posixaio", "psync", "sync", "vsync", "pvsync", "pvsync2", "null", "sg",
];

/// The value name the help shows for an option of `kind`.
fn value_name(kind: OptionKind) -> &'static str {
    match kind {
        OptionKind::Bool => "0|1",
        OptionKind::Int => "N",
        OptionKind::Size => "SIZE",
        OptionKind::SizeOrPercent => "SIZE|N%",
        OptionKind::Time => "TIME",
        OptionKind::Text => "VALUE",
    }
}

/// `run` as a clap command: its own flags and every workload option of the
/// table, with their defaults, for completions and the man page.
pub fn run_command(about: Option<clap::builder::StyledStr>) -> Command {
    let mut cmd = Command::new("run")
        .about(about.unwrap_or_default())
        .override_usage("drivelab run [JOBFILE.fio] [--preset NAME] [--OPTION=VALUE ...]")
        .after_long_help(defaults_text())
        .arg(
            Arg::new("JOBFILE")
                .help("a fio job file")
                .value_hint(ValueHint::FilePath),
        );
    for f in RUN_FLAGS {
        // --store and --no-store are drivelab's global flags; --help is clap's.
        if matches!(f.name, "store" | "no-store" | "help") {
            continue;
        }
        let mut a = Arg::new(f.name).long(f.name).help(f.help);
        a = match f.value {
            None => a.action(ArgAction::SetTrue),
            Some(v) => a.value_name(v),
        };
        if f.name == "preset" {
            a = a.value_parser(PossibleValuesParser::new(preset_names()));
        } else if !f.choices.is_empty() {
            a = a.value_parser(PossibleValuesParser::new(f.choices.iter().copied()));
        }
        if f.name == "output" {
            a = a.value_hint(ValueHint::FilePath);
        }
        cmd = cmd.arg(a);
    }
    for f in crate::fio_flags::FIO_FLAGS {
        let help = match f.handling {
            crate::fio_flags::Handling::Refused(why) => format!("refused: {why}"),
            _ => f.help.to_string(),
        };
        let a = Arg::new(f.name).long(f.name).help(help);
        cmd = cmd.arg(match f.value {
            None => a.action(ArgAction::SetTrue),
            Some(true) => a.value_name("V"),
            Some(false) => a.value_name("V").num_args(0..=1).require_equals(true),
        });
    }
    for d in all_options() {
        let def = if d.default.is_empty() { "-" } else { d.default };
        let unit = d.unit_text();
        let unit = if unit.is_empty() {
            String::new()
        } else {
            format!("; {unit}")
        };
        let mut a = Arg::new(d.name)
            .long(d.name)
            .help(format!("{} [default: {def}{unit}]", d.help))
            .value_name(value_name(d.kind))
            .require_equals(d.kind == OptionKind::Bool);
        if !d.aliases.is_empty() {
            a = a.visible_aliases(d.aliases.iter().copied());
        }
        if d.kind == OptionKind::Bool {
            a = a.num_args(0..=1).default_missing_value("1");
        }
        a = match d.name {
            "rw" => a.value_parser(PossibleValuesParser::new(RW_NAMES.iter().copied())),
            "ioengine" => a.value_parser(PossibleValuesParser::new(IOENGINE_NAMES.iter().copied())),
            "filename" | "directory" => a.value_hint(ValueHint::AnyPath),
            _ => a,
        };
        cmd = cmd.arg(a);
    }
    cmd
}

/// The whole command tree, with `run` built from the option table.
fn full_command(cli: Command) -> Command {
    let mut cli = cli;
    let about = cli
        .find_subcommand("run")
        .and_then(|r| r.get_about().cloned());
    cli = cli.mut_subcommand("run", |_| run_command(about));
    cli
}

/// Print the completion script for `a.shell` on stdout.
pub fn completions(a: CompletionsArgs, cli: Command) -> anyhow::Result<u8> {
    let mut cmd = full_command(cli);
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "drivelab", &mut out);
    let _ = std::io::Write::write_all(&mut std::io::stdout(), &out);
    Ok(0)
}

/// Print one man page, or write every page into `--dir`.
pub fn man(a: ManArgs, cli: Command) -> anyhow::Result<u8> {
    let mut cmd = full_command(cli).disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = &a.dir {
        if !a.command.is_empty() {
            return Err(usage(
                "drivelab man: give --dir (every page) or a COMMAND (one page on stdout), not both",
            ));
        }
        crate::output::check_dir(dir, "--dir")?;
        let mut pages = Vec::new();
        collect_pages(&cmd, &mut pages);
        if dir.is_dir() {
            // Every page's name is checked before the first is written.
            for (name, _) in &pages {
                crate::output::check_file(&dir.join(name), "--dir")?;
            }
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        for (name, page) in pages {
            crate::output::write_file(&dir.join(name), "--dir", render(page)?.as_bytes())?;
        }
        return Ok(0);
    }
    let mut page = cmd;
    for word in &a.command {
        page = page.find_subcommand(word).cloned().ok_or_else(|| {
            usage(format!(
                "drivelab man: '{}' is not a subcommand; see 'drivelab --help'",
                a.command.join(" ")
            ))
        })?;
    }
    let _ = std::io::Write::write_all(&mut std::io::stdout(), render(page)?.as_bytes());
    Ok(0)
}

/// One man page as roff, in ASCII: every other character as groff's
/// `\[uXXXX]`, so that `groff -man` renders it without warnings whatever
/// input encoding it assumes (the help says `…` and `≤`).
fn render(cmd: Command) -> anyhow::Result<String> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out)?;
    Ok(ascii_roff(&String::from_utf8_lossy(&out)))
}

/// `text` with every non-ASCII character written as `\[uXXXX]`.
fn ascii_roff(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            s.push(c);
        } else {
            s.push_str(&format!("\\[u{:04X}]", u32::from(c)));
        }
    }
    s
}

/// Every page of `cmd` and its subcommands, with the file name
/// clap_mangen gives it (drivelab-run.1, drivelab-trace-record.1).
fn collect_pages(cmd: &Command, out: &mut Vec<(String, Command)>) {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect_pages(sub, out);
    }
    out.push((
        clap_mangen::Man::new(cmd.clone()).get_filename(),
        cmd.clone(),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roff_is_ascii() {
        assert_eq!(ascii_roff("a…b"), "a\\[u2026]b");
    }

    #[test]
    fn choices_are_names_drivelab_takes() {
        for rw in RW_NAMES {
            assert!(drivelab_workload::RwMode::parse(rw).is_some(), "{rw}");
        }
        for e in IOENGINE_NAMES {
            let mut j = drivelab_workload::JobSpec::default();
            assert!(j.set("ioengine", Some(e)).is_ok(), "{e}");
        }
        let mut j = drivelab_workload::JobSpec::default();
        assert!(j.set("ioengine", Some("windowsaio")).is_err());
    }

    #[test]
    fn run_command_holds_every_option_and_is_consistent() {
        let mut cmd = run_command(None);
        cmd.build();
        cmd.clone().debug_assert();
        for d in all_options() {
            assert!(
                cmd.get_arguments().any(|a| a.get_long() == Some(d.name)),
                "{}",
                d.name
            );
        }
    }
}
