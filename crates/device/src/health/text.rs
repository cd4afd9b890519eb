//! The human text of a [`Health`]: aligned `name  value` rows, the ATA
//! attribute table, then the capacity and any commands that failed.

use std::fmt::{self, Display, Formatter};

use super::hidden::{Answer, AtaCapacity, NvmeCapacity};
use super::{AtaHealth, Capacity, Health, NvmeHealth, ScsiHealth, Transport, Verdict};

fn opt<T: Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "-".into())
}

fn answer<T: Display>(a: &Answer<T>) -> String {
    match a {
        Answer::Answered { value } => value.to_string(),
        Answer::NotSupported { reason } => reason.clone(),
        Answer::Failed { error } => format!("failed: {error}"),
    }
}

fn row(f: &mut Formatter<'_>, k: &str, v: impl Display) -> fmt::Result {
    writeln!(f, "  {k:<38}{v}")
}

impl Display for Health {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.device)?;
        row(
            f,
            "transport",
            match self.transport {
                Transport::Nvme => "nvme",
                Transport::AtaViaSat => "ata-via-sat",
                Transport::Scsi => "scsi",
            },
        )?;
        row(f, "model", opt(&self.model))?;
        row(f, "serial", opt(&self.serial))?;
        row(f, "firmware", opt(&self.firmware))?;
        row(
            f,
            "overall",
            match self.verdict {
                Verdict::Passed => "PASSED",
                Verdict::Failed => "FAILED",
                Verdict::Unknown => "unknown (the drive gave no verdict)",
            },
        )?;
        if let Some(a) = &self.ata {
            ata_rows(f, a)?;
        }
        if let Some(s) = &self.scsi {
            scsi_rows(f, s)?;
        }
        if let Some(n) = &self.nvme {
            nvme_rows(f, n)?;
        }
        match &self.capacity {
            Some(Capacity::Ata(c)) => ata_capacity(f, c)?,
            Some(Capacity::Nvme(c)) => nvme_capacity(f, c)?,
            None => {}
        }
        match self.hidden_bytes {
            Some(0) => row(f, "hidden area", "none")?,
            Some(b) => row(
                f,
                "hidden area",
                format!("{b} bytes ({})", self.hidden_kind.join(", ")),
            )?,
            None => row(f, "hidden area", "unknown (the drive did not say)")?,
        }
        for p in &self.problems {
            row(f, &format!("! {}", p.command), &p.message)?;
        }
        Ok(())
    }
}

/// The newest self-test of the drive's log: its result, code, hours and
/// failing LBA.
fn self_test_row(f: &mut Formatter<'_>, t: &super::selftest::LoggedResult) -> fmt::Result {
    let at = t
        .failing_lba
        .map(|l| format!(" at LBA {l}"))
        .unwrap_or_default();
    row(
        f,
        "last self-test",
        format!(
            "{} (code {:#04x}, {} h){at}",
            t.result_name, t.code, t.power_on_hours
        ),
    )
}

/// The ATA summary rows and the attribute table.
fn ata_rows(f: &mut Formatter<'_>, a: &AtaHealth) -> fmt::Result {
    let s = &a.summary;
    row(f, "reallocated sectors (5)", opt(&s.reallocated_sectors))?;
    row(f, "power-on hours (9)", opt(&s.power_on_hours))?;
    row(f, "power cycles (12)", opt(&s.power_cycles))?;
    row(
        f,
        "reported uncorrectable (187)",
        opt(&s.reported_uncorrectable),
    )?;
    row(f, "command timeouts (188)", opt(&s.command_timeouts))?;
    row(f, "temperature °C (194/190)", opt(&s.temperature_c))?;
    row(f, "reallocation events (196)", opt(&s.reallocation_events))?;
    row(f, "pending sectors (197)", opt(&s.pending_sectors))?;
    row(
        f,
        "offline uncorrectable (198)",
        opt(&s.offline_uncorrectable),
    )?;
    row(f, "CRC errors (199)", opt(&s.crc_errors))?;
    row(f, "percentage used (177/231/233)", opt(&s.percentage_used))?;
    row(f, "LBAs written (241)", opt(&s.lbas_written))?;
    row(f, "LBAs read (242)", opt(&s.lbas_read))?;
    if let Some(t) = &a.last_self_test {
        self_test_row(f, t)?;
    }
    writeln!(
        f,
        "  {:>3} {:<24} {:>6} {:>4} {:>4} {:>4} {:>15}",
        "id", "name", "flags", "cur", "wrst", "thr", "raw"
    )?;
    for at in &a.smart.attributes {
        writeln!(
            f,
            "  {:>3} {:<24} 0x{:04x} {:>4} {:>4} {:>4} {:>15}{}",
            at.id,
            at.name.unwrap_or("Unknown_Attribute"),
            at.flags,
            at.current,
            at.worst,
            opt(&at.threshold),
            at.raw,
            if at.failing_now {
                if at.prefailure {
                    "  FAILING NOW"
                } else {
                    "  at threshold"
                }
            } else {
                ""
            }
        )?;
    }
    Ok(())
}

