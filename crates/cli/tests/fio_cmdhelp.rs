//! Every option fio 3.33 lists (`fio --cmdhelp=all`, kept in
//! `tests/data/fio-3.33-cmdhelp.txt`) is one drivelab knows
//! (`drivelab_workload::spec::options::lookup`), one it refuses by a
//! named rule (`spec::refused::REFUSED`), or one of [`PENDING`], the
//! options still to do, each with what it needs; the installed fio's list
//! is compared with the kept one, so a different fio is noticed.
//!
//! Every value `fio --cmdhelp=OPTION` lists under "valid values" is
//! accepted by `drivelab run --parse-only`, or refused by a named rule
//! ([`REFUSED_BY_RULE`], `spec::refused::REFUSED_VALUES`), unless fio
//! itself refuses the same one-option job.

use std::process::Command;

use drivelab_testkit::TempDir;
use drivelab_workload::spec::options::lookup;
use drivelab_workload::spec::refused::REFUSED;
use drivelab_workload::SpecError;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// The kept list, as fio 3.33 printed it.
const KEPT: &str = include_str!("../../../tests/data/fio-3.33-cmdhelp.txt");

/// The option names of `fio --cmdhelp=all` output: each line is
/// `NAME : help`, indented under its parent option.
fn names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(n, _)| n.trim().to_string())
        .filter(|n| !n.is_empty() && !n.contains(' '))
        .collect()
}

#[test]
fn the_installed_fio_lists_the_kept_options() {
    let out = Command::new("fio")
        .arg("--cmdhelp=all")
        .output()
        .expect("fio runs (tests/run installs it)");
    assert!(out.status.success(), "fio --cmdhelp=all failed");
    let installed = names(&String::from_utf8_lossy(&out.stdout));
    let kept = names(KEPT);
    let missing: Vec<_> = kept.iter().filter(|n| !installed.contains(n)).collect();
    let new: Vec<_> = installed.iter().filter(|n| !kept.contains(n)).collect();
    assert!(
        missing.is_empty() && new.is_empty(),
        "the installed fio's options differ from tests/data/fio-3.33-cmdhelp.txt: not listed any more {missing:?}, new {new:?}; check each new option and save the new list"
    );
}

/// fio options drivelab neither knows nor refuses yet, each with what
/// it needs (issue 29). Any other unknown option fails the test, and so
/// does one of these once drivelab knows or refuses it (take it off).
const PENDING: &[(&str, &str)] = &[];

#[test]
fn every_fio_option_is_known_or_refused_by_a_rule() {
    let kept = names(KEPT);
    assert!(kept.len() > 200, "{} options parsed", kept.len());
    let mut unknown = Vec::new();
    let mut settled = Vec::new();
    let (mut known, mut refused, mut pending) = (0, 0, 0);
    for n in &kept {
        let listed = PENDING.iter().any(|(p, _)| p == n);
        match lookup(n) {
            Ok(_) | Err(SpecError::Refused { .. }) if listed => settled.push(n.clone()),
            Ok(_) => known += 1,
            Err(SpecError::Refused { .. }) => refused += 1,
            Err(_) if listed => pending += 1,
            Err(e) => unknown.push(format!("{n}: {e}")),
        }
    }
    eprintln!(
        "{} fio options: {known} known, {refused} refused by a rule, {pending} pending, {} unknown",
        kept.len(),
        unknown.len()
    );
    assert!(unknown.is_empty(), "unknown: {unknown:#?}");
    assert!(
        settled.is_empty(),
        "known or refused now, take them off PENDING: {settled:?}"
    );
    for (p, _) in PENDING {
        assert!(kept.iter().any(|n| n == p), "{p} is not fio's");
    }
    // A refusal names an option fio lists, and one drivelab does not
    // also declare.
    for r in REFUSED {
        assert!(kept.iter().any(|n| n == r.name), "{} is not fio's", r.name);
        assert!(
            drivelab_workload::spec::options::all().all(|d| d.name != r.name),
            "{} is both declared and refused",
            r.name
        );
        assert!(!r.reason.is_empty() && !r.reason.contains('\n'));
    }
}

#[test]
fn a_refused_option_is_one_line_naming_the_rule_with_exit_2() {
    let dir = TempDir::new("cmdhelp-refused");
    for r in REFUSED {
        let job = dir.join("refused.fio");
        std::fs::write(
            &job,
            format!(
                "[j]\nfilename={}\nsize=64k\n{}=1\n",
                dir.join("f").display(),
                r.name
            ),
        )
        .unwrap();
        let out = Command::new(BIN)
            .args(["run", "--parse-only", &job.display().to_string()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", r.name);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("'{}' is refused ({})", r.name, r.rule))
                && err.contains(r.reason),
            "{err}"
        );
    }
    assert!(!dir.join("f").exists(), "nothing is written");
}

/// The values `fio --cmdhelp=NAME` lists under "valid values" (the first
/// word of each line from there on), empty for an option without a list.
fn listed_values(name: &str) -> Vec<String> {
    let out = Command::new("fio")
        .arg(format!("--cmdhelp={name}"))
        .output()
        .expect("fio runs (tests/run installs it)");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("valid values"))
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(_, v)| v.split_whitespace().next().map(str::to_string))
        .collect()
}

