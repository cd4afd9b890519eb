//! Issue 15 item 1 in a real kernel: at `--iodepth 4` on a slow device the
//! block layer sees 4 requests outstanding nearly all the time, measured at
//! the device by drivelab's own recorder and, as a second opinion, by
//! Debian's blktrace/blkparse, with fio's figure from the same boot beside
//! it.
//!
//! The slow device is an emulated NVMe disk whose medium takes writes at
//! [`BPS`] (QEMU's `throttling.bps-write`): 10 writes of 4 KiB a second, so
//! at depth 4 each write is with the "drive" about 400 ms. Twice in turn,
//! `drivelab run` and fio (io_uring, the same job) write 4 KiB at random at
//! depth 4 for [`RUNTIME_S`] s while `drivelab trace record` and
//! `blktrace -a issue -a complete` record the disk. For each recording the
//! test computes, from the blkparse-format text (drivelab's recorder writes
//! it; blkparse turns blktrace's binary into it on the host), the
//! time-weighted number of writes in flight (dispatch D to completion C)
//! from the first write's dispatch to the last's, and asserts:
//!
//! - drivelab's runs hold 4 in flight at least 95 % of that time, by both
//!   recorders;
//! - drivelab's time-weighted mean depth is at least fio's (both runs of
//!   each, pooled), by both recorders.
//!
//! Why the device is this slow: the guest is emulated (TCG), and its
//! reaction from a completion to the next dispatch is the host's to give.
//! Measured in development on a loaded two-core host, drivelab and fio
//! alike took about 1 ms at the median and 5 ms at p90 from a completion to
//! the replacement's dispatch, and both recorders agreed to 0.1 %. Each
//! completion therefore leaves the device at 3 for a few milliseconds: at
//! 1,000 writes/s that was 55-67 % of the time at 4 (fio 60 %), at 100/s
//! 81-85 %, at 25/s 93 %. That time is the guest CPU's, not the engine's
//! (fio shows the same), so the device is made slow enough for it to be
//! under 5 %. No other timing is asserted.
//!
//! Needs root, QEMU, the cached kernel (`bash tests/vm/setup.sh`), and fio
//! and blktrace on the host (`tests/run` installs them): both are copied
//! into the guest with their libraries.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use drivelab_vmtest::{Checks, Disk, GuestRun, Vm, MIB};

const SERIAL: &str = "DLDEPTH001";
/// The medium's write rate, bytes/s: 10 writes of 4 KiB a second.
const BPS: u64 = 40 * 1024;
/// Asked queue depth.
const DEPTH: i64 = 4;
/// Length of each run, seconds.
const RUNTIME_S: u64 = 15;
/// The runs, in the order the guest makes them.
const RUNS: [&str; 4] = ["dl1", "fio1", "dl2", "fio2"];

