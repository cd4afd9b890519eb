//! Issue 28 item 4: drives that get stuck, each met by `drivelab erase`
//! exactly as a user runs it. One boot: two emulated NVMe/TCP controllers
//! (crates/nvmeemu, through the guest's nvme-tcp host driver), one SAS and
//! four SATA drives (crates/tcmuemu, through target_core_user and
//! tcm_loop), all run side by side:
//!
//! - A sanitize that says "in progress" for ever (`sanitize-stall`: its
//!   progress stops at half): on NVMe with the bound drivelab derives from
//!   the drive's own estimate (4 s: the 120 s floor), on SAS (REQUEST
//!   SENSE) and SATA (SANITIZE STATUS EXT) with `--stall-timeout 20`.
//!   drivelab gives up: exit 1, one line saying where the progress stood,
//!   no certificate, the journal's `N` line saying where it stopped.
//! - Ctrl-C during SECURITY ERASE UNIT itself (`delay ata F4`: the erase
//!   carried out, its answer held): drivelab waits for it, the drive is
//!   left with no password, nothing certified, one line saying so; then
//!   `--resume` verifies and certifies without a second ERASE UNIT.
//! - An ERASE UNIT the drive carries out but answers after the host's
//!   command timer ran out: exit 1, nothing certified, and the one line
//!   says the drive has no password left (its DISABLE and UNLOCK refused
//!   for want of one), not that drivelab's is still set.
//! - A drive that answers nothing (`freeze`, set while its sanitize runs):
//!   the NVMe controller (the kernel's keep-alive and command timers, error
//!   recovery) and the SATA drive (the backstore's command timeout) each
//!   end drivelab's polling; exit 1, one line, no certificate. The NVMe
//!   controller, unfrozen, is reconnected by the kernel.
//!
//! The ATA security "frozen at power-on" state (IDENTIFY word 128) refused
//! with nothing sent is `tcmu_sat`'s (`frozen`).
//!
//! Needs root, QEMU and the cached kernel (`bash tests/vm/setup.sh`).

use std::time::Duration;

use drivelab_vmtest::emu::{err_lines, security, text};
use drivelab_vmtest::results::{cert, json, print_times, row, status, why};
use drivelab_vmtest::{Checks, GuestRun};

/// Size of every drive, MiB.
const MIB: u64 = 8;
/// `--stall-timeout` given to the SAS and SATA erases, s.
const STALL_S: u64 = 20;
/// How long the SATA drive holds its answer to SECURITY ERASE UNIT, s.
const ERASE_DELAY_S: u64 = 10;
/// The command timeout (`--command-timeout`) of the frozen SATA drive and
/// of the one whose ERASE UNIT answers late, s.
const CMD_TIMEOUT_S: u64 = 5;
/// How late that drive answers ERASE UNIT, s: past the timeout, and soon
/// enough after it that the commands queued behind it are answered in
/// theirs.
const LATE_S: u64 = 7;

const SCRIPT: &str = r#"
export PATH=$PATH:/usr/sbin XDG_CONFIG_HOME=/tmp/cfg
mount -t configfs configfs /sys/kernel/config 2>/dev/null
ip link set lo up
mkdir -p /out/certs
mark start
fill() {
  head -c 1048576 /dev/zero | tr '\000' "\\$2" > /tmp/fill.$3
  i=0; while [ $i -lt @MIB@ ]; do cat /tmp/fill.$3; i=$((i + 1)); done | dd of=$1 bs=64k oflag=direct 2>/dev/null
  rm -f /tmp/fill.$3
}
ERASE="drivelab erase --verify full --yes --output-format json"

