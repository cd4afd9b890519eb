//! A hundred drives at once (issue 26 item 6): one guest with many
//! scsi_debug disks, each bound by its own speed, erased by WRITE SAME one
//! alone and then all together, and `drivelab station` over one of them
//! and then over all of them. `bench/station-scale` prints the figures
//! (crates/vmtest/examples/station_scale.rs) and
//! crates/vmtest/tests/station_scale.rs asserts them loosely; both boot the
//! guest this module describes and read its results with [`Figures::read`].
//!
//! The disks: scsi_debug adapters of `luns` disks each, with
//! `per_host_store=1`: every adapter has a RAM store of its own, which its
//! LUNs share (the digests show it: the drive erased alone zeroes its
//! adapter's other LUNs too and leaves every other adapter's bytes as they
//! were). One disk per adapter cannot reach 100: scsi_debug's unit serial
//! is `(host + 1) * 2000 + LUN` cut to five digits, so past host 48 two
//! disks would share a serial; 25 adapters of 4 LUNs keep 100 apart. Each command is answered after `delay_ms` (scsi_debug's
//! `ndelay`, on a timer, set only while an erase runs), so a disk's time is
//! its commands times the delay, like a drive's own speed, and the guest's
//! one CPU only does the small part scsi_debug does at submission (copying
//! the one block of a WRITE SAME over its range). `write_same_length`
//! caps each WRITE SAME at `ws_blocks`, so an erase is
//! `size / ws_blocks` commands per disk.
//!
//! The guest loads scsi_debug with one adapter, runs the station over that
//! one disk (its peak RSS and the main loop's CPU per refresh with one
//! row), adds the other adapters (`add_host`: they arrive as a hot-plug
//! would), erases the first disk alone and then every disk with `drivelab
//! erase --method write-same --strategy parallel`, and runs the station
//! over all of them. Before each erase every disk is filled with 0xA5;
//! after it each disk's MD5 is taken, and each disk's count of SCSI
//! commands (`device/iorequest_cnt`, which counts the SG_IO commands that
//! the block layer's write counters leave out) is read before and after.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::vm::{GuestRun, Vm, VmBuilder};

/// What to boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scale {
    /// Disks.
    pub drives: usize,
    /// Disks (LUNs) per scsi_debug adapter, which share its store.
    pub luns: usize,
    /// MiB per disk.
    pub size_mb: u64,
    /// Blocks (512 bytes) per WRITE SAME.
    pub ws_blocks: u64,
    /// Milliseconds scsi_debug takes to answer each command while erasing.
    pub delay_ms: u64,
    /// Seconds the station is left idle after its last drive is certified,
    /// to measure its main loop's CPU per refresh.
    pub idle_s: u64,
    /// Also run the station's screen over every disk, in tmux (the host's
    /// [`SCREEN_FILES`], copied into the guest).
    pub screen: bool,
}

impl Default for Scale {
    /// 100 disks of 1 MiB, 128 KiB per WRITE SAME (8 commands), 200 ms per
    /// command: 1.6 s of drive time per erase.
    fn default() -> Self {
        Scale {
            drives: 100,
            luns: 4,
            size_mb: 1,
            ws_blocks: 256,
            delay_ms: 200,
            idle_s: 10,
            screen: true,
        }
    }
}

/// The most scsi_debug adapters whose disks all have serials of their own.
pub const MAX_ADAPTERS: usize = 40;

/// The station's main loop refreshes (screen, metrics, presence checks)
/// every 250 ms.
pub const REFRESH_S: f64 = 0.25;

impl Scale {
    /// scsi_debug adapters (each with a store of its own).
    pub fn adapters(&self) -> usize {
        self.drives / self.luns.max(1)
    }

    /// WRITE SAME commands per disk for one erase.
    pub fn ws_per_drive(&self) -> u64 {
        (self.size_mb * 2048).div_ceil(self.ws_blocks)
    }

