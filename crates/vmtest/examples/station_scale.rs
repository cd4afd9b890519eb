//! `bench/station-scale`: a hundred drives at once (issue 26 item 6). One
//! guest (TCG, one vCPU) with DRIVES scsi_debug disks, each answering
//! every command DELAY_MS late (its own speed, on a timer), erased by
//! WRITE SAME one alone and then all together, and `drivelab station` over
//! one and then over all of them (crates/vmtest/src/scale.rs describes the
//! guest). Prints the complete time and the slowest drive's erase phase of
//! each erase and their ratio (goal: at most 1.2x), and the station's RSS
//! once certified and at its peak, its CPU and its main loop's cost per
//! refresh with one row and with DRIVES (events, then the screen in tmux).
//!
//! Environment: DRIVES (default 100), LUNS (disks per scsi_debug adapter,
//! sharing its store; default 4), SIZE_MB (per disk, default 1),
//! WS_BLOCKS (blocks per WRITE SAME, default 256), DELAY_MS (per command,
//! default 200), IDLE_S (idle seconds measured after the station's last
//! certificate, default 10), SCREEN (0: no run of the screen in tmux).
//! Needs QEMU and the cached kernel (`bash tests/vm/setup.sh`).
//!
//! Run: `bench/station-scale`, or `DRIVELAB_VM_PROFILE=release cargo run -p
//! drivelab-vmtest --example station_scale`.

use std::process::ExitCode;

use drivelab_vmtest::scale::{env_num, Figures, Scale, StationRun};

fn config() -> Result<Scale, String> {
    let d = Scale::default();
    let s = Scale {
        drives: env_num("DRIVES", d.drives as u64)? as usize,
        luns: env_num("LUNS", d.luns as u64)? as usize,
        size_mb: env_num("SIZE_MB", d.size_mb)?,
        ws_blocks: env_num("WS_BLOCKS", d.ws_blocks)?,
        delay_ms: env_num("DELAY_MS", d.delay_ms)?,
        idle_s: env_num("IDLE_S", d.idle_s)?,
        screen: std::env::var("SCREEN").map_or(d.screen, |v| v != "0"),
    };
    s.check()?;
    Ok(s)
}

fn median(v: &[u64]) -> u64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn station_line(what: &str, s: &StationRun) {
    println!(
        "  {what:<7} {:>4} rows: {:>3} certified in {:>6.1} s; RSS {:>6} KiB after, peak {:>7} KiB; CPU {:>6.2} s (guest CPU {:.0}% busy); main loop {:.3} ms per refresh when idle",
        s.rows, s.certified, s.wall_s, s.rss_kib, s.hwm_kib, s.cpu_busy_s, s.cpu_share * 100.0, s.ms_per_refresh
    );
}

fn run() -> Result<bool, String> {
    let c = config()?;
    println!(
        "{} scsi_debug disks of {} MiB (TCG guest, 1 vCPU): WRITE SAME of {} blocks, {} ms per command: {} commands, {:.1} s of drive time per erase",
        c.drives,
        c.size_mb,
        c.ws_blocks,
        c.delay_ms,
        c.ws_per_drive(),
        c.drive_seconds()
    );
    let g = c.vm().run().map_err(|e| format!("VM: {e}"))?;
    let f = Figures::read(&g);
    println!(
        "boot to script {:.1} s, guest script {:.1} s; {} disks, {} added by add_host in {:.1} s",
        g.boot_to_script_s.unwrap_or(f64::NAN),
        g.script_end_s.unwrap_or(f64::NAN) - g.boot_to_script_s.unwrap_or(f64::NAN),
        f.disks.len(),
        f.disks.len().saturating_sub(1),
        f.add_s
    );
    println!(
        "\ndrivelab erase --method write-same --strategy parallel --verify none:\n  {:<6} {:>9} {:>12} {:>9} {:>5} {:>8} {:>16}",
        "N", "TIME(s)", "ERASE-MAX(s)", "WALL(s)", "CPU", "ERASED", "COMMANDS/DRIVE"
    );
    let mut ok = true;
    for (n, r) in [(1, &f.one), (c.drives, &f.all)] {
        let cmds: Vec<u64> = r.commands.values().copied().collect();
        let touched = cmds.iter().filter(|&&x| x >= c.ws_per_drive()).count();
        println!(
            "  {n:<6} {:>9.3} {:>12.3} {:>9.1} {:>4.0}% {:>4}/{:<3} {:>9} drives >= {} (median {}){}",
            r.complete_s,
            r.erase_max_s,
            r.wall_s,
            r.cpu_share * 100.0,
            r.erased,
            n,
            touched,
            c.ws_per_drive(),
            median(&cmds),
            if r.status == 0 {
                String::new()
            } else {
                format!("  exit {}: {}", r.status, r.why)
            }
        );
        ok &= r.status == 0 && r.erased == n;
    }
    let zero = |m: &std::collections::BTreeMap<String, String>| {
        m.values().filter(|d| **d == f.md5_zero).count()
    };
    println!(
        "  disks reading as zeroes after: alone {} (its adapter's {} LUNs share its store; of the other {}, {} still read 0xA5), together {}",
        zero(&f.one.md5),
        c.luns,
        f.disks.len().saturating_sub(c.luns),
        f.one.md5.values().filter(|d| **d == f.md5_fill).count(),
        zero(&f.all.md5)
    );
    println!(
        "  {} drives / 1 drive: complete time {:.2}x, slowest erase phase {:.2}x (goal <= 1.20x: {})",
        c.drives,
        f.complete_ratio(),
        f.erase_ratio(),
        if f.complete_ratio() <= 1.2 { "met" } else { "NOT met" }
    );
    println!("\ndrivelab station --events json (erase.method = clear, verify = full):");
    station_line("one", &f.station_one);
    station_line("all", &f.station_all);
    match &f.station_screen {
        Some(sc) => {
            println!("\ndrivelab station, its screen in tmux ({} rows):", sc.rows);
            station_line("screen", sc);
            for l in f
                .screen_text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .take(4)
            {
                println!("  | {l}");
            }
        }
        None if c.screen => println!("\n(the screen did not run: see st_screen.err)"),
        None => {}
    }
    println!(
        "  {} rows / 1 row: RSS after {:.2}x, peak RSS {:.2}x; main loop per refresh {:.3} ms / {:.3} ms",
        c.drives,
        f.rss_ratio(),
        f.peak_ratio(),
        f.station_all.ms_per_refresh,
        f.station_one.ms_per_refresh
    );
    println!(
        "  disks reading as zeroes after the station: {} of {}",
        zero(&f.station_all.md5),
        f.disks.len()
    );
    ok &= f.station_all.certified == c.drives && f.station_one.certified == 1;
    if g.script_status != 0 {
        println!("\nguest script exited {}\n{}", g.script_status, g.context());
        ok = false;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("station_scale: some drives were not erased or certified (see above)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("station_scale: {e}");
            ExitCode::from(2)
        }
    }
}
