//! Issue 17 item 1 in a real kernel: fio's `ioengine=io_uring_cmd`
//! (`cmd_type=nvme`) on an NVMe namespace's generic character device
//! (/dev/ngXnY) of a QEMU NVMe controller, fio 3.33 (the host's binary,
//! copied in) and drivelab in one boot.
//!
//! - fio's examples/uring-cmd-ng.fio (tests/data/fio-jobs/uring-cmd/, 4 MiB
//!   instead of 1 GiB): both tools run its three jobs (random writes with
//!   `sqthread_poll`, random reads, sequential writes with
//!   `sqthread_poll_cpu`, `nonvectored`, `registerfiles`) with the same
//!   reads, writes, bytes and errors per job.
//! - ucmd-data.fio (ours, the same options on disjoint ranges, plus
//!   `fixedbufs` with `verify=crc32c`): the same again, and the namespace,
//!   read back through its block device after each tool, holds the same
//!   bytes — the pattern over 1–3 MiB and 4–6 MiB, zeroes where nothing was
//!   written, written data over the verify job's 8–10 MiB — which shows
//!   each tool wrote every block of its ranges and none outside. fio's
//!   `write_iolog` of the random writes lists every 4 KiB block of 1–3 MiB
//!   exactly once, as drivelab's data shows it wrote them.
//! - ucmd-iops.fio: 4 s of 4 KiB random reads at depth 32 with each tool;
//!   the IOPS are printed side by side (no assertion on them).
//! - Refusals, each exit status 2 with one line, nothing written: a plain
//!   file, /dev/null (a character device that is not NVMe's), the
//!   namespace's block device itself, and /dev/ngXnY of a namespace that
//!   carries a filesystem signature (the claim of its block device
//!   refuses it without --force).
//!
//!
//! And fio's examples/uring-cmd-zoned.fio (`zonemode=zbd`, 4 MiB instead
//! of 1 GiB, without its `verify=crc32c`) on a zoned namespace (QEMU ZNS,
//! 1 MiB zones), every zone reset before each tool's run: both tools run
//! its three jobs with the same writes, bytes and errors per job and leave
//! the zones' write pointers alike. With `verify=crc32c`, as fio ships it,
//! drivelab refuses it (exit 2, one line: zonemode=zbd does not take
//! verify yet) and writes nothing.
//!
//! Needs root, QEMU, the cached kernel (`bash tests/vm/setup.sh`), and fio
//! and util-linux's blkzone on the host (`tests/run` installs them).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use drivelab_vmtest::{Checks, Disk, GuestRun, Vm, MIB};
use serde_json::Value;

const SERIAL: &str = "DLUCMD01";
const NG: &str = include_str!("../../../tests/data/fio-jobs/uring-cmd/uring-cmd-ng.fio");
const DATA: &str = include_str!("../../../tests/data/fio-jobs/uring-cmd/ucmd-data.fio");
const IOPS: &str = include_str!("../../../tests/data/fio-jobs/uring-cmd/ucmd-iops.fio");
const ZONED: &str = include_str!("../../../tests/data/fio-jobs/uring-cmd/uring-cmd-zoned.fio");
const ZSERIAL: &str = "DLUCMDZNS";

