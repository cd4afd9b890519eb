//! fio options drivelab accepts with no effect of its own, each because
//! what fio does with it changes nothing drivelab's run would do
//! differently, or because drivelab already does it: the help of each row
//! says which. Their values are checked as fio checks them (a flag, a
//! number in its bounds, one of its words), so a job file fio refuses is
//! refused here too; an option whose other values drivelab cannot honour
//! (`allow_mounted_write`, `log_store_compressed`) takes only 0. One
//! family ([`Accepted`]); the options that change the I/O or the report
//! are declared with their own families.

use crate::spec::decl::{opt, OptionDecl, OptionKind};
use crate::spec::family::OptionFamily;
use crate::spec::value::{parse_flag, parse_in};
use crate::SpecError;

/// The accepted options' family: it keeps no value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Accepted;

/// The words a text option of [`Accepted::OPTIONS`] takes.
const CHOICES: &[(&str, &[&str])] = &[
    ("clocksource", &["gettimeofday", "clock_gettime", "cpu"]),
    (
        "mem",
        &["malloc", "shm", "shmhuge", "mmap", "mmaphuge", "mmapshared"],
    ),
];

impl Accepted {
    /// The family's options.
    pub const OPTIONS: &'static [OptionDecl] = &[
        opt!(
            "disk_util",
            [],
            Bool,
            "1",
            "accepted: drivelab samples every target device's counters for its device check and fio's disk_util section on every run"
        ),
        opt!(
            "gtod_cpu",
            [],
            Int,
            "",
            "accepted: fio pins a thread that reads the time of day for the others to this CPU; drivelab has no such thread (each job reads the monotonic clock once per loop turn)",
            0,
            u32::MAX as u64,
            "CPU"
        ),
        opt!(
            "clocksource",
            [],
            Text,
            "clock_gettime",
            "accepted: gettimeofday, clock_gettime or cpu; drivelab times every span with clock_gettime(CLOCK_MONOTONIC), whichever is named"
        ),
        opt!(
            "write_barrier",
            [],
            Int,
            "0",
            "accepted: fio 3.33 marks every Nth write with a barrier flag that no Linux engine reads, so the I/O is the same",
            0,
            u32::MAX as u64,
            "writes"
        ),
        opt!(
            "mem",
            ["iomem"],
            Text,
            "malloc",
            "accepted: malloc, shm, shmhuge, mmap, mmaphuge or mmapshared; where fio allocates its I/O buffers, which moves the same bytes: drivelab's are one anonymous mapping, aligned to 4096 bytes"
        ),
        opt!(
            "hugepage_size",
            [],
            Size,
            "",
            "accepted: the huge page size of mem=mmaphuge/shmhuge (see mem)"
        ),
        opt!(
            "allow_mounted_write",
            [],
            Bool,
            "0",
            "0 only: drivelab's claim refuses to write a mounted device or partition whatever the options (fio writes one with 1)"
        ),
        opt!(
            "log_compression",
            [],
            Size,
            "0",
            "accepted: fio compresses its in-memory log entries in chunks of this size and writes the same log files; drivelab streams its log entries to the files as it goes"
        ),
        opt!(
            "log_compression_cpus",
            [],
            Text,
            "",
            "accepted: the CPUs of fio's log compression threads (see log_compression); drivelab has none"
        ),
        opt!(
            "log_store_compressed",
            [],
            Bool,
            "0",
            "0 only: drivelab writes its logs as text, never fio's zlib-compressed .fz files"
        ),
        opt!(
            "log_entries",
            [],
            Int,
            "1024",
            "accepted: the number of entries fio first allocates for a job's in-memory log (it grows the log as needed); drivelab streams its log entries to the files as it goes, so the logs written are the same",
            1024,
            1_048_576,
            "entries"
        ),
    ];
}

impl OptionFamily for Accepted {
    fn options(&self) -> &'static [OptionDecl] {
        Self::OPTIONS
    }

    fn set(&mut self, key: &'static str, v: &str) -> Result<(), SpecError> {
        let Some(d) = Self::OPTIONS.iter().find(|d| d.name == key) else {
            return Ok(());
        };
        match d.kind {
            OptionKind::Bool => {
                let why = match key {
                    "allow_mounted_write" => "drivelab never writes a mounted device or partition (its claim refuses one)",
                    "log_store_compressed" => "drivelab writes its logs as text, not as fio's .fz files",
                    _ => "",
                };
                if parse_flag(key, v)? && !why.is_empty() {
                    return Err(SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: format!("0: {why}"),
                    });
                }
            }
            OptionKind::Size => {
                crate::spec::size::parse_bytes(key, v)?;
            }
            OptionKind::Int => {
                let (lo, hi) = d.bounds.unwrap_or((0, u64::MAX));
                parse_in(key, v, lo, hi)?;
            }
            _ => {
                let words = CHOICES
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map_or(&[][..], |(_, w)| *w);
                if !words.is_empty() && !words.contains(&v.trim()) {
                    return Err(SpecError::BadValue {
                        key: key.to_string(),
                        value: v.to_string(),
                        expect: words.join(", "),
                    });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_values_are_checked_as_fio_checks_them() {
        let mut a = Accepted;
        a.set("disk_util", "0").unwrap();
        assert!(a.set("disk_util", "maybe").is_err());
        a.set("gtod_cpu", "1").unwrap();
        assert!(a.set("gtod_cpu", "-1").is_err());
        a.set("clocksource", "cpu").unwrap();
        let e = a.set("clocksource", "tsc").unwrap_err().to_string();
        assert!(e.contains("clock_gettime"), "{e}");
    }
}
