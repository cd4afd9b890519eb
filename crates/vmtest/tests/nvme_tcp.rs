//! Issue 28 item 2: drivelab against an emulated NVMe drive that has what
//! QEMU's lacks. The guest runs three `drivelab-nvmeemu` controllers
//! (crates/nvmeemu) on its loopback and connects its own nvme-tcp host
//! driver to each (`/dev/nvme-fabrics`), so every command drivelab sends
//! goes through the kernel's NVMe ioctl and block paths as on a drive:
//!
//! - MULTI: two namespaces and unallocated capacity. `drivelab health`
//!   agrees with nvme-cli (id-ctrl, id-ns, list-ns, smart-log) and with the
//!   emulator's own counters, which corroborate a 1 MiB write to the byte;
//!   `drivelab erase --method nvme-format` is refused (the unallocated
//!   capacity a format cannot reach) with nothing sent, and so is
//!   `--method nvme-sanitize` of n1 while n2 exists (a Sanitize erases
//!   every namespace of the controller; n2 is a block device the erase did
//!   not claim), n2's bytes unchanged.
//! - SANI: one namespace and unallocated capacity. NVMe Sanitize block
//!   erase and crypto erase through `drivelab erase`: drivelab polls the
//!   Sanitize Status log while the emulator reports progress, waits for the
//!   end, verifies (block: full read of zeroes; crypto: the test checks the
//!   data is neither the old data nor zeroes), the certificate says Purge;
//!   then a sanitize that fails half way (the emulator's control file) is
//!   reported as failed, I/O is refused until nvme-cli's Exit Failure Mode;
//!   an overwrite started by nvme-cli, its status log read in progress,
//!   writes the pattern.
//! - FMT: one namespace, fully allocated. Format NVM SES 1 (zeroes, Clear)
//!   and SES 2 (crypto erase, Purge).
//!
//! One boot; the emulator's state file (its counters, erase records, key
//! changes) is copied after each step and compared on the host.
//!
//! Needs root, QEMU, the cached kernel (`bash tests/vm/setup.sh`) and the
//! host package nvme-cli (tests/run installs it).

use std::time::Duration;

use drivelab_vmtest::drivelab_bin::static_package_binary;
use drivelab_vmtest::results::{cert, json, num, out, print_times, row, status, why};
use drivelab_vmtest::{Checks, GuestRun, Vm};
use serde_json::Value;

const NVME_CLI: &str = "/usr/sbin/nvme";
/// Namespace size of every controller, MiB.
const NS_MIB: u64 = 16;
/// How long the emulator's sanitize runs, s.
const SANITIZE_S: u64 = 6;

const ERASE: &str = "drivelab erase $NS --verify full --yes --confirm-serial $(ser $NS) --certificate-dir /out/certs/$NAME --output-format json < /dev/null";

