//! Issue 15 item 3 in a real kernel: the replay score ranks drives.
//!
//! Two 16 MiB virtio-scsi disks whose media take writes at different rates
//! (QEMU's `throttling.bps-write`): SLOW at 400 KiB/s, about 100 writes of
//! 4 KiB a second, FAST at four times that. On SLOW, `drivelab run` keeps 4
//! random 4 KiB writes outstanding for 6 s while `drivelab trace record`
//! captures 3 s of it. Then:
//!
//! - `drivelab trace audit` of that trace on SLOW (dependency timing, the
//!   default): every access replayed (counts, bytes, no stray, none
//!   missing, sizes), and the score (1000 / head-to-head ms) near the
//!   original run's IO/s (the seed's 80.84 against 80.83; 20 % here, see
//!   the check);
//! - the same trace replayed in dependency timing on FAST scores higher
//!   than on SLOW, as the limits are ordered (and finishes sooner);
//! - with original timing the two scores are the trace's pace on both:
//!   that mode cannot rank (shown, as the contrast).
//!
//! Needs root, QEMU and the cached kernel: `bash tests/vm/setup.sh`.

use std::time::Duration;

use drivelab_vmtest::{Checks, Disk, GuestRun, Vm, MIB};
use serde_json::Value;

const SLOW: &str = "DLRPSLOW01";
const FAST: &str = "DLRPFAST01";
/// Write rates of the two media, bytes/s.
const SLOW_BPS: u64 = 400 * 1024;
const FAST_BPS: u64 = 4 * SLOW_BPS;

const SCRIPT: &str = r#"
exec < /dev/null
S=/dev/$(disk_by_serial @SLOW@)
F=/dev/$(disk_by_serial @FAST@)
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || mount -t debugfs debugfs /sys/kernel/debug
drivelab run --name=orig --filename=$S --rw=randwrite --bs=4k --iodepth=4 --runtime=6 --force --output-format=json > orig.out 2> orig.err &
P=$!
sleep 1.5
run_json rec drivelab trace record $S --output orig.dlt --duration 3 --output-format json
wait $P
echo $? > orig.status
run_json audit drivelab trace audit orig.dlt --target $S --force --output-format json
run_json fast drivelab trace replay orig.dlt --target $F --force --output-format json
run_json slow_o drivelab trace replay orig.dlt --target $S --force --mode original --output-format json
run_json fast_o drivelab trace replay orig.dlt --target $F --force --mode original --output-format json
true
"#;

fn boot() -> GuestRun {
    let script = SCRIPT.replace("@SLOW@", SLOW).replace("@FAST@", FAST);
    let vm = Vm::builder()
        .scsi_hd(Disk::new(16 * MIB, SLOW).write_limit(SLOW_BPS))
        .scsi_hd(Disk::new(16 * MIB, FAST).write_limit(FAST_BPS))
        .with_drivelab()
        .guest_script(&script)
        .timeout(Duration::from_secs(360));
    match vm.run() {
        Ok(r) => r,
        Err(e) => panic!("the test VM did not run: {e}"),
    }
}

/// (exit status, stdout as JSON) of the guest command saved as `name`.
fn outcome(run: &GuestRun, name: &str) -> Result<(i64, Value), String> {
    run.outcome_json(name)
}

fn score(v: &Value) -> f64 {
    v["score"]["iops"].as_f64().unwrap_or(0.0)
}

