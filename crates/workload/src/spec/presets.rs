//! The classic Iometer access specifications, as presets.
//!
//! An Iometer specification is a list of lines: transfer size, share of
//! accesses, share of reads, share of random accesses. drivelab issues each
//! line's size exactly (no shortening to fit gaps, unlike fio's default
//! random map).
//!
//! | preset | lines (size / % of I/Os) | read | random | source |
//! |---|---|---|---|---|
//! | `fileserver` | 512/10, 1k/5, 2k/5, 4k/60, 8k/2, 16k/4, 32k/4, 64k/10 | 80% | 100% | Intel's File Server spec (wrkloads.icf), REFERENCE.md |
//! | `webserver` | 512/22, 1k/15, 2k/8, 4k/23, 8k/15, 16k/2, 32k/6, 64k/7, 128k/1, 512k/1 | 100% | 100% | Intel's Web Server spec as commonly published |
//! | `workstation` | 8k/100 | 80% | 80% | StorageReview's Workstation pattern |
//! | `database` | 8k/100 | 67% | 100% | Intel's Database (OLTP) pattern |
//! | `4k-seq-read`, `4k-seq-write`, `4k-rand-read`, `4k-rand-write` | 4k/100 | 100% / 0% | 0% / 100% | corners |
//! | `512k-seq-read`, `512k-seq-write`, `512k-rand-read`, `512k-rand-write` | 512k/100 | 100% / 0% | 0% / 100% | corners |

use crate::{AccessLine, JobSpec, SpecError};

/// A named access specification.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// Name used with `--preset`.
    pub name: &'static str,
    /// One line of description.
    pub about: &'static str,
    /// (size in bytes, % of accesses, % read, % random).
    pub lines: &'static [(u64, u32, u8, u8)],
}

const K: u64 = 1024;

/// Every preset.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "fileserver",
        about: "Iometer File Server: 512 B to 64 KiB, 60% 4 KiB, 80% read, all random",
        lines: &[
            (512, 10, 80, 100),
            (K, 5, 80, 100),
            (2 * K, 5, 80, 100),
            (4 * K, 60, 80, 100),
            (8 * K, 2, 80, 100),
            (16 * K, 4, 80, 100),
            (32 * K, 4, 80, 100),
            (64 * K, 10, 80, 100),
        ],
    },
    Preset {
        name: "webserver",
        about: "Iometer Web Server: 512 B to 512 KiB, all reads, all random",
        lines: &[
            (512, 22, 100, 100),
            (K, 15, 100, 100),
            (2 * K, 8, 100, 100),
            (4 * K, 23, 100, 100),
            (8 * K, 15, 100, 100),
            (16 * K, 2, 100, 100),
            (32 * K, 6, 100, 100),
            (64 * K, 7, 100, 100),
            (128 * K, 1, 100, 100),
            (512 * K, 1, 100, 100),
        ],
    },
    Preset {
        name: "workstation",
        about: "Workstation: 8 KiB, 80% read, 80% random",
        lines: &[(8 * K, 100, 80, 80)],
    },
    Preset {
        name: "database",
        about: "Database (OLTP): 8 KiB, 67% read, all random",
        lines: &[(8 * K, 100, 67, 100)],
    },
    Preset {
        name: "4k-seq-read",
        about: "4 KiB sequential reads",
        lines: &[(4 * K, 100, 100, 0)],
    },
    Preset {
        name: "4k-seq-write",
        about: "4 KiB sequential writes",
        lines: &[(4 * K, 100, 0, 0)],
    },
    Preset {
        name: "4k-rand-read",
        about: "4 KiB random reads",
        lines: &[(4 * K, 100, 100, 100)],
    },
    Preset {
        name: "4k-rand-write",
        about: "4 KiB random writes",
        lines: &[(4 * K, 100, 0, 100)],
    },
    Preset {
        name: "512k-seq-read",
        about: "512 KiB sequential reads",
        lines: &[(512 * K, 100, 100, 0)],
    },
    Preset {
        name: "512k-seq-write",
        about: "512 KiB sequential writes",
        lines: &[(512 * K, 100, 0, 0)],
    },
    Preset {
        name: "512k-rand-read",
        about: "512 KiB random reads",
        lines: &[(512 * K, 100, 100, 100)],
    },
    Preset {
        name: "512k-rand-write",
        about: "512 KiB random writes",
        lines: &[(512 * K, 100, 0, 100)],
    },
];

/// Find a preset by name (case-insensitive; `file-server`, `file_server`
/// and `fileserver` are the same).
pub fn find(name: &str) -> Result<&'static Preset, SpecError> {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['_', ' '], "-");
    let n = norm(name);
    let squash = |s: &str| s.replace('-', "");
    PRESETS
        .iter()
        .find(|p| norm(p.name) == n || squash(&norm(p.name)) == squash(&n))
        .ok_or_else(|| {
            SpecError::UnknownPreset(
                name.to_string(),
                PRESETS
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        })
}

impl Preset {
    /// The preset's access lines.
    pub fn access_lines(&self) -> Vec<AccessLine> {
        self.lines
            .iter()
            .map(|&(size, weight, read_pct, random_pct)| AccessLine {
                size,
                weight,
                read_pct,
                random_pct,
            })
            .collect()
    }

    /// Apply to a job: its access lines replace rw/bs/bssplit/rwmixread.
    /// The job's name becomes the preset's unless one was set.
    pub fn apply(&self, job: &mut JobSpec) {
        job.access = Some(self.access_lines());
        let all_read = self.lines.iter().all(|l| l.2 == 100);
        let no_read = self.lines.iter().all(|l| l.2 == 0);
        let random = self.lines.iter().any(|l| l.3 > 0);
        job.rw = match (all_read, no_read, random) {
            (true, _, false) => crate::RwMode::Read,
            (true, _, true) => crate::RwMode::RandRead,
            (_, true, false) => crate::RwMode::Write,
            (_, true, true) => crate::RwMode::RandWrite,
            (_, _, false) => crate::RwMode::ReadWrite,
            (_, _, true) => crate::RwMode::RandRw,
        };
        if job.name == JobSpec::default().name {
            job.name = self.name.to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_adds_up_to_100_percent() {
        for p in PRESETS {
            let total: u32 = p.lines.iter().map(|l| l.1).sum();
            assert_eq!(total, 100, "{}", p.name);
        }
    }

    #[test]
    fn fileserver_matches_reference_md() {
        // REFERENCE.md: 512 B 10%, 1 KiB 5%, 2 KiB 5%, 4 KiB 60%, 8 KiB 2%,
        // 16 KiB 4%, 32 KiB 4%, 64 KiB 10%; 80% read; 100% random.
        let want = [
            (512, 10),
            (1024, 5),
            (2048, 5),
            (4096, 60),
            (8192, 2),
            (16384, 4),
            (32768, 4),
            (65536, 10),
        ];
        let p = find("fileserver").unwrap();
        let got: Vec<(u64, u32)> = p.lines.iter().map(|l| (l.0, l.1)).collect();
        assert_eq!(got, want);
        assert!(p.lines.iter().all(|l| l.2 == 80 && l.3 == 100));
    }

    #[test]
    fn names_are_forgiving_and_unknown_ones_list_the_known() {
        assert_eq!(find("File_Server").unwrap().name, "fileserver");
        assert_eq!(find("4k_rand_read").unwrap().name, "4k-rand-read");
        let e = find("mailserver").unwrap_err().to_string();
        assert!(e.contains("fileserver") && e.contains("webserver"), "{e}");
    }
}
