//! Issue 17 item 1, fio's `zonemode=zbd`, on a real host-managed zoned
//! disk: scsi_debug with `zbc=managed`, 16 zones of 1 MiB, all sequential,
//! at most 8 open (the kernel's `max_open_zones`).
//!
//! In one boot, fio (the host's, copied in) and drivelab each run the
//! shrunk zbd examples of `tests/data/fio-jobs` (`zbd-rand-write`,
//! `zbd-seq-read`, `zbd-rand-write-zone-reset-gc`) with `${DL_DEV}` the
//! zoned disk, every zone reset before each run (util-linux's `blkzone`,
//! also the host's). After each run `blkzone report` gives the write
//! pointers, and the test asserts for both tools:
//!
//! - the run succeeded and wrote and read the same bytes as the other tool;
//! - every write pointer sits on a block boundary of the job, inside the
//!   job's range, zones outside it stay empty;
//! - the data below the write pointers is what the job wrote less whole
//!   zones reset: for rand-write, written − Σ(wp − start) is a multiple of
//!   the zone size (full zones are reset before they are written again);
//!   for seq-read, the reader read exactly Σ(wp − start) of the zones its
//!   fill job wrote (`read_beyond_wp=0` stops it at the data);
//! - the zone-reset-gc run leaves at most its range's worth of data.
//!
//! Then both run `zbd/zbd-rand-write-trim-gc.fio` (fio's trim-gc example,
//! whose trims are zone resets; fio with `normal,json` output, as it says
//! its zone resets only in its text), and the test asserts for both: 12
//! writes and 2 trims of one zone, 2 zone resets (no zone fills: fewer
//! bytes are written than a zone holds), write pointers on 64 KiB
//! boundaries inside the job's 4 zones, and the data left below them what
//! was written less what the 2 resets discarded: at least one block each,
//! at most a zone each.
//!
//! And `zonemode=zbd` on a disk that is not zoned, without `zonesize`, is
//! refused with exit status 2 and one line.
//!
//! Needs root, QEMU, the cached kernel (`bash tests/vm/setup.sh`), and fio
//! and util-linux's blkzone on the host.

use std::time::Duration;

use drivelab_vmtest::{Checks, Disk, GuestRun, Vm, MIB};
use serde_json::Value;

const PLAIN: &str = "DLZBDPLAIN";
const ZONE: u64 = 1 << 20;
const ZONES: u64 = 16;
/// The job files, as in tests/data/fio-jobs.
const JOBS: [(&str, &str); 3] = [
    (
        "zbd-rand-write",
        include_str!("../../../tests/data/fio-jobs/zbd-rand-write.fio"),
    ),
    (
        "zbd-seq-read",
        include_str!("../../../tests/data/fio-jobs/zbd-seq-read.fio"),
    ),
    (
        "zbd-rand-write-zone-reset-gc",
        include_str!("../../../tests/data/fio-jobs/zbd-rand-write-zone-reset-gc.fio"),
    ),
];

/// fio's trim-gc example, shrunk (tests/data/fio-jobs/zbd).
const TRIM_GC: &str = include_str!("../../../tests/data/fio-jobs/zbd/zbd-rand-write-trim-gc.fio");

