//! Every option fio 3.33 lists (`fio --cmdhelp=all`, kept in
//! `tests/data/fio-3.33-cmdhelp.txt`) is one drivelab knows
//! (`drivelab_workload::spec::options::lookup`), one it refuses by a
//! named rule (`spec::refused::REFUSED`), or one of [`PENDING`], the
//! options still to do, each with what it needs; the installed fio's list
//! is compared with the kept one, so a different fio is noticed.

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