    /// Seconds of drive time one erase of one disk takes (its WRITE SAME
    /// commands times the delay).
    pub fn drive_seconds(&self) -> f64 {
        self.ws_per_drive() as f64 * self.delay_ms as f64 / 1000.0
    }

    /// Refuses sizes scsi_debug or the guest cannot take.
    pub fn check(&self) -> Result<(), String> {
        if self.luns == 0 || self.drives % self.luns != 0 {
            return Err(format!(
                "{} drives of {} LUNs per adapter: give a multiple of the LUNs",
                self.drives, self.luns
            ));
        }
        // scsi_debug's unit serial is ((host + 1) * 2000 + LUN) cut to 5
        // digits: past host 48 two disks share one. The guest's first
        // scsi_debug host is 6 (after the AHCI ports).
        if self.drives / self.luns > MAX_ADAPTERS || self.luns > 256 {
            return Err(format!(
                "{} drives: at most {MAX_ADAPTERS} adapters of at most 256 LUNs (raise the LUNs per adapter)",
                self.drives
            ));
        }
        if self.drives < 2 {
            return Err(format!("{} drives: at least 2", self.drives));
        }
        if self.size_mb == 0 || self.size_mb * self.adapters() as u64 > 1536 {
            return Err(format!(
                "{} MiB x {} drives: at most 1536 MiB in all (the stores live in guest RAM)",
                self.size_mb, self.drives
            ));
        }
        if self.ws_blocks == 0 || self.ws_blocks > 0xffff {
            return Err(format!(
                "{} blocks per WRITE SAME: 1 to 65535",
                self.ws_blocks
            ));
        }
        if self.delay_ms == 0 || self.delay_ms >= 1000 {
            return Err(format!(
                "{} ms per command: 1 to 999 (scsi_debug's ndelay)",
                self.delay_ms
            ));
        }
        Ok(())
    }

    /// The guest: scsi_debug with one adapter to start with, drivelab, the
    /// script, memory for the stores and a timeout from the work asked.
    pub fn vm(&self) -> VmBuilder {
        let n = self.drives as f64;
        // Boot and scan, five erases' worth of drive time, fills and
        // digests, the idle periods, and room for a loaded host.
        let budget = 240.0
            + 20.0 * self.drive_seconds()
            + 0.6 * n * self.size_mb as f64
            + 2.0 * self.idle_s as f64
            + 1.5 * n;
        let b = Vm::builder();
        let b = if self.screen {
            SCREEN_FILES.iter().fold(b, |b, f| b.host_tool(f))
        } else {
            b
        };
        b.with_drivelab()
            .memory_mib(768 + (self.size_mb * self.adapters() as u64 + 4 * self.drives as u64) as u32)
            .scsi_debug(&format!(
                "add_host=1 max_luns=1 per_host_store=1 dev_size_mb={} write_same_length={} delay=0",
                self.size_mb, self.ws_blocks
            ))
            .timeout(Duration::from_secs_f64(budget))
            .guest_script(&self.script())
    }

    /// The guest script (busybox sh, tests/vm/lib.sh sourced, in /out).
    pub fn script(&self) -> String {
        format!(
            "N={n}\nLUNS={luns}\nMB={mb}\nNS={ns}\nIDLE={idle}\nSCREEN={screen}\n{body}",
            n = self.drives,
            luns = self.luns,
            mb = self.size_mb,
            ns = self.delay_ms * 1_000_000,
            idle = self.idle_s,
            screen = u8::from(self.screen),
            body = GUEST_SCRIPT
        )
    }
}

/// What the screen's run copies from the host: tmux, the C.UTF-8 locale's
/// character classes (tmux refuses to start without a UTF-8 locale), and
/// the terminal descriptions of its client (xterm) and its panes (screen).
pub const SCREEN_FILES: [&str; 4] = [
    "/usr/bin/tmux",
    "/usr/lib/locale/C.utf8/LC_CTYPE",
    "/lib/terminfo/x/xterm",
    "/lib/terminfo/s/screen",
];