fn script() -> String {
    let mut s = String::from(
        r#"
exec < /dev/null
export PATH=$PATH:/usr/sbin:/sbin:/usr/bin
D=/dev/$(disk_by_model scsi_debug)
P=/dev/$(disk_by_serial @PLAIN@)
n=${D##*/}
export DL_DEV=$D
for a in zoned chunk_sectors nr_zones max_open_zones scheduler; do
  echo "$a=$(cat /sys/block/$n/queue/$a)" >> queue.txt
done
"#,
    )
    .replace("@PLAIN@", PLAIN);
    for (name, text) in JOBS {
        s.push_str(&format!("cat > /tmp/{name}.fio <<'JOBEOF'\n{text}JOBEOF\n"));
    }
    s.push_str(&format!(
        "cat > /tmp/trim-gc.fio <<'JOBEOF'\n{TRIM_GC}JOBEOF\n"
    ));
    s.push_str(
        r#"
for t in fio dl; do
  for j in zbd-rand-write zbd-seq-read zbd-rand-write-zone-reset-gc; do
    blkzone reset $D
    blkzone report $D > ${t}_$j.before 2>&1
    if [ $t = fio ]; then
      run_json ${t}_$j fio --output-format=json /tmp/$j.fio
    else
      run_json ${t}_$j drivelab run /tmp/$j.fio --force --no-store --output-format=json
    fi
    blkzone report $D > ${t}_$j.zones 2>&1
  done
done
for t in fio dl; do
  blkzone reset $D
  blkzone report $D > ${t}_trim-gc.before 2>&1
  if [ $t = fio ]; then
    run_json ${t}_trim-gc fio --output-format=normal,json /tmp/trim-gc.fio
  else
    run_json ${t}_trim-gc drivelab run /tmp/trim-gc.fio --force --no-store --output-format=json
  fi
  blkzone report $D > ${t}_trim-gc.zones 2>&1
done
cat > /tmp/plain.fio <<'JOBEOF'
[plain]
filename=${DL_DEV}
zonemode=zbd
rw=write
bs=64k
size=1m
direct=1
JOBEOF
DL_DEV=$P run_json plain drivelab run /tmp/plain.fio --force --no-store --output-format=json
true
"#,
    );
    s
}

fn boot() -> GuestRun {
    let vm = Vm::builder()
        .scsi_debug(&format!(
            "dev_size_mb={} zbc=managed zone_size_mb=1 zone_nr_conv=0",
            ZONES
        ))
        .scsi_hd(Disk::new(8 * MIB, PLAIN))
        .with_drivelab()
        .host_tool("/usr/bin/fio")
        .host_tool("/usr/sbin/blkzone")
        .guest_script(&script())
        .timeout(Duration::from_secs(240));
    match vm.run() {
        Ok(r) => r,
        Err(e) => panic!("the test VM did not run: {e}"),
    }
}

/// One zone of `blkzone report`: (start, bytes below the write pointer);
/// blkzone prints `wptr` from the zone's start, in sectors.
fn zones(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let field = |k: &str| -> Option<u64> {
                let v = l.split(k).nth(1)?.trim_start();
                let v = v.split([',', ' ']).next()?;
                match v.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).ok(),
                    None => v.parse().ok(),
                }
            };
            Some((field("start:")? * 512, field("wptr ")? * 512))
        })
        .collect()
}

/// Bytes read and written, summed over the jobs of a fio-shaped JSON.
fn io_bytes(v: &Value) -> (u64, u64) {
    let jobs = v["jobs"].as_array().cloned().unwrap_or_default();
    let sum = |d: &str| {
        jobs.iter()
            .map(|j| j[d]["io_bytes"].as_u64().unwrap_or(0))
            .sum()
    };
    (sum("read"), sum("write"))
}

