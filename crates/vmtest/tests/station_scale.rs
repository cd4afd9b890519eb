//! Issue 26 item 6 in a real kernel: a hundred scsi_debug disks, each with
//! its own store and answering every command late (its own speed), erased
//! by WRITE SAME together take about the time of one alone, and `drivelab
//! station` certifies all of them without its memory growing with the
//! rows. Loose bounds (see [`TIME_BOUND`]), for a loaded CI machine;
//! `bench/station-scale` prints the figures. The guest is crates/vmtest/src/scale.rs's.
//!
//! Needs root, QEMU and the cached kernel: `bash tests/vm/setup.sh`.

use std::collections::BTreeMap;

use drivelab_vmtest::scale::{Figures, Scale, StationRun};
use drivelab_vmtest::Checks;

/// The slowest drive's erase phase with 100 drives may be at most this
/// many times one drive's, and the complete time (each drive's health read
/// before and after, its certificate signed) COMPLETE_BOUND times. Loose:
/// the guest has one emulated CPU, the harness's drivelab is a debug
/// build, and a loaded host slows the emulated CPU, so the CPU-bound part
/// of 100 erases weighs here as it does not on a host (bench/station-scale
/// runs a release build and prints the figures). Drives erased one after
/// another would take 100 times one drive's time.
const TIME_BOUND: f64 = 4.0;
/// See [`TIME_BOUND`].
const COMPLETE_BOUND: f64 = 8.0;
/// The station's RSS with every row certified may be at most this many
/// times its RSS with one (the peak, which holds every erase's working set
/// at once, is printed).
const RSS_BOUND: f64 = 3.0;

fn count_eq(m: &BTreeMap<String, String>, want: &str) -> usize {
    m.values().filter(|d| *d == want).count()
}

fn station_checks(
    c: &mut Checks,
    f: &Figures,
    tag: &str,
    s: &StationRun,
    rows: usize,
    min_cmds: u64,
) {
    c.check(
        &format!("station {tag}: every one of {rows} drives certified"),
        s.rows == rows && s.certified == rows && s.certificates == rows,
        || {
            let odd: Vec<_> = s
                .last_state
                .iter()
                .filter(|(_, st)| *st != "certified")
                .take(5)
                .collect();
            format!(
                "rows {}, certified {}, certificates {}, not certified {odd:?}; stderr {}",
                s.rows, s.certified, s.certificates, s.err_tail
            )
        },
    );
    c.check(
        &format!("station {tag}: quits with 0"),
        s.status == 0,
        || format!("exit {}: {}", s.status, s.err_tail),
    );
    c.check(
        &format!("station {tag}: every disk reads as zeroes after"),
        s.md5.len() == rows && count_eq(&s.md5, &f.md5_zero) == rows,
        || format!("{:?}", s.md5.iter().take(5).collect::<Vec<_>>()),
    );
    c.check(
        &format!("station {tag}: every disk was sent its erase's commands"),
        s.commands.len() == rows && s.commands.values().all(|&n| n >= min_cmds),
        || format!("{:?}", s.commands.iter().take(8).collect::<Vec<_>>()),
    );
    c.check(
        &format!("station {tag}: peak RSS and refresh cost read"),
        s.hwm_kib > 0 && s.ms_per_refresh.is_finite(),
        || {
            format!(
                "VmHWM {} KiB, {} ms per refresh",
                s.hwm_kib, s.ms_per_refresh
            )
        },
    );
}

#[test]
fn a_hundred_drives_erase_in_the_time_of_one_and_the_station_stays_flat() {
    // The screen in tmux is bench/station-scale's: it would double the
    // station's part of the CI time.
    let s = Scale {
        screen: false,
        idle_s: 5,
        ..Scale::default()
    };
    let run = s
        .vm()
        .run()
        .unwrap_or_else(|e| panic!("the test VM did not run: {e}"));
    let ctx = run.context();
    let f = Figures::read(&run);
    let n = s.drives;
    println!(
        "VM: boot to script {:?} s, script end {:?} s, wall {:.1} s",
        run.boot_to_script_s,
        run.script_end_s,
        run.elapsed.as_secs_f64()
    );
    println!(
        "erase 1: {:.3} s (erase {:.3} s); {n}: {:.3} s (erase {:.3} s): {:.2}x / {:.2}x",
        f.one.complete_s,
        f.one.erase_max_s,
        f.all.complete_s,
        f.all.erase_max_s,
        f.complete_ratio(),
        f.erase_ratio()
    );
    println!(
        "station: 1 row RSS {} KiB (peak {}), {:.3} ms/refresh; {n} rows RSS {} KiB (peak {}), {:.3} ms/refresh: {:.2}x RSS, {:.2}x peak",
        f.station_one.rss_kib,
        f.station_one.hwm_kib,
        f.station_one.ms_per_refresh,
        f.station_all.rss_kib,
        f.station_all.hwm_kib,
        f.station_all.ms_per_refresh,
        f.rss_ratio(),
        f.peak_ratio()
    );
    let mut c = Checks::new();
    c.check("guest script exits 0", run.script_status == 0, || {
        format!("exit {}", run.script_status)
    });
    let serials: std::collections::BTreeSet<&String> = f.disks.iter().map(|d| &d.1).collect();
    c.check(
        &format!("{n} scsi_debug disks, each with a serial of its own"),
        f.disks.len() == n && serials.len() == n && !serials.iter().any(|s| s.is_empty()),
        || format!("{} disks, {} serials", f.disks.len(), serials.len()),
    );
    // Every command the drives were sent succeeded: no I/O error was
    // retried or redone behind a certificate.
    c.check(
        "no command failed (the guest kernel logged no I/O error)",
        f.io_errors.is_empty(),
        || {
            format!(
                "{} lines: {:?}",
                f.io_errors.len(),
                f.io_errors.iter().take(6).collect::<Vec<_>>()
            )
        },
    );
    erase_one_checks(&mut c, &f, &s);
    erase_all_checks(&mut c, &f, &s);

    // The station, one row and then every row.
    station_checks(&mut c, &f, "one", &f.station_one, 1, 1);
    station_checks(&mut c, &f, "all", &f.station_all, n, 1);
    c.check(
        &format!("station: RSS with {n} rows certified within {RSS_BOUND}x of one row's"),
        f.rss_ratio() <= RSS_BOUND,
        || {
            format!(
                "{} KiB / {} KiB = {:.2}x",
                f.station_all.rss_kib,
                f.station_one.rss_kib,
                f.rss_ratio()
            )
        },
    );
    c.finish(&ctx);
}