/// The SCSI log page rows.
fn scsi_rows(f: &mut Formatter<'_>, s: &ScsiHealth) -> fmt::Result {
    row(
        f,
        "log pages",
        s.supported_pages
            .iter()
            .map(|p| format!("{p:02x}"))
            .collect::<Vec<_>>()
            .join(" "),
    )?;
    if let Some(t) = &s.temperature {
        row(f, "temperature °C", opt(&t.current_c))?;
        row(f, "reference temperature °C", opt(&t.reference_c))?;
    }
    if let Some(t) = s.environment.as_ref().and_then(|e| e.temperature.as_ref()) {
        row(
            f,
            "temperature °C now / max / min (env.)",
            format!(
                "{} / {} / {}",
                opt(&t.current),
                opt(&t.lifetime_maximum),
                opt(&t.lifetime_minimum)
            ),
        )?;
    }
    for (name, c) in [
        ("write", &s.write_errors),
        ("read", &s.read_errors),
        ("verify", &s.verify_errors),
    ] {
        if let Some(c) = c {
            row(
                f,
                &format!("{name} errors corrected / uncorrected"),
                format!(
                    "{} / {}",
                    opt(&c.total_corrected),
                    opt(&c.total_uncorrected)
                ),
            )?;
            row(
                f,
                &format!("{name} bytes processed"),
                opt(&c.bytes_processed),
            )?;
        }
    }
    if s.non_medium_errors.is_some() {
        row(f, "non-medium errors", opt(&s.non_medium_errors))?;
    }
    if let Some(ss) = &s.start_stop {
        row(f, "manufactured (year-week)", opt(&ss.manufactured))?;
        row(
            f,
            "start-stop cycles (done / specified)",
            format!(
                "{} / {}",
                opt(&ss.accumulated_cycles),
                opt(&ss.specified_cycles)
            ),
        )?;
        row(
            f,
            "load-unload cycles (done / specified)",
            format!(
                "{} / {}",
                opt(&ss.accumulated_load_unload),
                opt(&ss.specified_load_unload)
            ),
        )?;
    }
    if let Some(t) = &s.self_tests {
        row(f, "self-tests logged", t.len())?;
        for r in t {
            row(
                f,
                &format!("  #{} (code {})", r.index, r.code),
                format!(
                    "{} at {} h{}",
                    r.result_name,
                    r.power_on_hours,
                    r.first_failure_lba
                        .map(|l| format!(", first failure at LBA {l}"))
                        .unwrap_or_default()
                ),
            )?;
        }
    }
    if let Some(ie) = &s.informational_exceptions {
        row(
            f,
            "informational exception",
            if ie.ok {
                "none".to_string()
            } else {
                format!(
                    "ASC/ASCQ {:02x}/{:02x} {}",
                    ie.asc,
                    ie.ascq,
                    ie.asc_name.clone().unwrap_or_default()
                )
            },
        )?;
    }
    Ok(())
}

