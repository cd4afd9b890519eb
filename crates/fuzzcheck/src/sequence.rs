//! DMM-style sequence files (`drivelab test --sequence FILE`).

use drivelab_patterns::Pattern;
use drivelab_steps::spec::{parse_pattern, MAX_QD, MAX_TRANSFER};
use drivelab_steps::{parse_sequence, Count, Transfer};

/// Sequence files (TOML), and each string in them as a pattern name and a
/// transfer length.
///
/// Invariants: a parsed sequence has at least one step; every step has a
/// queue depth of 1–1024, a transfer length with 0 < min <= max <= 64 MiB,
/// a block count of at least 1; a transfer length and a pattern print as
/// text that parses back to the same value; every error is one non-empty
/// line. Inputs naming a `file:` pattern are skipped: that pattern reads the
/// file it names (a device or a FIFO would block the fuzzer).
pub fn sequence(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let strings = match text.parse::<toml::Table>() {
        Ok(t) => {
            let mut v = Vec::new();
            strings_of(&toml::Value::Table(t), &mut v);
            v
        }
        Err(_) => Vec::new(),
    };
    if strings.iter().any(|s| names_a_file(s)) || names_a_file(text) {
        return;
    }
    match parse_sequence("fuzz.toml", text) {
        Ok(seq) => {
            assert!(!seq.steps.is_empty(), "a sequence parsed into no steps");
            for s in &seq.steps {
                assert!((1..=MAX_QD).contains(&s.qd), "qd {}", s.qd);
                check_transfer(s.transfer);
                assert_ne!(s.count, Count::Blocks(0));
                check_pattern(&s.pattern);
                assert!(s.validate().is_ok());
            }
        }
        Err(e) => one_line(&e.to_string()),
    }
    for s in strings.iter().take(64) {
        if let Ok(t) = s.parse::<Transfer>() {
            check_transfer(t);
        }
        if let Ok(p) = parse_pattern(s) {
            check_pattern(&p);
        }
        if let Ok(Count::Blocks(n)) = s.parse::<Count>() {
            assert!(n > 0);
        }
    }
}

fn one_line(msg: &str) {
    assert!(!msg.trim().is_empty(), "empty error message");
    // toml's messages quote the offending text; only a raw newline would
    // break the one-line rule.
    assert!(!msg.contains('\n'), "error of more than one line: {msg:?}");
}

fn names_a_file(s: &str) -> bool {
    s.to_ascii_lowercase().contains("file:")
}

fn strings_of(v: &toml::Value, out: &mut Vec<String>) {
    match v {
        toml::Value::String(s) => out.push(s.clone()),
        toml::Value::Array(a) => a.iter().for_each(|x| strings_of(x, out)),
        toml::Value::Table(t) => t.values().for_each(|x| strings_of(x, out)),
        _ => {}
    }
}

fn check_transfer(t: Transfer) {
    assert!(
        t.min > 0 && t.min <= t.max && t.max <= MAX_TRANSFER,
        "{t:?}"
    );
    let back: Transfer = t
        .to_string()
        .parse()
        .unwrap_or_else(|e| panic!("{t} does not parse back: {e}"));
    assert_eq!(back, t);
}

fn check_pattern(p: &Pattern) {
    if matches!(p, Pattern::File { .. }) {
        return;
    }
    let text = p.to_string();
    let back = parse_pattern(&text).unwrap_or_else(|e| panic!("{text} does not parse back: {e}"));
    assert_eq!(&back, p);
}
