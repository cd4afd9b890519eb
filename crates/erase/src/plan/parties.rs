//! Who an erase is done by and for, and each drive's asset tag: the
//! certificate's "who" fields as they are asked for (`drivelab erase
//! --organisation ... --asset-tag DRIVE=TAG`, or a station's policy), checked
//! before anything is written, and each drive's tag settled against the
//! drives the plan found, so a tag meant for one drive never lands on
//! another's certificate.

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::EraseError;

/// The longest value of one field, in characters: a postal address fits
/// many times over; the bound only stops a file pasted by mistake.
pub const MAX_FIELD: usize = 1024;

/// The "who" of an erase, for every drive's certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parties {
    /// The organisation doing the erasure.
    pub organisation: Option<String>,
    /// The customer whose drives these are.
    pub customer: Customer,
    /// The technician.
    pub technician: Option<String>,
    /// Asset tags as given: `DRIVE=TAG`, where DRIVE is a device as named
    /// (or another name of its node) or the drive's serial; a bare `TAG`
    /// only when one drive is erased. A drive without one has no tag.
    pub asset_tags: Vec<String>,
}

impl Parties {
    /// Refuse an empty value, a control character (the certificate is
    /// printed and read aloud; a line break would forge a field's layout)
    /// and a value over [`MAX_FIELD`] characters.
    pub fn check(&self) -> Result<(), EraseError> {
        let fields = [
            ("--organisation", self.organisation.as_deref()),
            ("--customer", self.customer.name.as_deref()),
            ("--customer-address", self.customer.address.as_deref()),
            ("--customer-contact", self.customer.contact.as_deref()),
            ("--technician", self.technician.as_deref()),
        ];
        let tags = self
            .asset_tags
            .iter()
            .map(|t| ("--asset-tag", Some(t.as_str())));
        for (flag, v) in fields.into_iter().chain(tags) {
            let Some(v) = v else { continue };
            let why = if v.trim().is_empty() {
                "is empty"
            } else if v.chars().any(char::is_control) {
                "holds a control character (a line break or tab)"
            } else if v.chars().count() > MAX_FIELD {
                "is over 1024 characters"
            } else {
                continue;
            };
            return Err(EraseError::BadOption(format!(
                "{flag} {why}: give the value on one line, or leave the option out"
            )));
        }
        Ok(())
    }

    /// Each drive's asset tag, in the order of `drives` (each given as its
    /// node and serial). Every tag must name one drive (a bare tag only
    /// when there is one drive) and no drive may get two.
    pub fn tags_for(
        &self,
        drives: &[(&Path, Option<&str>)],
    ) -> Result<Vec<Option<String>>, EraseError> {
        let mut out: Vec<Option<String>> = vec![None; drives.len()];
        for given in &self.asset_tags {
            let keyed = given.split_once('=').and_then(|(key, tag)| {
                drives
                    .iter()
                    .position(|(path, serial)| names(key, path, *serial))
                    .map(|i| (i, tag.trim()))
            });
            let (i, tag) = match keyed {
                Some(k) => k,
                None if drives.len() == 1 => (0, given.trim()),
                None => {
                    return Err(EraseError::BadOption(format!(
                        "--asset-tag {given}: name the drive it belongs to, as DEVICE=TAG or SERIAL=TAG (one --asset-tag per drive)"
                    )))
                }
            };
            if tag.is_empty() {
                return Err(EraseError::BadOption(format!(
                    "--asset-tag {given}: the tag after '=' is empty"
                )));
            }
            if let Some(old) = &out[i] {
                return Err(EraseError::BadOption(format!(
                    "--asset-tag: {} is given two tags ({old} and {tag}); give each drive one",
                    drives[i].0.display()
                )));
            }
            out[i] = Some(tag.to_string());
        }
        Ok(out)
    }

    /// The certificate's section for a drive tagged `asset_tag`; None when
    /// nothing is given.
    pub fn section(&self, asset_tag: Option<String>) -> Option<PartiesSection> {
        let s = PartiesSection {
            organisation: self.organisation.clone(),
            customer: self.customer.clone(),
            technician: self.technician.clone(),
            asset_tag,
        };
        (!s.is_empty()).then_some(s)
    }
}

/// Whether `key` names the drive at `path` with `serial`: its serial, the
/// node as named, or another name of the same node.
fn names(key: &str, path: &Path, serial: Option<&str>) -> bool {
    let key = key.trim();
    if key.is_empty() {
        return false;
    }
    if serial == Some(key) || Path::new(key) == path {
        return true;
    }
    key.starts_with('/')
        && matches!((fs::canonicalize(key), fs::canonicalize(path)), (Ok(a), Ok(b)) if a == b)
}

