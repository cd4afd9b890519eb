//! `bench/erase-scaling`'s VM part: erase 1, 2, 4, … emulated drives that do
//! the work themselves, and print how the complete time grows with N.
//!
//! A loop device has no medium of its own: its "offloaded" zero-out is the
//! host's CPUs editing a file's extents, so on a 2-CPU machine eight of them
//! cannot finish in the time of one whatever the tool does. Here every drive
//! is an emulated NVMe namespace or virtio-scsi disk whose medium takes
//! writes at a fixed rate (QEMU's block throttling, `RATE_MB` MiB/s per
//! drive, on a timer), like a real drive's sustained write rate: an
//! offloaded command (NVMe Write Zeroes, WRITE SAME, the kernel's
//! REQ_OP_WRITE_ZEROES) is one small command from the host and seconds of
//! waiting for the drive, so N drives in parallel should take the time of
//! the slowest one; `stream` carries every byte through the guest's CPU and
//! its emulated bus, so it grows once that saturates.
//!
//! QEMU's throttle is a leaky bucket: a command passes when the bucket is
//! not full and its bytes are charged afterwards, so it paces a stream of
//! commands at the rate but lets a single huge command through at once.
//! WRITE SAME of zeroes over a whole 128 MiB disk in one command would take
//! no time at all. The SCSI disks therefore report a 32 MiB maximum
//! transfer and WRITE SAME length (scsi-hd `max_io_size`, Block Limits VPD),
//! the size of one WRITE SAME(10) of 65,535 blocks as in the thesis and of
//! one NVMe Write Zeroes here, which drivelab honours. A WRITE SAME of a
//! non-zero pattern is paced whatever its length: QEMU writes the pattern
//! through the throttle 512 KiB at a time.
//!
//! One VM boot per bus (all drives attached at once); in the guest the
//! static drivelab runs `erase --verify none --output-format json` for each
//! method, strategy and N, on the first N drives. The host reads the JSON
//! reports and prints, per row, the complete time, its ratio to one drive,
//! the slowest drive's erase phase and its ratio, the aggregate MB/s and
//! whether every drive was erased. Between runs the guest waits for the
//! drives to drain what the last run left in flight (QEMU's leaky bucket
//! still owes the last command's bytes), as a real drive finishes writing
//! its cache, so no run starts on a busy drive.
//!
//! Environment: DRIVES (most drives, default 8; N runs over 1, 2, 4, …),
//! SIZE_MB (per drive, default 128), RATE_MB (per-drive write rate, MiB/s,
//! default 64), BUSES (default `nvme scsi`), STRATEGIES (default `parallel
//! sequential round-robin`), NVME_METHODS (default `nvme-write-zeroes
//! zeroout stream`), SCSI_METHODS (default `write-same stream`), EXTRA
//! (more `drivelab erase` options for every run, e.g. `--queue-depth 4`,
//! for mapping a drive's response by hand). Needs QEMU
//! and the cached kernel (`bash tests/vm/setup.sh`); set
//! `DRIVELAB_VM_PROFILE=release` so `stream` is not measuring a debug build.
//!
//! Run: `cargo run --release -p drivelab-vmtest --example erase_scaling`.

use std::process::ExitCode;
use std::time::Duration;

use drivelab_vmtest::scale::env_num;
use drivelab_vmtest::{Disk, Vm, VmBuilder, MIB};
use serde_json::Value;

struct Config {
    drives: usize,
    size_mb: u64,
    rate_mb: u64,
    buses: Vec<String>,
    strategies: Vec<String>,
    nvme_methods: Vec<String>,
    scsi_methods: Vec<String>,
    settle_s: u64,
    extra: String,
}

/// The SCSI disks' maximum transfer and WRITE SAME length, bytes.
const SCSI_MAX_IO: u64 = 32 * MIB;

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

impl Config {
    fn from_env() -> Result<Self, String> {
        let c = Config {
            drives: env_num("DRIVES", 8)? as usize,
            size_mb: env_num("SIZE_MB", 128)?,
            rate_mb: env_num("RATE_MB", 64)?,
            buses: env_list("BUSES", "nvme scsi"),
            strategies: env_list("STRATEGIES", "parallel sequential round-robin"),
            nvme_methods: env_list("NVME_METHODS", "nvme-write-zeroes zeroout stream"),
            scsi_methods: env_list(
                "SCSI_METHODS",
                "write-same write-same@fixed:0xA5A5A5A5 stream",
            ),
            settle_s: 0,
            extra: std::env::var("EXTRA").unwrap_or_default(),
        };
        if c.extra
            .contains(['\'', '"', '$', '`', ';', '|', '&', '>', '<'])
        {
            return Err("EXTRA: plain erase options only (no quotes or shell syntax)".into());
        }
        // A throttled drive stays busy after a run until its bucket drains
        // (the last command's bytes at RATE_MB): wait that out, rounded up.
        let c = Config {
            settle_s: (32 / c.rate_mb.max(1)).max(1) + 1,
            ..c
        };
        let shell_safe = |t: &str| {
            t.chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_:@.,".contains(ch))
        };
        if let Some(m) = c
            .nvme_methods
            .iter()
            .chain(&c.scsi_methods)
            .chain(&c.strategies)
            .find(|m| !shell_safe(m))
        {
            return Err(format!(
                "{m:?}: methods and strategies are names (METHOD or METHOD@PATTERN)"
            ));
        }
        if let Some(b) = c
            .buses
            .iter()
            .find(|b| !matches!(b.as_str(), "nvme" | "scsi"))
        {
            return Err(format!("BUSES: unknown bus {b:?}; use nvme and/or scsi"));
        }
        // virtio-scsi takes many more; 16 NVMe controllers is plenty of PCI slots.
        if c.drives > 16 {
            return Err(format!("DRIVES={}: at most 16", c.drives));
        }
        Ok(c)
    }

