//! The state file: what the drive is and has done, as JSON, rewritten
//! (write then rename) after every batch of commands, so a test compares
//! it with what drivelab reports.

use std::path::Path;

use serde_json::{json, Value};

use crate::disk::Disk;

/// The drive's state as JSON.
pub fn to_json(d: &Disk) -> Value {
    let c = &d.counters;
    let ata = d.ata.as_ref().map(|a| {
        let sec = &a.security;
        let stats = a.statistics();
        json!({
            "model": a.model,
            "serial": a.serial,
            "firmware": a.firmware,
            "factory_blocks": a.factory_blocks,
            "native_blocks": a.native_blocks,
            "dco_frozen": a.dco_frozen,
            "max_blocks": a.max_blocks,
            "max_volatile": a.max_volatile,
            "security": {
                "enabled": sec.enabled(),
                "locked": sec.locked,
                "frozen": sec.frozen,
                "count_expired": sec.count_expired(),
                "attempts": sec.attempts,
                "erases": sec.erases.iter().map(|(enhanced, master)| json!({
                    "enhanced": enhanced,
                    "master_password": master,
                })).collect::<Vec<_>>(),
                "failed_erases": sec.failed_erases,
            },
            "smart": {
                "lbas_written": a.smart.lbas_written,
                "lbas_read": a.smart.lbas_read,
                "power_on_hours": a.smart.power_on_hours,
                "power_cycles": a.smart.power_cycles,
                "temperature_c": a.smart.temperature_c,
                "reallocated": a.smart.reallocated,
                "nand_host_pages": a.smart.nand.map(|n| n.host_pages),
                "nand_background_pages": a.smart.nand.map(|n| n.background_pages),
            },
            "sanitize": {
                "running": a.sanitize.running.map(|(k, _)| k.name()),
                "completed_ok": a.sanitize.completed_ok,
                "failed": a.sanitize.failed,
                "stalled": a.sanitize.stalled,
                "frozen": a.sanitize.frozen,
                "status_polls_while_running": a.sanitize.status_polls_running,
                "done": a.sanitize.done.iter().map(|(k, ok)| json!({
                    "kind": k.name(),
                    "ok": ok,
                })).collect::<Vec<_>>(),
            },
            "trimmed_blocks": a.trimmed_blocks,
            "errors": {
                "count": a.errors.count,
                "kept": a.errors.errors.iter().map(|e| json!({
                    "command": e.commands.last().map(|c| c.regs.command),
                    "error": e.error,
                    "status": e.regs.command,
                    "lba": e.regs.lba,
                    "hours": e.hours,
                })).collect::<Vec<_>>(),
            },
            "statistics": {
                "power_on_resets": stats.power_on_resets,
                "power_on_hours": stats.power_on_hours,
                "sectors_written": stats.sectors_written,
                "write_commands": stats.write_commands,
                "sectors_read": stats.sectors_read,
                "read_commands": stats.read_commands,
            },
            "sct": {
                "tables_read": a.sct.tables_read,
                "extended_status": a.sct.extended_status,
                "write_same": a.sct.write_same.iter().map(|(f, lba, n)| json!({
                    "function": f,
                    "lba": lba,
                    "blocks": n,
                })).collect::<Vec<_>>(),
            },
            "self_test": self_tests(
                &a.selftest,
                json!(a.selftest.running.map(|(k, _, _)| format!("{k:?}").to_lowercase())),
            ),
            "commands": a.log,
        })
    });
    json!({
        "ata": ata,
        "identity": {
            "vendor": d.identity.vendor,
            "product": d.identity.product,
            "revision": d.identity.revision,
            "serial": d.identity.serial,
        },
        "geometry": {
            "blocks": d.geometry.blocks,
            "block_size": d.geometry.block_size,
            "max_transfer_blocks": d.geometry.max_transfer_blocks,
        },
        "media": serde_json::to_value(d.model.report()).unwrap_or(Value::Null),
        "self_test": self_tests(
            &d.scsi_selftest,
            json!(d.scsi_selftest.running.map(|(_, code, _)| code)),
        ),
        "formats": d.formats.iter().map(|(from, to)| json!({"from": from, "to": to})).collect::<Vec<_>>(),
        "sanitize": {
            "running": d.scsi_sanitize.running.map(|(k, _)| k.name()),
            "completed_ok": d.scsi_sanitize.completed_ok,
            "failed": d.scsi_sanitize.failed,
            "stalled": d.scsi_sanitize.stalled,
            "status_polls_while_running": d.scsi_sanitize.status_polls_running,
            "done": d.scsi_sanitize.done.iter().map(|(k, ok)| json!({"kind": k.name(), "ok": ok})).collect::<Vec<_>>(),
        },
        "counters": {
            "by_opcode": c.by_opcode,
            "read_commands": c.read_commands,
            "write_commands": c.write_commands,
            "blocks_read": c.blocks_read,
            "blocks_written": c.blocks_written,
            "blocks_written_same": c.blocks_written_same,
            "blocks_unmapped": c.blocks_unmapped,
            "check_conditions": c.check_conditions,
            "unanswered": c.unanswered,
        },
    })
}

/// A personality's self-tests: `running` (how it names the running one),
/// the bad sector, and every test logged with its failing LBA.
fn self_tests(st: &crate::ata::selftest::SelfTest, running: Value) -> Value {
    json!({
        "running": running,
        "bad_lba": st.bad_lba,
        "log": st.log.iter().map(|e| json!({
            "code": e.code,
            "status": e.status,
            "hours": e.hours,
            "failing_lba": e.failing_lba,
        })).collect::<Vec<_>>(),
    })
}

/// Write `d`'s state to `path` atomically (a sibling temporary, renamed).
pub fn write(path: &Path, d: &Disk) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let text = serde_json::to_string_pretty(&to_json(d)).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}
