//! `drivelab devices`: what block devices there are and whether they are
//! free to write.
//!
//! A table (or `{"devices":[...]}` in JSON) of every disk or of the devices
//! named, with size, sector sizes, rotational, model/serial, offload limits
//! and the safety state (`free`, `mounted at X`, `in use by Y`, `has
//! partition table`, ...). Unattached loop and zram devices (size 0) are
//! skipped unless `--all` is given.
//!
//! The state is the one a write would meet ([`safety::assess`], the check
//! a claim runs): a device another process holds open `O_EXCL` is `in use:
//! held exclusively by python3 (pid 4242)` (the processes that have it
//! open, from [`safety::exclusive_holder`]), and one that shares bytes with
//! a mounted or held loop device is `in use: shares bytes with loop6,
//! mounted at /mnt (loop6)`. Listing only reads: the exclusive check is an
//! `O_RDONLY|O_EXCL` open closed at once.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde::Serialize;

use drivelab_device::blockdev::{BlockDevError, BlockDevice};
use drivelab_device::caps::{self, Capabilities, Transport};
use drivelab_device::health;
use drivelab_device::safety::{self, Finding};

use crate::output::OutputArgs;

/// Arguments of `drivelab devices`.
#[derive(Args, Debug)]
pub struct DevicesArgs {
    /// Devices to show (/dev nodes, symlinks or partitions); default: all disks.
    #[arg(value_name = "DEV")]
    pub devices: Vec<PathBuf>,
    /// Also show unattached loop and zram devices (size 0).
    #[arg(long)]
    pub all: bool,
    /// Do not ask the devices which commands they support (sysfs facts only).
    #[arg(long)]
    pub no_probe: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// One row of the JSON output: the device's facts plus its safety state.
#[derive(Serialize)]
struct Row<'a> {
    #[serde(flatten)]
    dev: &'a BlockDevice,
    /// Short state: "free", "mounted at /mnt (sdb1)", "has ext4 signature",
    /// "in use: held exclusively by python3 (pid 4242)", ...
    state: String,
    /// Every safety finding (empty when free).
    findings: Vec<Finding>,
    /// Which commands the device supports, from its own answers (VPD pages
    /// for SCSI, IDENTIFY for ATA, Identify for NVMe); absent with --no-probe.
    #[serde(skip_serializing_if = "Option::is_none")]
    capabilities: Option<Capabilities>,
    /// Why the device could not be asked, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    probe_error: Option<String>,
    /// "hidden area: N bytes (HPA/AMA)" when the drive's native capacity
    /// exceeds what the host sees (see `drivelab health`); absent otherwise
    /// and with --no-probe.
    #[serde(skip_serializing_if = "Option::is_none")]
    hidden_area: Option<String>,
}

#[derive(Serialize)]
struct Doc<'a> {
    devices: Vec<Row<'a>>,
}

/// Run the subcommand.
pub fn run(a: DevicesArgs) -> anyhow::Result<u8> {
    a.out.check()?;
    let devs: Vec<BlockDevice> = if a.devices.is_empty() {
        BlockDevice::list_all()
            .context("cannot list block devices")?
            .into_iter()
            .filter(|d| a.all || !d.is_unattached())
            .collect()
    } else {
        let mut v = Vec::new();
        for p in &a.devices {
            match BlockDevice::from_path(p) {
                Ok(d) => v.push(d),
                Err(
                    e @ (BlockDevError::NotABlockDevice(_) | BlockDevError::NoSysfsEntry { .. }),
                ) => return Err(crate::error::usage(e.to_string())),
                Err(BlockDevError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    return Err(crate::error::usage(format!(
                        "{} does not exist; list devices with 'drivelab devices'",
                        p.display()
                    )))
                }
                Err(e) => return Err(anyhow::Error::new(e)),
            }
        }
        v
    };

    let rows: Vec<Row<'_>> = devs
        .iter()
        .map(|d| {
            let asm = safety::assess(d);
            let (capabilities, probe_error) = if a.no_probe || d.is_unattached() {
                (None, None)
            } else {
                match caps::probe(&d.path) {
                    Ok(c) => (Some(c), None),
                    Err(e) => (None, Some(e.to_string())),
                }
            };
            let hidden_area = capabilities
                .as_ref()
                .and_then(|_| health::hidden_area_note(&d.path));
            Row {
                dev: d,
                state: asm.state(),
                findings: asm.findings,
                capabilities,
                probe_error,
                hidden_area,
            }
        })
        .collect();

    let text = if a.out.json() {
        let mut s = serde_json::to_string_pretty(&Doc { devices: rows })?;
        s.push('\n');
        s
    } else {
        table(&rows)
    };
    a.out.emit(&text)?;
    Ok(0)
}

/// A size for people, in fio's convention: binary units (KiB, MiB, GiB,
/// TiB). See [`human_size_pair`] for the decimal figure beside.
pub fn human_size(n: u64) -> String {
    scaled(n, 1024.0, ["B", "KiB", "MiB", "GiB", "TiB"])
}

/// A capacity as fio prints one: binary, with the decimal figure (as drive
/// labels give it) beside, "465.8 GiB (500.1 GB)".
pub fn human_size_pair(n: u64) -> String {
    if n < 1000 {
        return human_size(n);
    }
    format!(
        "{} ({})",
        human_size(n),
        scaled(n, 1000.0, ["B", "kB", "MB", "GB", "TB"])
    )
}

