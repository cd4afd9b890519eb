//! What a fleet run is, checked before anything is rendered or sent: the
//! namespace, image, node label, store and state directory every object
//! shares ([`Fleet`]), the work (the station's policy, or a Job's `run`,
//! `erase` or `health`: [`Work`]) and the drives a Job acts on
//! ([`Selection`]: serials, WWNs, by-path patterns; a kernel name such as
//! `/dev/sdb` differs from host to host and is refused).

use std::path::{Path, PathBuf};

use crate::{FleetError, Result};

/// The settings every object of a fleet run shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fleet {
    /// The namespace everything lives in.
    pub namespace: String,
    /// The image (`tools/oci-image` prints its name).
    pub image: String,
    /// The label a node carries to be part of the fleet.
    pub node_label: Label,
    /// The fleet run's ID, kept with every record its pods store.
    pub run_id: String,
    /// The store every pod writes to (a `postgres://` URL, put in a Secret).
    pub store_url: String,
    /// The host directory (on every node) for certificates, journals and
    /// the signing key; mounted at the same path in the pods.
    pub state_dir: PathBuf,
}

/// The default namespace.
pub const NAMESPACE: &str = "drivelab";
/// The default node label.
pub const NODE_LABEL: &str = "drivelab.io/fleet=true";
/// The default state directory on each node.
pub const STATE_DIR: &str = "/var/lib/drivelab";

impl Fleet {
    /// Check every field: names Kubernetes accepts, a PostgreSQL store
    /// (an SQLite file would be one per node, no merged report), an
    /// absolute state directory.
    pub fn check(&self) -> Result<()> {
        dns_label("--namespace", &self.namespace)?;
        dns_label("--run", &self.run_id)?;
        if self.image.trim().is_empty() || self.image.contains(char::is_whitespace) {
            return Err(bad(format!(
                "--image '{}' is not an image name; give the name tools/oci-image printed",
                self.image
            )));
        }
        if !(self.store_url.starts_with("postgres://")
            || self.store_url.starts_with("postgresql://"))
        {
            return Err(bad(
                "--store must be a postgres:// URL that every node reaches: a fleet's results are merged in one PostgreSQL store".to_string(),
            ));
        }
        if !self.state_dir.is_absolute() || self.state_dir == Path::new("/") {
            return Err(bad(format!(
                "--state-dir '{}' must be an absolute directory other than /",
                self.state_dir.display()
            )));
        }
        Ok(())
    }

    /// Where certificates and journals go on each node.
    pub fn certificate_dir(&self) -> PathBuf {
        self.state_dir.join("certificates")
    }
}

/// A Kubernetes label, `key=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// The key (`drivelab.io/fleet`).
    pub key: String,
    /// The value (`true`).
    pub value: String,
}

impl Label {
    /// Read `key=value`, both as Kubernetes allows them.
    pub fn parse(s: &str) -> Result<Label> {
        let Some((key, value)) = s.split_once('=') else {
            return Err(bad(format!(
                "--node-label '{s}' is not KEY=VALUE (such as {NODE_LABEL})"
            )));
        };
        let (prefix, name) = match key.split_once('/') {
            Some((p, n)) => (Some(p), n),
            None => (None, key),
        };
        let name_ok = |n: &str, empty_ok: bool| {
            (empty_ok && n.is_empty())
                || (n.len() <= 63
                    && n.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && n.ends_with(|c: char| c.is_ascii_alphanumeric())
                    && n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        };
        let prefix_ok = prefix.is_none_or(|p| {
            p.len() <= 253
                && p.split('.').all(|part| {
                    !part.is_empty()
                        && part
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                })
        });
        if !prefix_ok || !name_ok(name, false) || !name_ok(value, true) {
            return Err(bad(format!(
                "--node-label '{s}' is not a Kubernetes label (KEY=VALUE, such as {NODE_LABEL})"
            )));
        }
        Ok(Label {
            key: key.to_string(),
            value: value.to_string(),
        })
    }
}

/// Which drives of a node a Job acts on. A drive is selected when any
/// one of the lists names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Serial numbers, exactly.
    pub serials: Vec<String>,
    /// World-wide names, exactly (the kernel's `wwid`, with or without its
    /// `naa.` / `eui.` prefix).
    pub wwns: Vec<String>,
    /// `/dev/disk/by-path` name patterns (`*`, `?`), with or without the
    /// `/dev/disk/by-path/` prefix; with `include_loop` also a loop
    /// device's backing-file pattern.
    pub by_path: Vec<String>,
    /// Loop devices may be selected (by serial they have none: by their
    /// backing file, through `by_path`). For tests and demonstrations.
    pub include_loop: bool,
}