const SCRIPT: &str = r#"
exec < /dev/null
D=/dev/$(disk_by_serial @SERIAL@)
echo ${D##*/} > devname
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# recorded LABEL COMMAND...: run COMMAND while drivelab's recorder and
# blktrace record the disk; the recordings land in LABEL.blkparse and
# bt.LABEL/.
recorded() {
    L=$1; shift
    drivelab trace record $D --recorder tracefs --output /tmp/$L.blkparse --output-format json > $L.rec.json 2> $L.rec.err &
    RP=$!
    mkdir -p /tmp/bt.$L
    /usr/sbin/blktrace -d $D -a issue -a complete -D /tmp/bt.$L > $L.bt.log 2>&1 &
    BP=$!
    # The run starts once drivelab's recorder is tracing (its tracefs
    # instance drivelab-PID is on), not after a guess: under emulation the
    # recorder's start can take longer than a second.
    i=0
    while [ "$(cat /sys/kernel/tracing/instances/drivelab-$RP/tracing_on 2>/dev/null)" != 1 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
    sleep 1
    "$@" > $L.out 2> $L.err
    echo $? > $L.status
    sleep 0.5
    kill -INT $BP $RP
    wait $RP; echo $? > $L.rec.status
    wait $BP
    cp /tmp/$L.blkparse .
    mkdir -p bt.$L && cp /tmp/bt.$L/* bt.$L/
    true
}
DL="drivelab run --name=d --filename=$D --rw=randwrite --bs=4k --direct=1 --iodepth=@QD@ --runtime=@RT@ --force --output-format=json"
FIO="/usr/bin/fio --name=f --filename=$D --rw=randwrite --bs=4k --direct=1 --iodepth=@QD@ --ioengine=io_uring --time_based --runtime=@RT@ --output-format=json"
recorded dl1 $DL
recorded fio1 $FIO
recorded dl2 $DL
recorded fio2 $FIO
true
"#;

fn boot() -> GuestRun {
    let script = SCRIPT
        .replace("@SERIAL@", SERIAL)
        .replace("@QD@", &DEPTH.to_string())
        .replace("@RT@", &RUNTIME_S.to_string());
    let vm = Vm::builder()
        .nvme(Disk::new(64 * MIB, SERIAL).write_limit(BPS))
        .with_drivelab()
        .host_tool("/usr/sbin/blktrace")
        .host_tool("/usr/bin/fio")
        .guest_script(&script)
        .timeout(Duration::from_secs(240 + 6 * RUNTIME_S));
    match vm.run() {
        Ok(r) => r,
        Err(e) => panic!("the test VM did not run: {e}"),
    }
}

/// Time spent at each depth between the first write's dispatch and the
/// last's, seconds, from blkparse-format text.
#[derive(Debug, Clone, Default)]
struct Depth {
    /// Seconds at depth `i` (the last entry: that depth or more).
    at: Vec<f64>,
    /// Writes dispatched in the window.
    writes: u64,
}

impl Depth {
    /// Writes in flight from each dispatch (D) to its completion (C),
    /// weighted by time, over [first write D, last write D]: after the last
    /// dispatch the run is only draining. Reads (drivelab's probe of the
    /// target before the run) are not the workload and are left out.
    fn from_blkparse(text: &str) -> Depth {
        let mut ev: Vec<(f64, bool)> = text
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                if f.len() < 8 || !f[6].contains('W') || (f[5] != "D" && f[5] != "C") {
                    return None;
                }
                Some((f[3].parse().ok()?, f[5] == "D"))
            })
            .collect();
        ev.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut out = Depth {
            at: vec![0.0; DEPTH as usize + 1],
            writes: 0,
        };
        let (Some(first), Some(last)) = (
            ev.iter().find(|e| e.1).map(|e| e.0),
            ev.iter().rev().find(|e| e.1).map(|e| e.0),
        ) else {
            return out;
        };
        let (mut d, mut prev) = (0i64, first);
        for &(t, dispatch) in &ev {
            if t > last {
                break;
            }
            let i = d.clamp(0, DEPTH) as usize;
            out.at[i] += (t - prev).max(0.0);
            prev = t.max(prev);
            if dispatch {
                d += 1;
                out.writes += 1;
            } else {
                d -= 1;
            }
        }
        out
    }

    fn add(&mut self, o: &Depth) {
        for (a, b) in self.at.iter_mut().zip(&o.at) {
            *a += b;
        }
        self.writes += o.writes;
    }

    fn span(&self) -> f64 {
        self.at.iter().sum()
    }

    fn mean(&self) -> f64 {
        let s = self.span();
        if s <= 0.0 {
            return 0.0;
        }
        self.at
            .iter()
            .enumerate()
            .map(|(i, t)| i as f64 * t)
            .sum::<f64>()
            / s
    }

    /// Share of the window with `DEPTH` in flight, %.
    fn at_n_pct(&self) -> f64 {
        let s = self.span();
        if s <= 0.0 {
            return 0.0;
        }
        100.0 * self.at[DEPTH as usize] / s
    }

    fn line(&self) -> String {
        let s = self.span().max(f64::MIN_POSITIVE);
        let hist: Vec<String> = self
            .at
            .iter()
            .enumerate()
            .map(|(i, t)| format!("{i}: {:.1}%", 100.0 * t / s))
            .collect();
        format!(
            "mean {:.3}, at {DEPTH} {:.1}% of {:.1} s ({} writes; {})",
            self.mean(),
            self.at_n_pct(),
            self.span(),
            self.writes,
            hist.join(", ")
        )
    }
}

/// blktrace's binary files for run `label`, as blkparse text (Debian's
/// blkparse on the host).
fn blkparse(run: &GuestRun, label: &str) -> Result<String, String> {
    let dev = run.file("devname").map_err(|e| e.to_string())?;
    let dir = run.out_dir().join(format!("bt.{label}"));
    let out = Command::new("blkparse")
        .current_dir(&dir)
        .args(["-q", "-i", dev.trim()])
        .output()
        .map_err(|e| {
            format!("cannot run blkparse ({e}): install Debian's blktrace (tests/run does)")
        })?;
    if !out.status.success() {
        return Err(format!(
            "blkparse {}: {} (blktrace said: {})",
            dir.display(),
            String::from_utf8_lossy(&out.stderr),
            run.file(&format!("{label}.bt.log")).unwrap_or_default()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn iops(run: &GuestRun, label: &str) -> f64 {
    run.json(&format!("{label}.out"))
        .ok()
        .and_then(|v| v["jobs"][0]["write"]["iops"].as_f64())
        .unwrap_or(0.0)
}

#[test]
fn drivelab_holds_depth_4_on_a_slow_disk_by_both_recorders() {
    assert!(
        Path::new("/usr/sbin/blktrace").exists() && Path::new("/usr/bin/fio").exists(),
        "needs fio and blktrace on the host (apt-get install fio blktrace; tests/run does)"
    );
    // fio is an optimised build; drivelab is compared with it only when
    // the guest runs an optimised drivelab too (DRIVELAB_VM_PROFILE=release
    // or a given DRIVELAB_VM_BINARY). In the emulated guest the debug
    // build's reaction from a completion to the next dispatch was 100-300
    // us longer than fio's at the median (0.83-1.01 ms against 0.67-0.71
    // ms), which cost it about 0.01 of mean depth; the release build's is
    // fio's or shorter. The 95%-at-N criterion holds for either build.
    let optimised = std::env::var_os("DRIVELAB_VM_BINARY").is_some()
        || std::env::var("DRIVELAB_VM_PROFILE").is_ok_and(|p| p == "release");
    let run = boot();
    let mut c = Checks::new();
    let mut ours = Vec::new();
    let mut bt = Vec::new();
    for label in RUNS {
        c.run(
            &format!("{label}: the run and drivelab's recording"),
            || {
                let st = run.file(&format!("{label}.status")).unwrap_or_default();
                let rst = run.file(&format!("{label}.rec.status")).unwrap_or_default();
                if st.trim() != "0" || rst.trim() != "0" {
                    return Err(format!(
                        "run status {st:?} ({}), recorder status {rst:?} ({} {})",
                        run.file(&format!("{label}.err")).unwrap_or_default(),
                        run.file(&format!("{label}.rec.json")).unwrap_or_default(),
                        run.file(&format!("{label}.rec.err")).unwrap_or_default()
                    ));
                }
                Ok(())
            },
        );
        let d = Depth::from_blkparse(&run.file(&format!("{label}.blkparse")).unwrap_or_default());
        let b = match blkparse(&run, label) {
            Ok(t) => Depth::from_blkparse(&t),
            Err(e) => {
                c.check(&format!("{label}: blkparse"), false, || e);
                Depth::default()
            }
        };
        println!(
            "{label}: {:.1} IO/s; drivelab record: {}; blktrace: {}",
            iops(&run, label),
            d.line(),
            b.line()
        );
        ours.push(d);
        bt.push(b);
    }
    for (i, label) in RUNS.iter().enumerate() {
        c.check(
            &format!("{label}: drivelab's recorder has every write blktrace has"),
            ours[i].writes == bt[i].writes,
            || {
                format!(
                    "recorder {} writes, blktrace {}; recorder summary {}",
                    ours[i].writes,
                    bt[i].writes,
                    run.file(&format!("{label}.rec.json")).unwrap_or_default()
                )
            },
        );
        for (name, d) in [("drivelab's recorder", &ours[i]), ("blkparse", &bt[i])] {
            c.check(
                &format!("{label}: {name} saw writes over most of the run"),
                d.writes >= 5 * RUNTIME_S && d.span() >= RUNTIME_S as f64 / 2.0,
                || d.line(),
            );
            if label.starts_with("dl") {
                c.check(
                    &format!("{label}: {name} sees {DEPTH} in flight at least 95% of the time"),
                    d.at_n_pct() >= 95.0,
                    || d.line(),
                );
            }
        }
    }
    for (name, all) in [("drivelab's recorder", &ours), ("blkparse", &bt)] {
        let mut dl = Depth::default();
        let mut fio = Depth::default();
        dl.at = vec![0.0; DEPTH as usize + 1];
        fio.at = vec![0.0; DEPTH as usize + 1];
        for (i, label) in RUNS.iter().enumerate() {
            if label.starts_with("dl") {
                dl.add(&all[i]);
            } else {
                fio.add(&all[i]);
            }
        }
        println!(
            "{name}, both runs: drivelab {}; fio {}",
            dl.line(),
            fio.line()
        );
        if !optimised {
            println!("{name}: not compared with fio (debug guest binary; set DRIVELAB_VM_PROFILE=release)");
            continue;
        }
        c.check(
            &format!("{name}: drivelab's mean depth is at least fio's"),
            dl.mean() >= fio.mean() && dl.span() > 0.0 && fio.span() > 0.0,
            || format!("drivelab {}; fio {}", dl.line(), fio.line()),
        );
    }
    c.finish(&run.context());
}

#[test]
fn depth_is_weighted_by_time_between_the_first_and_last_write_dispatch() {
    // Two writes: one alone for 1 s, then both for 1 s; a read and the
    // drain after the last dispatch are outside the window.
    let text = "\
259,0 0 1 0.5 1 D R 0 + 8 [drivelab]
259,0 0 2 0.6 1 C R 0 + 8 [0]
259,0 0 3 1.0 1 D W 8 + 8 [drivelab]
259,0 0 4 2.0 1 D W 16 + 8 [drivelab]
259,0 0 5 2.5 1 C W 8 + 8 [0]
259,0 0 6 3.0 1 C W 16 + 8 [0]
";
    let d = Depth::from_blkparse(text);
    assert_eq!(d.writes, 2);
    assert!((d.span() - 1.0).abs() < 1e-9, "{d:?}");
    assert!((d.at[1] - 1.0).abs() < 1e-9, "{d:?}");
    assert!((d.mean() - 1.0).abs() < 1e-9, "{d:?}");
    assert_eq!(d.at_n_pct(), 0.0);
}