    /// 1, 2, 4, … up to `drives` (and `drives` itself when not a power of 2).
    fn counts(&self) -> Vec<usize> {
        let mut v = Vec::new();
        let mut n = 1;
        while n < self.drives {
            v.push(n);
            n *= 2;
        }
        v.push(self.drives);
        v
    }

    fn methods(&self, bus: &str) -> &[String] {
        if bus == "nvme" {
            &self.nvme_methods
        } else {
            &self.scsi_methods
        }
    }

    /// Seconds of drive time one erase of one drive should take.
    fn drive_seconds(&self) -> f64 {
        self.size_mb as f64 / self.rate_mb as f64
    }
}

/// `drivelab erase` options for a METHODS entry: `METHOD` or
/// `METHOD@PATTERN` (e.g. `write-same@fixed:0xA5A5A5A5`).
fn method_options(m: &str) -> String {
    match m.split_once('@') {
        Some((method, pattern)) => format!("--method {method} --pattern {pattern}"),
        None => format!("--method {m}"),
    }
}

fn serial(bus: &str, i: usize) -> String {
    format!("DLES{}{:02}", bus.to_ascii_uppercase(), i + 1)
}

/// The guest script: finds each drive by serial, then erases the first N
/// for every method × strategy × N, one JSON report per run.
fn guest_script(c: &Config, bus: &str) -> String {
    let serials: Vec<String> = (0..c.drives).map(|i| serial(bus, i)).collect();
    let counts: Vec<String> = c.counts().iter().map(|n| n.to_string()).collect();
    format!(
        r#"
export XDG_CONFIG_HOME=/tmp/cfg
mkdir -p /tmp/certs
DEVS=""
for s in {serials}; do
  d=$(disk_by_serial $s) || {{ echo "no disk with serial $s" >&2; exit 1; }}
  DEVS="$DEVS /dev/$d:$s"
done
echo "$DEVS" > devs.txt
# erase_all K OPTIONS...: every strategy x N with these method options;
# reports r_K_STRATEGY_N.{{json,err,status}}.
erase_all() {{
  k=$1; shift
  for st in {strategies}; do for n in {counts}; do
    args=""; i=0
    for ds in $DEVS; do
      i=$((i + 1)); [ $i -le $n ] || break
      args="$args ${{ds%%:*}} --confirm-serial ${{ds##*:}}"
    done
    drivelab erase $args "$@" --strategy $st --verify none --yes \
      --certificate-dir /tmp/certs --output-format json {extra} > r_${{k}}_${{st}}_$n.json 2> r_${{k}}_${{st}}_$n.err
    echo $? > r_${{k}}_${{st}}_$n.status
    rm -rf /tmp/certs/*
    # Let the drives finish what the last run left in their buffers, as a
    # real drive's write cache would, so no run starts on a busy drive.
    sleep {settle}
  done; done
}}
{runs}"#,
        serials = serials.join(" "),
        runs = c
            .methods(bus)
            .iter()
            .enumerate()
            .map(|(k, m)| format!("erase_all {k} {}\n", method_options(m)))
            .collect::<String>(),
        strategies = c.strategies.join(" "),
        counts = counts.join(" "),
        settle = c.settle_s,
        extra = c.extra,
    )
}

/// One erase run's figures, read from its JSON report.
struct Row {
    complete: f64,
    erase_max: f64,
    agg_mb_s: f64,
    ok: bool,
    note: String,
}

fn row(report: &Value) -> Option<Row> {
    let drives = report["drives"].as_array()?;
    let erase_max = drives
        .iter()
        .filter_map(|d| d["erase_seconds"].as_f64())
        .fold(0.0, f64::max);
    // `--verify none`: a clean drive is "overwritten, not verified".
    let done = |d: &Value| d["result"] == "overwritten, not verified";
    let ok = drives.iter().all(done);
    let d0 = &drives[0];
    let mut note = d0["method"].as_str().unwrap_or("?").to_string();
    match d0["offloaded"].as_bool() {
        Some(true) => note.push_str(" (offloaded)"),
        Some(false) => note.push_str(" (not offloaded)"),
        None => {}
    }
    if let (Some(t), Some(q)) = (
        d0["stream_transfer_bytes"].as_u64(),
        d0["stream_queue_depth"].as_u64(),
    ) {
        note.push_str(&format!(" {} KiB x QD{q}", t / 1024));
    }
    if !ok {
        let bad: Vec<String> = drives
            .iter()
            .filter(|d| !done(d))
            .map(|d| format!("{}: {}", d["device"], d["error"]))
            .collect();
        note.push_str(&format!(" NOT ERASED: {}", bad.join("; ")));
    }
    Some(Row {
        complete: report["complete_seconds"].as_f64()?,
        erase_max,
        agg_mb_s: report["aggregate_mb_per_s"].as_f64()?,
        ok,
        note,
    })
}

fn vm_for(c: &Config, bus: &str) -> VmBuilder {
    let mut b = Vm::builder()
        .with_drivelab()
        .memory_mib(1024)
        .disk_wait(Duration::from_secs(60));
    for i in 0..c.drives {
        let d = Disk::new(c.size_mb * MIB, &serial(bus, i)).write_limit(c.rate_mb * MIB);
        b = if bus == "nvme" {
            b.nvme(d)
        } else {
            // 32 MiB per command, as the NVMe drives' Write Zeroes: see the
            // module notes.
            b.scsi_hd(d.max_io(SCSI_MAX_IO))
        };
    }
    // Every run's drive time, twice over for the guest's own slowness under
    // TCG, plus boot.
    let runs: usize = c.counts().iter().sum::<usize>() * c.strategies.len();
    let budget = 120.0 + 3.0 * c.drive_seconds() * (runs * c.methods(bus).len()) as f64;
    b.timeout(Duration::from_secs_f64(budget))
        .guest_script(&guest_script(c, bus))
}

fn run() -> Result<bool, String> {
    let c = Config::from_env()?;
    println!(
        "drives that do the work themselves (QEMU, TCG guest with 1 vCPU): {} MiB per drive, medium writes at {} MiB/s ({:.1} s of drive time per erase)",
        c.size_mb,
        c.rate_mb,
        c.drive_seconds()
    );
    println!(
        "\n{:<5} {:<28} {:<12} {:>3} {:>9} {:>7} {:>12} {:>7} {:>9}  METHOD AS RUN",
        "BUS", "METHOD", "STRATEGY", "N", "TIME(s)", "N/1", "ERASE-MAX(s)", "N/1", "AGG MB/s"
    );
    let mut all_ok = true;
    // Goal rows: offloaded methods, parallel, at the most drives.
    let mut goal: Vec<(String, f64)> = Vec::new();
    for bus in &c.buses {
        let g = vm_for(&c, bus)
            .run()
            .map_err(|e| format!("{bus} VM: {e}"))?;
        if g.script_status != 0 {
            return Err(format!(
                "{bus} VM: guest script exited {}\n{}",
                g.script_status,
                g.context()
            ));
        }
        for (k, m) in c.methods(bus).iter().enumerate() {
            for st in &c.strategies {
                let mut base: Option<(f64, f64)> = None;
                for n in c.counts() {
                    let name = format!("r_{k}_{st}_{n}");
                    let status = g.file(&format!("{name}.status")).unwrap_or_default();
                    let parsed = g.json(&format!("{name}.json")).ok();
                    let Some(r) = parsed.as_ref().and_then(row) else {
                        all_ok = false;
                        // With JSON output drivelab reports errors on stdout.
                        let why = parsed
                            .as_ref()
                            .and_then(|j| j["error"].as_str().map(str::to_string))
                            .or_else(|| {
                                let err = g.file(&format!("{name}.err")).ok()?;
                                err.lines().last().map(str::to_string)
                            })
                            .unwrap_or_default();
                        println!(
                            "{bus:<5} {m:<28} {st:<12} {n:>3}  failed (exit {}): {why}",
                            status.trim(),
                        );
                        continue;
                    };
                    all_ok &= r.ok;
                    let (b, eb) = *base.get_or_insert((r.complete, r.erase_max));
                    let ratio = r.complete / b;
                    let eratio = r.erase_max / eb;
                    println!(
                        "{bus:<5} {m:<28} {st:<12} {n:>3} {:>9.3} {:>6.2}x {:>12.3} {:>6.2}x {:>9.1}  {}",
                        r.complete, ratio, r.erase_max, eratio, r.agg_mb_s, r.note
                    );
                    if n == c.drives && n > 1 && st == "parallel" && !m.starts_with("stream") {
                        goal.push((format!("{bus} {m}"), ratio));
                    }
                }
            }
        }
    }
    if !goal.is_empty() {
        println!(
            "\noffloaded, parallel, {} drives / 1 drive (goal <= 1.20x):",
            c.drives
        );
        for (what, r) in &goal {
            let verdict = if *r <= 1.2 { "met" } else { "NOT met" };
            println!("  {what:<34} {r:.2}x  {verdict}");
        }
    }
    Ok(all_ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("erase_scaling: some erases did not complete (see the rows above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("erase_scaling: {e}");
            ExitCode::from(2)
        }
    }
}
