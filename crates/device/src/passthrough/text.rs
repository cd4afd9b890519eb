//! The human text of each answer: aligned `name  value` rows for the
//! decoded data, one line for what a command did. Every line ends in `\n`.

use std::fmt::{self, Display, Formatter};

use super::inspect::{Identify, Inquiry, Probe, ReadCapacity, SctStatusAnswer, VpdPage};
use super::readback::ReadBack;
use super::write::{
    AtaSanitizeAnswer, NvmeDsm, NvmeFormat, NvmeSanitize, NvmeWriteZeroes, SctWriteSame, Unmap,
    WriteSame,
};
use crate::ata::{AtaSanitizeOp, SctStatus};

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn opt<T: Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "-".into())
}

impl Display for Probe {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let c = &self.capabilities;
        let mut row = |k: &str, v: String| writeln!(f, "{k:<30}{v}");
        row(
            "transport",
            serde_json::to_value(c.transport)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
        )?;
        row("vendor", opt(&c.identity.vendor))?;
        row("model", opt(&c.identity.model))?;
        row("serial", opt(&c.identity.serial))?;
        row("firmware", opt(&c.identity.firmware))?;
        row("capacity (blocks)", opt(&c.capacity_blocks))?;
        row(
            "logical / physical block",
            format!(
                "{} / {}",
                opt(&c.logical_block_size),
                opt(&c.physical_block_size)
            ),
        )?;
        row(
            "scsi write same 16 / 10",
            format!(
                "{} / {} ({})",
                yes_no(c.scsi_write_same_16),
                yes_no(c.scsi_write_same_10),
                c.scsi_write_same_basis
            ),
        )?;
        row("max write same blocks", opt(&c.max_write_same_blocks))?;
        row("scsi unmap", yes_no(c.scsi_unmap).into())?;
        row("ata sct write same", yes_no(c.ata_sct_write_same).into())?;
        row(
            "ata sanitize ovw/crypto/blk",
            format!(
                "{} / {} / {}",
                yes_no(c.ata_sanitize.overwrite),
                yes_no(c.ata_sanitize.crypto),
                yes_no(c.ata_sanitize.block)
            ),
        )?;
        row(
            "ata security erase",
            format!(
                "{}{}",
                yes_no(c.ata_security_erase),
                if c.ata_security_frozen {
                    " (frozen)"
                } else {
                    ""
                }
            ),
        )?;
        row("ata trim", yes_no(c.ata_trim).into())?;
        row(
            "nvme write zeroes",
            format!(
                "{}{}",
                yes_no(c.nvme_write_zeroes),
                if c.nvme_write_zeroes_deac {
                    " (deac)"
                } else {
                    ""
                }
            ),
        )?;
        row("nvme dsm", yes_no(c.nvme_dsm).into())?;
        row(
            "nvme format / crypto",
            format!(
                "{} / {}",
                yes_no(c.nvme_format.supported),
                yes_no(c.nvme_format.crypto_erase)
            ),
        )?;
        row(
            "nvme sanitize crypto/blk/ovw",
            format!(
                "{} / {} / {}",
                yes_no(c.nvme_sanitize.crypto),
                yes_no(c.nvme_sanitize.block),
                yes_no(c.nvme_sanitize.overwrite)
            ),
        )?;
        row(
            "reads zero after unmap",
            yes_no(c.reads_zero_after_unmap).into(),
        )?;
        if let Some(s) = &c.sysfs {
            row("write_zeroes_max_bytes", opt(&s.write_zeroes_max_bytes))?;
            row("discard_max_bytes", opt(&s.discard_max_bytes))?;
        }
        row("blkzeroout offload", yes_no(c.blk_zeroout_offload).into())?;
        row("discard", yes_no(c.discard).into())?;
        for n in &c.notes {
            row("note", n.clone())?;
        }
        Ok(())
    }
}

impl Display for Inquiry {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Inquiry::Standard { inquiry: q } => write!(
                f,
                "vendor            {}\nproduct           {}\nrevision          {}\ndevice type       {} (0x{:02x})\nremovable         {}\n",
                q.vendor,
                q.product,
                q.revision,
                q.peripheral_type_name,
                q.peripheral_type,
                yes_no(q.removable)
            ),
            Inquiry::Vpd(p) => p.fmt(f),
        }
    }
}

