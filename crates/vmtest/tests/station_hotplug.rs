//! Issue 26's VM test: `drivelab station --events json` in a guest without
//! udev, while the host plugs and pulls drives through QEMU's monitor
//! (QMP `device_add` / `device_del`, asked for by the guest script through
//! `/out`, see crates/vmtest/src/hotplug.rs).
//!
//! The policy's bays are the slots as the station names them without
//! udev (built from sysfs as udev's `path_id` would, docs/station.md):
//! SCSI targets 0-3 of the virtio-scsi controller, with `*` for the host
//! number, and the NVMe slot behind the first hot-plug root port, read
//! from the guest's sysfs by the script. In one boot:
//!
//! - drive A (present at boot, writes paced at 1 MiB/s) is erasing while
//!   SCSI disk B is hot-added, erased and certified;
//! - NVMe drive N is hot-added and certified, then pulled (pciehp);
//! - SCSI disk C (paced) is pulled once its erase has passed 10 %: its
//!   events say "removed at N %: not erased", never certified, no
//!   certificate, and its image still holds the old pattern past the
//!   erased part;
//! - SCSI disk R is pulled the same way and plugged straight back: the
//!   station takes it once the worker of its pull has ended, and resumes
//!   its erase from the journal (the certificate counts the bytes
//!   resumed) and certifies it;
//! - SCSI disk F holds ext4: held (its superblock read intact in the guest
//!   while held) until `confirm` on the station's stdin (the confirm path
//!   without a terminal), then erased and certified;
//! - SCSI disk O sits on target 7, outside the bays: shown as outside,
//!   never touched (its image's digest unchanged).
//!
//! The events are checked against the certificates in /out (each verified
//! on the host with the guest's public key) and the host's images (every
//! certified hot disk holds the policy's pattern). Needs QEMU and the cached
//! kernel: `bash tests/vm/setup.sh`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use drivelab_testkit::{digest, read_all, TempDir};
use drivelab_vmtest::drivelab_bin::static_drivelab;
use drivelab_vmtest::results::verify_cert;
use drivelab_vmtest::{Checks, Disk, GuestRun, HotDisk, Hotplug, Vm, MIB};
use serde_json::Value;

/// Present at boot, erasing while the others come and go.
const A: &str = "DLHPA0001";
/// Hot-added SCSI disk, erased and certified.
const B: &str = "DLHPB0001";
/// Hot-added SCSI disk pulled mid-erase.
const C: &str = "DLHPC0001";
/// Hot-added SCSI disk holding ext4.
const F: &str = "DLHPF0001";
/// Hot-added SCSI disk outside the bays.
const O: &str = "DLHPO0001";
/// Hot-added SCSI disk pulled mid-erase and plugged back.
const R: &str = "DLHPR0001";
/// Hot-added NVMe drive.
const N: &str = "DLHPN0001";

/// The model QEMU's scsi-hd reports.
const SCSI_MODEL: &str = "QEMU HARDDISK";

/// What the host writes over each hot disk before the boot, so what an
/// erase wrote shows.
const OLD: u8 = 0x5A;
/// The policy's pattern: not zeroes, so the drives' erases are SCSI WRITE
/// SAME and NVMe streamed writes, whose progress shows command by command
/// (an offloaded zeroout of a drive under 1 GiB is one ioctl: its row
/// would stay at 0 % until the end), and an erased image is told from a
/// blank one.
const PATTERN: &str = "fixed:0xA5A5A5A5";
/// The byte [`PATTERN`] leaves.
const ERASED: u8 = 0xA5;
/// What the outside drive holds.
const OUTSIDE: u8 = 0x3C;

const SCRIPT: &str = r#"
export XDG_CONFIG_HOME=/tmp/cfg
mkdir -p /out/certs
EV=/tmp/events.jsonl
fail() { echo "$*" >> /out/fails.txt; echo "FAIL: $*"; }

# The slots as the station names them without udev: the virtio-scsi
# controller's PCI address and the bus behind the first hot-plug root port
# (QEMU's pcie-root-port: vendor 1b36, device 000c).
pci_of() { readlink -f "$1" | tr / '\n' | grep -E '^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$' | tail -n1; }
for h in /sys/class/scsi_host/host*; do
  [ "$(cat $h/proc_name)" = virtio_scsi ] && SCSI_PCI=$(pci_of $h/device)