/// A job's bytes (read, written) by name.
fn job_bytes(v: &Value, name: &str) -> (u64, u64) {
    let jobs = v["jobs"].as_array().cloned().unwrap_or_default();
    jobs.iter()
        .filter(|j| j["jobname"] == name)
        .map(|j| {
            (
                j["read"]["io_bytes"].as_u64().unwrap_or(0),
                j["write"]["io_bytes"].as_u64().unwrap_or(0),
            )
        })
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// The JSON a run printed (fio may print notes before it, and its text
/// after it with `normal,json`).
fn json(run: &GuestRun, name: &str) -> Result<Value, String> {
    let out = run
        .file(&format!("{name}.out"))
        .map_err(|e| e.to_string())?;
    let (Some(start), Some(end)) = (out.find('{'), out.rfind('}')) else {
        return Err(format!("{name}: no JSON: {out}"));
    };
    serde_json::from_str(&out[start..=end]).map_err(|e| format!("{name}: {e}"))
}

/// The number before `key` in fio's text (`; 2 zone resets`).
fn count_before(text: &str, key: &str) -> Option<u64> {
    let i = text.find(key)?;
    text[..i]
        .split([' ', ';'])
        .rfind(|w| !w.is_empty())?
        .parse()
        .ok()
}

/// fio's trim-gc example: the same writes, trims and zone resets in both
/// tools, and write pointers that the workload explains.
fn check_trim_gc(run: &GuestRun, c: &mut Checks) {
    let mut counts = Vec::new();
    for tool in ["fio", "dl"] {
        let name = format!("{tool}_trim-gc");
        let (status, out, err) = run.outcome(&name);
        c.check(&format!("{name}: exit status 0"), status == 0, || {
            format!("status {status}: {err}")
        });
        let v = match json(run, &name) {
            Ok(v) => v,
            Err(e) => {
                c.check(&format!("{name}: JSON"), false, || e);
                continue;
            }
        };
        // group_reporting: one entry for the three jobs.
        let j = &v["jobs"][0];
        let n = |d: &str, k: &str| j[d][k].as_u64().unwrap_or(0);
        let (wios, w, tios, tb) = (
            n("write", "total_ios"),
            n("write", "io_bytes"),
            n("trim", "total_ios"),
            n("trim", "io_bytes"),
        );
        let resets = if tool == "fio" {
            count_before(&out, " zone resets")
        } else {
            j["zone_resets"].as_u64()
        };
        let before = zones(&run.file(&format!("{name}.before")).unwrap_or_default());
        let z = zones(&run.file(&format!("{name}.zones")).unwrap_or_default());
        let data: u64 = z.iter().map(|z| z.1).sum();
        println!(
            "{name}: {wios} writes ({w} bytes), {tios} trims ({tb} bytes), {resets:?} zone resets, data below write pointers {data}"
        );
        counts.push((wios, w, tios, tb, resets));
        c.check(
            &format!("{name}: 12 writes of 64 KiB, 2 trims of a zone"),
            (wios, w, tios, tb) == (12, 768 << 10, 2, 2 * ZONE),
            || format!("{wios} writes, {w} bytes; {tios} trims, {tb} bytes"),
        );
        c.check(
            &format!("{name}: 2 zone resets, one per trim"),
            resets == Some(2),
            || format!("{resets:?}: {out}"),
        );
        c.check(
            &format!("{name}: {ZONES} zones, empty before"),
            before.len() == ZONES as usize
                && before.iter().all(|z| z.1 == 0)
                && z.len() == ZONES as usize,
            || format!("before {before:?}, after {z:?}"),
        );
        let bad: Vec<String> = z
            .iter()
            .enumerate()
            .filter(|(i, (_, used))| used % 65536 != 0 || (!(2..6).contains(i) && *used != 0))
            .map(|(i, (_, used))| format!("zone {i}: {used} bytes below the write pointer"))
            .collect();
        c.check(
            &format!("{name}: write pointers on 64 KiB boundaries, inside zones 2-5"),
            bad.is_empty(),
            || bad.join(", "),
        );
        // Each reset discarded a zone with data: a block at least, a zone
        // at most (no zone holds more than was written to it).
        c.check(
            &format!("{name}: data = written less what 2 resets discarded"),
            data + 2 * 65536 <= w && w - data <= 2 * ZONE,
            || format!("written {w}, data {data}"),
        );
    }
    c.check(
        "trim-gc: drivelab writes, trims and resets what fio does",
        counts.len() == 2 && counts[0] == counts[1],
        || format!("{counts:?}"),
    );
}

#[test]
fn zbd_examples_write_at_write_pointers_as_fio_does() {
    let run = boot();
    let mut c = Checks::new();
    let queue = run.file("queue.txt").unwrap_or_default();
    println!("{queue}");
    c.check(
        "the scsi_debug disk is host-managed",
        queue.contains("zoned=host-managed"),
        || queue.clone(),
    );
    let mut bytes = std::collections::BTreeMap::new();
    for tool in ["fio", "dl"] {
        for (job, _) in JOBS {
            let name = format!("{tool}_{job}");
            let (status, _, err) = run.outcome(&name);
            c.check(&format!("{name}: exit status 0"), status == 0, || {
                format!("status {status}: {err}")
            });
            let v = match json(&run, &name) {
                Ok(v) => v,
                Err(e) => {
                    c.check(&format!("{name}: JSON"), false, || e);
                    continue;
                }
            };
            let before = zones(&run.file(&format!("{name}.before")).unwrap_or_default());
            c.check(
                &format!("{name}: zones empty before"),
                before.len() == ZONES as usize && before.iter().all(|z| z.1 == 0),
                || format!("{before:?}"),
            );
            let z = zones(&run.file(&format!("{name}.zones")).unwrap_or_default());
            c.check(
                &format!("{name}: {ZONES} zones reported"),
                z.len() == ZONES as usize,
                || format!("{z:?}"),
            );
            let (r, w) = io_bytes(&v);
            bytes.insert(name.clone(), (r, w));
            let data: u64 = z.iter().map(|z| z.1).sum();
            println!("{name}: read {r}, written {w}, data below write pointers {data}");
            let (range, bs) = match job {
                "zbd-rand-write" => (0..ZONES, 65536),
                "zbd-seq-read" => (2..5, 65536),
                _ => (2..6, 262144),
            };
            let bad: Vec<String> = z
                .iter()
                .enumerate()
                .filter(|(i, (_, used))| {
                    used % bs != 0 || (!range.contains(&(*i as u64)) && *used != 0)
                })
                .map(|(i, (_, used))| format!("zone {i}: {used} bytes below the write pointer"))
                .collect();
            c.check(
                &format!("{name}: write pointers on block boundaries, inside the range"),
                bad.is_empty(),
                || bad.join(", "),
            );
            // drivelab says how many zones it reset (fio only in its text).
            let resets = v["jobs"][0]["zone_resets"].as_u64();
            if tool == "dl" {
                println!("{name}: {resets:?} zone resets");
                c.check(
                    &format!("{name}: zone resets reported"),
                    resets.is_some(),
                    || v["jobs"][0].to_string(),
                );
            }
            match job {
                "zbd-rand-write" => {
                    if let Some(n) = resets {
                        c.check(
                            &format!("{name}: written = data + resets × zone size"),
                            w == data + n * ZONE,
                            || format!("written {w}, data {data}, {n} resets"),
                        );
                    }
                    c.check(&format!("{name}: wrote 4 MiB"), w == 4 * MIB, || {
                        w.to_string()
                    });
                    c.check(
                        &format!("{name}: data = written less whole zones reset"),
                        data <= w && (w - data) % ZONE == 0,
                        || format!("written {w}, data {data}"),
                    );
                }
                "zbd-seq-read" => {
                    let (_, fw) = job_bytes(&v, "fill");
                    let (rr, _) = job_bytes(&v, "dev1");
                    c.check(
                        &format!("{name}: the fill job wrote 3 zones"),
                        fw == 3 * ZONE && data == 3 * ZONE,
                        || format!("fill {fw}, data {data}"),
                    );
                    c.check(
                        &format!("{name}: read exactly the data"),
                        rr == data,
                        || format!("read {rr}, data {data}"),
                    );
                }
                _ => {
                    if let Some(n) = resets {
                        c.check(&format!("{name}: zones were reset"), n > 0, || {
                            n.to_string()
                        });
                    }
                    c.check(&format!("{name}: wrote 8 MiB"), w == 8 * MIB, || {
                        w.to_string()
                    });
                    c.check(
                        &format!("{name}: at most 4 zones of data, less than written"),
                        data <= 4 * ZONE && data < w && data > 0,
                        || format!("written {w}, data {data}"),
                    );
                }
            }
        }
    }
    for (job, _) in JOBS {
        let f = bytes.get(&format!("fio_{job}"));
        let d = bytes.get(&format!("dl_{job}"));
        c.check(
            &format!("{job}: drivelab reads and writes what fio does"),
            f.is_some() && f == d,
            || format!("fio {f:?}, drivelab {d:?}"),
        );
    }
    check_trim_gc(&run, &mut c);
    // With --output-format=json the refusal is a JSON line on stdout.
    let (status, out, err) = run.outcome("plain");
    let said = format!("{out}{err}");
    c.check(
        "zonemode=zbd on a disk that is not zoned: exit 2, one line naming zonemode",
        status == 2 && said.trim().lines().count() == 1 && said.contains("zonemode"),
        || format!("status {status}: {said}"),
    );
    println!(
        "{}",
        run.file("fio_zbd-rand-write.zones").unwrap_or_default()
    );
    c.finish(&run.context());
}

#[test]
fn fio_zone_reset_counts_parse() {
    let l = "  write: IOPS=6000, BW=375MiB/s (393MB/s)(768KiB/2msec); 2 zone resets\n";
    assert_eq!(count_before(l, " zone resets"), Some(2));
    assert_eq!(count_before("no such line", " zone resets"), None);
}

#[test]
fn blkzone_report_lines_parse() {
    let l = "  start: 0x000000800, len 0x000800, cap 0x000800, wptr 0x000080 reset:0 non-seq:0, zcond: 2(oi) [type: 2(SEQ_WRITE_REQUIRED)]";
    assert_eq!(zones(l), vec![(0x800 * 512, 0x80 * 512)]);
    assert!(zones("blkzone: not a zoned device").is_empty());
}