fn scaled(n: u64, base: f64, units: [&str; 5]) -> String {
    let mut v = n as f64;
    let mut i = 0;
    while v >= base && i < units.len() - 1 {
        v /= base;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else if v.fract() == 0.0 {
        format!("{v:.0} {}", units[i])
    } else {
        format!("{v:.1} {}", units[i])
    }
}

fn limit(n: u64) -> String {
    if n == 0 {
        "-".to_string()
    } else {
        human_size(n)
    }
}

fn table(rows: &[Row<'_>]) -> String {
    let header = [
        "NAME",
        "SIZE",
        "LOG/PHYS",
        "ROT",
        "MODEL",
        "SERIAL",
        "WZ MAX",
        "DISCARD MAX",
        "COMMANDS",
        "STATE",
    ];
    let mut lines: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    let cells = |d: &BlockDevice, name: String, cmds: String, state: String| -> Vec<String> {
        vec![
            name,
            human_size_pair(d.size.0),
            format!("{}/{}", d.logical_sector.0, d.physical_sector.0),
            if d.rotational { "1" } else { "0" }.to_string(),
            d.model.clone().unwrap_or_else(|| "-".into()),
            d.serial.clone().unwrap_or_else(|| "-".into()),
            limit(d.write_zeroes_max_bytes.0),
            limit(d.discard_max_bytes.0),
            cmds,
            state,
        ]
    };
    for r in rows {
        let cmds = match (&r.capabilities, &r.probe_error) {
            (Some(c), _) => commands(c),
            (None, Some(_)) => "?".to_string(),
            (None, None) => "-".to_string(),
        };
        let state = match &r.hidden_area {
            Some(h) => format!("{}; {h}", r.state),
            None => r.state.clone(),
        };
        lines.push(cells(r.dev, r.dev.name.clone(), cmds, state));
        for p in &r.dev.partitions {
            let st = safety::assess(p).state();
            lines.push(cells(p, format!("  {}", p.name), String::new(), st));
        }
    }
    let ncol = header.len();
    let widths: Vec<usize> = (0..ncol)
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for l in &lines {
        let mut s = String::new();
        for (c, cell) in l.iter().enumerate() {
            if c + 1 == ncol {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    }
    out
}

/// The commands a device answered that it supports, compactly: the
/// transport, then SCSI (WS16, WS10, UNMAP), ATA (SCT-WS, SANITIZE(…),
/// SEC-ERASE, TRIM), NVMe (WZ, DSM, FORMAT(…), SANITIZE(…)), and the
/// kernel's offloads (ZEROOUT offload, DISCARD).
fn commands(c: &Capabilities) -> String {
    let mut v: Vec<String> = Vec::new();
    let kinds = |pairs: &[(bool, &str)]| -> String {
        pairs
            .iter()
            .filter(|p| p.0)
            .map(|p| p.1)
            .collect::<Vec<_>>()
            .join(",")
    };
    match c.transport {
        Transport::Scsi => {
            v.push("scsi:".into());
            if c.scsi_write_same_16 {
                v.push("WS16".into());
            }
            if c.scsi_write_same_10 {
                v.push("WS10".into());
            }
            if c.scsi_unmap {
                v.push("UNMAP".into());
            }
        }
        Transport::AtaViaSat => {
            v.push("ata:".into());
            if c.ata_sct_write_same {
                v.push("SCT-WS".into());
            }
            let s = &c.ata_sanitize;
            let k = kinds(&[
                (s.overwrite, "ovw"),
                (s.crypto, "crypto"),
                (s.block, "block"),
            ]);
            if !k.is_empty() {
                v.push(format!("SANITIZE({k})"));
            }
            if c.ata_security_erase {
                v.push("SEC-ERASE".into());
            }
            if c.ata_trim {
                v.push("TRIM".into());
            }
        }
        Transport::Nvme => {
            v.push("nvme:".into());
            if c.nvme_write_zeroes {
                v.push("WZ".into());
            }
            if c.nvme_dsm {
                v.push("DSM".into());
            }
            if c.nvme_format.supported {
                v.push(
                    if c.nvme_format.crypto_erase {
                        "FORMAT(+crypto)"
                    } else {
                        "FORMAT"
                    }
                    .into(),
                );
            }
            let s = &c.nvme_sanitize;
            let k = kinds(&[
                (s.overwrite, "ovw"),
                (s.crypto, "crypto"),
                (s.block, "block"),
            ]);
            if !k.is_empty() {
                v.push(format!("SANITIZE({k})"));
            }
        }
        _ => {}
    }
    if c.blk_zeroout_offload {
        v.push("ZEROOUT".into());
    }
    if c.discard {
        v.push("DISCARD".into());
    }
    if v.is_empty() {
        "-".into()
    } else {
        v.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_binary_with_the_decimal_figure_beside_capacities() {
        assert_eq!(human_size(64 << 20), "64 MiB");
        assert_eq!(human_size(256 << 30), "256 GiB");
        assert_eq!(human_size(500_107_862_016), "465.8 GiB");
        assert_eq!(human_size(1536 << 20), "1.5 GiB");
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(512), "512 B");
        // A limit such as 4 GiB - 512 (a loop device's write-zeroes maximum)
        // is binary like every other size, not "4.3 GB".
        assert_eq!(human_size((4 << 30) - 512), "4.0 GiB");
        assert_eq!(human_size_pair(500_107_862_016), "465.8 GiB (500.1 GB)");
        assert_eq!(human_size_pair(1_000_204_886_016), "931.5 GiB (1.0 TB)");
        assert_eq!(human_size_pair(64 << 20), "64 MiB (67.1 MB)");
        assert_eq!(human_size_pair(512), "512 B");
    }
}