fn guest_script() -> String {
    // fio alone also logs the random writes' offsets.
    let fio_data = DATA.replace("[rand-write]\n", "[rand-write]\nwrite_iolog=fio_rw.iolog\n");
    let mut s = format!(
        r#"
exec < /dev/null
export PATH=$PATH:/usr/sbin:/sbin:/usr/bin
n=$(disk_by_serial {SERIAL})
B=/dev/$n
NG=/dev/ng${{n#nvme}}
export DL_NG=$NG
echo "$B $NG" > names.txt
ls -l /dev/ng* > ng_nodes.txt 2>&1
"#
    );
    for (name, text) in [
        ("ng", NG),
        ("data", DATA),
        ("fio-data", fio_data.as_str()),
        ("iops", IOPS),
    ] {
        s.push_str(&format!("cat > /tmp/{name}.fio <<'JOBEOF'\n{text}JOBEOF\n"));
    }
    s.push_str(
        r#"
zero() { dd if=/dev/zero of=$B bs=1M count=16 oflag=direct 2>/dev/null; }
md5() { md5sum | cut -d' ' -f1; }
region() { dd if=$B bs=1M skip=$1 count=$2 iflag=direct 2>/dev/null | md5; }
regions() { echo "$(region 0 1) $(region 1 2) $(region 3 1) $(region 4 2) $(region 6 2) $(region 8 2) $(region 10 6)"; }
# What the ranges should hold.
z1=$(head -c 1048576 /dev/zero | md5)
z2=$(head -c 2097152 /dev/zero | md5)
z6=$(head -c 6291456 /dev/zero | md5)
p5a=$(head -c 2097152 /dev/zero | tr '\000' '\132' | md5)
printf '\245\303' > /tmp/pat
for i in $(seq 20); do cat /tmp/pat /tmp/pat > /tmp/pat2; mv /tmp/pat2 /tmp/pat; done
pa5c3=$(md5 < /tmp/pat)
echo "$z1 $p5a $z1 $pa5c3 $z2 written $z6" > expected.txt
for t in fio dl; do
  zero
  if [ $t = fio ]; then
    run_json ${t}_ng fio --output-format=json /tmp/ng.fio
  else
    run_json ${t}_ng drivelab run /tmp/ng.fio --force --no-store --output-format=json
  fi
  zero
  if [ $t = fio ]; then
    run_json ${t}_data fio --output-format=json /tmp/fio-data.fio
  else
    run_json ${t}_data drivelab run /tmp/data.fio --force --no-store --output-format=json
  fi
  regions > regions_$t.txt
  if [ $t = fio ]; then
    run_json ${t}_iops fio --output-format=json /tmp/iops.fio
  else
    run_json ${t}_iops drivelab run /tmp/iops.fio --force --no-store --output-format=json
  fi
done
# Refusals: nothing may be written.
zero
head -c 65536 /dev/urandom > /tmp/plain
before=$(md5 < /tmp/plain)
run_json refuse_file drivelab run --name=r --filename=/tmp/plain --ioengine=io_uring_cmd --cmd_type=nvme --rw=write --bs=4k --size=64k --force --no-store
echo "$before $(md5 < /tmp/plain)" > refuse_file.md5
run_json refuse_null drivelab run --name=r --filename=/dev/null --ioengine=io_uring_cmd --cmd_type=nvme --rw=write --bs=4k --size=64k --force --no-store
run_json refuse_block drivelab run --name=r --filename=$B --ioengine=io_uring_cmd --cmd_type=nvme --rw=write --bs=4k --size=64k --force --no-store
echo "$(head -c 16777216 /dev/zero | md5) $(region 0 16)" > refuse_block.md5
# An ext4 magic (0xEF53 at byte 1080): the claim of the block device refuses.
printf '\123\357' | dd of=$B bs=1 seek=1080 conv=notrunc 2>/dev/null
sync
sig=$(region 0 16)
run_json refuse_sig drivelab run --name=r --filename=$NG --ioengine=io_uring_cmd --cmd_type=nvme --rw=write --bs=4k --size=64k --no-store
echo "$sig $(region 0 16)" > refuse_sig.md5
true
"#,
    );
    s
}

fn boot() -> GuestRun {
    assert!(
        Path::new("/usr/bin/fio").is_file(),
        "fio is not installed on the host; this test compares drivelab with it (apt-get install fio)"
    );
    let vm = Vm::builder()
        .nvme(Disk::new(32 * MIB, SERIAL))
        .with_drivelab()
        .host_tool("/usr/bin/fio")
        .guest_script(&guest_script())
        .timeout(Duration::from_secs(400));
    match vm.run() {
        Ok(r) => r,
        Err(e) => panic!("the test VM did not run: {e}"),
    }
}

/// The JSON after any notes a tool printed before it.
fn json_of(run: &GuestRun, name: &str) -> (i64, Value, String) {
    let (status, out, err) = run.outcome(name);
    let start = out.find('{').unwrap_or(0);
    let v = serde_json::from_str(&out[start..]).unwrap_or(Value::Null);
    (status, v, err)
}

/// Per job: (name, read total_ios, read io_bytes, write total_ios, write
/// io_bytes, error).
type JobLine = (String, u64, u64, u64, u64, i64);

fn per_job(v: &Value) -> Vec<JobLine> {
    v["jobs"]
        .as_array()
        .map(|jobs| {
            jobs.iter()
                .map(|j| {
                    let n = |d: &str, k: &str| j[d][k].as_u64().unwrap_or(u64::MAX);
                    (
                        j["jobname"].as_str().unwrap_or("").to_string(),
                        n("read", "total_ios"),
                        n("read", "io_bytes"),
                        n("write", "total_ios"),
                        n("write", "io_bytes"),
                        j["error"].as_i64().unwrap_or(-1),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn check(c: &mut Checks, ok: bool, what: String) {
    c.check(&what, ok, || "not so".to_string());
}

/// Both tools ran `name` successfully and did the same I/O per job.
fn same_io(c: &mut Checks, run: &GuestRun, name: &str, want_jobs: &[&str]) {
    let (fs, fv, ferr) = json_of(run, &format!("fio_{name}"));
    let (ds, dv, derr) = json_of(run, &format!("dl_{name}"));
    let (fj, dj) = (per_job(&fv), per_job(&dv));
    println!("{name}: fio exit {fs}, drivelab exit {ds}");
    for (f, d) in fj.iter().zip(&dj) {
        println!(
            "  {:<13} fio: {:>4} reads {:>8} B {:>4} writes {:>8} B error {}   drivelab: {:>4} reads {:>8} B {:>4} writes {:>8} B error {}",
            f.0, f.1, f.2, f.3, f.4, f.5, d.1, d.2, d.3, d.4, d.5
        );
    }
    check(
        c,
        fs == 0 && ds == 0,
        format!("{name}: both exit 0 (fio {fs}, drivelab {ds}): {ferr} {derr}"),
    );
    let names: Vec<&str> = dj.iter().map(|j| j.0.as_str()).collect();
    check(
        c,
        names == want_jobs,
        format!("{name}: drivelab ran the jobs {want_jobs:?}: {names:?}"),
    );
    check(
        c,
        fj == dj,
        format!(
            "{name}: the same reads, writes, bytes and errors per job: fio {fj:?}, drivelab {dj:?}"
        ),
    );
    check(
        c,
        !dj.is_empty() && dj.iter().all(|j| j.5 == 0 && j.2 + j.4 > 0),
        format!("{name}: every drivelab job moved data without error: {dj:?}"),
    );
}

#[test]
fn fio_uring_cmd_example_does_the_same_io_in_drivelab() {
    let run = boot();
    let mut c = Checks::new();
    check(
        &mut c,
        run.script_status == 0,
        format!("guest script exited 0 (status {})", run.script_status),
    );
    let names = run.file("names.txt").unwrap_or_default();
    println!("namespace: {}", names.trim());
    check(
        &mut c,
        names.contains("/dev/nvme") && names.contains("/dev/ng"),
        format!(
            "the namespace has a block and a generic node: {} ({})",
            names.trim(),
            run.file("ng_nodes.txt").unwrap_or_default().trim()
        ),
    );
    same_io(
        &mut c,
        &run,
        "ng",
        &["rand-write", "rand-read", "write-opts"],
    );
    same_io(
        &mut c,
        &run,
        "data",
        &["rand-write", "rand-read", "seq-opts", "verify-fixed"],
    );
    // The 4 MiB example at 4 KiB: 1024 writes, 1024 reads, 1024 writes.
    let (_, dv, _) = json_of(&run, "dl_ng");
    let dj = per_job(&dv);
    check(
        &mut c,
        dj.iter().map(|j| j.1 + j.3).collect::<Vec<_>>() == [1024, 1024, 1024],
        format!("ng: 1024 I/Os of 4 KiB per job: {dj:?}"),
    );
    let shown = dv["jobs"][0]["job options"]["filename"]
        .as_str()
        .unwrap_or("")
        .to_string();
    check(
        &mut c,
        shown.starts_with("/dev/ng") && names.contains(&shown),
        format!("drivelab's job options name the generic node the job gave: {shown}"),
    );
    // The medium after each tool's data run.
    let expected: Vec<String> = run
        .file("expected.txt")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    for t in ["fio", "dl"] {
        let got: Vec<String> = run
            .file(&format!("regions_{t}.txt"))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        let ok = got.len() == 7
            && expected.len() == 7
            && got.iter().zip(&expected).all(|(g, e)| {
                if e == "written" {
                    *g != expected[4]
                } else {
                    g == e
                }
            });
        check(
            &mut c,
            ok,
            format!(
                "data after {t}: 0x5a over 1-3 MiB, 0xa5c3 over 4-6 MiB, written data over 8-10 MiB, zeroes elsewhere (md5 per range {got:?}, expected {expected:?})"
            ),
        );
    }
    // fio's offsets: each 4 KiB block of 1-3 MiB written once.
    let log = run.file("fio_rw.iolog").unwrap_or_default();
    let mut writes: BTreeMap<u64, u32> = BTreeMap::new();
    for l in log.lines() {
        // Version 3: "TIME FILE write OFFSET LENGTH".
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 5 && f[2] == "write" {
            if let (Ok(off), Ok(len)) = (f[3].parse::<u64>(), f[4].parse::<u64>()) {
                if len == 4096 {
                    *writes.entry(off).or_default() += 1;
                }
            }
        }
    }
    let want: Vec<u64> = (0..512).map(|i| MIB + 4096 * i).collect();
    check(
        &mut c,
        writes.keys().copied().collect::<Vec<_>>() == want && writes.values().all(|&n| n == 1),
        format!(
            "fio's write_iolog of rand-write names each 4 KiB block of 1-3 MiB once ({} offsets), the blocks drivelab's data shows it wrote",
            writes.len()
        ),
    );
    // IOPS side by side.
    let iops = |name: &str| json_of(&run, name).1["jobs"][0]["read"]["iops"].as_f64();
    let (fi, di) = (iops("fio_iops"), iops("dl_iops"));
    println!(
        "4 KiB random read QD32 on the emulated namespace, 4 s: fio {:.0} IOPS, drivelab {:.0} IOPS, ratio drivelab/fio {:.2}",
        fi.unwrap_or(0.0),
        di.unwrap_or(0.0),
        di.unwrap_or(0.0) / fi.unwrap_or(f64::NAN)
    );
    check(
        &mut c,
        fi.is_some_and(|v| v > 0.0) && di.is_some_and(|v| v > 0.0),
        format!("both measured random-read IOPS (fio {fi:?}, drivelab {di:?})"),
    );
    // Refusals.
    for (name, words) in [
        ("refuse_file", "/dev/ngXnY"),
        ("refuse_null", "/dev/ngXnY"),
        ("refuse_block", "/dev/ngXnY"),
        ("refuse_sig", "signature"),
    ] {
        let (status, out, err) = run.outcome(name);
        let line = err.trim();
        check(
            &mut c,
            status == 2 && line.lines().count() == 1 && line.contains(words),
            format!(
                "{name}: exit 2 with one line naming {words:?}: status {status}, {line:?} {out:?}"
            ),
        );
    }
    let pair = |f: &str| -> (String, String) {
        let t = run.file(f).unwrap_or_default();
        let mut w = t.split_whitespace().map(str::to_string);
        (w.next().unwrap_or_default(), w.next().unwrap_or_default())
    };
    let (a, b) = pair("refuse_file.md5");
    check(
        &mut c,
        !a.is_empty() && a == b,
        format!("the refused plain file is unchanged ({a} {b})"),
    );
    let (z, after) = pair("refuse_block.md5");
    check(
        &mut c,
        !z.is_empty() && z == after,
        format!("the zeroed namespace is still zero after the refused runs ({z} {after})"),
    );
    let (a, b) = pair("refuse_sig.md5");
    check(
        &mut c,
        !a.is_empty() && a == b && a != z,
        format!(
            "the namespace with a signature is unchanged by the refused run ({a} {b}; zeroed {z})"
        ),
    );
    c.finish(&run.context());
}

fn zoned_script() -> String {
    format!(
        r#"
exec < /dev/null
export PATH=$PATH:/usr/sbin:/sbin:/usr/bin
n=$(disk_by_serial {ZSERIAL})
B=/dev/$n
export DL_NG=/dev/ng${{n#nvme}}
echo "$B $DL_NG zoned=$(cat /sys/block/$n/queue/zoned) chunk=$(cat /sys/block/$n/queue/chunk_sectors)" > names.txt
cat > /tmp/zoned.fio <<'JOBEOF'
{ZONED}JOBEOF
for t in fio dl; do
  blkzone reset $B
  if [ $t = fio ]; then
    run_json ${{t}}_zoned fio --output-format=json /tmp/zoned.fio
  else
    run_json ${{t}}_zoned drivelab run /tmp/zoned.fio --force --no-store --output-format=json
  fi
  blkzone report $B > zones_$t.txt 2>&1
done
blkzone reset $B
awk '{{print}} /^bs=256K$/ {{print "verify=crc32c"}}' /tmp/zoned.fio > /tmp/zoned-verify.fio
grep -c '^verify=crc32c' /tmp/zoned-verify.fio > verify_lines.txt
run_json dl_zoned_verify drivelab run /tmp/zoned-verify.fio --force --no-store
blkzone report $B > zones_verify.txt 2>&1
true
"#
    )
}

/// The write pointer of each zone, from `blkzone report` (sectors from
/// the zone's start).
fn wptrs(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split("wptr ").nth(1))
        .filter_map(|v| v.split([',', ' ']).find(|s| !s.is_empty()))
        .map(str::to_string)
        .collect()
}

#[test]
fn fio_uring_cmd_zoned_example_does_the_same_io_in_drivelab() {
    assert!(
        Path::new("/usr/sbin/blkzone").is_file(),
        "util-linux's blkzone is not on the host (/usr/sbin/blkzone)"
    );
    let run = Vm::builder()
        .nvme(Disk::new(16 * MIB, ZSERIAL).zoned(MIB))
        .with_drivelab()
        .host_tool("/usr/bin/fio")
        .host_tool("/usr/sbin/blkzone")
        .guest_script(&zoned_script())
        .timeout(Duration::from_secs(400))
        .run()
        .unwrap_or_else(|e| panic!("the test VM did not run: {e}"));
    let mut c = Checks::new();
    let names = run.file("names.txt").unwrap_or_default();
    println!("namespace: {}", names.trim());
    check(
        &mut c,
        names.contains("zoned=host-managed"),
        format!(
            "the namespace is a host-managed zoned disk: {}",
            names.trim()
        ),
    );
    same_io(
        &mut c,
        &run,
        "zoned",
        &["rand-write", "write-opts", "randwrite-opts"],
    );
    let (f, d) = (
        wptrs(&run.file("zones_fio.txt").unwrap_or_default()),
        wptrs(&run.file("zones_dl.txt").unwrap_or_default()),
    );
    println!("write pointers after fio {f:?}\nwrite pointers after drivelab {d:?}");
    check(
        &mut c,
        f.len() == 16 && f == d,
        format!("the zones' write pointers are alike after fio and drivelab: {f:?} {d:?}"),
    );
    let (status, _, err) = run.outcome("dl_zoned_verify");
    let lines = run.file("verify_lines.txt").unwrap_or_default();
    check(
        &mut c,
        lines.trim() == "1"
            && status == 2
            && err.trim().lines().count() == 1
            && err.contains("verify"),
        format!("with fio's verify=crc32c ({} line) drivelab exits 2 with one line naming verify: status {status}, {err:?}", lines.trim()),
    );
    let after = wptrs(&run.file("zones_verify.txt").unwrap_or_default());
    check(
        &mut c,
        after.len() == 16 && after.iter().all(|w| w == "0x000000"),
        format!("and writes nothing: every zone empty {after:?}"),
    );
    c.finish(&run.context());
}