impl Display for VpdPage {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(f, "VPD page 0x{:02x}, {} bytes", self.page, self.raw_len)?;
        if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(&self.decoded) {
            for (k, v) in m {
                writeln!(
                    f,
                    "{k}: {}",
                    serde_json::to_string_pretty(&v).unwrap_or_default()
                )?;
            }
        }
        writeln!(f, "raw: {}", self.raw_hex)
    }
}

impl Display for ReadCapacity {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let cap = &self.capacity;
        write!(
            f,
            "last LBA          {}\nblocks            {}\nblock length      {} bytes\nphysical block    {} bytes\ncapacity          {} bytes\nLBPME             {}\nLBPRZ             {}\nfrom              READ CAPACITY({})\n",
            cap.last_lba,
            self.blocks,
            cap.block_length,
            cap.physical_block_length(),
            self.blocks * u64::from(cap.block_length),
            cap.lbpme,
            cap.lbprz,
            if cap.from_rc16 { 16 } else { 10 }
        )
    }
}

impl Display for Identify {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Identify::Nvme {
                controller: ctrl,
                namespace,
            } => {
                write!(
                    f,
                    "model             {}\nserial            {}\nfirmware          {}\nvendor id         0x{:04x}\nMDTS              {}\nONCS              0x{:04x} (write zeroes {}, DSM {}, write uncorrectable {})\nFNA               0x{:02x} (crypto erase {})\nSANICAP           0x{:08x} (crypto {}, block {}, overwrite {})\n",
                    ctrl.model,
                    ctrl.serial,
                    ctrl.firmware,
                    ctrl.vid,
                    ctrl.mdts,
                    ctrl.oncs,
                    yes_no(ctrl.write_zeroes),
                    yes_no(ctrl.dsm),
                    yes_no(ctrl.write_uncorrectable),
                    ctrl.fna,
                    yes_no(ctrl.crypto_erase),
                    ctrl.sanicap,
                    yes_no(ctrl.sanitize_crypto),
                    yes_no(ctrl.sanitize_block),
                    yes_no(ctrl.sanitize_overwrite)
                )?;
                if let Some(n) = namespace {
                    write!(
                        f,
                        "NSZE / NCAP       {} / {} blocks\nLBA format        {} ({} bytes, {} metadata)\nDLFEAT            0x{:02x} (deallocated reads {}, DEAC {})\n",
                        n.nsze,
                        n.ncap,
                        n.lbaf_in_use,
                        n.block_size,
                        n.metadata_size,
                        n.dlfeat,
                        n.deallocate_reads,
                        yes_no(n.write_zeroes_deac)
                    )?;
                }
                Ok(())
            }
            Identify::Ata { identify: id } => write!(
                f,
                "model             {}\nserial            {}\nfirmware          {}\ncapacity          {} sectors\nsector size       {} logical / {} physical\n48-bit            {}\nSCT / Write Same  {} / {}\nsanitize          {} (overwrite {}, crypto {}, block {})\nsecurity          {} (enabled {}, locked {}, frozen {})\nTRIM              {} (deterministic {}, zeroes {})\n",
                id.model,
                id.serial,
                id.firmware,
                id.capacity_sectors,
                id.logical_sector_size,
                id.physical_sector_size,
                yes_no(id.lba48),
                yes_no(id.sct_supported),
                yes_no(id.sct_write_same),
                yes_no(id.sanitize),
                yes_no(id.sanitize_overwrite),
                yes_no(id.sanitize_crypto),
                yes_no(id.sanitize_block_erase),
                yes_no(id.security_supported),
                yes_no(id.security_enabled),
                yes_no(id.security_locked),
                yes_no(id.security_frozen),
                yes_no(id.trim),
                yes_no(id.trim_deterministic),
                yes_no(id.trim_reads_zero)
            ),
        }
    }
}

fn sct_status_line(f: &mut Formatter<'_>, s: &SctStatus) -> fmt::Result {
    writeln!(
        f,
        "SCT status: extended status 0x{:04x}{}, action 0x{:04x}, function 0x{:04x}, current LBA {}, device state {}",
        s.extended_status,
        if s.in_progress() { " (running)" } else { "" },
        s.action_code,
        s.function_code,
        s.current_lba,
        s.device_state
    )
}