/// The customer whose drive was erased; a part not given is absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Customer {
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Postal address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Contact (person, telephone, e-mail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact: Option<String>,
}

impl Customer {
    /// Whether no part is given.
    pub fn is_empty(&self) -> bool {
        self.name.is_none() && self.address.is_none() && self.contact.is_none()
    }
}

/// Who the erase was done by and for, and the drive's asset tag, as the
/// signed record names them (NIST SP 800-88's "who"); a field not given
/// is absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartiesSection {
    /// The organisation doing the erasure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organisation: Option<String>,
    /// The customer whose drive it is.
    #[serde(default, skip_serializing_if = "Customer::is_empty")]
    pub customer: Customer,
    /// The technician who did it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub technician: Option<String>,
    /// The drive's asset tag (the customer's or the organisation's label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asset_tag: Option<String>,
}

impl PartiesSection {
    /// Whether no field is given.
    pub fn is_empty(&self) -> bool {
        self.organisation.is_none()
            && self.customer.is_empty()
            && self.technician.is_none()
            && self.asset_tag.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_tags(tags: &[&str]) -> Parties {
        Parties {
            asset_tags: tags.iter().map(|t| t.to_string()).collect(),
            ..Parties::default()
        }
    }

    #[test]
    fn asset_tags_go_to_the_drive_they_name_or_are_refused() {
        let two = [
            (Path::new("/dev/sdb"), Some("S1")),
            (Path::new("/dev/sdc"), None),
        ];
        let one = [(Path::new("/dev/sdb"), Some("S1"))];
        type Want = Result<Vec<Option<&'static str>>, &'static str>;
        type Drives<'a> = &'a [(&'a Path, Option<&'a str>)];
        let cases: Vec<(&[&str], Drives, Want)> = vec![
            (&["A-1"], &one, Ok(vec![Some("A-1")])),
            // A bare tag that holds '=' and names no drive is the tag.
            (&["room=4"], &one, Ok(vec![Some("room=4")])),
            (&["S1=A-1"], &one, Ok(vec![Some("A-1")])),
            (
                &["S1=A-1", "/dev/sdc=B-2"],
                &two,
                Ok(vec![Some("A-1"), Some("B-2")]),
            ),
            (&["/dev/sdc=B-2"], &two, Ok(vec![None, Some("B-2")])),
            (&["A-1"], &two, Err("name the drive it belongs to")),
            (&["S9=A-1"], &two, Err("name the drive it belongs to")),
            (&["S1=A", "/dev/sdb=B"], &two, Err("given two tags")),
            (&["S1="], &two, Err("the tag after '=' is empty")),
            (&[], &two, Ok(vec![None, None])),
        ];
        for (tags, drives, want) in cases {
            let got = with_tags(tags).tags_for(drives);
            match (got, want) {
                (Ok(g), Ok(w)) => {
                    let w: Vec<Option<String>> =
                        w.into_iter().map(|t| t.map(String::from)).collect();
                    assert_eq!(g, w, "{tags:?}");
                }
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{tags:?}: {e}"),
                (g, w) => panic!("{tags:?}: got {g:?}, want {w:?}"),
            }
        }
    }

    #[test]
    fn a_field_on_two_lines_empty_or_huge_is_refused() {
        let ok = Parties {
            organisation: Some("Acme Wipe Ltd".into()),
            customer: Customer {
                name: Some("Globex".into()),
                address: Some("1 Main St, Springfield".into()),
                contact: Some("h.simpson@globex.example, +1 555 0100".into()),
            },
            technician: Some("J. Doe".into()),
            asset_tags: vec!["AT-0001".into()],
        };
        assert!(ok.check().is_ok());
        let cases: Vec<(Parties, &str)> = vec![
            (
                Parties {
                    organisation: Some("Acme\nVERIFIED".into()),
                    ..ok.clone()
                },
                "--organisation holds a control character",
            ),
            (
                Parties {
                    customer: Customer {
                        address: Some("  ".into()),
                        ..ok.customer.clone()
                    },
                    ..ok.clone()
                },
                "--customer-address is empty",
            ),
            (
                Parties {
                    technician: Some("x".repeat(MAX_FIELD + 1)),
                    ..ok.clone()
                },
                "--technician is over 1024",
            ),
            (with_tags(&["a\tb"]), "--asset-tag holds a control"),
        ];
        for (p, want) in cases {
            let e = p.check().unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
        assert_eq!(Parties::default().section(None), None);
        let s = ok.section(Some("T".into())).unwrap();
        assert_eq!(s.asset_tag.as_deref(), Some("T"));
        assert_eq!(s.customer, ok.customer);
    }
}