/// The body of the guest script; `N`, `MB`, `NS` and `IDLE` are set above it.
const GUEST_SCRIPT: &str = r#"
export XDG_CONFIG_HOME=/tmp/cfg XDG_DATA_HOME=/tmp/data
mkdir -p /tmp/cfg /tmp/data
P=/sys/bus/pseudo/drivers/scsi_debug
now() { cut -d' ' -f1 /proc/uptime; }
sd_count() { cat /sys/block/sd*/device/model 2>/dev/null | grep -c scsi_debug; }
wait_disks() {
    i=0
    while [ "$(sd_count)" -lt "$1" ]; do
        i=$((i + 1)); [ $i -lt 1800 ] || { echo "only $(sd_count) of $1 disks" >&2; return 1; }
        sleep 0.1
    done
}
# disks.txt: NAME SERIAL H:C:T:L of every scsi_debug disk.
list_disks() {
    for b in /sys/block/sd*; do
        read -r m < "$b/device/model"
        [ "$m" = scsi_debug ] || continue
        h=$(readlink "$b/device")
        echo "${b##*/} $(vpd80_serial "$b/device/vpd_pg80") ${h##*/}"
    done > disks.txt
}
# one_at_a_time: each disk takes one command at a time. scsi_debug's
# command slots (max_queue, 192) belong to its submit queue, shared by
# every adapter: 100 disks with several commands each held 200 ms (the
# kernel splits a BLKZEROOUT into one WRITE SAME per write_same_length)
# would fill them, and scsi_debug answers a command past them with TASK
# SET FULL and DID_ABORT, which the kernel fails as an I/O error.
one_at_a_time() { while read -r n s h; do echo 1 > "/sys/block/$n/device/queue_depth"; done < disks.txt; }
# set_delay NS: scsi_debug answers each command NS ns late (0: at once);
# refused (EBUSY) while commands are queued, so retried.
set_delay() {
    if [ "$1" = 0 ]; then f=$P/delay; else f=$P/ndelay; fi
    i=0
    until echo "$1" > "$f" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 200 ] || { echo "cannot write $1 to $f" >&2; return 1; }
        sleep 0.1
    done
}
fill_all() { while read -r n s h; do dd if=/tmp/fill of="/dev/$n" bs=1M conv=fsync 2>/dev/null; done < disks.txt; }
# digests FILE: NAME MD5 of each disk.
digests() {
    while read -r n s h; do
        echo "$n $(dd if="/dev/$n" bs=1M iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1)"
    done < disks.txt > "$1"
}
# counts FILE: NAME COMMANDS (the SCSI commands the disk was sent).
counts() {
    while read -r n s h; do read -r c < "/sys/block/$n/device/iorequest_cnt"; echo "$n $c"; done < disks.txt > "$1"
}
# erase_run TAG K: the first K disks erased together by WRITE SAME.
erase_run() {
    tag=$1
    args=$(head -n "$2" disks.txt | while read -r n s h; do printf ' /dev/%s --confirm-serial %s' "$n" "$s"; done)
    fill_all
    counts "cnt_${tag}_before.txt"
    set_delay "$NS"
    echo "drivelab-vm: erase $tag at $(now) s" > /dev/console
    t0=$(now)
    head -n1 /proc/stat > "cpu_${tag}_0.txt"
    # shellcheck disable=SC2086 # one word per argument
    drivelab erase $args --method write-same --strategy parallel --verify none --yes \
        --certificate-dir "/tmp/certs_$tag" --output-format json > "erase_$tag.json" 2> "erase_$tag.err"
    echo $? > "erase_$tag.status"
    head -n1 /proc/stat > "cpu_${tag}_1.txt"
    echo "$t0 $(now)" > "wall_$tag.txt"
    set_delay 0
    counts "cnt_${tag}_after.txt"
    digests "md5_$tag.txt"
    rm -rf "/tmp/certs_$tag"
}
# policy TAG: a policy owning every scsi_debug disk, erasing and certifying.
policy() {
    cat > "/tmp/policy_$1.toml" <<EOF
bays = ["scsi-*"]
operator = "scale"
store = "/tmp/station_$1.db"
[erase]
method = "clear"
verify = "full"
on_content = "erase"
certificate_dir = "/tmp/scerts_$1"
[certificate]
formats = ["json"]
EOF
    mkdir -p "/tmp/scerts_$1"
}
# wait_certified TAG PID K CMD...: until CMD's output shows K drives done
# (stored, so the main loop is idle), PID is gone, or 600 s; then the
# station's status, CPU, and its main thread's CPU over IDLE s idle.
wait_certified() {
    tag=$1; pid=$2; k=$3; shift 3
    i=0
    while :; do
        c=$("$@")
        [ "$c" -ge "$k" ] && break
        kill -0 "$pid" 2>/dev/null || break
        i=$((i + 1)); [ $i -lt 1200 ] || break
        sleep 0.5
    done
    t1=$(now)
    head -n1 /proc/stat > "cpu_st_${tag}_1.txt"
    set_delay 0
    cp "/proc/$pid/status" "status_$tag.txt"
    cp "/proc/$pid/stat" "stat_busy_$tag.txt"
    read -r a rest < "/proc/$pid/schedstat"; s0=$(now)
    sleep "$IDLE"
    read -r b rest < "/proc/$pid/schedstat"; s1=$(now)
    echo "$a $b $s0 $s1" > "idle_$tag.txt"
    echo "$t_start $t1 $c $k" > "wall_st_$tag.txt"
}
# after_station TAG: certificates, commands and digests after a station run.
after_station() {
    ls "/tmp/scerts_$1" | grep -c '\.json$' > "certs_st_$1.txt"
    counts "cnt_st_${1}_after.txt"
    digests "md5_st_$1.txt"
    rm -rf "/tmp/scerts_$1"
}
# stored_events FILE: drives whose result is in the store.
stored_events() { grep -c '"event":"stored"' "$1"; }
# station_run TAG: drivelab station --events json over every disk present
# until each is certified, then quit on its stdin.
station_run() {
    tag=$1
    k=$(wc -l < disks.txt)
    fill_all
    counts "cnt_st_${tag}_before.txt"
    policy "$tag"
    rm -f "/tmp/ctl_$tag"; mkfifo "/tmp/ctl_$tag"
    set_delay "$NS"
    echo "drivelab-vm: station $tag at $(now) s" > /dev/console
    t_start=$(now)
    head -n1 /proc/stat > "cpu_st_${tag}_0.txt"
    drivelab station --policy "/tmp/policy_$tag.toml" --events json < "/tmp/ctl_$tag" > "/tmp/st_$tag.jsonl" 2> "st_$tag.err" &
    pid=$!
    exec 7> "/tmp/ctl_$tag"
    wait_certified "$tag" $pid "$k" stored_events "/tmp/st_$tag.jsonl"
    echo quit >&7
    exec 7>&-
    wait $pid
    echo $? > "st_$tag.status"
    cp "/tmp/st_$tag.jsonl" "st_$tag.jsonl"
    after_station "$tag"
}
tm() { /usr/bin/tmux "$@"; }
# certified_rows K: the screen's certified rows (its table's: a progress
# column) once its header shows K stored, else 0.
certified_rows() {
    tm capture-pane -p -t st > screen.txt
    if grep -Eq "stored: $1( |$)" screen.txt; then grep -c ' certified .*%' screen.txt; else echo 0; fi
}
# screen_run: the station's screen in tmux over every disk present until
# each row shows certified, then q.
screen_run() {
    tag=screen
    k=$(wc -l < disks.txt)
    fill_all
    counts "cnt_st_${tag}_before.txt"
    policy "$tag"
    mkdir -p /dev/pts
    mount -t devpts devpts /dev/pts 2>/dev/null
    set_delay "$NS"
    echo "drivelab-vm: screen at $(now) s" > /dev/console
    t_start=$(now)
    head -n1 /proc/stat > "cpu_st_${tag}_0.txt"
    # Every tmux client needs a terminal it knows (the console's "linux"
    # is not among those copied).
    export TERM=xterm
    tm -u new-session -d -s st -x 120 -y $((k + 12)) \
        "exec drivelab station --policy /tmp/policy_$tag.toml 2> /tmp/st_$tag.err" || return 1
    pid=$(tm display -p -t st '#{pane_pid}')
    wait_certified "$tag" "$pid" "$k" certified_rows "$k"
    tm capture-pane -p -t st > screen.txt
    tm send-keys -t st q
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then echo 1; else echo 0; fi > "st_$tag.status"
    cp "/tmp/st_$tag.err" "st_$tag.err"
    tm kill-server 2>/dev/null
    after_station "$tag"
}