/// The NVMe SMART / health rows and the error log.
fn nvme_rows(f: &mut Formatter<'_>, n: &NvmeHealth) -> fmt::Result {
    let s = &n.smart;
    row(
        f,
        "critical warning",
        if s.critical_warnings.is_empty() {
            format!("0x{:02x}", s.critical_warning)
        } else {
            format!(
                "0x{:02x} ({})",
                s.critical_warning,
                s.critical_warnings.join(", ")
            )
        },
    )?;
    row(f, "temperature °C", opt(&s.temperature_c))?;
    row(
        f,
        "available spare / threshold %",
        format!(
            "{} / {}",
            s.available_spare_pct, s.available_spare_threshold_pct
        ),
    )?;
    row(f, "percentage used", s.percentage_used)?;
    row(
        f,
        "data units read (bytes)",
        format!("{} ({})", s.data_units_read, s.data_read_bytes),
    )?;
    row(
        f,
        "data units written (bytes)",
        format!("{} ({})", s.data_units_written, s.data_written_bytes),
    )?;
    row(
        f,
        "host read / write commands",
        format!("{} / {}", s.host_read_commands, s.host_write_commands),
    )?;
    row(f, "controller busy minutes", s.controller_busy_minutes)?;
    row(f, "power cycles", s.power_cycles)?;
    row(f, "power-on hours", s.power_on_hours)?;
    row(f, "unsafe shutdowns", s.unsafe_shutdowns)?;
    row(f, "media and data integrity errors", s.media_errors)?;
    row(f, "error log entries (lifetime)", s.error_log_entries)?;
    if let Some(t) = &n.last_self_test {
        self_test_row(f, t)?;
    }
    row(
        f,
        "error log (kept / non-empty)",
        format!("{} / {}", n.error_log_capacity, n.error_log.len()),
    )?;
    for e in n.error_log.iter().take(8) {
        row(
            f,
            &format!("  error #{}", e.error_count),
            format!(
                "SQ {} CID {} LBA {} NSID {}: {}",
                e.sqid,
                e.cid,
                e.lba,
                e.nsid,
                e.status.describe()
            ),
        )?;
    }
    Ok(())
}

fn ata_capacity(f: &mut Formatter<'_>, c: &AtaCapacity) -> fmt::Result {
    row(
        f,
        "accessible sectors (IDENTIFY)",
        format!("{} x {} bytes", c.accessible_sectors, c.logical_sector_size),
    )?;
    row(
        f,
        "native max LBA",
        format!("{} ({})", answer(&c.native_max_lba), c.native_max_method),
    )?;
    row(
        f,
        "DCO maximum LBA",
        match &c.dco {
            Answer::Answered { value } => value.max_lba.to_string(),
            other => answer(&other.clone().map_unit()),
        },
    )?;
    row(
        f,
        "HPA / AMA / DCO in IDENTIFY",
        format!(
            "{} / {} / {}",
            yn(c.support.hpa),
            yn(c.support.ama),
            yn(c.support.dco)
        ),
    )
}

fn yn(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

impl<T> Answer<T> {
    /// The same outcome without its value (for messages).
    fn map_unit(self) -> Answer<String> {
        match self {
            Answer::Answered { .. } => Answer::Answered {
                value: String::new(),
            },
            Answer::NotSupported { reason } => Answer::NotSupported { reason },
            Answer::Failed { error } => Answer::Failed { error },
        }
    }
}

fn nvme_capacity(f: &mut Formatter<'_>, c: &NvmeCapacity) -> fmt::Result {
    row(f, "namespace", opt(&c.nsid))?;
    row(
        f,
        "size / capacity / used (blocks)",
        format!("{} / {} / {}", opt(&c.nsze), opt(&c.ncap), opt(&c.nuse)),
    )?;
    row(f, "block size", opt(&c.block_size))?;
    row(
        f,
        "total / unallocated NVM bytes",
        format!("{} / {}", c.tnvmcap, c.unvmcap),
    )?;
    row(
        f,
        "other namespaces",
        match &c.active_namespaces {
            Answer::Answered { .. } if c.other_namespaces.is_empty() => "none".to_string(),
            Answer::Answered { .. } => c
                .other_namespaces
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            other => answer(&other.clone().map_unit()),
        },
    )
}

impl Display for super::selftest::Outcome {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            super::selftest::Kind::Short => "short",
            super::selftest::Kind::Extended => "extended",
        };
        let state = if self.running {
            "started, still running (--no-wait)".to_string()
        } else if self.aborted {
            "aborted (Ctrl-C)".to_string()
        } else {
            "finished".to_string()
        };
        writeln!(f, "{}: {kind} self-test {state}", self.device)?;
        match &self.result {
            Some(r) => writeln!(
                f,
                "  newest log entry: {} (code {}, result {}, at {} power-on hours{})",
                r.result_name,
                r.code,
                r.result,
                r.power_on_hours,
                r.failing_lba
                    .map(|l| format!(", first failing LBA {l}"))
                    .unwrap_or_default()
            ),
            None => writeln!(f, "  the drive keeps no self-test log drivelab can read"),
        }
    }
}
