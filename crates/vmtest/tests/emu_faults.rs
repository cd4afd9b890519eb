//! Issue 28 item 4: faults on command in the emulated drives, each met by
//! `drivelab erase` exactly as a user runs it. One boot, two emulated SATA
//! drives (crates/tcmuemu, through the guest's target_core_user and
//! tcm_loop) and two emulated NVMe/TCP controllers (crates/nvmeemu, through
//! the guest's nvme-tcp host driver):
//!
//! - Ctrl-C after SET PASSWORD: the SATA drive holds SECURITY ERASE
//!   PREPARE (`delay ata F3`), the test sends SIGINT once the emulator has
//!   SECURITY SET PASSWORD; drivelab sends no ERASE UNIT, removes its
//!   password (DISABLE PASSWORD: the emulator's state shows security
//!   disabled), nothing is erased, the run is "stopped".
//! - The same erase resumed (`--resume`): the sample of the drive taken
//!   before the first run, kept in the journal, is what the enhanced erase
//!   is verified against ("not the old data"), Purge; resumed again from a
//!   journal whose sample was torn, drivelab says it cannot verify and
//!   certifies "sanitized, not verified", never "erased".
//! - An ERASE UNIT that fails half way (`erase-fail`, the drive left
//!   locked): exit 1, no certificate, and drivelab's UNLOCK + DISABLE
//!   PASSWORD leave no password (the emulator's state).
//! - NVMe: a Sanitize never answered (`hang admin 84`) and one answered
//!   after drivelab's timeout (`delay admin 84 90`): drivelab's 60 s
//!   command timeout ends each, the kernel resets the controller, drivelab
//!   exits 1 with one line saying the command got no completion, certifies
//!   nothing, and the kernel reconnects to the controller afterwards. The
//!   two run side by side while the SATA cases run.
//!
//! Needs root, QEMU and the cached kernel (`bash tests/vm/setup.sh`).

use std::time::Duration;

use drivelab_vmtest::emu::{err_lines, security, text};
use drivelab_vmtest::results::{cert, json, print_times, row, status, why};
use drivelab_vmtest::{Checks, GuestRun};

/// Size of every drive, MiB.
const MIB: u64 = 16;
/// How long the SATA drive holds SECURITY ERASE PREPARE, s.
const PREPARE_DELAY_S: u64 = 8;
/// How late the NVMe controller answers Sanitize, s: beyond drivelab's
/// 60 s command timeout.
const SANITIZE_DELAY_S: u64 = 90;

const SCRIPT: &str = r#"
export PATH=$PATH:/usr/sbin XDG_CONFIG_HOME=/tmp/cfg
mount -t configfs configfs /sys/kernel/config 2>/dev/null
ip link set lo up
mkdir -p /out/certs
mark start
fill() {
  head -c 1048576 /dev/zero | tr '\000' "\\$2" > /tmp/fill.bin
  i=0; while [ $i -lt @MIB@ ]; do cat /tmp/fill.bin; i=$((i + 1)); done | dd of=$1 bs=64k oflag=direct 2>/dev/null
  rm -f /tmp/fill.bin
}