done
for d in /sys/bus/pci/devices/*; do
  if [ "$(cat $d/vendor)" = 0x1b36 ] && [ "$(cat $d/device)" = 0x000c ] && [ -z "$NVME_BUS" ]; then
    NVME_BUS=$(ls $d/pci_bus | head -n1)
  fi
done
SCSI_BAY="pci-$SCSI_PCI-scsi-*:0:[0-4]:0"
NVME_BAY="pci-$NVME_BUS:00.0-nvme-1"
cat > /tmp/policy.toml <<EOF
bays = ["$SCSI_BAY", "$NVME_BAY"]
operator = "VM Operator"
store = "/tmp/station.db"
[erase]
method = "auto"
verify = "sample"
pattern = "@PATTERN@"
on_content = "hold"
certificate_dir = "/out/certs"
[certificate]
organisation = "Hotplug Lab"
asset_tag = "serial"
EOF
printf '{"scsi_pci":"%s","scsi_bay":"%s","nvme_bay":"%s"}\n' "$SCSI_PCI" "$SCSI_BAY" "$NVME_BAY" > bays.json

# state_of SERIAL STATE: whether the station said SERIAL reached STATE.
state_of() { grep '"event":"state"' $EV | grep "\"serial\":\"$1\"" | grep -q "\"state\":\"$2\""; }
# wait_state SERIAL STATE SECONDS
wait_state() {
  i=0
  while ! state_of "$1" "$2"; do
    i=$((i + 1)); [ $i -gt $(($3 * 10)) ] && { fail "$1 not $2 within $3 s"; return 1; }
    sleep 0.1
  done
}
# wait_progress SERIAL SECONDS: a progress event (a tenth of the erase done).
wait_progress() {
  i=0
  while ! grep '"event":"progress"' $EV | grep -q "\"serial\":\"$1\""; do
    i=$((i + 1)); [ $i -gt $(($2 * 10)) ] && { fail "$1 made no progress within $2 s"; return 1; }
    sleep 0.1
  done
}
# plugged SERIAL: the kernel name of the disk once it shows (60 s).
plugged() {
  i=0
  while ! disk_by_serial "$1" > /dev/null; do
    i=$((i + 1)); [ $i -gt 600 ] && { fail "$1 never showed in /sys/block"; return 1; }
    sleep 0.1
  done
  disk_by_serial "$1"
}

mkfifo /tmp/ctl
( drivelab station --policy /tmp/policy.toml --events json < /tmp/ctl > $EV 2> /out/station.err; echo $? > /out/station.status ) &
exec 3> /tmp/ctl

A=$(disk_by_serial @A@)
wait_state @A@ erasing 90

# B arrives while A is erasing.
hotplug add-b || fail "add-b"
B=$(plugged @B@)
wait_state @B@ certified 120

hotplug add-n || fail "add-n"
N=$(plugged @N@)

# C is pulled once a tenth of its erase is done.
hotplug add-c || fail "add-c"
C=$(plugged @C@)
wait_progress @C@ 90 && { hotplug del-c || fail "del-c"; }
wait_state @C@ removed 60

# R is pulled the same way and plugged straight back, before its worker
# has seen the pull through: the drive back waits for that worker to end,
# then its erase resumes from the journal (it goes on while the script
# carries on).
hotplug add-r || fail "add-r"
R=$(plugged @R@)
wait_progress @R@ 90 && { hotplug del-r || fail "del-r"; }
hotplug add-r || fail "add-r again"
wait_state @R@ removed 60
ls /out/certs > certs_after_r_pulled.txt
R=$(plugged @R@)

# F holds ext4: held, its superblock intact, until confirmed.
hotplug add-f || fail "add-f"
F=$(plugged @F@)
wait_state @F@ held 90
dd if=/dev/$F bs=1 skip=1080 count=2 2>/dev/null | od -An -tx1 | tr -d ' \n' > f_magic_held.txt
state_of @F@ erasing && fail "F erasing before confirm"
echo "confirm @F@" >&3
wait_state @F@ certified 120

hotplug add-o || fail "add-o"
O=$(plugged @O@)
wait_state @O@ outside 60

# N is pulled after its certificate (an NVMe device_del: pciehp powers the
# slot off, then QEMU deletes it).
wait_state @N@ certified 120
hotplug del-n 90 || fail "del-n"
i=0; while [ -e /sys/block/$N ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -e /sys/block/$N ] && fail "$N still in /sys/block after del-n"

wait_state @R@ certified 180
wait_state @A@ certified 180
echo quit >&3
exec 3>&-
wait
cp $EV /out/events.jsonl
cp $XDG_CONFIG_HOME/drivelab/erase-signing.pub /out/erase-signing.pub
printf '{"a":"%s","b":"%s","c":"%s","f":"%s","o":"%s","n":"%s","r":"%s"}\n' $A $B $C $F $O $N $R > names.json
run_json hist_c drivelab --store /tmp/station.db history --drive @C@ --output-format json
run_json hist_all drivelab --store /tmp/station.db history --output-format json
[ -e /out/fails.txt ] && exit 1
exit 0
"#;

/// Fills `path` with `size` bytes of `byte`.
fn filled(path: &Path, size: u64, byte: u8) -> PathBuf {
    let bytes = vec![byte; usize::try_from(size).expect("size fits")];
    std::fs::write(path, bytes).expect("write an image");
    path.to_path_buf()
}

/// The station's events, one JSON object a line.
fn events(run: &GuestRun) -> Vec<Value> {
    run.file("events.jsonl")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A drive's events (by serial), in order.
fn of<'a>(ev: &'a [Value], serial: &str) -> Vec<&'a Value> {
    ev.iter()
        .filter(|e| e["serial"].as_str() == Some(serial))
        .collect()
}

/// The states a drive went through, in order.
fn states(ev: &[&Value]) -> Vec<String> {
    ev.iter()
        .filter(|e| e["event"] == "state")
        .filter_map(|e| e["state"].as_str().map(String::from))
        .collect()
}

/// When (station time, s) a drive first reached `state`.
fn first_at(ev: &[&Value], state: &str) -> Option<f64> {
    ev.iter()
        .find(|e| e["event"] == "state" && e["state"] == state)
        .and_then(|e| e["t_s"].as_f64())
}

/// The last state event of a drive.
fn last_state<'a>(ev: &[&'a Value]) -> Option<&'a Value> {
    ev.iter().rev().find(|e| e["event"] == "state").copied()
}

/// Each drive's events, by serial.
type Drives<'a> = BTreeMap<&'static str, Vec<&'a Value>>;

/// The host path of a certificate the guest wrote under /out.
fn host_path(run: &GuestRun, guest: &str) -> PathBuf {
    run.out_dir()
        .join(guest.strip_prefix("/out/").unwrap_or(guest))
}

#[test]
fn station_erases_drives_plugged_and_pulled_through_qmp() {
    let dir = TempDir::new("station-hotplug");
    let img = |n: &str| dir.join(n);
    let b = filled(&img("b.img"), 8 * MIB, OLD);
    let c = filled(&img("c.img"), 16 * MIB, OLD);
    let f = filled(&img("f.img"), 16 * MIB, OLD);
    let r = filled(&img("r.img"), 16 * MIB, OLD);
    let o = filled(&img("o.img"), 8 * MIB, OUTSIDE);
    let n = filled(&img("n.img"), 16 * MIB, OLD);
    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&f)
        .status()
        .expect("run mkfs.ext4 (e2fsprogs)");
    assert!(mkfs.success(), "mkfs.ext4 on {}", f.display());
    let o_before = digest(&o);
    let plan = Hotplug::new()
        .scsi("b", HotDisk::new(&b, B).scsi_target(1))
        .nvme("n", HotDisk::new(&n, N))
        .scsi(
            "c",
            HotDisk::new(&c, C)
                .scsi_target(2)
                .write_limit(512 * 1024)
                .max_io(128 * 1024),
        )
        .scsi("f", HotDisk::new(&f, F).scsi_target(3))
        .scsi(
            "r",
            HotDisk::new(&r, R)
                .scsi_target(4)
                .write_limit(512 * 1024)
                .max_io(128 * 1024),
        )
        .scsi("o", HotDisk::new(&o, O).scsi_target(7));
    let script = SCRIPT
        .replace("@A@", A)
        .replace("@B@", B)
        .replace("@C@", C)
        .replace("@F@", F)
        .replace("@O@", O)
        .replace("@N@", N)
        .replace("@R@", R)
        .replace("@PATTERN@", PATTERN);
    let run = Vm::builder()
        .scsi_hd(Disk::new(32 * MIB, A).write_limit(MIB).max_io(256 * 1024))
        .hotplug(plan)
        .with_drivelab()
        .memory_mib(768)
        .guest_script(&script)
        .timeout(Duration::from_secs(420))
        .run()
        .expect("boot the station VM");
    let ctx = format!(
        "{}\n--- station.err ---\n{}\n--- hot-plug ---\n{:?}",
        run.context(),
        run.file("station.err").unwrap_or_default(),
        run.hotplug
    );
    let mut ck = Checks::new();
    ck.check(
        "guest script: every wait met",
        run.script_status == 0,
        || run.file("fails.txt").unwrap_or_default(),
    );
    ck.check(
        "station exited 0 after quit",
        run.file("station.status").unwrap_or_default().trim() == "0",
        || run.file("station.err").unwrap_or_default(),
    );
    let asked: Vec<&str> = run.hotplug.iter().map(|h| h.request.as_str()).collect();
    ck.check(
        "the host carried out every request, in order",
        asked
            == [
                "add-b", "add-n", "add-c", "del-c", "add-r", "del-r", "add-r", "add-f", "add-o",
                "del-n",
            ]
            && run.hotplug.iter().all(|h| h.result.is_ok()),
        || format!("{:?}", run.hotplug),
    );

    let ev = events(&run);
    let by: Drives = [A, B, C, F, O, N, R].map(|s| (s, of(&ev, s))).into();
    certified_in_their_bays(&mut ck, &run, &by);
    pulled_not_erased(&mut ck, &by, &c);
    pulled_and_back_resumed(&mut ck, &run, &by);
    held_outside_and_erased(&mut ck, &run, &by, &[(B, &b), (F, &f), (N, &n), (R, &r)]);
    ck.check("O: its bytes unchanged", digest(&o) == o_before, || {
        "the outside drive's image changed".into()
    });
    certificates_are_the_events(&mut ck, &run, &by);
    stored_as_seen(&mut ck, &run, &ev);
    ck.finish(&ctx);
}

/// Each certified drive in its bay, and B's whole life inside A's erase.
fn certified_in_their_bays(ck: &mut Checks, run: &GuestRun, by: &Drives) {
    let bays = run.json("bays.json").unwrap_or(Value::Null);
    let scsi_pci = bays["scsi_pci"].as_str().unwrap_or("?");
    let nvme_bay = bays["nvme_bay"].as_str().unwrap_or("?");
    // A row's bay is its slot's by-path name (built from sysfs: the SCSI
    // host number is the kernel's, so only the target is known here).
    let scsi_slot = |t: u8| {
        let (pre, suf) = (format!("pci-{scsi_pci}-scsi-"), format!(":0:{t}:0"));
        move |b: &str| b.starts_with(&pre) && b.ends_with(&suf)
    };
    for (serial, slot) in [
        (A, Box::new(scsi_slot(0)) as Box<dyn Fn(&str) -> bool>),
        (B, Box::new(scsi_slot(1))),
        (F, Box::new(scsi_slot(3))),
        (R, Box::new(scsi_slot(4))),
        (N, Box::new(|b: &str| b == nvme_bay)),
    ] {
        let e = &by[serial];
        let last = last_state(e);
        ck.check(
            &format!("{serial}: certified in its bay"),
            last.is_some_and(|l| l["state"] == "certified" && l["bay"].as_str().is_some_and(&slot)),
            || format!("{:?} / {last:?}", states(e)),
        );
    }
    let at = |s: &str, st: &str| first_at(&by[s], st);
    ck.check(
        "B was plugged, erased and certified while A was erasing",
        matches!(
            (at(A, "erasing"), at(B, "identified"), at(B, "certified"), at(A, "certified")),
            (Some(a0), Some(b0), Some(b1), Some(a1)) if a0 < b0 && b1 < a1
        ),
        || format!("A {:?}, B {:?}", states(&by[A]), states(&by[B])),
    );
    ck.check(
        "N is an NVMe drive the station saw arrive",
        by[N]
            .iter()
            .any(|e| e["transport"] == "nvme" && e["state"] == "identified"),
        || format!("{:?}", by[N].first()),
    );
}

/// C, pulled at a tenth of its erase: removed, not erased, no certificate.
fn pulled_not_erased(ck: &mut Checks, by: &Drives, c: &Path) {
    let c_states = states(&by[C]);
    let c_last = last_state(&by[C]);
    let pct = c_last
        .and_then(|l| l["detail"].as_str())
        .and_then(|d| d.strip_prefix("removed at "))
        .and_then(|d| d.strip_suffix(" %: not erased"))
        .and_then(|p| p.parse::<u32>().ok());
    ck.check(
        "C: removed at N %: not erased, 10 <= N < 100",
        c_last.is_some_and(|l| l["state"] == "removed")
            && pct.is_some_and(|p| (10..100).contains(&p)),
        || format!("{c_states:?} / {c_last:?}"),
    );
    ck.check(
        "C: never certified, no certificate",
        !c_states.iter().any(|s| s == "certified")
            && by[C].iter().all(|e| e["certificate"].is_null()),
        || format!("{c_states:?}"),
    );
    let c_bytes = read_all(c);
    let zero_blocks = c_bytes
        .chunks(512)
        .filter(|b| b.iter().all(|x| *x == ERASED))
        .count();
    let old_blocks = c_bytes
        .chunks(512)
        .filter(|b| b.iter().all(|x| *x == OLD))
        .count();
    ck.check(
        "C's image: the erased part the pattern, the rest still the old bytes",
        zero_blocks > 0 && old_blocks > 0 && zero_blocks + old_blocks == c_bytes.len() / 512,
        || {
            format!(
                "{zero_blocks} erased and {old_blocks} old of {} blocks",
                c_bytes.len() / 512
            )
        },
    );
}

/// R, pulled and plugged back: its erase resumed from the journal.
fn pulled_and_back_resumed(ck: &mut Checks, run: &GuestRun, by: &Drives) {
    let r_states = states(&by[R]);
    let removed = r_states.iter().position(|s| s == "removed");
    let certified = r_states.iter().position(|s| s == "certified");
    ck.check(
        "R: removed mid-erase, then back and certified",
        matches!((removed, certified), (Some(a), Some(b)) if a < b),
        || format!("{r_states:?}"),
    );
    let pulled_certs = run.file("certs_after_r_pulled.txt").unwrap_or_default();
    ck.check(
        "R: its journal kept when pulled, no certificate",
        pulled_certs.contains(&format!("erase-{R}-"))
            && pulled_certs.contains(".journal")
            && !pulled_certs
                .lines()
                .any(|l| l.contains(R) && l.ends_with(".json")),
        || pulled_certs.clone(),
    );
    let r_cert = last_state(&by[R])
        .and_then(|l| l["certificate"].as_str().map(|c| host_path(run, c)))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .unwrap_or(Value::Null);
    let erase = &r_cert["certificate"]["erase"];
    let (resumed, this_run) = (
        erase["bytes_resumed"].as_u64().unwrap_or(0),
        erase["bytes_this_run"].as_u64().unwrap_or(0),
    );
    ck.check(
        "R: the second erase resumed the first's bytes and wrote only the rest",
        resumed > 0 && resumed + this_run == 16 * MIB,
        || format!("bytes_resumed {resumed}, bytes_this_run {this_run}"),
    );
}

/// F held until confirmed, O outside, and each erased image all pattern.
fn held_outside_and_erased(
    ck: &mut Checks,
    run: &GuestRun,
    by: &Drives,
    images: &[(&str, &PathBuf)],
) {
    let f_states = states(&by[F]);
    let held = f_states.iter().position(|s| s == "held");
    let erasing = f_states.iter().position(|s| s == "erasing");
    ck.check(
        "F: held for its filesystem before any write, then erased",
        matches!((held, erasing), (Some(h), Some(e)) if h < e)
            && by[F].iter().any(|e| {
                e["state"] == "held" && e["detail"].as_str().is_some_and(|d| d.contains("confirm"))
            }),
        || format!("{f_states:?}"),
    );
    let magic = run.file("f_magic_held.txt").unwrap_or_default();
    ck.check(
        "F: ext4's magic intact while held",
        magic.trim() == "53ef",
        || magic.clone(),
    );

    // O: outside, untouched.
    let o_states = states(&by[O]);
    ck.check(
        "O: shown as outside, never triaged or erased",
        o_states.iter().any(|s| s == "outside")
            && !o_states
                .iter()
                .any(|s| ["triage", "erasing", "held", "certified"].contains(&s.as_str()))
            && by[O].iter().all(|e| e["bay"].is_null()),
        || format!("{o_states:?}"),
    );
    for (serial, path) in images {
        let bytes = read_all(path);
        ck.check(
            &format!("{serial}: the host's image holds the pattern, every byte"),
            bytes.iter().all(|x| *x == ERASED),
            || {
                let off = bytes.iter().filter(|x| **x != ERASED).count();
                format!("{off} bytes not {ERASED:#x}")
            },
        );
    }
}

/// The events against the certificates in /out, each verified on the host.
fn certificates_are_the_events(ck: &mut Checks, run: &GuestRun, by: &Drives) {
    let key = run.out_dir().join("erase-signing.pub");
    let bin = static_drivelab().expect("the static drivelab");
    let mut named = Vec::new();
    for serial in [A, B, F, N, R] {
        let cert =
            last_state(&by[serial]).and_then(|l| l["certificate"].as_str().map(String::from));
        let Some(cert) = cert else {
            ck.check(
                &format!("{serial}: its event names a certificate"),
                false,
                || format!("{:?}", last_state(&by[serial])),
            );
            continue;
        };
        let p = host_path(run, &cert);
        named.push(p.clone());
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        ck.check(
            &format!("{serial}: its certificate is the drive's"),
            text.contains(serial),
            || format!("{} does not name {serial}", p.display()),
        );
        let (code, out) = verify_cert(&bin, &p, &key);
        ck.check(
            &format!("{serial}: its certificate verifies"),
            code == 0 && out.contains("valid signature"),
            || out.clone(),
        );
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(run.out_dir().join("certs"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.extension().is_some_and(|x| x == "json")
                        && std::fs::read_to_string(p).is_ok_and(|t| t.contains("\"signature\""))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    named.sort();
    ck.check(
        "the certificates in /out are exactly those the events name",
        found == named,
        || format!("found {found:?}, named {named:?}"),
    );
}

/// The store's records: every erase once, under the drive the erase saw.
fn stored_as_seen(ck: &mut Checks, run: &GuestRun, ev: &[Value]) {
    let stored: Vec<&str> = ev
        .iter()
        .filter(|e| e["event"] == "stored")
        .filter_map(|e| e["serial"].as_str())
        .collect();
    ck.check(
        "the store took A, B, C (removed), F, N and R (twice), not O",
        [A, B, C, F, N].iter().all(|s| stored.contains(s))
            && stored.iter().filter(|s| **s == R).count() == 2
            && !stored.contains(&O),
        || format!("{stored:?}"),
    );
    // C's node went to F before C's result was stored: the record must
    // still be C's, with the model the station saw.
    let hist = run.outcome_json("hist_c");
    let rows = hist.as_ref().ok().and_then(|(_, v)| v.as_array().cloned());
    ck.check(
        "history --drive C lists C's one erase, not erased, with its model",
        rows.as_ref().is_some_and(|r| {
            r.len() == 1
                && r[0]["drives"]
                    .as_str()
                    .is_some_and(|d| d == format!("{SCSI_MODEL} {C}"))
                && r[0]["verdict"] != "erased"
        }),
        || format!("{hist:?}"),
    );
    let all = run.outcome_json("hist_all");
    let f_rows = all
        .as_ref()
        .ok()
        .and_then(|(_, v)| v.as_array().cloned())
        .map(|r| {
            r.iter()
                .filter(|x| x["drives"].as_str().is_some_and(|d| d.contains(F)))
                .count()
        });
    ck.check("the store holds one erase of F", f_rows == Some(1), || {
        format!("{all:?}")
    });
}
