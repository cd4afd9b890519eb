//! The command line a user expects: shell completions that load and
//! complete, man pages that render without warnings and hold run's options,
//! the defaults the help states are the ones a run uses, and fio's progress
//! line on stderr (never in a JSON stdout).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use drivelab_testkit::{run, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn stdout_of(args: &[&str]) -> String {
    let (code, out, err) = run(BIN, args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// What the bash completion offers for the words `words` (the last one is
/// being completed).
fn bash_complete(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let cmd = format!(
        "source '{}' && complete -p drivelab >/dev/null && COMP_WORDS=({}) && COMP_CWORD={cword} \
         && COMP_LINE='{}' && COMP_POINT=${{#COMP_LINE}} && _drivelab drivelab '{}' '{prev}' \
         && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.join(" "),
        words[cword],
    );
    let out = Command::new("bash").args(["-c", &cmd]).output().unwrap();
    assert!(
        out.status.success(),
        "bash completion failed for {words:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn bash_completion_loads_and_completes_subcommands_and_run_options() {
    let d = TempDir::new("completion-bash");
    let script = d.join("drivelab.bash");
    std::fs::write(&script, stdout_of(&["completions", "bash"])).unwrap();
    assert_eq!(bash_complete(&script, &["drivelab", "ru"]), ["run"]);
    assert_eq!(bash_complete(&script, &["drivelab", "tr"]), ["trace"]);
    // run's fio options come from the option table.
    assert!(bash_complete(&script, &["drivelab", "run", "--iode"]).contains(&"--iodepth".into()));
    assert!(
        bash_complete(&script, &["drivelab", "run", "--time_"]).contains(&"--time_based".into())
    );
    let rw = bash_complete(&script, &["drivelab", "run", "--rw", ""]);
    for m in ["randread", "randrw", "trim"] {
        assert!(rw.contains(&m.to_string()), "--rw offers {rw:?}");
    }
    let presets = bash_complete(&script, &["drivelab", "run", "--preset", ""]);
    assert!(presets.contains(&"quick".into()) && presets.contains(&"fileserver".into()));
    assert!(bash_complete(&script, &["drivelab", "trace", "rec"]).contains(&"record".into()));
}

#[test]
fn zsh_and_fish_completions_parse() {
    let d = TempDir::new("completion-shells");
    for (shell, check) in [("zsh", vec!["-n"]), ("fish", vec!["--no-execute"])] {
        let text = stdout_of(&["completions", shell]);
        // A fio option only run takes, from the option table.
        assert!(
            text.contains("time_based"),
            "{shell} script lacks run's options"
        );
        if !have(shell) {
            eprintln!("{shell} not installed (tests/run installs it): only generated");
            continue;
        }
        let f = d.join(&format!("drivelab.{shell}"));
        std::fs::write(&f, &text).unwrap();
        let out = Command::new(shell).args(&check).arg(&f).output().unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{shell} {check:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (code, _, err) = run(BIN, &["completions", "tcsh"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// groff's rendering of a man page: (text, warnings).
fn groff(page: &Path) -> (String, String) {
    let out = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww"])
        .arg(page)
        .env("GROFF_NO_SGR", "1")
        .output()
        .expect("groff (Debian package groff-base, installed by tests/run)");
    assert!(out.status.success());
    // Without overstrike (bold, underline: a character, backspace, another).
    let mut clean = String::new();
    for c in String::from_utf8_lossy(&out.stdout).chars() {
        if c == '\u{8}' {
            clean.pop();
        } else {
            clean.push(c);
        }
    }
    (clean, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Every `--option` run's help lists (its own flags and the option table).
fn run_help_options() -> Vec<String> {
    let help = stdout_of(&["run", "--help"]);
    help.lines()
        .filter_map(|l| l.trim_start().strip_prefix("--"))
        .map(|l| l.split([' ', ',', '[']).next().unwrap().to_string())
        .collect()
}

#[test]
fn man_pages_render_without_warnings_and_hold_run_options() {
    let d = TempDir::new("man");
    let dir = d.join("man1");
    let (code, _, err) = run(BIN, &["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    for page in [
        "drivelab.1",
        "drivelab-run.1",
        "drivelab-trace-record.1",
        "drivelab-erase.1",
    ] {
        let (text, warnings) = groff(&dir.join(page));
        assert!(warnings.is_empty(), "{page}: {warnings}");
        assert!(
            text.contains("NAME") && text.contains("SYNOPSIS"),
            "{page}: {text}"
        );
    }
    let (run_page, _) = groff(&dir.join("drivelab-run.1"));
    let options = run_help_options();
    assert!(options.len() > 40, "{options:?}");
    for o in options
        .iter()
        .filter(|o| !matches!(o.as_str(), "help" | "store" | "no-store"))
    {
        assert!(run_page.contains(&format!("--{o}")), "man page lacks --{o}");
    }
    assert!(run_page.contains("quick:"), "the defaults paragraph");
    // One page on stdout is the same page.
    let one = d.join("run.1");
    std::fs::write(&one, stdout_of(&["man", "run"])).unwrap();
    assert_eq!(
        std::fs::read(&one).unwrap(),
        std::fs::read(dir.join("drivelab-run.1")).unwrap()
    );
    let (code, _, err) = run(BIN, &["man", "frobnicate"]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
}

/// The defaults run's help states: `--name ... [default: V; ...]`, for the
/// options whose default is a value (not words).
fn stated_defaults(help: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for l in help.lines() {
        let Some(rest) = l.trim_start().strip_prefix("--") else {
            continue;
        };
        let name = rest.split([' ', ',']).next().unwrap().to_string();
        let Some(d) = l.split("[default: ").nth(1) else {
            continue;
        };
        let v = d.split([';', ']']).next().unwrap().trim();
        if !v.is_empty() && v != "-" && !v.contains(' ') {
            m.insert(name, v.to_string());
        }
    }
    m
}

/// A size or number as bytes (fio's k = 1024).
fn as_number(v: &str) -> Option<u64> {
    let v = v.to_ascii_lowercase();
    let (n, mult) = match v.chars().last()? {
        'k' => (&v[..v.len() - 1], 1u64 << 10),
        'm' => (&v[..v.len() - 1], 1 << 20),
        'g' => (&v[..v.len() - 1], 1 << 30),
        _ => (v.as_str(), 1),
    };
    n.parse::<u64>().ok().map(|n| n * mult)
}

fn same(a: &str, b: &str) -> bool {
    a == b || matches!((as_number(a), as_number(b)), (Some(x), Some(y)) if x == y)
}

fn json_run(dir: &Path, args: &[&str]) -> (Value, String) {
    let out = Command::new(BIN)
        .arg("run")
        .args(args)
        .args(["--output-format=json", "--no-store"])
        .current_dir(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {stdout}"));
    (v, stderr)
}

#[test]
fn a_run_uses_the_defaults_the_help_states() {
    let help = stdout_of(&["run", "--help"]);
    let defaults = stated_defaults(&help);
    let d = TempDir::new("defaults");
    let (v, _) = json_run(d.path(), &["--filename=f.bin", "--size=1m"]);
    let opts = &v["jobs"][0]["job options"];
    let mut compared = Vec::new();
    for (name, stated) in &defaults {
        if let Some(got) = opts[name.as_str()].as_str() {
            assert!(
                same(stated, got),
                "--{name}: help says {stated}, the run used {got}"
            );
            compared.push(name.as_str());
        }
    }
    for must in ["rw", "bs", "iodepth", "numjobs", "ioengine", "name"] {
        assert!(
            compared.contains(&must),
            "{must} not compared: {compared:?} of {defaults:?}"
        );
    }
    // fio's defaults, as the help states them.
    assert_eq!(defaults["rw"], "read");
    assert_eq!(defaults["iodepth"], "1");
}

#[test]
fn the_bare_run_is_the_quick_preset_the_help_states_with_progress_on_stderr_only() {
    let help = stdout_of(&["run", "--help"]);
    let quick = help
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("quick: "))
        .expect("the help states the quick preset");
    let stated: Vec<(&str, &str)> = quick
        .split_whitespace()
        .map(|o| o.trim_start_matches("--").split_once('=').unwrap())
        .collect();
    assert!(stated.len() >= 5, "{quick}");
    let d = TempDir::new("bare");
    // --eta and --output-format are not workload options: still the bare run.
    let (v, stderr) = json_run(d.path(), &["--eta=always"]);
    let opts = &v["jobs"][0]["job options"];
    for (k, want) in &stated {
        let got = opts[*k]
            .as_str()
            .unwrap_or_else(|| panic!("no {k} in {opts}"));
        assert!(
            same(want, got),
            "--{k}: help says {want}, the run used {got}"
        );
    }
    // fio's progress line, on stderr: state, percent, bandwidth, IOPS, ETA.
    let lines: Vec<&str> = stderr
        .split(['\r', '\n'])
        .filter(|l| l.starts_with("Jobs: "))
        .collect();
    assert!(lines.len() >= 2, "{stderr:?}");
    for (i, l) in lines.iter().map(|l| l.trim_end()).enumerate() {
        // The last tick may come after the job's thread ended, as fio's
        // last line can say "Jobs: 0 (f=0)".
        let ended = i + 1 == lines.len() && l.starts_with("Jobs: 0 (f=0): [m(1)][");
        assert!(ended || l.starts_with("Jobs: 1 (f=1): [m(1)]["), "{l}");
        let pct: f64 = l
            .split("][")
            .nth(1)
            .unwrap()
            .trim_end_matches('%')
            .parse()
            .unwrap();
        assert!((0.0..=100.0).contains(&pct), "{l}");
        assert!(l.contains("[r=") && l.contains(",w="), "{l}");
        assert!(l.contains(" IOPS][eta ") && l.ends_with("s]"), "{l}");
    }
    assert!(
        !d.join("drivelab-scratch.bin").exists(),
        "scratch file removed"
    );
}

#[test]
fn eta_never_and_eta_newline() {
    let d = TempDir::new("eta");
    let args = [
        "--filename=f.bin",
        "--size=4m",
        "--runtime=2",
        "--time_based",
    ];
    let (_, stderr) = json_run(d.path(), &[&args[..], &["--eta=never"]].concat());
    assert!(!stderr.contains("Jobs:"), "{stderr}");
    let (_, stderr) = json_run(
        d.path(),
        &[&args[..], &["--eta=always", "--eta-newline=1"]].concat(),
    );
    let ended = stderr.lines().filter(|l| l.contains("Jobs: 1")).count();
    assert!(ended >= 1, "a progress line ended by a newline: {stderr:?}");
    let (code, _, err) = run(BIN, &["run", "--eta=sometimes"]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
}
