//! Issue 16 item 5: `drivelab health` and its peers on the same disks in
//! one boot. smartctl (smartmontools) and nvme-cli, the host's own
//! binaries with their libraries, run in the guest beside drivelab on
//! QEMU's NVMe controller, its AHCI (ide-hd) disk, its virtio-scsi disk and
//! scsi_debug; every field both print is compared, and the figures
//! ("NVMe: N fields compared, N agree") are printed.
//!
//! Counters that move while the guest runs (power-on hours, commands
//! read) are bracketed: drivelab runs before and after the peers, and a
//! peer agrees when its value lies between drivelab's two.
//!
//! Where QEMU implements nothing (DCO on the AHCI disk, LOG SENSE on
//! scsi-hd) the test shows drivelab's "not supported by this drive" path;
//! the hidden-area arithmetic itself is tested against the tables in
//! crates/device (QEMU's disks have no HPA, AMA or DCO to find).
//!
//! Needs root, QEMU, the cached kernel (`bash tests/vm/setup.sh`) and the
//! host packages smartmontools and nvme-cli (tests/run installs them).

use std::time::Duration;

use drivelab_vmtest::{Checks, Disk, Vm, MIB};
use serde_json::Value;

const SCSI: &str = "DLSCSI0001";
const NVME: &str = "DLNVME0001";
const SATA: &str = "DLSATA0001";
const SMARTCTL: &str = "/usr/sbin/smartctl";
const NVME_CLI: &str = "/usr/sbin/nvme";

// The command lines ($DEV is the guest device path).
const CMD_HEALTH: &str = "drivelab health $DEV --output-format json";
const CMD_SMARTCTL: &str = "smartctl -x -j $DEV";
const CMD_SELF_TEST: &str =
    "drivelab health $DEV --self-test short --yes --poll-ms 200 --output-format json";

fn guest_script() -> String {
    format!(
        r#"
export PATH=$PATH:/usr/sbin
NVME=/dev/$(disk_by_serial {NVME}); SATA=/dev/$(disk_by_serial {SATA}); SCSI=/dev/$(disk_by_serial {SCSI}); SD=/dev/$(disk_by_model scsi_debug)
for DEV in $NVME $SATA $SCSI $SD; do
  n=${{DEV#/dev/}}
  case $DEV in $NVME) n=nvme;; $SATA) n=sata;; $SCSI) n=scsi;; $SD) n=sd;; esac
  run_json "before_$n" {CMD_HEALTH}
  run_json "smartctl_$n" {CMD_SMARTCTL}
  if [ "$DEV" = "$NVME" ]; then
    run_json nvme_smart nvme smart-log $DEV -o json
    run_json nvme_errors nvme error-log $DEV -o json
    run_json nvme_id_ns nvme id-ns $DEV -o json
    run_json nvme_id_ctrl nvme id-ctrl $DEV -o json
    run_json nvme_list_ns nvme list-ns $DEV -o json
  fi
  run_json "after_$n" {CMD_HEALTH}
  run_json "text_$n" drivelab health $DEV
done
# One drive that cannot be asked (/dev/null) between two that can.
run_json multi drivelab health $SD /dev/null $NVME --output-format json
run_json devices drivelab devices --output-format json
run_json probe_sata drivelab device $SATA probe --output-format json
run_json probe_nvme drivelab device $NVME probe --output-format json
# Self-tests last: they change what the drives report.
run_json st_noyes drivelab health $SATA --self-test short --output-format json
DEV=$SATA; run_json st_sata {CMD_SELF_TEST}
run_json st_sata_smartctl smartctl -j -l selftest $SATA
DEV=$NVME; run_json st_nvme {CMD_SELF_TEST}
DEV=$SD; run_json st_sd {CMD_SELF_TEST}
true
"#
    )
}

/// A JSON number, or a string of decimal digits (nvme-cli prints 128-bit
/// counters either way), as i128; booleans as 0/1.
fn num(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .map(i128::from)
            .or_else(|| n.as_i64().map(i128::from)),
        Value::String(s) => s.trim().parse().ok(),
        Value::Bool(b) => Some(i128::from(*b)),
        _ => None,
    }
}