# --- NVMe/TCP: a stalled Sanitize, and a controller frozen mid-sanitize.
NQN=nqn.2026-01.io.drivelab
nvme_emu() {
  n=$1; p=$2; s=$3; shift 3
  : > /tmp/$n.control
  drivelab-nvmeemu --listen 127.0.0.1:$p --nqn $NQN:$n --serial $s --namespace-mib @MIB@ \
      --state /tmp/$n.json --control /tmp/$n.control "$@" > $n.emu.out 2> $n.emu.err &
  EMUS="$EMUS $!"
  i=0; while [ ! -s /tmp/$n.json ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  echo "transport=tcp,traddr=127.0.0.1,trsvcid=$p,nqn=$NQN:$n,hostnqn=$NQN:host" > /dev/nvme-fabrics
  echo $? > $n.connect.status
}
nvme_emu nstall 4440 DLEMUSTALL01 --sanitize-seconds 4 --fault sanitize-stall
nvme_emu nfreeze 4441 DLEMUFREEZE1 --sanitize-seconds 60
NSTALL=$(ctrl_of DLEMUSTALL01); NFREEZE=$(ctrl_of DLEMUFREEZE1)
wait_block ${NSTALL}n1; wait_block ${NFREEZE}n1
printf '{"nstall":"%s","nfreeze":"%s"}\n' "$NSTALL" "$NFREEZE" > nvme.names.json
for p in nstall:$NSTALL nfreeze:$NFREEZE; do
  n=${p%%:*}; c=${p#*:}
  fill ${c}n1 245 $n
  md5 ${c}n1 > $n.md5_before
  bg $n $ERASE ${c}n1 --method nvme-sanitize --confirm-serial $(sysattr /sys/class/nvme/${c#/dev/}/serial) \
      --certificate-dir /out/certs/$n
done
# Frozen once its sanitize runs and drivelab has polled it; unfrozen once
# drivelab has ended, for the kernel to reconnect.
( until_in /tmp/nfreeze.json '"polls_in_progress": ?[1-9]'; cp /tmp/nfreeze.json nfreeze.at_freeze.state.json
  echo freeze > /tmp/nfreeze.control; mark nvme_frozen
  await nfreeze; cp /tmp/nfreeze.json nfreeze.after.state.json; : > /tmp/nfreeze.control; mark nvme_unfrozen ) &
mark nvme_started

# --- SAS and SATA: stalled sanitizes, a drive frozen mid-sanitize.
tcmu_emu() {
  n=$1; h=$2; s=$3; shift 3
  : > /tmp/$n.control
  drivelab-tcmuemu --backing /tmp/$n.img --size-mib @MIB@ --name $n --hba $h --serial $s \
      --state /tmp/$n.json --control /tmp/$n.control "$@" \
      > $n.emu.out 2> $n.emu.err &
  EMUS="$EMUS $!"
  i=0; while [ -z "$(disk_of $s)" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
}
SATA="--sata --product DRIVELAB_TCMU_SATA_SSD"
tcmu_emu sstall 1 DLTCMUSTALL1 --product "TCMU SAS DISK" --sanitize-seconds 4 --fault sanitize-stall
tcmu_emu astall 2 DLTCMUSTALL2 $SATA --sanitize-seconds 4 --fault sanitize-stall
tcmu_emu afreeze 3 DLTCMUFREEZ1 $SATA --sanitize-seconds 60 --command-timeout @CMD_TIMEOUT_S@
tcmu_emu int 4 DLTCMUINT001 $SATA
tcmu_emu etime 5 DLTCMUETIME1 $SATA --command-timeout @CMD_TIMEOUT_S@ --fault "delay ata F4 @LATE_S@"
SSTALL=$(disk_of DLTCMUSTALL1); ASTALL=$(disk_of DLTCMUSTALL2); AFREEZE=$(disk_of DLTCMUFREEZ1); INT=$(disk_of DLTCMUINT001)
ETIME=$(disk_of DLTCMUETIME1)
printf '{"sstall":"%s","astall":"%s","afreeze":"%s","int":"%s","etime":"%s"}\n' "$SSTALL" "$ASTALL" "$AFREEZE" "$INT" "$ETIME" > sata.names.json
fill $SSTALL 245 sstall & f1=$!; fill $ASTALL 245 astall & f2=$!; fill $AFREEZE 245 afreeze & f3=$!
fill $ETIME 245 etime & f4=$!; fill $INT 245 int & f5=$!; wait $f1 $f2 $f3 $f4 $f5
bg sstall $ERASE $SSTALL --method scsi-sanitize --stall-timeout @STALL_S@ --confirm-serial DLTCMUSTALL1 --certificate-dir /out/certs/sstall
bg astall $ERASE $ASTALL --method ata-sanitize --stall-timeout @STALL_S@ --confirm-serial DLTCMUSTALL2 --certificate-dir /out/certs/astall
bg afreeze $ERASE $AFREEZE --method ata-sanitize --confirm-serial DLTCMUFREEZ1 --certificate-dir /out/certs/afreeze
# ERASE UNIT carried out by the drive, its answer later than the backstore's timer.
bg etime $ERASE $ETIME --method ata-security-erase-enhanced --confirm-serial DLTCMUETIME1 --certificate-dir /out/certs/etime
( until_in /tmp/afreeze.json '"status_polls_while_running": ?[1-9]'; cp /tmp/afreeze.json afreeze.at_freeze.state.json
  echo freeze > /tmp/afreeze.control; mark sata_frozen ) &
mark tcmu_started

# --- Ctrl-C while SECURITY ERASE UNIT runs.
INTERASE="drivelab erase --verify sample --yes --output-format json $INT --method ata-security-erase-enhanced --confirm-serial DLTCMUINT001 --certificate-dir /out/certs/int"
md5 $INT > int.md5_before
echo "delay ata F4 @ERASE_DELAY_S@" > /tmp/int.control
$INTERASE > int.out 2> int.err < /dev/null &
ipid=$!
until_in /tmp/int.json 'SECURITY ERASE UNIT'
cp /tmp/int.json int.at_signal.state.json
kill -INT $ipid
wait $ipid; echo $? > int.status
sleep 0.3; cp /tmp/int.json int.state.json
: > /tmp/int.control
cat /out/certs/int/*.journal > int.journal.txt
mark interrupted
run_json resumed $INTERASE --resume
sleep 0.3; cp /tmp/int.json resumed.state.json
md5 $INT > resumed.md5_after
mark resumed

# --- Every erase must end by itself.
for n in etime nfreeze afreeze sstall astall nstall; do await $n; mark ${n}_done; done
for n in etime afreeze sstall astall nstall; do
  cat /out/certs/$n/*.journal > $n.journal.txt 2>/dev/null
  cp /tmp/$n.json $n.after.state.json
done
# The NVMe controller unfrozen: the kernel reconnects.
c=${NFREEZE#/dev/}
i=0; while [ "$(cat /sys/class/nvme/$c/state)" != live ] && [ $i -lt 1500 ]; do sleep 0.1; i=$((i + 1)); done
cat /sys/class/nvme/$c/state > nfreeze.ctrl_state
mark nvme_checked
: > /tmp/afreeze.control
dmesg | grep -i -E 'nvme|sd |tcmu|target' > kernel.dmesg.txt
for d in $SSTALL $ASTALL $AFREEZE $INT $ETIME; do echo 1 > /sys/block/${d#/dev/}/device/delete; done
for c in $NSTALL $NFREEZE; do echo 1 > /sys/class/nvme/${c#/dev/}/delete_controller; done
kill $EMUS
true
"#;

fn script() -> String {
    SCRIPT
        .replace("@MIB@", &MIB.to_string())
        .replace("@STALL_S@", &STALL_S.to_string())
        .replace("@ERASE_DELAY_S@", &ERASE_DELAY_S.to_string())
        .replace("@CMD_TIMEOUT_S@", &CMD_TIMEOUT_S.to_string())
        .replace("@LATE_S@", &LATE_S.to_string())
}

/// The journal's `N` lines.
fn notes(run: &GuestRun, name: &str) -> Vec<String> {
    text(run, &format!("{name}.journal.txt"))
        .lines()
        .filter(|l| l.starts_with("N "))
        .map(String::from)
        .collect()
}

/// A drive drivelab gave up on: exit 1, failed, no certificate, one line.
fn failed_alone(c: &mut Checks, run: &GuestRun, n: &str, what: &str, says: &[&str]) {
    let r = row(run, n);
    c.check(
        &format!("{n}: {what}: drivelab ends by itself: exit 1, failed, no certificate"),
        status(run, n) == 1 && r["result"] == "failed" && r["certificate"].is_null(),
        || format!("{}; row {r}", why(run, n)),
    );
    let e = err_lines(run, n);
    c.check(
        &format!("{n}: one line on stderr: {}", says.join(", ")),
        e.len() == 1 && says.iter().all(|s| e[0].contains(s)),
        || format!("{e:?}"),
    );
}

fn stall_checks(c: &mut Checks, run: &GuestRun) {
    let bound = format!("--stall-timeout {STALL_S}");
    let cases: [(&str, &str, Vec<&str>); 3] = [
        (
            "nstall",
            "NVMe Sanitize",
            vec![
                "NVMe Sanitize",
                "stood at 50.0 %",
                "4 x the drive's estimate of 4 s, at least 120 s",
            ],
        ),
        (
            "sstall",
            "SCSI SANITIZE",
            vec!["SCSI SANITIZE", "stood at 50.0 %", "REQUEST SENSE", &bound],
        ),
        (
            "astall",
            "ATA SANITIZE",
            vec![
                "ATA SANITIZE",
                "stood at 50.0 %",
                "SANITIZE STATUS EXT",
                &bound,
            ],
        ),
    ];
    for (n, what, says) in cases {
        failed_alone(c, run, n, &format!("{what} stalled half way"), &says);
        let j = notes(run, n);
        c.check(
            &format!("{n}: the journal says where it stopped ({what} given up at 50.0 %)"),
            j.len() == 1 && j[0].contains(&format!("{what} given up at 50.0 %")),
            || format!("{j:?}"),
        );
    }
    let s = json(run, "nstall.after.state.json");
    c.check(
        "nstall: the controller's sanitize is still in progress at half (SSTAT 2, SPROG 32768), stalled, polled",
        s["sanitize"]["status"] == 2
            && s["sanitize"]["progress"] == 32768
            && s["sanitize"]["stalled"] == true
            && s["sanitize"]["polls_in_progress"].as_u64().is_some_and(|p| p > 20),
        || format!("{}", s["sanitize"]),
    );
    let sas = json(run, "sstall.after.state.json");
    let sata = json(run, "astall.after.state.json");
    c.check(
        "sstall, astall: the drives' sanitizes still running, stalled, none ended",
        sas["sanitize"]["stalled"] == true
            && sas["sanitize"]["running"].is_string()
            && sas["sanitize"]["done"] == serde_json::json!([])
            && sata["ata"]["sanitize"]["stalled"] == true
            && sata["ata"]["sanitize"]["running"].is_string()
            && sata["ata"]["sanitize"]["done"] == serde_json::json!([]),
        || format!("{}; {}", sas["sanitize"], sata["ata"]["sanitize"]),
    );
}

fn interrupted_checks(c: &mut Checks, run: &GuestRun) {
    let at = json(run, "int.at_signal.state.json");
    c.check(
        "int: SIGINT was sent once SECURITY ERASE UNIT had reached the drive (its answer held)",
        security(&at).last().map(String::as_str) == Some("SECURITY ERASE UNIT"),
        || format!("at the signal {:?}", security(&at)),
    );
    let r = row(run, "int");
    c.check(
        "int: drivelab waits for the erase, then stops: exit 1, stopped, no certificate",
        status(run, "int") == 1 && r["result"] == "stopped" && r["certificate"].is_null(),
        || format!("{}; row {r}", why(run, "int")),
    );
    let s = json(run, "int.state.json");
    c.check(
        "int: one enhanced ERASE UNIT carried out, nothing sent after it; no password left, not locked",
        security(&s)
            == [
                "SECURITY SET PASSWORD",
                "SECURITY ERASE PREPARE",
                "SECURITY ERASE UNIT",
            ]
            && s["ata"]["security"]["erases"]
                == serde_json::json!([{"enhanced": true, "master_password": false}])
            && s["ata"]["security"]["enabled"] == false
            && s["ata"]["security"]["locked"] == false,
        || format!("sent {:?}; {}", security(&s), s["ata"]["security"]),
    );
    let e = err_lines(run, "int");
    c.check(
        "int: one line on stderr: the erase ran to its end, cannot be interrupted, no password, not verified, --resume",
        e.len() == 1
            && e[0].contains("cannot be interrupted")
            && e[0].contains("no password")
            && e[0].contains("not verified")
            && e[0].contains("--resume"),
        || format!("{e:?}"),
    );
    let r = row(run, "resumed");
    let rc = cert(run, &r);
    let p = &rc["verification"]["prior_sample"];
    c.check(
        "resumed: verified against the journal's sample and certified (Purge) with no second ERASE UNIT",
        status(run, "resumed") == 0
            && r["result"] == "erased"
            && rc["erase"]["nist_category"] == "Purge"
            && p["sampled"].as_u64().is_some_and(|n| n > 2)
            && p["changed"] == p["sampled"],
        || format!("{}; verification {}", why(run, "resumed"), rc["verification"]),
    );
    let s = json(run, "resumed.state.json");
    c.check(
        "resumed: the drive still counts one ERASE UNIT and no security command since",
        security(&s).len() == 3
            && s["ata"]["security"]["erases"].as_array().map(Vec::len) == Some(1),
        || format!("sent {:?}", security(&s)),
    );
    c.check(
        "int: the drive reads back as something else than before",
        !text(run, "resumed.md5_after").is_empty()
            && text(run, "resumed.md5_after") != text(run, "int.md5_before"),
        || text(run, "resumed.md5_after"),
    );
}

fn late_erase_checks(c: &mut Checks, run: &GuestRun) {
    failed_alone(
        c,
        run,
        "etime",
        "an ERASE UNIT the backstore's timer cut off while the drive carried it out",
        &["SECURITY ERASE UNIT", "no password left"],
    );
    let e = err_lines(run, "etime");
    c.check(
        "etime: drivelab does not claim a password is still set",
        e.iter().all(|l| !l.contains("STILL SET")),
        || format!("{e:?}"),
    );
    let s = json(run, "etime.after.state.json");
    c.check(
        "etime: the drive did the erase and has no password; drivelab's DISABLE and UNLOCK were refused (none to remove)",
        s["ata"]["security"]["erases"].as_array().map(Vec::len) == Some(1)
            && s["ata"]["security"]["enabled"] == false
            && s["ata"]["security"]["locked"] == false
            && security(&s)
                == [
                    "SECURITY SET PASSWORD",
                    "SECURITY ERASE PREPARE",
                    "SECURITY ERASE UNIT",
                    "SECURITY DISABLE PASSWORD",
                    "SECURITY UNLOCK",
                ],
        || format!("sent {:?}; {}", security(&s), s["ata"]["security"]),
    );
}

fn freeze_checks(c: &mut Checks, run: &GuestRun) {
    let n = json(run, "nfreeze.at_freeze.state.json");
    c.check(
        "nfreeze: frozen while its sanitize ran and drivelab polled it",
        n["sanitize"]["status"] == 2,
        || format!("{}", n["sanitize"]),
    );
    failed_alone(
        c,
        run,
        "nfreeze",
        "an NVMe controller that answers nothing",
        &["Sanitize Status log"],
    );
    let s = json(run, "nfreeze.after.state.json");
    c.check(
        "nfreeze: the controller took commands it never answered",
        s["counters"]["unanswered_commands"]
            .as_u64()
            .is_some_and(|u| u >= 1),
        || format!("{}", s["counters"]),
    );
    c.check(
        "nfreeze: unfrozen, the kernel reconnected to the controller",
        text(run, "nfreeze.ctrl_state") == "live",
        || text(run, "nfreeze.ctrl_state"),
    );
    let a = json(run, "afreeze.at_freeze.state.json");
    c.check(
        "afreeze: frozen while its sanitize ran and drivelab polled it",
        a["ata"]["sanitize"]["running"].is_string(),
        || format!("{}", a["ata"]["sanitize"]),
    );
    failed_alone(
        c,
        run,
        "afreeze",
        "a SATA drive that answers nothing",
        &["SANITIZE STATUS EXT"],
    );
    let s = json(run, "afreeze.after.state.json");
    c.check(
        "afreeze: the drive took commands it never answered",
        s["counters"]["unanswered"].as_u64().is_some_and(|u| u >= 1),
        || format!("{}", s["counters"]),
    );
}

#[test]
fn stuck_drives_stalled_sanitize_erase_unit_interrupted_and_frozen_met_by_drivelab() {
    let run = drivelab_vmtest::emu::boot(&script(), Duration::from_secs(900));
    let ctx = run.context();
    let mut c = Checks::new();
    c.check("guest script exited 0", run.script_status == 0, || {
        format!("status {}", run.script_status)
    });
    let names = json(&run, "sata.names.json");
    c.check(
        "the SAS and SATA drives attached",
        ["sstall", "astall", "afreeze", "int", "etime"]
            .iter()
            .all(|n| names[n].as_str().is_some_and(|s| s.starts_with("/dev/sd"))),
        || format!("{names}"),
    );
    for n in ["nstall", "nfreeze"] {
        c.check(
            &format!("{n}: the kernel's nvme-tcp connected to the emulator"),
            text(&run, &format!("{n}.connect.status")) == "0",
            || text(&run, &format!("{n}.emu.err")),
        );
    }
    stall_checks(&mut c, &run);
    interrupted_checks(&mut c, &run);
    late_erase_checks(&mut c, &run);
    freeze_checks(&mut c, &run);
    println!("kernel log:\n{}", text(&run, "kernel.dmesg.txt"));
    print_times(&run);
    c.finish(&ctx);
}