/// One drive erased alone: it is zeroed (and with it the other LUNs of
/// its adapter, whose store they share) and sent its WRITE SAMEs; the
/// other adapters' disks keep their bytes, and no other disk is sent
/// anything.
fn erase_one_checks(c: &mut Checks, f: &Figures, s: &Scale) {
    let (n, ws) = (s.drives, s.ws_per_drive());
    let first = f.disks.first().map(|d| d.0.clone()).unwrap_or_default();

    c.check(
        "erase of one: exit 0, erased by WRITE SAME",
        f.one.status == 0 && f.one.erased == 1 && f.one.drives == 1,
        || {
            format!(
                "exit {}, {} of {} erased: {}",
                f.one.status, f.one.erased, f.one.drives, f.one.why
            )
        },
    );
    let sharing = f
        .disks
        .iter()
        .filter(|d| f.shares_first_store(&d.0))
        .count();
    c.check(
        "erase of one: its adapter's disks read as zeroes, the others as filled",
        sharing == s.luns
            && f.one.md5.len() == n
            && f.one.md5.iter().all(|(d, m)| {
                m == if f.shares_first_store(d) {
                    &f.md5_zero
                } else {
                    &f.md5_fill
                }
            }),
        || {
            format!(
                "{sharing} sharing; {:?}",
                f.one.md5.iter().take(6).collect::<Vec<_>>()
            )
        },
    );
    c.check(
        "erase of one: its commands went to that disk only",
        f.one.commands.get(&first).is_some_and(|&x| x >= ws)
            && f.one
                .commands
                .iter()
                .filter(|(d, _)| **d != first)
                .all(|(_, &x)| x == 0),
        || {
            format!(
                "{:?}",
                f.one
                    .commands
                    .iter()
                    .filter(|(_, &x)| x > 0)
                    .take(8)
                    .collect::<Vec<_>>()
            )
        },
    );
}

/// Every drive erased together: each zeroed and sent its WRITE SAMEs,
/// in about the time of one.
fn erase_all_checks(c: &mut Checks, f: &Figures, s: &Scale) {
    let (n, ws) = (s.drives, s.ws_per_drive());
    c.check(
        &format!("erase of {n}: exit 0, every drive erased by WRITE SAME"),
        f.all.status == 0 && f.all.erased == n && f.all.drives == n,
        || {
            format!(
                "exit {}, {} of {} erased: {}",
                f.all.status, f.all.erased, f.all.drives, f.all.why
            )
        },
    );
    c.check(
        &format!("erase of {n}: every disk reads as zeroes"),
        count_eq(&f.all.md5, &f.md5_zero) == n,
        || format!("{} of {n} zero", count_eq(&f.all.md5, &f.md5_zero)),
    );
    c.check(
        &format!("erase of {n}: every disk was sent at least its {ws} WRITE SAMEs"),
        f.all.commands.len() == n && f.all.commands.values().all(|&x| x >= ws),
        || {
            format!(
                "{:?}",
                f.all
                    .commands
                    .iter()
                    .filter(|(_, &x)| x < ws)
                    .take(8)
                    .collect::<Vec<_>>()
            )
        },
    );
    c.check(
        &format!("erase of {n}: complete time within {COMPLETE_BOUND}x of one drive's"),
        f.complete_ratio() <= COMPLETE_BOUND,
        || {
            format!(
                "{:.3} s / {:.3} s = {:.2}x",
                f.all.complete_s,
                f.one.complete_s,
                f.complete_ratio()
            )
        },
    );
    c.check(
        &format!("erase of {n}: slowest erase phase within {TIME_BOUND}x of one drive's"),
        f.erase_ratio() <= TIME_BOUND,
        || {
            format!(
                "{:.3} s / {:.3} s = {:.2}x",
                f.all.erase_max_s,
                f.one.erase_max_s,
                f.erase_ratio()
            )
        },
    );
}