impl Display for SctStatusAnswer {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        sct_status_line(f, &self.sct_status)
    }
}

impl Display for ReadBack {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let (what, ok) = match self.transport {
            Some(_) => ("NVMe Read", "success"),
            None => ("READ", "GOOD"),
        };
        write!(
            f,
            "{what} of {} blocks at LBA {}: {ok}, {} bytes, {} command(s), {} ms\nsha256 {}\n",
            self.count.0, self.lba.0, self.bytes, self.commands, self.duration_ms, self.sha256
        )
    }
}

impl Display for WriteSame {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "WRITE SAME({}) of {} blocks at LBA {}: GOOD ({} ms)",
            self.cdb, self.count.0, self.lba.0, self.duration_ms
        )
    }
}

impl Display for Unmap {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "UNMAP of {} blocks at LBA {}: GOOD ({} ms)",
            self.count.0, self.lba.0, self.duration_ms
        )
    }
}

impl Display for SctWriteSame {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "SCT Write Same (function 0x{:04x}) of {} blocks at LBA {} with pattern 0x{:08x}: {} ({} ms)",
            self.function,
            self.count.0,
            self.lba.0,
            self.pattern,
            if self.started_only { "started" } else { "done" },
            self.duration_ms
        )
    }
}

impl Display for AtaSanitizeAnswer {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match (&self.status, self.op) {
            (Some(st), AtaSanitizeOp::Status) => writeln!(
                f,
                "sanitize: completed without error {}, in progress {} ({:.1}%), frozen {}",
                yes_no(st.completed_ok),
                yes_no(st.in_progress),
                st.percent(),
                yes_no(st.frozen)
            ),
            _ => writeln!(
                f,
                "{} started; follow it with '--action status'",
                self.action
            ),
        }
    }
}

impl Display for NvmeWriteZeroes {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Write Zeroes of {} blocks at LBA {}{}: success, {} command(s), {} ms",
            self.count.0,
            self.lba.0,
            if self.deac { " (DEAC)" } else { "" },
            self.commands,
            self.duration_ms
        )
    }
}

impl Display for NvmeDsm {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Dataset Management deallocate of {} blocks at LBA {}: success",
            self.count.0, self.lba.0
        )
    }
}

impl Display for NvmeFormat {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Format NVM of namespace {} (LBA format {}, SES {}): success ({} ms)",
            self.nsid, self.lbaf, self.ses, self.duration_ms
        )
    }
}

impl Display for NvmeSanitize {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            NvmeSanitize::Status { sanitize_status: s } => writeln!(
                f,
                "sanitize status: {} (progress {:.1}%), overwrite passes {}",
                s.status_name,
                f64::from(s.progress) * 100.0 / 65536.0,
                s.overwrite_passes
            ),
            NvmeSanitize::Started { .. } => {
                writeln!(f, "sanitize started; follow it with '--action status'")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{BlockCount, Lba};

    #[test]
    fn read_back_text_names_the_command_and_the_digest() {
        let mut r = ReadBack {
            transport: None,
            lba: Lba(8),
            count: BlockCount(2),
            block_length: 512,
            bytes: 1024,
            commands: 1,
            duration_ms: 3,
            sha256: "ab".into(),
        };
        assert_eq!(
            r.to_string(),
            "READ of 2 blocks at LBA 8: GOOD, 1024 bytes, 1 command(s), 3 ms\nsha256 ab\n"
        );
        r.transport = Some("nvme");
        assert_eq!(
            r.to_string(),
            "NVMe Read of 2 blocks at LBA 8: success, 1024 bytes, 1 command(s), 3 ms\nsha256 ab\n"
        );
    }

    #[test]
    fn ata_sanitize_without_status_registers_says_started() {
        let a = AtaSanitizeAnswer {
            action: "crypto",
            registers: None,
            status: None,
            op: AtaSanitizeOp::CryptoScramble,
        };
        assert_eq!(
            a.to_string(),
            "crypto started; follow it with '--action status'\n"
        );
    }
}