# --- NVMe/TCP: a Sanitize never answered, and one answered too late.
NQN=nqn.2026-01.io.drivelab
nvme_emu() {
  n=$1; p=$2; s=$3; shift 3
  drivelab-nvmeemu --listen 127.0.0.1:$p --nqn $NQN:$n --serial $s --sanitize-seconds 4 \
      --namespace-mib @MIB@ --state /tmp/$n.json "$@" > $n.emu.out 2> $n.emu.err &
  EMUS="$EMUS $!"
  i=0; while [ ! -s /tmp/$n.json ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  echo "transport=tcp,traddr=127.0.0.1,trsvcid=$p,nqn=$NQN:$n,hostnqn=$NQN:host" > /dev/nvme-fabrics
  echo $? > $n.connect.status
}
nvme_emu hang 4430 DLEMUHANG001 --fault "hang admin 84"
nvme_emu slow 4431 DLEMUSLOW001 --fault "delay admin 84 @SANITIZE_DELAY_S@"
HANG=$(ctrl_of DLEMUHANG001); SLOW=$(ctrl_of DLEMUSLOW001)
wait_block ${HANG}n1; wait_block ${SLOW}n1
printf '{"hang":"%s","slow":"%s"}\n' "$HANG" "$SLOW" > nvme.names.json
for p in hang:$HANG slow:$SLOW; do
  n=${p%%:*}; c=${p#*:}
  fill ${c}n1 245
  md5 ${c}n1 > $n.md5_before
  bg $n drivelab erase ${c}n1 --method nvme-sanitize --verify full --yes --output-format json \
      --confirm-serial $(sysattr /sys/class/nvme/${c#/dev/}/serial) --certificate-dir /out/certs/$n
done
mark nvme_started

# --- SATA: Ctrl-C while SECURITY ERASE PREPARE is held.
sata_emu() {
  n=$1; h=$2; s=$3; shift 3
  : > /tmp/$n.control
  drivelab-tcmuemu --backing /tmp/$n.img --size-mib @MIB@ --name $n --hba $h --serial $s --sata \
      --product "DRIVELAB TCMU SATA SSD" --state /tmp/$n.json --control /tmp/$n.control "$@" \
      > $n.emu.out 2> $n.emu.err &
  EMUS="$EMUS $!"
  i=0; while [ -z "$(disk_of $s)" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
}
sata_state() { sleep 0.3; cp /tmp/$1.json $2.state.json; }
sata_emu sec 1 DLTCMUSEC001
sata_emu efail 2 DLTCMUEFAIL1 --fault erase-fail
SEC=$(disk_of DLTCMUSEC001); EFAIL=$(disk_of DLTCMUEFAIL1)
printf '{"sec":"%s","efail":"%s"}\n' "$SEC" "$EFAIL" > sata.names.json
SECERASE="drivelab erase $SEC --method ata-security-erase-enhanced --verify full --yes --output-format json --confirm-serial DLTCMUSEC001 --certificate-dir /out/certs/sec"
fill $SEC 245
md5 $SEC > int.md5_before
echo "delay ata F3 @PREPARE_DELAY_S@" > /tmp/sec.control
$SECERASE > int.out 2> int.err < /dev/null &
ipid=$!
i=0; while ! grep -q 'SECURITY SET PASSWORD' /tmp/sec.json && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
cp /tmp/sec.json int.at_signal.state.json
kill -INT $ipid
wait $ipid; echo $? > int.status
sata_state sec int
md5 $SEC > int.md5_after
: > /tmp/sec.control
J=$(ls /out/certs/sec/*.journal)
cp $J /tmp/sec.journal.bak
mark interrupted

# --- The same erase resumed: verified against the journal's sample.
run_json resumed $SECERASE --resume
sata_state sec resumed
md5 $SEC > resumed.md5_after
# Resumed again from the journal with its sample torn (no closing Q line).
fill $SEC 132
grep -v '^Q ' /tmp/sec.journal.bak > $J
run_json torn $SECERASE --resume
sata_state sec torn
mark resumed

# --- An ERASE UNIT that fails half way, the drive left locked.
fill $EFAIL 245
md5 $EFAIL > efail.md5_before
run_json efail drivelab erase $EFAIL --method ata-security-erase --verify full --yes --output-format json --confirm-serial DLTCMUEFAIL1 --certificate-dir /out/certs/efail
sata_state efail efail
mark erase_fail

# --- NVMe: both erases must end by themselves.
await hang; await slow
mark nvme_done
for p in hang:$HANG slow:$SLOW; do
  n=${p%%:*}; c=${p#*:}
  i=0; while [ "$(cat /sys/class/nvme/${c#/dev/}/state)" != live ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i + 1)); done
  cat /sys/class/nvme/${c#/dev/}/state > $n.ctrl_state
  sleep 0.5; cp /tmp/$n.json $n.after.state.json
  md5 ${c}n1 > $n.md5_after
done
dmesg | grep -i nvme > nvme.dmesg.txt
mark nvme_checked
for d in $SEC $EFAIL; do echo 1 > /sys/block/${d#/dev/}/device/delete; done
for c in $HANG $SLOW; do echo 1 > /sys/class/nvme/${c#/dev/}/delete_controller; done
kill $EMUS
true
"#;

fn script() -> String {
    SCRIPT
        .replace("@MIB@", &MIB.to_string())
        .replace("@PREPARE_DELAY_S@", &PREPARE_DELAY_S.to_string())
        .replace("@SANITIZE_DELAY_S@", &SANITIZE_DELAY_S.to_string())
}

fn interrupted_checks(c: &mut Checks, run: &GuestRun) {
    let at = json(run, "int.at_signal.state.json");
    let s = json(run, "int.state.json");
    c.check(
        "int: SIGINT was sent after SECURITY SET PASSWORD reached the drive, before ERASE UNIT",
        security(&at).first().map(String::as_str) == Some("SECURITY SET PASSWORD")
            && !security(&at).iter().any(|x| x == "SECURITY ERASE UNIT"),
        || format!("at the signal {:?}", security(&at)),
    );
    let r = row(run, "int");
    c.check(
        "int: drivelab stops (exit 1, result stopped, no certificate)",
        status(run, "int") == 1 && r["result"] == "stopped" && r["certificate"].is_null(),
        || format!("{}; row {r}", why(run, "int")),
    );
    c.check(
        "int: no ERASE UNIT sent; the password removed (DISABLE PASSWORD); security disabled, not locked, in the emulator's state",
        security(&s).first().map(String::as_str) == Some("SECURITY SET PASSWORD")
            && security(&s).last().map(String::as_str) == Some("SECURITY DISABLE PASSWORD")
            && !security(&s).iter().any(|x| x == "SECURITY ERASE UNIT")
            && s["ata"]["security"]["enabled"] == false
            && s["ata"]["security"]["locked"] == false
            && s["ata"]["security"]["erases"] == serde_json::json!([]),
        || format!("sent {:?}; {}", security(&s), s["ata"]["security"]),
    );
    c.check(
        "int: nothing erased (the drive's bytes unchanged)",
        text(run, "int.md5_before") == text(run, "int.md5_after")
            && !text(run, "int.md5_after").is_empty(),
        || {
            format!(
                "{} -> {}",
                text(run, "int.md5_before"),
                text(run, "int.md5_after")
            )
        },
    );
    let e = err_lines(run, "int");
    c.check(
        "int: one line on stderr says it stopped before ERASE UNIT and removed the password",
        e.len() == 1
            && e[0].contains("stopped before SECURITY ERASE UNIT")
            && e[0].contains("the temporary password was removed")
            && e[0].contains("--resume"),
        || format!("{e:?}"),
    );
}

fn resumed_checks(c: &mut Checks, run: &GuestRun) {
    let r = row(run, "resumed");
    let rc = cert(run, &r);
    let p = &rc["verification"]["prior_sample"];
    c.check(
        "resumed: the erase finishes, Purge, verified as not the old data against the journal's sample",
        status(run, "resumed") == 0
            && r["result"] == "erased"
            && rc["erase"]["nist_category"] == "Purge"
            && p["sampled"].as_u64().is_some_and(|n| n > 2)
            && p["changed"] == p["sampled"]
            && p["unchanged"] == 0,
        || format!("{}; verification {}", why(run, "resumed"), rc["verification"]),
    );
    let s = json(run, "resumed.state.json");
    c.check(
        "resumed: the emulator carried out one enhanced ERASE UNIT; no password left",
        s["ata"]["security"]["erases"]
            == serde_json::json!([{"enhanced": true, "master_password": false}])
            && s["ata"]["security"]["enabled"] == false,
        || format!("{}", s["ata"]["security"]),
    );
    let pattern = text(run, "resumed.md5_after");
    c.check(
        "resumed: the drive reads back as something else than before",
        !pattern.is_empty() && pattern != text(run, "int.md5_before"),
        || pattern.clone(),
    );
    let t = row(run, "torn");
    let tc = cert(run, &t);
    c.check(
        "torn: a resumed crypto erase with no complete sample in its journal says it cannot verify and certifies no erase (\"sanitized, not verified\")",
        t["result"] == "sanitized, not verified"
            && tc["result"] == "sanitized, not verified"
            && tc["verification"]["prior_sample"].is_null()
            && tc["verification"]["detail"]
                .as_str()
                .is_some_and(|d| d.contains("journal holds no sample")),
        || format!("{}; row {t}; verification {}", why(run, "torn"), tc["verification"]),
    );
}

fn erase_fail_checks(c: &mut Checks, run: &GuestRun) {
    let s = json(run, "efail.state.json");
    let r = row(run, "efail");
    c.check(
        "efail: an ERASE UNIT that fails half way: exit 1, failed, no certificate",
        status(run, "efail") == 1 && r["result"] == "failed" && r["certificate"].is_null(),
        || format!("{}; row {r}", why(run, "efail")),
    );
    c.check(
        "efail: drivelab sent DISABLE (refused: locked), UNLOCK, DISABLE; the drive is left with no password, unlocked",
        security(&s)
            == [
                "SECURITY SET PASSWORD",
                "SECURITY ERASE PREPARE",
                "SECURITY ERASE UNIT",
                "SECURITY DISABLE PASSWORD",
                "SECURITY UNLOCK",
                "SECURITY DISABLE PASSWORD",
            ]
            && s["ata"]["security"]["enabled"] == false
            && s["ata"]["security"]["locked"] == false
            && s["ata"]["security"]["failed_erases"] == 1,
        || format!("sent {:?}; {}", security(&s), s["ata"]["security"]),
    );
    let e = err_lines(run, "efail");
    c.check(
        "efail: one line on stderr names ERASE UNIT and says the password was removed",
        e.len() == 1
            && e[0].contains("SECURITY ERASE UNIT")
            && e[0].contains("the temporary password was removed"),
        || format!("{e:?}"),
    );
}

fn nvme_checks(c: &mut Checks, run: &GuestRun) {
    for n in ["hang", "slow"] {
        let r = row(run, n);
        c.check(
            &format!("{n}: the kernel's nvme-tcp connected to the emulator"),
            text(run, &format!("{n}.connect.status")) == "0",
            || text(run, &format!("{n}.emu.err")),
        );
        c.check(
            &format!("{n}: drivelab ends by itself: exit 1, not erased, no certificate"),
            status(run, n) == 1 && r["result"] == "failed" && r["certificate"].is_null(),
            || format!("{}; row {r}", why(run, n)),
        );
        let e = err_lines(run, n);
        c.check(
            &format!("{n}: one line on stderr: the Sanitize got no completion within drivelab's 60 s timeout"),
            e.len() == 1
                && e[0].contains("NVMe Sanitize")
                && e[0].contains("no completion within its 60 s timeout"),
            || format!("{e:?}"),
        );
        c.check(
            &format!("{n}: the kernel reconnected to the controller afterwards"),
            text(run, &format!("{n}.ctrl_state")) == "live",
            || format!("state {}", text(run, &format!("{n}.ctrl_state"))),
        );
    }
    let h = json(run, "hang.after.state.json");
    c.check(
        "hang: the Sanitize was taken and never answered, never carried out; the namespace unchanged",
        h["counters"]["unanswered_commands"] == 1
            && h["erases"] == serde_json::json!([])
            && text(run, "hang.md5_before") == text(run, "hang.md5_after"),
        || format!("state {h}"),
    );
    let s = json(run, "slow.after.state.json");
    c.check(
        "slow: the Sanitize was carried out at once and its completion held past the timeout: the drive erased while drivelab certified nothing",
        s["counters"]["delayed_commands"] == 1
            && s["erases"].as_array().is_some_and(|a| a.len() == 1 && a[0]["result"] == "completed")
            && text(run, "slow.md5_before") != text(run, "slow.md5_after"),
        || format!("state {s}"),
    );
}

#[test]
fn faults_on_command_in_the_emulated_drives_met_by_drivelab() {
    let run = drivelab_vmtest::emu::boot(&script(), Duration::from_secs(900));
    let ctx = run.context();
    let mut c = Checks::new();
    c.check("guest script exited 0", run.script_status == 0, || {
        format!("status {}", run.script_status)
    });
    let names = json(&run, "sata.names.json");
    c.check(
        "both SATA drives attached",
        ["sec", "efail"]
            .iter()
            .all(|n| names[n].as_str().is_some_and(|s| s.starts_with("/dev/sd"))),
        || format!("{names}"),
    );
    interrupted_checks(&mut c, &run);
    resumed_checks(&mut c, &run);
    erase_fail_checks(&mut c, &run);
    nvme_checks(&mut c, &run);
    print_times(&run);
    c.finish(&ctx);
}