const SCRIPT: &str = r#"
export PATH=$PATH:/usr/sbin XDG_CONFIG_HOME=/tmp/cfg
ip link set lo up
mkdir -p /out/certs
NQN=nqn.2026-01.io.drivelab
# emu NAME PORT SERIAL ARGS...: start a controller and connect the kernel's
# nvme-tcp host to it.
emu() {
  n=$1; p=$2; s=$3; shift 3
  : > /tmp/$n.control
  drivelab-nvmeemu --listen 127.0.0.1:$p --nqn $NQN:$n --serial $s --sanitize-seconds @SANITIZE_S@ \
      --state /tmp/$n.json --control /tmp/$n.control "$@" > $n.emu.out 2> $n.emu.err &
  pid=$!
  i=0; while [ ! -s /tmp/$n.json ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  echo "transport=tcp,traddr=127.0.0.1,trsvcid=$p,nqn=$NQN:$n,hostnqn=$NQN:host" > /dev/nvme-fabrics
  echo $? > $n.connect.status
  EMUS="$EMUS $pid"
}
# mark NAME: the guest's uptime at this point, into marks.txt.
mark start
# ctrl_of SERIAL: /dev/nvmeX of the controller with that serial.
# wait_block DEV: until the namespace's block device shows.
# state NAME TAG: the emulator's state now (its writer runs every 0.1 s).
state() { sleep 0.5; cp /tmp/$1.json $2.state.json; }
size_of() { echo $(( $(cat /sys/block/${1#/dev/}/size) * 512 )); }
# fill DEV OCTAL: that byte over the whole namespace (a 1 MiB block of it
# written over and over: busybox's tr is slow under TCG).
fill() {
  head -c 1048576 /dev/zero | tr '\000' "\\$2" > /tmp/fill.bin
  i=0; while [ $i -lt $(( $(size_of $1) >> 20 )) ]; do cat /tmp/fill.bin; i=$((i + 1)); done | dd of=$1 bs=64k oflag=direct 2>/dev/null
  rm -f /tmp/fill.bin
}
# zero_md5 DEV: the md5 of zeroes the namespace's size (every one here is
# the same size: computed once).
zero_md5() { [ -s /tmp/zero.md5 ] || head -c $(size_of $1) /dev/zero | md5sum | cut -d' ' -f1 > /tmp/zero.md5; cat /tmp/zero.md5; }
# readback TAG DEV: md5 of the namespace and of zeroes its size, and the
# distinct bytes of its first block.
readback() {
  printf '{"md5":"%s","zero_md5":"%s","first":"%s"}\n' "$(md5 $2)" "$(zero_md5 $2)" \
    "$(dd if=$2 bs=512 count=1 iflag=direct 2>/dev/null | od -An -tx1 -v | tr -s ' ' '\n' | grep . | sort -u | tr '\n' ' ')" > $1.readback.json
}

emu multi 4420 DLEMU0001MULTI --namespace-mib @NS_MIB@ --namespace-mib @NS_MIB@ --capacity-mib $((3 * @NS_MIB@))
emu sani 4421 DLEMU0002SANI --namespace-mib @NS_MIB@ --capacity-mib $((2 * @NS_MIB@))
emu fmt 4422 DLEMU0003FMT --namespace-mib @NS_MIB@
MULTI=$(ctrl_of DLEMU0001MULTI); SANI=$(ctrl_of DLEMU0002SANI); FMT=$(ctrl_of DLEMU0003FMT)
wait_block ${MULTI}n2; wait_block ${SANI}n1; wait_block ${FMT}n1
printf '{"multi":"%s","sani":"%s","fmt":"%s"}\n' $MULTI $SANI $FMT > names.json
ls /sys/block > blocks.txt
mark connected
# ser DEV: the serial drivelab asks to be confirmed, the controller's.
ser() { sysattr /sys/block/${1#/dev/}/device/serial; }

# --- MULTI: health against nvme-cli and the emulator.
NS=${MULTI}n1
state multi h0
head -c 1048576 /dev/zero | tr '\000' '\245' | dd of=$NS bs=64k oflag=direct 2>/dev/null
state multi h1
run_json health_before drivelab health $NS --output-format json
run_json nvme_id_ctrl nvme id-ctrl $MULTI -o json
run_json nvme_smart nvme smart-log $MULTI -o json
run_json nvme_id_ns nvme id-ns $NS -o json
run_json nvme_list_ns nvme list-ns $MULTI -o json
run_json nvme_sanitize_log nvme sanitize-log $MULTI -o json
run_json health_after drivelab health $NS --output-format json
state multi h2
NAME=fmt_refused; md5 $NS > $NAME.md5_before
run_json $NAME @ERASE@ --method nvme-format
md5 $NS > $NAME.md5_after
state multi h3
# Sanitize erases every namespace of the controller: refused for n1 while
# n2 exists (a block device this erase did not claim).
NAME=san_refused; md5 ${MULTI}n2 > $NAME.md5_before
run_json $NAME @ERASE@ --method nvme-sanitize
md5 ${MULTI}n2 > $NAME.md5_after
state multi h4
mark health

# --- SANI: Sanitize block erase, crypto erase, a failure.
NS=${SANI}n1
fill $NS 245; readback san_block_before $NS
state sani s0
# With live metrics: scraped every 0.2 s (busybox wget) until final, then
# the linger is ended as Ctrl-C would.
NAME=san_block
@ERASE@ --method nvme-sanitize --metrics-listen 9400 --metrics-linger 300 > $NAME.out 2> $NAME.err &
epid=$!
: > $NAME.scrapes; i=0
while [ $i -lt 1500 ]; do
  if wget -qO /tmp/m.txt http://127.0.0.1:9400/metrics 2>/dev/null; then
    grep -E '^drivelab_(erase_state|drive_health_counter|drive_percentage_used_ratio|work_finished)' /tmp/m.txt | sed "s/^/$i /" >> $NAME.scrapes
    grep -q '^drivelab_work_finished 1' /tmp/m.txt && break
  fi
  sleep 0.2; i=$((i + 1))
done
cp /tmp/m.txt $NAME.metrics.txt
kill -INT $epid; wait $epid; echo $? > $NAME.status
state sani s1; readback $NAME $NS
mark san_block
fill $NS 132; readback san_crypto_before $NS
state sani s2
NAME=san_crypto; run_json $NAME @ERASE@ --method nvme-sanitize --crypto
state sani s3; readback $NAME $NS
mark san_crypto
echo sanitize-fail > /tmp/sani.control
NAME=san_fail; run_json $NAME @ERASE@ --method nvme-sanitize
state sani s4
run_json read_in_failure_mode dd if=$NS of=/dev/null bs=512 count=1 iflag=direct
run_json exit_failure nvme sanitize $SANI --sanact=1
run_json read_after_exit dd if=$NS of=/dev/null bs=512 count=1 iflag=direct
state sani s5
mark san_fail
# Overwrite from nvme-cli (drivelab's own is in emu_media.rs): its Sanitize
# through the kernel, its status log read while it runs, the end awaited
# in the emulator's state.
run_json nvme_overwrite nvme sanitize $SANI --sanact=3 --ovrpat=0xA1B2C3D4 --owpass=1
run_json nvme_overwrite_log nvme sanitize-log $SANI -o json
i=0; while ! grep -q '"status":1' /tmp/sani.json && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
state sani s6; readback overwrite $NS
mark san_overwrite

# --- FMT: Format NVM SES 1 and SES 2.
NS=${FMT}n1
fill $NS 303
NAME=fmt_ses1; run_json $NAME @ERASE@ --method nvme-format
state fmt f1; readback $NAME $NS
mark fmt_ses1
fill $NS 74; readback fmt_ses2_before $NS
NAME=fmt_ses2; run_json $NAME @ERASE@ --method nvme-format --crypto
state fmt f2; readback $NAME $NS
mark fmt_ses2
# A crypto erase the drive reports done without replacing its key.
echo crypto-noop > /tmp/fmt.control
fill $NS 125; readback fmt_noop_before $NS
NAME=fmt_noop; run_json $NAME @ERASE@ --method nvme-format --crypto
state fmt f3; readback $NAME $NS
mark fmt_noop
# Disconnect the kernel from the controllers, then stop them.
for c in $MULTI $SANI $FMT; do echo 1 > /sys/class/nvme/${c#/dev/}/delete_controller; done
kill $EMUS
true
"#;

fn script() -> String {
    SCRIPT
        .replace("@ERASE@", ERASE)
        .replace("@NS_MIB@", &NS_MIB.to_string())
        .replace("@SANITIZE_S@", &SANITIZE_S.to_string())
}

fn boot() -> GuestRun {
    let emu = static_package_binary("drivelab-nvmeemu", "drivelab-nvmeemu")
        .unwrap_or_else(|e| panic!("cannot build the emulator for the guest: {e}"));
    Vm::builder()
        .modules(&["nvme_tcp"])
        .binary("drivelab-nvmeemu", &emu)
        .host_tool(NVME_CLI)
        .with_drivelab()
        .guest_script(&script())
        .timeout(Duration::from_secs(900))
        .run()
        .unwrap_or_else(|e| panic!("the test VM did not run: {e}"))
}

const NS_BYTES: u64 = NS_MIB << 20;
const NS_BLOCKS: u64 = NS_BYTES / 512;

fn health_checks(c: &mut Checks, run: &GuestRun) {
    let (h0, h1) = (json(run, "h0.state.json"), json(run, "h1.state.json"));
    let written = |s: &Value| s["counters"]["bytes_written"].as_u64().unwrap_or(0);
    c.check(
        "MULTI: the emulator counted the 1 MiB written, to the byte",
        written(&h1) - written(&h0) == 1 << 20,
        || format!("{} -> {}", written(&h0), written(&h1)),
    );
    let before = out(run, "health_before")["devices"][0].clone();
    let after = out(run, "health_after")["devices"][0].clone();
    let smart = out(run, "nvme_smart");
    let h2 = json(run, "h2.state.json");
    let mut rows = Vec::new();
    for (ours, theirs, emu) in [
        ("data_units_read", "data_units_read", "data_units_read"),
        (
            "data_units_written",
            "data_units_written",
            "data_units_written",
        ),
        ("host_read_commands", "host_read_commands", "read_commands"),
        (
            "host_write_commands",
            "host_write_commands",
            "write_commands",
        ),
    ] {
        let b = num(&before["nvme"]["smart"][ours]);
        let a = num(&after["nvme"]["smart"][ours]);
        let p = num(&smart[theirs]);
        let e = num(&h2["counters"][emu]);
        let ok = match (b, a, p, e) {
            (Some(b), Some(a), Some(p), Some(e)) => b <= p && p <= a && a <= e,
            _ => false,
        };
        rows.push(format!(
            "{ours}: drivelab {b:?}..{a:?}, nvme-cli {p:?}, emulator {e:?}"
        ));
        c.check(
            &format!("MULTI: SMART {ours}: drivelab <= nvme-cli <= drivelab after <= emulator"),
            ok,
            || rows.join("; "),
        );
    }
    let du_w = num(&before["nvme"]["smart"]["data_units_written"]).unwrap_or(0);
    let bytes_w = h1["counters"]["bytes_written"].as_u64().unwrap_or(0);
    c.check(
        "MULTI: data units written = the emulator's bytes written / 512000, rounded up",
        du_w == bytes_w.div_ceil(512).div_ceil(1000) && du_w > 0,
        || format!("{du_w} units, {bytes_w} B"),
    );
    let id = out(run, "nvme_id_ctrl");
    let text = |v: &Value| v.as_str().map(|s| s.trim().to_string()).unwrap_or_default();
    c.check(
        "MULTI: serial, model, firmware: drivelab = nvme-cli = the emulator's",
        text(&before["serial"]) == "DLEMU0001MULTI"
            && text(&id["sn"]) == "DLEMU0001MULTI"
            && text(&before["model"]) == text(&id["mn"])
            && text(&before["firmware"]) == text(&id["fr"]),
        || format!("drivelab {before}; nvme-cli {id}"),
    );
    let cap = &before["capacity"];
    c.check(
        "MULTI: total and unallocated capacity: drivelab = nvme-cli = configured",
        num(&cap["tnvmcap"]) == Some(3 * NS_BYTES)
            && num(&id["tnvmcap"]) == Some(3 * NS_BYTES)
            && num(&cap["unvmcap"]) == Some(NS_BYTES)
            && num(&id["unvmcap"]) == Some(NS_BYTES),
        || {
            format!(
                "drivelab {cap}; nvme-cli tnvmcap {} unvmcap {}",
                id["tnvmcap"], id["unvmcap"]
            )
        },
    );
    let idns = out(run, "nvme_id_ns");
    c.check(
        "MULTI: nsze and nuse (2048 blocks written): drivelab = nvme-cli = emulator",
        num(&cap["nsze"]) == Some(NS_BLOCKS)
            && num(&idns["nsze"]) == Some(NS_BLOCKS)
            && num(&cap["nuse"]) == Some(2048)
            && num(&idns["nuse"]) == Some(2048)
            && h2["namespaces"][0]["allocated_blocks"] == 2048,
        || format!("drivelab {cap}; nvme-cli {idns}"),
    );
    let list = out(run, "nvme_list_ns");
    c.check(
        "MULTI: both namespaces active (nvme-cli), the other one named by drivelab",
        list.to_string().contains('2') && cap["other_namespaces"] == serde_json::json!([2]),
        || format!("nvme-cli {list}; drivelab {cap}"),
    );
    c.check(
        "MULTI: drivelab names the unallocated capacity as a hidden area",
        before.to_string().contains("unallocated NVM capacity"),
        || before.to_string(),
    );
    let slog = out(run, "nvme_sanitize_log");
    c.check(
        "MULTI: nvme-cli reads the Sanitize Status log (never sanitized)",
        status(run, "nvme_sanitize_log") == 0 && slog.to_string().contains("sstat"),
        || why(run, "nvme_sanitize_log"),
    );
    let (h2, h3) = (h2, json(run, "h3.state.json"));
    let refusal = out(run, "fmt_refused")["error"]
        .as_str()
        .unwrap_or("")
        .to_string();
    c.check(
        "MULTI: nvme-format refused (unallocated capacity), exit 2, nothing sent or written",
        status(run, "fmt_refused") == 2
            && refusal.contains("unallocated NVM capacity")
            && !refusal.contains('\n')
            && run.file("fmt_refused.md5_before").ok() == run.file("fmt_refused.md5_after").ok()
            && h3["erases"] == serde_json::json!([])
            && h3["counters"]["bytes_written"] == h2["counters"]["bytes_written"],
        || format!("{}; emulator {}", why(run, "fmt_refused"), h3["erases"]),
    );
    let h4 = json(run, "h4.state.json");
    let refusal = out(run, "san_refused")["error"]
        .as_str()
        .unwrap_or("")
        .to_string();
    c.check(
        "MULTI: nvme-sanitize of n1 refused while n2 exists (other namespaces), exit 2, nothing sent or written",
        status(run, "san_refused") == 2
            && refusal.contains("other namespaces (2)")
            && !refusal.contains('\n')
            && run.file("san_refused.md5_before").ok() == run.file("san_refused.md5_after").ok()
            && h4["erases"] == serde_json::json!([])
            && h4["counters"]["bytes_written"] == h3["counters"]["bytes_written"],
        || format!("{}; emulator {}", why(run, "san_refused"), h4["erases"]),
    );
}

/// The sanitize's live figures: the drive's health counters and wear are
/// served at the end, equal to the certificate's reading after the erase,
/// and never while the drive sanitizes (no health command is sent then).
fn san_block_metrics(c: &mut Checks, run: &GuestRun) {
    let text = run.file("san_block.metrics.txt").unwrap_or_default();
    let cert = cert(run, &row(run, "san_block"));
    let smart = &cert["health"]["after"]["health"]["nvme"]["smart"];
    let served = |name: &str| {
        text.lines()
            .find(|l| {
                l.starts_with("drivelab_drive_health_counter{")
                    && l.contains(&format!("counter=\"{name}\""))
            })
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
    };
    let used = text
        .lines()
        .find(|l| l.starts_with("drivelab_drive_percentage_used_ratio{"))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
    c.check(
        "san_block: the last scrape serves the drive's media errors, error log entries and wear as its health after the erase reads them",
        served("media_errors") == num(&smart["media_errors"]).map(|v| v as f64)
            && served("error_log_entries") == num(&smart["error_log_entries"]).map(|v| v as f64)
            && used == num(&smart["percentage_used"]).map(|v| v as f64 / 100.0),
        || format!("served:\n{text}\ncertificate's smart after: {smart}"),
    );
    let scrapes = run.file("san_block.scrapes").unwrap_or_default();
    let mut erasing = std::collections::BTreeSet::new();
    let mut with_health = std::collections::BTreeSet::new();
    for l in scrapes.lines() {
        let Some((i, rest)) = l.split_once(' ') else {
            continue;
        };
        if rest.starts_with("drivelab_erase_state{")
            && rest.contains("state=\"erasing\"")
            && rest.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) == Some(1.0)
        {
            erasing.insert(i.to_string());
        }
        if rest.starts_with("drivelab_drive_health_counter{") {
            with_health.insert(i.to_string());
        }
    }
    c.check(
        "san_block: scraped while the drive sanitized, and no health reading was taken then",
        !erasing.is_empty() && erasing.is_disjoint(&with_health),
        || format!("scrapes erasing {erasing:?}, with health {with_health:?}"),
    );
}

/// The erase `name` erased the namespace with `method` and its
/// certificate says so, with the NIST `category` and the namespace's size;
/// the certificate, for further checks.
fn erased(c: &mut Checks, run: &GuestRun, name: &str, method: &str, category: &str) -> Value {
    let r = row(run, name);
    c.check(
        &format!("{name}: drivelab erase exits 0, drive erased by {method}"),
        status(run, name) == 0 && r["result"] == "erased" && r["method"] == method,
        || why(run, name),
    );
    let cert = cert(run, &r);
    c.check(
        &format!("{name}: certificate: {method}, NIST {category}, {NS_BYTES} B"),
        cert["erase"]["method"] == method
            && cert["erase"]["nist_category"] == category
            && cert["drive"]["capacity_bytes"] == NS_BYTES,
        || format!("certificate {cert}"),
    );
    cert
}

fn readback(run: &GuestRun, name: &str) -> (String, String, String) {
    let v = json(run, &format!("{name}.readback.json"));
    let s = |k: &str| v[k].as_str().unwrap_or("").trim().to_string();
    (s("md5"), s("zero_md5"), s("first"))
}

fn sanitize_checks(c: &mut Checks, run: &GuestRun) {
    // Block erase.
    erased(c, run, "san_block", "nvme-sanitize", "Purge");
    let r = row(run, "san_block");
    c.check(
        "san_block: verified by a full read of zeroes",
        r["verification"] == "full: passed",
        || format!("row {r}"),
    );
    let (md5, zero, _) = readback(run, "san_block");
    c.check(
        "san_block: the namespace reads as zeroes in the guest",
        md5 == zero,
        || format!("{md5} vs zeroes {zero}"),
    );
    san_block_metrics(c, run);
    let (s0, s1) = (json(run, "s0.state.json"), json(run, "s1.state.json"));
    let e = &s1["erases"][0];
    c.check(
        "san_block: the emulator ran one block erase (SANACT 2) over every block, to its end",
        e["command"] == "sanitize"
            && e["action"] == 2
            && e["blocks"] == NS_BLOCKS
            && e["result"] == "completed"
            && s1["sanitize"]["status"] == 1
            && s1["erases"].as_array().map(Vec::len) == Some(1),
        || format!("{s1}"),
    );
    let polls = s1["sanitize"]["polls_in_progress"].as_u64().unwrap_or(0);
    c.check(
        "san_block: drivelab polled the Sanitize Status log while it ran (>= 2 polls in progress)",
        polls >= 2,
        || format!("{polls} polls"),
    );
    let read = |s: &Value| s["counters"]["bytes_read"].as_u64().unwrap_or(0);
    c.check(
        "san_block: the emulator served the verification's full read (>= the namespace)",
        read(&s1) - read(&s0) >= NS_BYTES,
        || format!("{} -> {}", read(&s0), read(&s1)),
    );
    c.check(
        "san_block: no host write reached the emulator during the erase",
        s1["counters"]["bytes_written"] == s0["counters"]["bytes_written"],
        || format!("{} -> {}", s0["counters"], s1["counters"]),
    );

    // Crypto erase.
    let cert = erased(c, run, "san_crypto", "nvme-sanitize", "Purge");
    c.check(
        "san_crypto: the certificate names a cryptographic erase",
        cert["erase"]["technique"] == "cryptographic erase",
        || format!("{}", cert["erase"]),
    );
    let (old, _, old_first) = readback(run, "san_crypto_before");
    let (now, zero, first) = readback(run, "san_crypto");
    not_the_old_data(c, run, "san_crypto", &cert);
    c.check(
        "san_crypto: the namespace reads back neither as the old data nor as zeroes",
        old_first.trim() == "5a" && now != old && now != zero && first.split(' ').count() > 100,
        || format!("old {old} ({old_first}), now {now}, zeroes {zero}; first block bytes {first}"),
    );
    let s3 = json(run, "s3.state.json");
    c.check(
        "san_crypto: the emulator replaced the media key once, a crypto erase (SANACT 4) to its end",
        s3["namespaces"][0]["key_changes"] == 1
            && s3["erases"][1]["action"] == 4
            && s3["erases"][1]["result"] == "completed",
        || format!("{s3}"),
    );

    // A sanitize that fails half way.
    let r = row(run, "san_fail");
    c.check(
        "san_fail: drivelab reports the failed sanitize (exit 1, not erased, no certificate)",
        status(run, "san_fail") == 1 && r["result"] != "erased" && r["certificate"].is_null(),
        || why(run, "san_fail"),
    );
    c.check(
        "san_fail: the reason names the Sanitize and its failure",
        run.outcome("san_fail").1.contains("failed")
            || run.outcome("san_fail").2.contains("failed"),
        || why(run, "san_fail"),
    );
    let s4 = json(run, "s4.state.json");
    c.check(
        "san_fail: the emulator stopped half way and is in failure mode",
        s4["erases"][2]["result"] == "failed"
            && s4["sanitize"]["status"] == 3
            && s4["sanitize"]["failure_mode"] == true
            && s4["erases"][2]["blocks"].as_u64().unwrap_or(0) < NS_BLOCKS,
        || format!("{s4}"),
    );
    c.check(
        "san_fail: a read is refused in failure mode and works after Exit Failure Mode",
        status(run, "read_in_failure_mode") != 0
            && status(run, "exit_failure") == 0
            && status(run, "read_after_exit") == 0
            && json(run, "s5.state.json")["sanitize"]["failure_mode"] == false,
        || {
            format!(
                "{} / {} / {}",
                why(run, "read_in_failure_mode"),
                why(run, "exit_failure"),
                why(run, "read_after_exit")
            )
        },
    );
}

fn overwrite_checks(c: &mut Checks, run: &GuestRun) {
    // nvme-cli's log, under the controller's name.
    let log = out(run, "nvme_overwrite_log")
        .as_object()
        .and_then(|m| m.values().next().cloned())
        .unwrap_or(Value::Null);
    let state = log["sstat"]["status"].as_str().unwrap_or("").to_lowercase();
    c.check(
        "overwrite: nvme-cli starts it, reads its log in progress, estimates as the emulator's",
        status(run, "nvme_overwrite") == 0
            && state.contains("in progress")
            && log["time_over_write"] == SANITIZE_S
            && log["time_crypto_erase"] == SANITIZE_S
            && log["time_block_erase_no_dealloc"] == -1,
        || {
            format!(
                "{}; {}",
                why(run, "nvme_overwrite"),
                why(run, "nvme_overwrite_log")
            )
        },
    );
    let s6 = json(run, "s6.state.json");
    let e = &s6["erases"][3];
    c.check(
        "overwrite: the emulator ran SANACT 3 over every block, to its end",
        e["action"] == 3 && e["result"] == "completed" && e["blocks"] == NS_BLOCKS,
        || format!("{s6}"),
    );
    let (_, _, first) = readback(run, "overwrite");
    c.check(
        "overwrite: the namespace reads back as the pattern A1B2C3D4h",
        first == "a1 b2 c3 d4",
        || format!("first block bytes {first:?}"),
    );
}

fn format_checks(c: &mut Checks, run: &GuestRun) {
    erased(c, run, "fmt_ses1", "nvme-format", "Clear");
    let r = row(run, "fmt_ses1");
    let (md5, zero, _) = readback(run, "fmt_ses1");
    c.check(
        "fmt_ses1: verified (full read) and reads as zeroes in the guest",
        r["verification"] == "full: passed" && md5 == zero,
        || format!("row {r}; {md5} vs {zero}"),
    );
    let f1 = json(run, "f1.state.json");
    c.check(
        "fmt_ses1: the emulator ran Format NVM SES 1 over the namespace",
        f1["erases"][0]["command"] == "format"
            && f1["erases"][0]["action"] == 1
            && f1["erases"][0]["blocks"] == NS_BLOCKS
            && f1["namespaces"][0]["allocated_blocks"] == 0,
        || format!("{f1}"),
    );
    let cert = erased(c, run, "fmt_ses2", "nvme-format", "Purge");
    c.check(
        "fmt_ses2: the certificate names a cryptographic erase",
        cert["erase"]["technique"] == "cryptographic erase",
        || format!("{}", cert["erase"]),
    );
    not_the_old_data(c, run, "fmt_ses2", &cert);
    let (old, _, _) = readback(run, "fmt_ses2_before");
    let (now, zero, _) = readback(run, "fmt_ses2");
    c.check(
        "fmt_ses2: the namespace reads back neither as the old data nor as zeroes",
        now != old && now != zero,
        || format!("old {old}, now {now}, zeroes {zero}"),
    );
    let f2 = json(run, "f2.state.json");
    c.check(
        "fmt_ses2: the emulator ran Format NVM SES 2 (the media key replaced)",
        f2["erases"][1]["action"] == 2 && f2["namespaces"][0]["key_changes"] == 1,
        || format!("{f2}"),
    );
}

/// Blocks drivelab samples before a crypto erase on one namespace: one in
/// each of 1,000 slices plus the first and the last (the first slice's may
/// be LBA 0, the last's the last LBA).
const PRIOR_MIN: u64 = 1000;
const PRIOR_MAX: u64 = 1002;

/// The certificate of a crypto erase of a namespace filled with one
/// non-zero byte says every sampled block changed, none to zeroes.
fn not_the_old_data(c: &mut Checks, run: &GuestRun, name: &str, cert: &Value) {
    let v = &cert["verification"];
    let p = &v["prior_sample"];
    let n = p["sampled"].as_u64().unwrap_or(0);
    c.check(
        &format!("{name}: certificate: verified as not the old data, every sampled block changed"),
        v["result"] == "passed"
            && (PRIOR_MIN..=PRIOR_MAX).contains(&n)
            && p["changed"] == n
            && p["unchanged"] == 0
            && p["blank_before"] == 0
            && p["zeroed"] == 0
            && v["detail"].as_str().is_some_and(|d| {
                d.starts_with(&format!(
                    "passed: sampled {n} blocks: none holds its old data"
                ))
            }),
        || format!("verification {v}"),
    );
    let r = row(run, name);
    c.check(
        &format!("{name}: the result row says none of the sampled blocks holds its old data"),
        r["verification"]
            .as_str()
            .is_some_and(|s| s.contains("none holds its old data")),
        || format!("row {r}"),
    );
}

/// The emulator's crypto erase that keeps its key (fault crypto-noop):
/// drivelab finds the old data and fails the erase.
fn crypto_noop_checks(c: &mut Checks, run: &GuestRun) {
    let r = row(run, "fmt_noop");
    let (old, _, old_first) = readback(run, "fmt_noop_before");
    let (now, _, _) = readback(run, "fmt_noop");
    let f3 = json(run, "f3.state.json");
    c.check(
        "fmt_noop: the emulator reported Format NVM SES 2 done but kept its key: the data is unchanged",
        old_first == "55"
            && now == old
            && f3["erases"][2]["action"] == 2
            && f3["erases"][2]["result"] == "completed"
            && f3["namespaces"][0]["key_changes"] == 1,
        || format!("old {old} ({old_first}), now {now}; {f3}"),
    );
    let err = r["error"].as_str().unwrap_or("");
    c.check(
        "fmt_noop: drivelab fails the crypto erase that left the old data (exit 1, not erased)",
        status(run, "fmt_noop") == 1
            && r["result"] == "failed"
            && err.contains("still hold their old data"),
        || why(run, "fmt_noop"),
    );
    // A failed verification is recorded as every failed verify is: a
    // signed record whose result is failed, never an erasure certificate.
    let cert = if r["certificate"].is_null() {
        Value::Null
    } else {
        cert(run, &r)
    };
    let p = &cert["verification"]["prior_sample"];
    c.check(
        "fmt_noop: no certificate of erasure: any record says failed, with every sampled block unchanged",
        r["certificate"].is_null()
            || (cert["result"] == "failed"
                && cert["verification"]["result"] == "failed"
                && p["unchanged"] == p["sampled"]
                && p["changed"] == 0),
        || format!("certificate {cert}"),
    );
}

#[test]
fn drivelab_health_and_erase_on_an_emulated_nvme_tcp_drive() {
    let run = boot();
    let ctx = run.context();
    let mut c = Checks::new();
    c.check("guest script exited 0", run.script_status == 0, || {
        format!("status {}", run.script_status)
    });
    let names = json(&run, "names.json");
    for n in ["multi", "sani", "fmt"] {
        c.check(
            &format!("{n}: the kernel's nvme-tcp connected to the emulator"),
            run.file(&format!("{n}.connect.status"))
                .unwrap_or_default()
                .trim()
                == "0"
                && names[n]
                    .as_str()
                    .is_some_and(|s| s.starts_with("/dev/nvme")),
            || {
                format!(
                    "names {names}; emulator: {}",
                    run.file(&format!("{n}.emu.err")).unwrap_or_default()
                )
            },
        );
    }
    health_checks(&mut c, &run);
    sanitize_checks(&mut c, &run);
    overwrite_checks(&mut c, &run);
    format_checks(&mut c, &run);
    crypto_noop_checks(&mut c, &run);
    print_times(&run);
    c.finish(&ctx);
}