dd if=/dev/zero bs=1M count="$MB" 2>/dev/null | tr '\000' '\245' > /tmp/fill
md5sum < /tmp/fill | cut -d' ' -f1 > md5_fill.txt
dd if=/dev/zero bs=1M count="$MB" 2>/dev/null | md5sum | cut -d' ' -f1 > md5_zero.txt
getconf CLK_TCK > clk_tck.txt 2>/dev/null || echo 100 > clk_tck.txt

wait_disks 1 || exit 1
list_disks
one_at_a_time
station_run one

echo "drivelab-vm: adding $((N / LUNS - 1)) adapters of $LUNS disks at $(now) s" > /dev/console
t0=$(now)
echo "$LUNS" > $P/max_luns
[ "$LUNS" = 1 ] || echo "- - -" > "/sys/class/scsi_host/$(ls $P/adapter0 | grep '^host')/scan"
[ "$N" = "$LUNS" ] || echo $((N / LUNS - 1)) > $P/add_host
wait_disks "$N" || exit 1
echo "$t0 $(now)" > wall_add.txt
list_disks
one_at_a_time

erase_run one 1
erase_run all "$N"
station_run all
if [ "$SCREEN" = 1 ]; then screen_run || echo "the screen in tmux did not run" >&2; fi
true
"#;