impl Selection {
    /// Check the selection: something is named, and no pattern is a
    /// kernel name (`sdb`, `/dev/nvme0n1`), which differs per host.
    pub fn check(&self) -> Result<()> {
        if self.serials.is_empty() && self.wwns.is_empty() && self.by_path.is_empty() {
            return Err(bad(
                "no drive selected: give --serial, --wwn or --by-path (a kernel name such as /dev/sdb differs from host to host)".to_string(),
            ));
        }
        for v in self.serials.iter().chain(&self.wwns) {
            if v.trim().is_empty() {
                return Err(bad(
                    "an empty --serial or --wwn selects nothing; give the drive's own".to_string(),
                ));
            }
        }
        for p in &self.by_path {
            let name = p.strip_prefix("/dev/disk/by-path/").unwrap_or(p);
            let kernel_name = name.starts_with("/dev/")
                || ["sd", "hd", "vd", "xvd", "nvme", "mmcblk", "loop"]
                    .iter()
                    .any(|k| name.starts_with(k) && !name.contains('-'));
            let loop_file =
                self.include_loop && name.starts_with('/') && !name.starts_with("/dev/");
            if name.is_empty()
                || (kernel_name && !loop_file)
                || (name.starts_with('/') && !loop_file)
            {
                return Err(bad(format!(
                    "--by-path '{p}' is not a /dev/disk/by-path name pattern (such as pci-0000:03:00.0-sas-*): kernel names like /dev/sdb differ from host to host; select by --serial, --wwn or --by-path"
                )));
            }
        }
        Ok(())
    }

    /// The selection as `drivelab fleet exec` arguments.
    pub fn to_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (flag, vals) in [
            ("--serial", &self.serials),
            ("--wwn", &self.wwns),
            ("--by-path", &self.by_path),
        ] {
            for v in vals {
                out.push(flag.to_string());
                out.push(v.clone());
            }
        }
        if self.include_loop {
            out.push("--include-loop".to_string());
        }
        out
    }
}

/// What a fleet run does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// `drivelab station` on every labelled node (a DaemonSet), with this
    /// policy (TOML text).
    Station {
        /// The policy file's text.
        policy: String,
    },
    /// `drivelab run JOBFILE` on the selected drives of every labelled
    /// node; the job file names them as `${DRIVELAB_DRIVES}`.
    Run {
        /// The job file's text.
        job_file: String,
        /// The drives.
        selection: Selection,
    },
    /// `drivelab erase` of the selected drives (a list of serials),
    /// wherever they are.
    Erase {
        /// The drives.
        selection: Selection,
        /// Options passed on to `drivelab erase` (`--method`, `--verify`).
        options: Vec<String>,
    },
    /// `drivelab health` of the selected drives.
    Health {
        /// The drives.
        selection: Selection,
    },
}

impl Work {
    /// The component's name (a label value and a part of object names).
    pub fn component(&self) -> &'static str {
        match self {
            Work::Station { .. } => "station",
            Work::Run { .. } => "run",
            Work::Erase { .. } => "erase",
            Work::Health { .. } => "health",
        }
    }

    /// Check the work: the station's policy is a policy the station takes
    /// and keeps its certificates under `state_dir`, with no store of its
    /// own; a job file uses `${DRIVELAB_DRIVES}`; selections as
    /// [`Selection::check`].
    pub fn check(&self, fleet: &Fleet) -> Result<()> {
        match self {
            Work::Station { policy } => {
                let p = drivelab_station::policy::parse(Path::new("policy.toml"), policy)
                    .map_err(|e| bad(e.to_string()))?;
                if p.store.is_some() {
                    return Err(bad(
                        "policy.toml: store: a fleet's station stores where --store says (a Secret); remove the key".to_string(),
                    ));
                }
                if !p.erase.certificate_dir.starts_with(&fleet.state_dir) {
                    return Err(bad(format!(
                        "policy.toml: erase.certificate_dir: must be under the fleet's state directory {} (mounted from the node), such as {}",
                        fleet.state_dir.display(),
                        fleet.certificate_dir().display()
                    )));
                }
                Ok(())
            }
            Work::Run {
                job_file,
                selection,
            } => {
                if !job_file.contains(&format!("${{{DRIVES_ENV}}}")) {
                    return Err(bad(format!(
                        "the job file must name its drives as filename=${{{DRIVES_ENV}}}: each node's selected drives differ"
                    )));
                }
                selection.check()
            }
            Work::Erase { selection, .. } | Work::Health { selection } => selection.check(),
        }
    }
}

