//! The station's policy: a TOML file that says which drives the station
//! may touch (its bays) and what it does with each (triage, erase,
//! certificate, store). The policy is the operator's consent: nothing
//! outside its bays is ever written, and the claim still refuses the
//! system disk, mounted and held devices whatever the policy says.
//!
//! [`model`] holds the keys as typed structs; [`load`] reads and checks a
//! policy; every problem is one line naming
//! the key ([`PolicyError`]), before anything is touched. `docs/station.md`
//! documents every key. [`check`] holds the checks against the machine
//! (a bay that matches the system disk or a mounted device);
//! [`glob`] the shell-style patterns bays and filters use.

pub mod check;
pub mod glob;
pub mod model;

use std::path::Path;

pub use model::*;

/// Read and check the policy at `path` (the machine-level checks, a bay
/// over the system disk or a mounted device, are [`check::against_machine`]).
pub fn load(path: &Path) -> Result<Policy, PolicyError> {
    let text = drivelab_device::input::read_string(path, drivelab_device::input::Kind::Config)
        .map_err(|e| PolicyError::Read {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
    parse(path, &text)
}

/// Parse and check a policy's text (`path` names it in errors).
pub fn parse(path: &Path, text: &str) -> Result<Policy, PolicyError> {
    let p: Policy = toml::from_str(text).map_err(|e| PolicyError::Syntax {
        path: path.to_path_buf(),
        why: syntax_line(text, &e),
    })?;
    check::values(&p).map_err(|(key, why)| PolicyError::Value {
        path: path.to_path_buf(),
        key,
        why,
    })?;
    Ok(p)
}

/// One line for a TOML error: the line, the key written there (with its
/// table) and the parser's message.
fn syntax_line(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().replace('\n', " ");
    let Some(span) = e.span() else {
        return msg;
    };
    let upto = &text[..span.start.min(text.len())];
    let line_no = upto.matches('\n').count() + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or("").trim();
    let table = upto
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').to_string());
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    match (table, key) {
        (Some(t), Some(k)) => format!("line {line_no}: {t}.{k}: {msg}"),
        (None, Some(k)) => format!("line {line_no}: {k}: {msg}"),
        (Some(t), None) => format!("line {line_no}: [{t}]: {msg}"),
        (None, None) => format!("line {line_no}: {msg}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example in docs/station.md, which names every key.
    fn documented() -> String {
        let doc = include_str!("../../../../docs/station.md");
        let start = doc.find("```toml\n").expect("a toml block") + 8;
        let len = doc[start..].find("```").expect("its end");
        doc[start..start + len].to_string()
    }

    #[test]
    fn the_documented_policy_sets_every_key() {
        let p = parse(Path::new("station.md"), &documented()).expect("the documented policy");
        assert_eq!(p.bays.len(), 2);
        assert!(!p.include_loop);
        assert_eq!(p.operator.as_deref(), Some("A. Operator"));
        assert!(p.store.is_some());
        assert_eq!(p.filter.transport, ["sata", "sas", "nvme"]);
        assert_eq!(p.size_range(), (32 << 30, 20 << 40));
        assert_eq!(p.filter.model.len(), 2);
        assert_eq!(p.filter.serial, ["*"]);
        let t = &p.triage;
        assert_eq!(
            (
                t.max_reallocated_sectors,
                t.max_pending_sectors,
                t.max_media_errors
            ),
            (Some(10), Some(0), Some(0))
        );
        assert_eq!(
            (t.max_percentage_used, t.max_power_on_hours),
            (Some(90), Some(50_000))
        );
        assert_eq!(t.failing, Failing::EraseAndMark);
        let e = &p.erase;
        assert_eq!((e.method, e.verify), (MethodPref::Auto, Verify::Sample));
        assert_eq!((e.pattern.as_str(), e.passes), ("allzeros", 1));
        assert_eq!(
            (e.on_content, e.on_hidden, e.resume),
            (OnContent::Hold, OnHidden::Hold, true)
        );
        assert_eq!(p.rate_limit(), Some(200 << 20));
        assert_eq!(
            e.certificate_dir,
            Path::new("/var/lib/drivelab/certificates")
        );
        let c = &p.certificate;
        assert!(c.organisation.is_some() && c.customer.is_some() && c.technician.is_some());
        assert_eq!(c.asset_tag, AssetTag::Serial);
        // Every key of the example, removed in turn, still parses (each is
        // optional) except bays.
        let text = documented();
        for line in text
            .lines()
            .filter(|l| l.contains(" = ") && !l.starts_with('#'))
        {
            let without = text.replace(line, "");
            let r = parse(Path::new("station.md"), &without);
            assert_eq!(
                r.is_ok(),
                !line.starts_with("bays"),
                "without {line}: {r:?}"
            );
        }
    }

    #[test]
    fn sizes_parse_with_1024_based_suffixes() {
        let table = [
            ("1048576", Some(1 << 20)),
            ("4k", Some(4096)),
            ("32G", Some(32 << 30)),
            ("2tib", Some(2 << 40)),
            ("1mb", Some(1 << 20)),
            ("x", None),
            ("", None),
            ("99999999999t", None),
        ];
        for (s, want) in table {
            assert_eq!(parse_size(s).ok(), want, "{s}");
        }
    }
}