/// A benchmark's positive whole-number setting from the environment
/// variable `name`, or `default` when it is not set.
pub fn env_num(name: &str, default: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("{name}={v:?}: give a positive whole number")),
        Err(_) => Ok(default),
    }
}

/// One `drivelab erase` run's figures.
#[derive(Debug, Clone)]
pub struct EraseRun {
    /// Exit status.
    pub status: i64,
    /// Drives in the report.
    pub drives: usize,
    /// Drives reported "overwritten, not verified" by WRITE SAME.
    pub erased: usize,
    /// The report's complete time, s (the erase of every drive, planning
    /// excluded).
    pub complete_s: f64,
    /// The slowest drive's erase phase, s.
    pub erase_max_s: f64,
    /// The whole command, s (planning, claims and start-up included).
    pub wall_s: f64,
    /// The share of the guest's CPU busy during the whole command.
    pub cpu_share: f64,
    /// Per disk: its MD5 after the run.
    pub md5: BTreeMap<String, String>,
    /// Per disk: SCSI commands during the run.
    pub commands: BTreeMap<String, u64>,
    /// The report's first error or stderr's last line, for a failed run.
    pub why: String,
}

/// One station run's figures.
#[derive(Debug, Clone)]
pub struct StationRun {
    /// Drives present (rows).
    pub rows: usize,
    /// Drives certified, by the events.
    pub certified: usize,
    /// Certificates written (JSON files).
    pub certificates: usize,
    /// Seconds from start until every drive was certified.
    pub wall_s: f64,
    /// Peak RSS (VmHWM), KiB: the rows and every erase's working set at
    /// its largest.
    pub hwm_kib: u64,
    /// RSS once every drive is certified (VmRSS), KiB: the rows held.
    pub rss_kib: u64,
    /// The whole process's CPU until every drive was certified, s.
    pub cpu_busy_s: f64,
    /// The share of the guest's CPU busy until then.
    pub cpu_share: f64,
    /// The main loop's CPU per refresh while idle (every row final), ms.
    pub ms_per_refresh: f64,
    /// Exit status after `quit`.
    pub status: i64,
    /// Per disk: MD5 after the run.
    pub md5: BTreeMap<String, String>,
    /// Per disk: SCSI commands during the run.
    pub commands: BTreeMap<String, u64>,
    /// States each drive ended in (name -> last state).
    pub last_state: BTreeMap<String, String>,
    /// stderr's last lines.
    pub err_tail: String,
}