/// The environment variable `drivelab fleet exec` gives the selected
/// drives in (`/dev/a:/dev/b`, fio's list separator), for a job file's
/// `filename=${DRIVELAB_DRIVES}`.
pub const DRIVES_ENV: &str = "DRIVELAB_DRIVES";

/// Check a DNS label (namespace, run ID): lower-case letters, digits and
/// '-', at most 40 characters (a run's ID is part of object names).
fn dns_label(flag: &str, s: &str) -> Result<()> {
    let ok = !s.is_empty()
        && s.len() <= 40
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(bad(format!(
            "{flag} '{s}' is not a name Kubernetes takes: lower-case letters, digits and '-', starting with a letter, at most 40"
        )))
    }
}

fn bad(s: String) -> FleetError {
    FleetError::BadInput(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_as_kubernetes_takes_them() {
        let cases = [
            ("drivelab.io/fleet=true", true),
            ("rack=r12", true),
            ("rack=", true),
            ("rack", false),
            ("Drivelab.IO/fleet=true", false),
            ("a/b/c=x", false),
            ("rack=r 12", false),
            ("-rack=x", false),
        ];
        for (s, ok) in cases {
            assert_eq!(Label::parse(s).is_ok(), ok, "{s}");
        }
        let l = Label::parse(NODE_LABEL).unwrap();
        assert_eq!(
            (l.key.as_str(), l.value.as_str()),
            ("drivelab.io/fleet", "true")
        );
    }

    #[test]
    fn selections_by_kernel_name_are_refused() {
        let sel = |p: &str, include_loop: bool| Selection {
            by_path: vec![p.into()],
            include_loop,
            ..Selection::default()
        };
        let cases = [
            ("pci-0000:03:00.0-sas-phy*", false, true),
            ("/dev/disk/by-path/pci-0000:00:17.0-ata-1", false, true),
            ("/dev/sdb", false, false),
            ("sdb", false, false),
            ("nvme0n1", false, false),
            ("/dev/disk/by-path/sdb", false, false),
            ("/var/tmp/drives/*.img", true, true),
            ("/var/tmp/drives/*.img", false, false),
            ("/dev/loop3", true, false),
        ];
        for (p, include_loop, ok) in cases {
            assert_eq!(
                sel(p, include_loop).check().is_ok(),
                ok,
                "{p} {include_loop}"
            );
        }
        assert!(Selection::default().check().is_err(), "nothing selected");
        let s = Selection {
            serials: vec!["S1".into()],
            wwns: vec!["naa.5000".into()],
            by_path: vec!["pci-*".into()],
            include_loop: true,
        };
        assert_eq!(
            s.to_args(),
            [
                "--serial",
                "S1",
                "--wwn",
                "naa.5000",
                "--by-path",
                "pci-*",
                "--include-loop"
            ]
        );
    }

    #[test]
    fn a_fleet_needs_postgres_and_kubernetes_names() {
        let good = Fleet {
            namespace: "drivelab".into(),
            image: "drivelab.local/drivelab:0.1.0".into(),
            node_label: Label::parse(NODE_LABEL).unwrap(),
            run_id: "burnin-7".into(),
            store_url: "postgresql://lab@db/results".into(),
            state_dir: STATE_DIR.into(),
        };
        assert!(good.check().is_ok());
        let mut bad_ones = Vec::new();
        let mut f = good.clone();
        f.store_url = "/var/lib/results.db".into();
        bad_ones.push(f);
        let mut f = good.clone();
        f.run_id = "Run_7".into();
        bad_ones.push(f);
        let mut f = good.clone();
        f.namespace = "x".repeat(41);
        bad_ones.push(f);
        let mut f = good.clone();
        f.state_dir = "var/lib".into();
        bad_ones.push(f);
        let mut f = good;
        f.image = "a b".into();
        bad_ones.push(f);
        for f in bad_ones {
            let e = f.check().expect_err("accepted");
            assert!(e.is_bad_input() && !e.to_string().contains('\n'), "{e}");
        }
    }
}