/// The value at a '/'-separated path (array indexes as numbers).
fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    for k in path.split('/') {
        cur = match k.parse::<usize>() {
            Ok(i) if cur.is_array() => cur.get(i)?,
            _ => cur.get(k)?,
        };
    }
    (!cur.is_null()).then_some(cur)
}

/// Field-by-field comparison of drivelab (before and after) with one peer.
struct Compare {
    peer: &'static str,
    drive: &'static str,
    rows: Vec<(String, String, String, bool)>,
}

impl Compare {
    fn new(drive: &'static str, peer: &'static str) -> Self {
        Compare {
            peer,
            drive,
            rows: Vec::new(),
        }
    }

    /// Numbers: the peer's value lies between drivelab's before and after.
    fn num(
        &mut self,
        field: &str,
        before: Option<&Value>,
        after: Option<&Value>,
        peer: Option<&Value>,
    ) {
        let (Some(b), Some(p)) = (before.and_then(num), peer.and_then(num)) else {
            return;
        };
        let a = after.and_then(num).unwrap_or(b);
        let ok = (b.min(a)..=b.max(a)).contains(&p);
        let ours = if a == b {
            b.to_string()
        } else {
            format!("{b}..{a}")
        };
        self.rows.push((field.to_string(), ours, p.to_string(), ok));
    }

    /// Strings, compared trimmed.
    fn text(&mut self, field: &str, ours: Option<&Value>, peer: Option<&Value>) {
        let (Some(o), Some(p)) = (ours.and_then(Value::as_str), peer.and_then(Value::as_str))
        else {
            return;
        };
        self.rows.push((
            field.to_string(),
            o.to_string(),
            p.to_string(),
            o.trim() == p.trim(),
        ));
    }

    /// Any two values already reduced to strings on both sides.
    fn same(&mut self, field: &str, ours: String, peer: String) {
        let ok = ours == peer;
        self.rows.push((field.to_string(), ours, peer, ok));
    }

    fn agree(&self) -> usize {
        self.rows.iter().filter(|r| r.3).count()
    }

    fn print(&self) {
        println!(
            "{} vs {}: {} fields compared, {} agree",
            self.drive,
            self.peer,
            self.rows.len(),
            self.agree()
        );
        for (f, o, p, ok) in &self.rows {
            println!(
                "  {:<48} drivelab {:<24} {} {:<24} {}",
                f,
                o,
                self.peer,
                p,
                if *ok { "ok" } else { "DIFFERS" }
            );
        }
    }

    fn check(&self, c: &mut Checks, min_fields: usize) {
        self.print();
        let bad: Vec<String> = self
            .rows
            .iter()
            .filter(|r| !r.3)
            .map(|r| format!("{}: drivelab {} vs {}", r.0, r.1, r.2))
            .collect();
        c.check(
            &format!(
                "{} vs {}: every field both print agrees",
                self.drive, self.peer
            ),
            bad.is_empty(),
            || bad.join("; "),
        );
        c.check(
            &format!(
                "{} vs {}: at least {min_fields} fields compared",
                self.drive, self.peer
            ),
            self.rows.len() >= min_fields,
            || format!("only {}", self.rows.len()),
        );
    }
}