/// Everything the guest measured.
#[derive(Debug, Clone)]
pub struct Figures {
    /// MD5 of a disk full of 0xA5.
    pub md5_fill: String,
    /// MD5 of a disk of zeroes.
    pub md5_zero: String,
    /// The disks (name, serial, H:C:T:L), first the one erased alone.
    pub disks: Vec<(String, String, String)>,
    /// Seconds for the other adapters to show up after `add_host`.
    pub add_s: f64,
    /// The first disk erased alone.
    pub one: EraseRun,
    /// Every disk erased together.
    pub all: EraseRun,
    /// The station over the first disk alone.
    pub station_one: StationRun,
    /// The station over every disk.
    pub station_all: StationRun,
    /// The station's screen (in tmux) over every disk, when asked for.
    pub station_screen: Option<StationRun>,
    /// The screen's last capture (tmux capture-pane).
    pub screen_text: String,
    /// The guest kernel's lines about failed commands (I/O errors, failed
    /// results), from its log.
    pub io_errors: Vec<String>,
}

fn pairs(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.trim().to_string()))
        .collect()
}

fn nums(text: &str) -> Vec<f64> {
    text.split_whitespace()
        .filter_map(|w| w.parse::<f64>().ok())
        .collect()
}

/// `0x1a3` or `419`.
fn counter(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Commands per disk between two `counts` files.
fn deltas(run: &GuestRun, before: &str, after: &str) -> BTreeMap<String, u64> {
    let b = pairs(&run.file(before).unwrap_or_default());
    pairs(&run.file(after).unwrap_or_default())
        .into_iter()
        .filter_map(|(n, a)| {
            let d = counter(&a)?.checked_sub(counter(b.get(&n)?)?)?;
            Some((n, d))
        })
        .collect()
}

/// The share of the CPU busy between two `cpu` lines of /proc/stat (idle
/// and iowait count as free).
fn busy_share(run: &GuestRun, before: &str, after: &str) -> f64 {
    let ticks = |name: &str| -> Option<(f64, f64)> {
        let text = run.file(name).ok()?;
        let f: Vec<f64> = text
            .split_whitespace()
            .skip(1)
            .filter_map(|w| w.parse().ok())
            .collect();
        let idle = f.get(3)? + f.get(4)?;
        Some((f.iter().take(8).sum(), idle))
    };
    match (ticks(before), ticks(after)) {
        (Some((t0, i0)), Some((t1, i1))) if t1 > t0 => 1.0 - (i1 - i0) / (t1 - t0),
        _ => f64::NAN,
    }
}

/// `utime + stime` of a /proc/PID/stat line, in ticks.
fn stat_ticks(stat: &str) -> Option<u64> {
    // The command name (field 2) may hold spaces: count after its ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state): utime is field 14, stime 15.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

impl EraseRun {
    fn read(run: &GuestRun, tag: &str) -> EraseRun {
        let status = run
            .file(&format!("erase_{tag}.status"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(-1);
        let report = run.json(&format!("erase_{tag}.json")).ok();
        let drives = report
            .as_ref()
            .and_then(|r| r["drives"].as_array().cloned())
            .unwrap_or_default();
        let erased = drives
            .iter()
            .filter(|d| d["result"] == "overwritten, not verified" && d["method"] == "write-same")
            .count();
        let erase_max_s = drives
            .iter()
            .filter_map(|d| d["erase_seconds"].as_f64())
            .fold(0.0, f64::max);
        let why = report
            .as_ref()
            .and_then(|r| {
                r["error"].as_str().map(str::to_string).or_else(|| {
                    drives
                        .iter()
                        .find_map(|d| d["error"].as_str().map(|e| format!("{}: {e}", d["device"])))
                })
            })
            .or_else(|| {
                let err = run.file(&format!("erase_{tag}.err")).ok()?;
                err.lines().last().map(str::to_string)
            })
            .unwrap_or_default();
        EraseRun {
            status,
            drives: drives.len(),
            erased,
            complete_s: report
                .as_ref()
                .and_then(|r| r["complete_seconds"].as_f64())
                .unwrap_or(f64::NAN),
            erase_max_s,
            cpu_share: busy_share(
                run,
                &format!("cpu_{tag}_0.txt"),
                &format!("cpu_{tag}_1.txt"),
            ),
            wall_s: match nums(&run.file(&format!("wall_{tag}.txt")).unwrap_or_default()).as_slice()
            {
                [a, b] => b - a,
                _ => f64::NAN,
            },
            md5: pairs(&run.file(&format!("md5_{tag}.txt")).unwrap_or_default()),
            commands: deltas(
                run,
                &format!("cnt_{tag}_before.txt"),
                &format!("cnt_{tag}_after.txt"),
            ),
            why,
        }
    }
}

impl StationRun {
    fn read(run: &GuestRun, tag: &str) -> StationRun {
        let wall = nums(&run.file(&format!("wall_st_{tag}.txt")).unwrap_or_default());
        let idle = nums(&run.file(&format!("idle_{tag}.txt")).unwrap_or_default());
        let status_text = run.file(&format!("status_{tag}.txt")).unwrap_or_default();
        let kib = |key: &str| {
            status_text
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        let tck = run
            .file("clk_tck.txt")
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .unwrap_or(100.0);
        let busy = run
            .file(&format!("stat_busy_{tag}.txt"))
            .unwrap_or_default();
        // schedstat: ns on the CPU; refreshes: one per REFRESH_S.
        let ms_per_refresh = match idle.as_slice() {
            [a, b, s0, s1] if s1 > s0 => (b - a) / 1e6 / ((s1 - s0) / REFRESH_S),
            _ => f64::NAN,
        };
        let events = run.file(&format!("st_{tag}.jsonl")).unwrap_or_default();
        let mut last_state = BTreeMap::new();
        for v in events
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["event"] == "state")
        {
            if let (Some(n), Some(s)) = (v["name"].as_str(), v["state"].as_str()) {
                last_state.insert(n.to_string(), s.to_string());
            }
        }
        StationRun {
            rows: wall.get(3).map_or(0, |&k| k as usize),
            // The screen has no events: the rows its capture showed certified.
            certified: if last_state.is_empty() {
                wall.get(2).map_or(0, |&c| c as usize)
            } else {
                last_state.values().filter(|s| *s == "certified").count()
            },
            certificates: run
                .file(&format!("certs_st_{tag}.txt"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0),
            wall_s: match wall.as_slice() {
                [t0, t1, ..] => t1 - t0,
                _ => f64::NAN,
            },
            hwm_kib: kib("VmHWM:"),
            rss_kib: kib("VmRSS:"),
            cpu_share: busy_share(
                run,
                &format!("cpu_st_{tag}_0.txt"),
                &format!("cpu_st_{tag}_1.txt"),
            ),
            cpu_busy_s: stat_ticks(&busy).map_or(f64::NAN, |t| t as f64 / tck),
            ms_per_refresh,
            status: run
                .file(&format!("st_{tag}.status"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(-1),
            md5: pairs(&run.file(&format!("md5_st_{tag}.txt")).unwrap_or_default()),
            commands: deltas(
                run,
                &format!("cnt_st_{tag}_before.txt"),
                &format!("cnt_st_{tag}_after.txt"),
            ),
            last_state,
            err_tail: crate::vm::tail_lines(
                &run.file(&format!("st_{tag}.err")).unwrap_or_default(),
                5,
            ),
        }
    }
}

impl Figures {
    /// The figures of a finished guest (missing files read as empty or
    /// NaN, for the caller's checks to name).
    pub fn read(run: &GuestRun) -> Figures {
        let disks = run
            .file("disks.txt")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                match f.as_slice() {
                    [n, s, h] => Some((n.to_string(), s.to_string(), h.to_string())),
                    _ => None,
                }
            })
            .collect();
        let add = nums(&run.file("wall_add.txt").unwrap_or_default());
        Figures {
            md5_fill: run
                .file("md5_fill.txt")
                .unwrap_or_default()
                .trim()
                .to_string(),
            md5_zero: run
                .file("md5_zero.txt")
                .unwrap_or_default()
                .trim()
                .to_string(),
            disks,
            add_s: match add.as_slice() {
                [a, b] => b - a,
                _ => f64::NAN,
            },
            one: EraseRun::read(run, "one"),
            all: EraseRun::read(run, "all"),
            station_one: StationRun::read(run, "one"),
            station_all: StationRun::read(run, "all"),
            station_screen: run
                .file("wall_st_screen.txt")
                .is_ok()
                .then(|| StationRun::read(run, "screen")),
            screen_text: run.file("screen.txt").unwrap_or_default(),
            io_errors: run
                .file("dmesg.txt")
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("I/O error") || l.contains("FAILED Result"))
                .map(String::from)
                .collect(),
        }
    }

    /// The 100-drive erase's complete time over one drive's.
    pub fn complete_ratio(&self) -> f64 {
        self.all.complete_s / self.one.complete_s
    }

    /// Whether disk `name` shares the store of the first disk (the same
    /// adapter: the same host number in H:C:T:L).
    pub fn shares_first_store(&self, name: &str) -> bool {
        let host = |h: &str| h.split(':').next().map(str::to_string);
        let first = self.disks.first().and_then(|d| host(&d.2));
        let this = self
            .disks
            .iter()
            .find(|d| d.0 == name)
            .and_then(|d| host(&d.2));
        first.is_some() && first == this
    }

    /// The slowest drive's erase phase with every drive over one drive's.
    pub fn erase_ratio(&self) -> f64 {
        self.all.erase_max_s / self.one.erase_max_s
    }

    /// The station's RSS with every row certified over one row's.
    pub fn rss_ratio(&self) -> f64 {
        self.station_all.rss_kib as f64 / self.station_one.rss_kib as f64
    }

    /// The station's peak RSS with every row over one row's.
    pub fn peak_ratio(&self) -> f64 {
        self.station_all.hwm_kib as f64 / self.station_one.hwm_kib as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_ticks_skip_a_command_name_with_spaces() {
        let stat = "42 (drivelab st x) S 1 42 42 0 -1 4194560 900 0 0 0 37 5 0 0 20 0 9 0";
        assert_eq!(stat_ticks(stat), Some(42));
        assert_eq!(stat_ticks("garbage"), None);
    }

    #[test]
    fn counters_read_hex_and_decimal() {
        assert_eq!(counter("0x1a3"), Some(419));
        assert_eq!(counter("17"), Some(17));
        assert_eq!(counter("0xzz"), None);
    }

    #[test]
    fn the_default_is_a_hundred_drives_of_eight_commands() {
        let s = Scale::default();
        assert_eq!(s.ws_per_drive(), 8);
        assert!((s.drive_seconds() - 1.6).abs() < 1e-9);
        assert!(s.check().is_ok());
        assert!(Scale {
            delay_ms: 1000,
            ..s.clone()
        }
        .check()
        .is_err());
        assert!(Scale { drives: 1, ..s }.check().is_err());
    }
}