/// The values of fio's listed values that drivelab refuses by a rule:
/// option, values, rule. Each must be refused with that rule and the
/// reason `spec::refused::value_refusal` gives, and every other listed
/// value fio accepts must be accepted.
const REFUSED_BY_RULE: &[(&str, &[&str], &str)] = &[
    ("ioengine", &["rbd"], "not carried"),
    ("ioengine", &["rdma"], "not carried"),
    ("ioengine", &["gfapi", "gfapi_async"], "not carried"),
    ("ioengine", &["nbd"], "not carried"),
    (
        "ioengine",
        &["pmemblk", "libpmem", "dev-dax"],
        "not carried",
    ),
    ("ioengine", &["external"], "not carried"),
];

/// The lines a value needs beside it in both tools (a check between
/// options, not of the value): option, value, lines.
const NEEDS: &[(&str, &str, &str)] = &[
    ("ioengine", "net", "hostname=localhost\nport=8765"),
    ("ioengine", "netsplice", "hostname=localhost\nport=8765"),
    ("zonemode", "zbd", "zonesize=16k"),
];

/// Exit status and stderr of `TOOL --parse-only JOB`.
fn parse_only(tool: &str, job: &std::path::Path) -> (Option<i32>, String) {
    let mut c = Command::new(tool);
    if tool == BIN {
        c.arg("run");
    }
    let out = c
        .arg("--parse-only")
        .arg(job)
        .output()
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What one listed value came to.
enum Outcome {
    Accepted,
    Refused,
    FioRefuses,
    Wrong(String),
}

/// Runs `name=v` (with what it needs) under `fio --parse-only`, then, if
/// fio takes it, under `drivelab run --parse-only`, in `dir`.
fn check_value(dir: &TempDir, name: &str, v: &str) -> Outcome {
    let needs = NEEDS
        .iter()
        .find(|(o, x, _)| *o == name && *x == v)
        .map_or("", |n| n.2);
    let job = dir.join(&format!("{name}-{v}.fio"));
    std::fs::write(
        &job,
        format!(
            "[j]\nfilename={}\nsize=64k\n{name}={v}\n{needs}\n",
            dir.join("f").display()
        ),
    )
    .unwrap();
    if parse_only("fio", &job).0 != Some(0) {
        return Outcome::FioRefuses;
    }
    let (code, err) = parse_only(BIN, &job);
    let by_rule = REFUSED_BY_RULE
        .iter()
        .find(|(o, vs, _)| *o == name && vs.contains(&v));
    let option_refused = REFUSED.iter().find(|r| r.name == name);
    let ok = match (code, by_rule, option_refused) {
        (Some(0), None, None) => return Outcome::Accepted,
        (Some(2), Some((_, _, rule)), None) => {
            drivelab_workload::spec::refused::value_refusal(name, v).is_some_and(|r| {
                err.trim().lines().count() == 1
                    && err.contains(&format!("value '{v}' of {name} is refused ({rule})"))
                    && err.contains(r.reason)
            })
        }
        (Some(2), None, Some(r)) => err.contains(&format!("'{name}' is refused ({})", r.rule)),
        _ => false,
    };
    if ok {
        Outcome::Refused
    } else {
        Outcome::Wrong(format!("{name}={v}: exit {code:?}: {}", err.trim()))
    }
}

#[test]
fn every_listed_value_of_an_fio_option_is_accepted_or_refused_by_a_rule() {
    let dir = TempDir::new("cmdhelp-values");
    let names = names(KEPT);
    // fio and drivelab start once per option and value: four at a time.
    let lanes = 4;
    let outcomes: Vec<(String, Outcome)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..lanes)
            .map(|lane| {
                let (names, dir) = (&names, &dir);
                s.spawn(move || {
                    let mut done = Vec::new();
                    for n in names.iter().skip(lane).step_by(lanes) {
                        for v in listed_values(n) {
                            let o = check_value(dir, n, &v);
                            done.push((format!("{n}={v}"), o));
                        }
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a lane runs"))
            .collect()
    });
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|(_, o)| f(o)).count();
    let fio_refuses: Vec<_> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::FioRefuses))
        .map(|(v, _)| v)
        .collect();
    eprintln!(
        "{} values fio lists: {} accepted, {} refused by a rule, {} refused by fio itself {fio_refuses:?}",
        outcomes.len(),
        count(|o| matches!(o, Outcome::Accepted)),
        count(|o| matches!(o, Outcome::Refused)),
        fio_refuses.len()
    );
    let wrong: Vec<_> = outcomes
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::Wrong(w) => Some(w),
            _ => None,
        })
        .collect();
    assert!(outcomes.len() > 100, "{} listed values", outcomes.len());
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert!(!dir.join("f").exists(), "nothing is written");
    // The table and the refused values are the same, value by value.
    for family in drivelab_workload::spec::refused::REFUSED_VALUES {
        for r in *family {
            for v in r.values {
                assert!(
                    REFUSED_BY_RULE
                        .iter()
                        .any(|(o, vs, rule)| *o == r.option && vs.contains(v) && *rule == r.rule),
                    "{}={v} is refused but not in REFUSED_BY_RULE",
                    r.option
                );
                assert!(!r.reason.is_empty() && !r.reason.contains('\n'));
            }
        }
    }
}