#[test]
fn health_agrees_with_smartctl_and_nvme_cli_field_by_field() {
    let run = Vm::builder()
        .nvme(Disk::new(64 * MIB, NVME))
        .sata(Disk::new(64 * MIB, SATA))
        .scsi_hd(Disk::new(64 * MIB, SCSI))
        .scsi_debug("dev_size_mb=16")
        .with_drivelab()
        .host_tool(SMARTCTL)
        .host_tool(NVME_CLI)
        .guest_script(&guest_script())
        .timeout(Duration::from_secs(400))
        .run()
        .unwrap_or_else(|e| panic!("the test VM did not run: {e}"));
    let ctx = run.context();
    let mut c = Checks::new();
    let json = |name: &str| -> Value {
        run.file(&format!("{name}.out"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    };
    let status = |name: &str| {
        run.file(&format!("{name}.status"))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    // drivelab's one device document of a `health DEV` run.
    let health = |name: &str| json(name)["devices"][0].clone();

    for n in ["nvme", "sata", "scsi", "sd"] {
        for when in ["before", "after"] {
            let name = format!("{when}_{n}");
            c.check(
                &format!("{name}: health exits 0 with one device"),
                status(&name) == "0" && !health(&name).is_null(),
                || run.file(&format!("{name}.out")).unwrap_or_default(),
            );
        }
        let s = status(&format!("smartctl_{n}"));
        c.check(
            &format!("smartctl ran on {n}"),
            s != "127" && s != "126" && !s.is_empty(),
            || run.file(&format!("smartctl_{n}.err")).unwrap_or_default(),
        );
        let t = run.file(&format!("text_{n}.out")).unwrap_or_default();
        c.check(
            &format!("{n}: text output names the drive's verdict"),
            t.contains("overall"),
            || t.clone(),
        );
    }

    // --- NVMe: nvme-cli's SMART / Health log and Identify, smartctl's view.
    let (b, a) = (health("before_nvme"), health("after_nvme"));
    let ns = json("nvme_smart");
    let mut nv = Compare::new("NVMe", "nvme-cli");
    for (ours, theirs) in [
        ("critical_warning", "critical_warning"),
        ("temperature_k", "temperature"),
        ("available_spare_pct", "avail_spare"),
        ("available_spare_threshold_pct", "spare_thresh"),
        ("percentage_used", "percent_used"),
        (
            "endurance_group_critical_warning",
            "endurance_grp_critical_warning_summary",
        ),
        ("data_units_read", "data_units_read"),
        ("data_units_written", "data_units_written"),
        ("host_read_commands", "host_read_commands"),
        ("host_write_commands", "host_write_commands"),
        ("controller_busy_minutes", "controller_busy_time"),
        ("power_cycles", "power_cycles"),
        ("power_on_hours", "power_on_hours"),
        ("unsafe_shutdowns", "unsafe_shutdowns"),
        ("media_errors", "media_errors"),
        ("error_log_entries", "num_err_log_entries"),
        ("warning_temp_minutes", "warning_temp_time"),
        ("critical_temp_minutes", "critical_comp_time"),
    ] {
        let p = format!("nvme/smart/{ours}");
        nv.num(
            &format!("smart-log {theirs}"),
            at(&b, &p),
            at(&a, &p),
            ns.get(theirs),
        );
    }
    let idns = json("nvme_id_ns");
    for (ours, theirs) in [("nsze", "nsze"), ("ncap", "ncap"), ("nuse", "nuse")] {
        let p = format!("capacity/{ours}");
        nv.num(
            &format!("id-ns {theirs}"),
            at(&b, &p),
            at(&a, &p),
            idns.get(theirs),
        );
    }
    let idc = json("nvme_id_ctrl");
    for (ours, theirs) in [
        ("capacity/tnvmcap", "tnvmcap"),
        ("capacity/unvmcap", "unvmcap"),
    ] {
        nv.num(
            &format!("id-ctrl {theirs}"),
            at(&b, ours),
            at(&a, ours),
            idc.get(theirs),
        );
    }
    if let Some(elpe) = idc.get("elpe").and_then(num) {
        nv.num(
            "id-ctrl elpe + 1",
            at(&b, "nvme/error_log_capacity"),
            None,
            Some(&Value::from((elpe + 1) as u64)),
        );
    }
    nv.text("id-ctrl sn", at(&b, "serial"), idc.get("sn"));
    nv.text("id-ctrl mn", at(&b, "model"), idc.get("mn"));
    nv.text("id-ctrl fr", at(&b, "firmware"), idc.get("fr"));
    let list = json("nvme_list_ns");
    if let Some(l) = list.get("nsid_list").and_then(Value::as_array) {
        let theirs: Vec<String> = l
            .iter()
            .filter_map(|e| e.get("nsid").and_then(num))
            .map(|n| n.to_string())
            .collect();
        let ours: Vec<String> = at(&b, "capacity/active_namespaces/value")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(num).map(|n| n.to_string()).collect())
            .unwrap_or_default();
        nv.same("list-ns nsids", ours.join(","), theirs.join(","));
    }
    let errs = json("nvme_errors");
    if let Some(e) = errs.get("errors").and_then(Value::as_array) {
        let theirs = e
            .iter()
            .filter(|x| x.get("error_count").and_then(num).unwrap_or(0) != 0)
            .count();
        let ours = at(&b, "nvme/error_log")
            .and_then(Value::as_array)
            .map(|v| v.len())
            .unwrap_or(usize::MAX);
        nv.same(
            "error-log non-empty entries",
            ours.to_string(),
            theirs.to_string(),
        );
    }
    nv.check(&mut c, 20);

    let sc = json("smartctl_nvme");
    let mut nvs = Compare::new("NVMe", "smartctl");
    for (ours, theirs) in [
        ("critical_warning", "critical_warning"),
        ("temperature_c", "temperature"),
        ("available_spare_pct", "available_spare"),
        ("available_spare_threshold_pct", "available_spare_threshold"),
        ("percentage_used", "percentage_used"),
        ("data_units_read", "data_units_read"),
        ("data_units_written", "data_units_written"),
        ("host_read_commands", "host_reads"),
        ("host_write_commands", "host_writes"),
        ("controller_busy_minutes", "controller_busy_time"),
        ("power_cycles", "power_cycles"),
        ("power_on_hours", "power_on_hours"),
        ("unsafe_shutdowns", "unsafe_shutdowns"),
        ("media_errors", "media_errors"),
        ("error_log_entries", "num_err_log_entries"),
        ("warning_temp_minutes", "warning_temp_time"),
        ("critical_temp_minutes", "critical_comp_time"),
    ] {
        let p = format!("nvme/smart/{ours}");
        let q = format!("nvme_smart_health_information_log/{theirs}");
        nvs.num(&q, at(&b, &p), at(&a, &p), at(&sc, &q));
    }
    for (ours, theirs) in [
        ("capacity/nsze", "nvme_namespaces/0/size/blocks"),
        ("capacity/ncap", "nvme_namespaces/0/capacity/blocks"),
        ("capacity/nuse", "nvme_namespaces/0/utilization/blocks"),
        (
            "capacity/block_size",
            "nvme_namespaces/0/formatted_lba_size",
        ),
        ("capacity/tnvmcap", "nvme_total_capacity"),
        ("capacity/unvmcap", "nvme_unallocated_capacity"),
        ("nvme/error_log_capacity", "nvme_error_information_log/size"),
    ] {
        nvs.num(theirs, at(&b, ours), at(&a, ours), at(&sc, theirs));
    }
    nvs.text("serial_number", at(&b, "serial"), sc.get("serial_number"));
    nvs.text("model_name", at(&b, "model"), sc.get("model_name"));
    nvs.text(
        "firmware_version",
        at(&b, "firmware"),
        sc.get("firmware_version"),
    );
    if let Some(p) = at(&sc, "smart_status/passed").and_then(Value::as_bool) {
        nvs.same(
            "smart_status/passed",
            (b["verdict"] == "passed").to_string(),
            p.to_string(),
        );
    }
    nvs.check(&mut c, 20);

    // --- ATA over SAT (QEMU's ide-hd on AHCI): SMART attributes.
    let (b, a) = (health("before_sata"), health("after_sata"));
    let sc = json("smartctl_sata");
    let mut at_ = Compare::new("ATA", "smartctl");
    at_.text("serial_number", at(&b, "serial"), sc.get("serial_number"));
    at_.text("model_name", at(&b, "model"), sc.get("model_name"));
    at_.text(
        "firmware_version",
        at(&b, "firmware"),
        sc.get("firmware_version"),
    );
    if let Some(p) = at(&sc, "smart_status/passed").and_then(Value::as_bool) {
        at_.same(
            "smart_status/passed",
            (b["ata"]["status"] == "passed").to_string(),
            p.to_string(),
        );
    }
    for (ours, theirs) in [
        ("capacity/accessible_sectors", "user_capacity/blocks"),
        ("capacity/logical_sector_size", "logical_block_size"),
        ("ata/smart/revision", "ata_smart_attributes/revision"),
        ("ata/summary/power_on_hours", "power_on_time/hours"),
        ("ata/summary/power_cycles", "power_cycle_count"),
        ("ata/summary/temperature_c", "temperature/current"),
        (
            "ata/smart/offline_status",
            "ata_smart_data/offline_data_collection/status/value",
        ),
        (
            "ata/smart/self_test_status",
            "ata_smart_data/self_test/status/value",
        ),
        (
            "ata/smart/short_test_minutes",
            "ata_smart_data/self_test/polling_minutes/short",
        ),
        (
            "ata/smart/extended_test_minutes",
            "ata_smart_data/self_test/polling_minutes/extended",
        ),
        (
            "ata/smart/offline_capability",
            "ata_smart_data/capabilities/values/0",
        ),
        (
            "ata/smart/smart_capability",
            "ata_smart_data/capabilities/values/1",
        ),
    ] {
        at_.num(theirs, at(&b, ours), at(&a, ours), at(&sc, theirs));
    }
    let ours_attrs = at(&b, "ata/smart/attributes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let after_attrs = at(&a, "ata/smart/attributes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let theirs_attrs = at(&sc, "ata_smart_attributes/table")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    at_.same(
        "attribute ids",
        ours_attrs
            .iter()
            .filter_map(|x| x.get("id").and_then(num))
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(","),
        theirs_attrs
            .iter()
            .filter_map(|x| x.get("id").and_then(num))
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(","),
    );
    for t in &theirs_attrs {
        let Some(id) = t.get("id").and_then(num) else {
            continue;
        };
        let find = |v: &[Value]| {
            v.iter()
                .find(|x| x.get("id").and_then(num) == Some(id))
                .cloned()
                .unwrap_or(Value::Null)
        };
        let (o, oa) = (find(&ours_attrs), find(&after_attrs));
        for (ours, theirs) in [
            ("current", "value"),
            ("worst", "worst"),
            ("threshold", "thresh"),
            ("flags", "flags/value"),
            ("raw", "raw/value"),
        ] {
            at_.num(
                &format!("attribute {id} {theirs}"),
                o.get(ours),
                oa.get(ours),
                at(t, theirs),
            );
        }
        at_.text(
            &format!("attribute {id} name"),
            o.get("name"),
            t.get("name"),
        );
        if let Some(p) = t
            .get("flags")
            .and_then(|f| f.get("prefailure"))
            .and_then(Value::as_bool)
        {
            at_.same(
                &format!("attribute {id} prefailure"),
                o["prefailure"].to_string(),
                p.to_string(),
            );
        }
    }
    at_.check(&mut c, 30);

    // Hidden areas on the AHCI disk: the native max answers and equals
    // the accessible capacity; DCO is refused, plainly.
    let cap = &b["capacity"];
    c.check(
        "ATA: READ NATIVE MAX ADDRESS EXT answered: native = accessible, nothing hidden",
        cap["native_max_lba"]["outcome"] == "answered"
            && num(&cap["native_sectors"]) == num(&cap["accessible_sectors"])
            && num(&b["hidden_bytes"]) == Some(0),
        || cap.to_string(),
    );
    c.check(
        "ATA: QEMU claims no DCO (IDENTIFY word 83 bit 11): 'not supported by this drive', nothing sent",
        cap["dco"]["outcome"] == "not-supported"
            && cap["dco"]["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("not supported by this drive (IDENTIFY DEVICE word 83 bit 11")),
        || cap["dco"].to_string(),
    );
    let t = run.file("text_sata.out").unwrap_or_default();
    c.check(
        "ATA text: native max, DCO not supported, hidden area none",
        t.contains("native max LBA")
            && t.contains("DCO maximum LBA")
            && t.contains("not supported by this drive")
            && t.lines().any(|l| {
                l.trim_start().starts_with("hidden area") && l.trim_end().ends_with(" none")
            }),
        || t.clone(),
    );
    // No ATA command in this test is aborted: QEMU's AHCI would then fail
    // the next queued read (seen with DCO IDENTIFY sent to it).
    let dmesg = run.file("dmesg.txt").unwrap_or_default();
    c.check(
        "no ATA error in the guest's kernel log",
        !dmesg.contains("error: { ABRT }"),
        || dmesg.clone(),
    );

    // --- SCSI: scsi_debug answers LOG SENSE 00h, 0Dh, 2Fh.
    let (b, a) = (health("before_sd"), health("after_sd"));
    let sc = json("smartctl_sd");
    let mut sd = Compare::new("scsi_debug", "smartctl");
    sd.num(
        "temperature/current",
        at(&b, "scsi/temperature/current_c"),
        at(&a, "scsi/temperature/current_c"),
        at(&sc, "temperature/current"),
    );
    sd.num(
        "temperature/drive_trip",
        at(&b, "scsi/temperature/reference_c"),
        at(&a, "scsi/temperature/reference_c"),
        at(&sc, "temperature/drive_trip"),
    );
    if let Some(p) = at(&sc, "smart_status/passed").and_then(Value::as_bool) {
        sd.same(
            "smart_status/passed",
            (b["verdict"] == "passed").to_string(),
            p.to_string(),
        );
    }
    sd.text("serial_number", at(&b, "serial"), sc.get("serial_number"));
    sd.text("scsi_revision", at(&b, "firmware"), sc.get("scsi_revision"));
    if let (Some(v), Some(p)) = (
        sc.get("scsi_vendor").and_then(Value::as_str),
        sc.get("scsi_product").and_then(Value::as_str),
    ) {
        sd.same(
            "scsi_vendor + scsi_product",
            b["model"].as_str().unwrap_or("").to_string(),
            format!("{v} {p}"),
        );
    }
    for (ours, theirs) in [
        ("temperature", "temperature_1"),
        ("relative_humidity", "relative_humidity_1"),
    ] {
        for f in [
            "current",
            "lifetime_maximum",
            "lifetime_minimum",
            "maximum_since_power_on",
            "minimum_since_power_on",
        ] {
            let o = format!("scsi/environment/{ours}/{f}");
            let t = format!("scsi_environmental_reports/{theirs}/{f}");
            sd.num(&t, at(&b, &o), at(&a, &o), at(&sc, &t));
        }
    }
    sd.check(&mut c, 12);
    let pages: Vec<i128> = at(&b, "scsi/supported_pages")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(num).collect())
        .unwrap_or_default();
    c.check(
        "scsi_debug lists LOG SENSE pages 00h, 0Dh, 2Fh",
        [0i128, 0x0D, 0x2F].iter().all(|p| pages.contains(p)),
        || format!("{pages:?}"),
    );

    // --- scsi-hd: QEMU has no LOG SENSE; drivelab says so and gives no verdict.
    let b = health("before_scsi");
    let sc = json("smartctl_scsi");
    let msg = b["problems"][0]["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    c.check(
        "scsi-hd: LOG SENSE refused, reported as not supported with the decoded sense, verdict unknown",
        b["verdict"] == "unknown" && msg.contains("not supported by this device") && b["problems"][0]["sense"]["asc"] == 0x20,
        || b.to_string(),
    );
    let mut hd = Compare::new("scsi-hd", "smartctl");
    hd.text("serial_number", at(&b, "serial"), sc.get("serial_number"));
    hd.text("scsi_revision", at(&b, "firmware"), sc.get("scsi_revision"));
    // smartctl prints 0 for a temperature it could not read.
    hd.same(
        "temperature known",
        at(&b, "scsi/temperature").is_some().to_string(),
        at(&sc, "temperature/current")
            .and_then(num)
            .is_some_and(|t| t != 0)
            .to_string(),
    );
    hd.check(&mut c, 2);

    // --- One drive failing does not stop the others.
    let m = json("multi");
    let devs = m["devices"].as_array().cloned().unwrap_or_default();
    c.check(
        "health SD /dev/null NVME: exit 1, /dev/null reported with its error, both drives answered",
        status("multi") == "1"
            && devs.len() == 3
            && devs[0]["transport"] == "scsi"
            && devs[1]["error"]
                .as_str()
                .is_some_and(|e| e.contains("/dev/null"))
            && devs[2]["transport"] == "nvme"
            && m["failed"] == 1,
        || m.to_string(),
    );

    // --- devices / device probe: no hidden area on QEMU's disks, so none shown.
    let d = json("devices");
    c.check(
        "devices: four disks listed, none with a hidden area",
        d["devices"]
            .as_array()
            .is_some_and(|v| v.len() >= 4 && v.iter().all(|x| x.get("hidden_area").is_none())),
        || d.to_string(),
    );
    for p in ["probe_sata", "probe_nvme"] {
        let v = json(p);
        c.check(
            &format!("{p}: answers, no hidden area"),
            status(p) == "0" && v.get("capabilities").is_some() && v.get("hidden_area").is_none(),
            || v.to_string(),
        );
    }

    // --- Self-tests: consent first; QEMU's IDE runs the short test at
    // once and logs it, its NVMe has no Device Self-test.
    c.check(
        "--self-test without --yes: exit 2",
        status("st_noyes") == "2",
        || run.file("st_noyes.out").unwrap_or_default(),
    );
    let st = json("st_sata");
    let r = &st["self_test"][0]["result"];
    c.check(
        "ATA short self-test: exit 0, finished, logged as short (01h) completed without error",
        status("st_sata") == "0"
            && st["self_test"][0]["aborted"] == false
            && r["code"] == 1
            && r["result"] == 0,
        || st.to_string(),
    );
    let sl = json("st_sata_smartctl");
    let mut stc = Compare::new("ATA self-test log", "smartctl");
    stc.num(
        "ata_smart_self_test_log/standard/table/0/type/value",
        r.get("code"),
        None,
        at(&sl, "ata_smart_self_test_log/standard/table/0/type/value"),
    );
    stc.num(
        "ata_smart_self_test_log/standard/table/0/status/value >> 4",
        r.get("result"),
        None,
        at(&sl, "ata_smart_self_test_log/standard/table/0/status/value")
            .and_then(num)
            .map(|v| Value::from((v >> 4) as u64))
            .as_ref(),
    );
    stc.num(
        "ata_smart_self_test_log/standard/table/0/lifetime_hours",
        r.get("power_on_hours"),
        None,
        at(
            &sl,
            "ata_smart_self_test_log/standard/table/0/lifetime_hours",
        ),
    );
    stc.check(&mut c, 3);
    let sn = json("st_nvme");
    c.check(
        "NVMe self-test: QEMU has no Device Self-test: exit 1, 'not supported by this device' with the NVMe status",
        status("st_nvme") == "1"
            && sn["self_test"][0]["error"].as_str().is_some_and(|e| e.contains("not supported"))
            && sn["self_test"][0]["nvme_status"].is_object(),
        || sn.to_string(),
    );
    let sd = json("st_sd");
    println!("scsi_debug self-test: exit {}: {sd}", status("st_sd"));
    // scsi_debug accepts SEND DIAGNOSTIC but lists no self-test results
    // page (10h): the test is reported started and finished, with no log.
    c.check(
        "scsi_debug self-test: SEND DIAGNOSTIC accepted, no self-test log to read",
        status("st_sd") == "0"
            && sd["self_test"][0]["transport"] == "scsi"
            && sd["self_test"][0]["result"].is_null(),
        || sd.to_string(),
    );
    c.finish(&ctx);
}