#[test]
fn dependency_replay_scores_rank_the_disks_and_match_the_original_run() {
    let run = boot();
    let mut c = Checks::new();
    let orig = outcome(&run, "orig");
    let rec = outcome(&run, "rec");
    let audit = outcome(&run, "audit");
    let fast = outcome(&run, "fast");
    let slow_o = outcome(&run, "slow_o");
    let fast_o = outcome(&run, "fast_o");

    let orig_iops = orig
        .as_ref()
        .ok()
        .and_then(|(_, v)| v["jobs"][0]["write"]["iops"].as_f64())
        .unwrap_or(0.0);
    let (slow_iops, audit_v) = match &audit {
        Ok((_, v)) => (score(&v["replay"]), v.clone()),
        Err(_) => (0.0, Value::Null),
    };
    let fast_iops = fast.as_ref().map(|(_, v)| score(v)).unwrap_or(0.0);
    println!(
        "original run {orig_iops:.2} IO/s; dependency replay: slow {slow_iops:.2} IO/s, fast {fast_iops:.2} IO/s"
    );
    for (name, v) in [
        ("slow", &audit_v["replay"]),
        ("fast", fast.as_ref().map(|x| &x.1).unwrap_or(&Value::Null)),
    ] {
        println!(
            "{name}: dependencies {}, waits {}, reaction {} ns, lateness p50 {} ns p99 {} ns, stalls {}, duration {} s",
            v["dependencies"], v["dependency_waits"], v["reaction_ns"], v["lateness_ns"]["p50"], v["lateness_ns"]["p99"], v["stalls"], v["duration_s"]
        );
    }
    if let Ok((_, v)) = &audit {
        for k in v["criteria"].as_array().into_iter().flatten() {
            println!("audit: {} {}: {}", k["pass"], k["name"], k["figure"]);
        }
    }

    c.run("the original run and its recording", || {
        let (s, _) = orig.as_ref().map_err(|e| e.clone())?;
        let (rs, rv) = rec.as_ref().map_err(|e| e.clone())?;
        if *s != 0 || *rs != 0 {
            return Err(format!("run status {s}, record status {rs}: {rv}"));
        }
        let n = rv["requests"].as_u64().unwrap_or(0);
        if n < 100 || rv["lost_events"].as_u64() != Some(0) {
            return Err(format!("recorded {n} requests: {rv}"));
        }
        // The limit holds the run near SLOW_BPS / 4 KiB = 100 IO/s.
        if !(50.0..=150.0).contains(&orig_iops) {
            return Err(format!("original run {orig_iops} IO/s, not about 100"));
        }
        Ok(())
    });
    c.run(
        "the audit on the drive the trace came from keeps every access",
        || {
            let crit = audit_v["criteria"]
                .as_array()
                .ok_or_else(|| format!("no criteria: {audit:?}"))?;
            for name in [
                "reads: count and bytes",
                "writes: count and bytes",
                "stray accesses",
                "missing accesses",
                "size distribution",
            ] {
                let k = crit
                    .iter()
                    .find(|k| k["name"].as_str().unwrap_or("").starts_with(name))
                    .ok_or_else(|| format!("no criterion {name}"))?;
                if k["pass"] != true {
                    return Err(format!("{name}: {k}"));
                }
            }
            if audit_v["replay"]["mode"] != "dependency" {
                return Err(format!("mode {}", audit_v["replay"]["mode"]));
            }
            Ok(())
        },
    );
    // The seed's limit is 5 % (the audit's own criterion, printed with its
    // figure). Under TCG the guest's reaction time between a completion and
    // the next issue moves with the host's load, and the replay cannot take
    // all of it out, so the test holds the score to 20 % of the original:
    // tight enough that a replay losing its dependencies (68 IO/s against
    // 100 in development) fails, loose enough for a loaded CI host.
    println!(
        "score on the source drive: replay {slow_iops:.2} IO/s, original run {orig_iops:.2} IO/s"
    );
    c.check(
        "the score on the drive the trace came from is within 20 % of the original run's IO/s",
        orig_iops > 0.0 && ((slow_iops - orig_iops) / orig_iops).abs() <= 0.20,
        || format!("replay {slow_iops:.2} IO/s, original run {orig_iops:.2} IO/s"),
    );
    c.check(
        "dependency replay scores order the disks as their limits",
        fast_iops > slow_iops * 1.5,
        || format!("fast {fast_iops:.2} IO/s, slow {slow_iops:.2} IO/s"),
    );
    c.run(
        "dependency replay on FAST finishes sooner than on SLOW",
        || {
            let f = fast.as_ref().map_err(|e| e.clone())?.1["duration_s"]
                .as_f64()
                .unwrap_or(0.0);
            let s = audit_v["replay"]["duration_s"].as_f64().unwrap_or(0.0);
            if f > 0.0 && f < s {
                Ok(())
            } else {
                Err(format!("fast {f} s, slow {s} s"))
            }
        },
    );
    c.run(
        "original timing plays the trace's pace on both disks",
        || {
            let so = score(&slow_o.as_ref().map_err(|e| e.clone())?.1);
            let fo = score(&fast_o.as_ref().map_err(|e| e.clone())?.1);
            println!("original timing: slow {so:.2} IO/s, fast {fo:.2} IO/s");
            let r = fo / so;
            if (0.8..=1.25).contains(&r) {
                Ok(())
            } else {
                Err(format!("slow {so:.2} IO/s, fast {fo:.2} IO/s"))
            }
        },
    );
    c.finish(&run.context());
}
