//! fio's log files (`write_bw_log`, `write_lat_log`, `write_iops_log`), in
//! fio 3.33's names and line format so that fio's log tools
//! (`fio2gnuplot`, `fio_generate_plots`, fiologparser) read them.
//!
//! Names: `PREFIX_bw.N.log`, `PREFIX_lat.N.log` with `PREFIX_clat.N.log`
//! and `PREFIX_slat.N.log`, `PREFIX_iops.N.log`, where PREFIX is the
//! option's value (the job's name when bare) and N the job's number in the
//! run, from 1, as fio numbers its threads (each `numjobs` clone its own).
//!
//! Lines: `time, value, ddir, bs, prio`, or with `log_offset=1`
//! `time, value, ddir, bs, offset, prio`: time in ms since the start of
//! measurement, ddir 0 read / 1 write / 2 trim, bs the I/O's size in bytes.
//! The last field is the priority: with `log_prio=1` the I/O's priority
//! value (class << 13 | level: `cmdprio*` per I/O, else the thread's
//! `prioclass`/`prio`, 0 when none is set), else 1 for a real-time class
//! I/O and 0 for any other. Averaged lines carry 0. With `log_prio` the
//! field is written in hexadecimal (`0x2000`), as fio writes it.
//!
//! With `log_avg_msec=0` every I/O gets a line: the bandwidth log's value
//! is that I/O's own rate (`bytes × 10^6 / latency_ns`, as fio computes
//! it), the latency logs' its latency in ns, the IOPS log's 1. With
//! `log_avg_msec=M` each direction gets one line per M ms window in which
//! it did I/O: KiB/s, I/O per second, mean latency in ns, with bs and
//! offset 0, as fio writes averaged entries; with `log_max_value=1` the
//! latency lines hold the window's largest latency instead of its mean.
//!
//! `write_hist_log` writes `PREFIX_clat_hist.N.log`: every `log_hist_msec`
//! ms, for each direction that did I/O, `time, ddir, bs, c0, c1, …`: the
//! I/Os of the window counted in fio's latency buckets (1856, see
//! [`drivelab_report::jsonplus`]), `2^log_hist_coarseness` buckets summed
//! per field, bs the size of the direction's last I/O. No line for the
//! last, partial window, and none at all with `log_hist_msec=0`, as fio.
//!
//! drivelab measures latency from just before the submitting system call
//! (see [`crate::job::io_loop`]), so `clat` is the whole latency and the `slat`
//! log stays empty, as fio's is for its synchronous engines.
//!
//! Memory is constant: one buffered writer per file (1 MiB buffers), one
//! window of sums per direction. A line is formatted straight into the
//! buffer (no allocation per I/O); buffers are flushed between turns of the
//! I/O loop once three quarters full, so a full buffer rarely lands in the
//! middle of handling completions.

use std::io::{BufWriter, Write};

use drivelab_device::output::{Output, OutputFile};
use std::path::PathBuf;

/// fio's default `bwavgtime` / `iopsavgtime`, ms.
const DEFAULT_AVG_MSEC: u64 = 500;
/// Buffer of each log file.
const BUF_BYTES: usize = 1 << 20;

/// The log options of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSpec {
    /// `write_bw_log`: the prefix ("" = the job's name); None = no log.
    pub bw: Option<String>,
    /// `write_lat_log`.
    pub lat: Option<String>,
    /// `write_iops_log`.
    pub iops: Option<String>,
    /// `log_avg_msec`: 0 = a line per I/O.
    pub avg_msec: u64,
    /// `log_offset`: add the offset field.
    pub offset: bool,
    /// `log_max_value`: an averaged latency line holds the window's
    /// largest latency, not its mean.
    pub max_value: bool,
    /// `log_prio`: the priority field holds the priority value.
    pub prio: bool,
    /// `bwavgtime`, ms (default 500).
    pub bw_avg_msec: u64,
    /// `iopsavgtime`, ms (default 500).
    pub iops_avg_msec: u64,
    /// `write_hist_log`: the prefix ("" = the job's name).
    pub hist: Option<String>,
    /// `log_hist_msec`: window of the histogram log, ms (0 = no entries).
    pub hist_msec: u64,
    /// `log_hist_coarseness`: 2^N fio buckets per field (0..=6).
    pub hist_coarseness: u32,
    /// `per_job_logs`: the job's number in the log names (default on).
    pub per_job: bool,
    /// `log_unix_epoch`: times in ms since the Unix epoch, not since the
    /// job started.
    pub unix_epoch: bool,
    /// `log_alternate_epoch`: times in ms since the epoch of clock
    /// `epoch_clock`.
    pub alternate_epoch: bool,
    /// `log_alternate_epoch_clock_id`: the clock of `unix_epoch` and
    /// `alternate_epoch` (0, CLOCK_REALTIME, by default).
    pub epoch_clock: i32,
}

impl Default for LogSpec {
    fn default() -> Self {
        LogSpec {
            bw: None,
            lat: None,
            iops: None,
            avg_msec: 0,
            offset: false,
            max_value: false,
            prio: false,
            bw_avg_msec: DEFAULT_AVG_MSEC,
            iops_avg_msec: DEFAULT_AVG_MSEC,
            hist: None,
            hist_msec: 0,
            hist_coarseness: 0,
            per_job: true,
            unix_epoch: false,
            alternate_epoch: false,
            epoch_clock: 0,
        }
    }
}

impl LogSpec {
    /// Whether any log is written.
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.lat.is_some() || self.iops.is_some() || self.hist.is_some()
    }

    /// The window of the JSON bandwidth and IOPS samples, ms: `bwavgtime`
    /// (drivelab samples both on one window, the shorter of `bwavgtime` and
    /// `iopsavgtime`), shortened to `log_avg_msec` when a log averages over
    /// less, as fio does.
    pub fn sample_window_ms(&self) -> u64 {
        let w = self.bw_avg_msec.min(self.iops_avg_msec).max(1);
        if self.any() && self.avg_msec > 0 {
            w.min(self.avg_msec)
        } else {
            w
        }
    }

    /// The file of log `kind` of job number `number` named `job`, when
    /// `prefix` asks for it: `PREFIX_KIND.N.log`, or `PREFIX_KIND.log`
    /// without `per_job_logs` (fio's `gen_log_name`).
    fn path(
        &self,
        prefix: &Option<String>,
        kind: &str,
        job: &str,
        number: usize,
    ) -> Option<PathBuf> {
        prefix.as_ref().map(|p| {
            let prefix = if p.is_empty() { job } else { p.as_str() };
            PathBuf::from(if self.per_job {
                format!("{prefix}_{kind}.{number}.log")
            } else {
                format!("{prefix}_{kind}.log")
            })
        })
    }

    /// The files the logs of job number `number` (from 1) named `job`
    /// write, in the order bw, lat, clat, slat, iops (those asked for).
    pub fn paths(&self, job: &str, number: usize) -> Vec<PathBuf> {
        let name = |p: &Option<String>, kind: &str| self.path(p, kind, job, number);
        let mut v = Vec::new();
        v.extend(name(&self.bw, "bw"));
        for kind in ["lat", "clat", "slat"] {
            v.extend(name(&self.lat, kind));
        }
        v.extend(name(&self.iops, "iops"));
        v.extend(name(&self.hist, "clat_hist"));
        v
    }
}

/// One direction's sums over the open window.
#[derive(Debug, Clone, Copy, Default)]
struct Window {
    bytes: u64,
    ios: u64,
    lat_sum: u128,
    lat_max: u64,
}

/// The open log files of one running job.
pub struct JobLogs {
    bw: Option<(PathBuf, BufWriter<OutputFile>)>,
    lat: Option<(PathBuf, BufWriter<OutputFile>)>,
    clat: Option<(PathBuf, BufWriter<OutputFile>)>,
    iops: Option<(PathBuf, BufWriter<OutputFile>)>,
    avg_ns: u64,
    offset: bool,
    /// `log_max_value`.
    max_value: bool,
    next_ns: u64,
    win: [Window; 3],
    hist: Option<HistLog>,
    error: Option<String>,
    /// `log_prio`.
    log_prio: bool,
    /// The priority field of the next per-I/O lines.
    prio_field: u16,
    /// Added to every time written, ms: the job's start on the epoch
    /// clock under `log_unix_epoch` or `log_alternate_epoch`, else 0.
    epoch_ms: u64,
}

/// fio's number of latency buckets (`FIO_IO_U_PLAT_NR`).
const PLAT_NR: usize = 1856;

/// The histogram log: the open window's counts per direction.
struct HistLog {
    path: PathBuf,
    w: BufWriter<OutputFile>,
    counts: Box<[[u64; PLAT_NR]; 3]>,
    used: [bool; 3],
    bs: [u64; 3],
    window_ns: u64,
    next_ns: u64,
    stride: usize,
    /// See [`JobLogs`]'s `epoch_ms`.
    epoch_ms: u64,
}

impl HistLog {
    fn new(
        path: PathBuf,
        w: BufWriter<OutputFile>,
        msec: u64,
        coarseness: u32,
        epoch_ms: u64,
    ) -> HistLog {
        HistLog {
            path,
            w,
            counts: Box::new([[0; PLAT_NR]; 3]),
            used: [false; 3],
            bs: [0; 3],
            window_ns: msec * 1_000_000,
            next_ns: msec * 1_000_000,
            stride: 1 << coarseness.min(6),
            epoch_ms,
        }
    }

    #[inline]
    fn io(&mut self, t_ns: u64, dir: usize, bytes: u64, lat_ns: u64) -> std::io::Result<()> {
        if self.window_ns == 0 {
            return Ok(());
        }
        while t_ns >= self.next_ns {
            self.close()?;
            self.next_ns += self.window_ns;
        }
        let idx = drivelab_report::jsonplus::plat_val_to_idx(lat_ns) as usize;
        self.counts[dir][idx.min(PLAT_NR - 1)] += 1;
        self.used[dir] = true;
        self.bs[dir] = bytes;
        Ok(())
    }

    fn close(&mut self) -> std::io::Result<()> {
        let t = self.epoch_ms + self.next_ns / 1_000_000;
        for d in 0..3 {
            if !self.used[d] {
                continue;
            }
            write!(self.w, "{t}, {d}, {}", self.bs[d])?;
            for chunk in self.counts[d].chunks(self.stride) {
                write!(self.w, ", {}", chunk.iter().sum::<u64>())?;
            }
            writeln!(self.w)?;
            self.counts[d] = [0; PLAT_NR];
            self.used[d] = false;
        }
        Ok(())
    }
}

impl std::fmt::Debug for JobLogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobLogs")
            .field("avg_ns", &self.avg_ns)
            .finish()
    }
}

/// A log file through the device crate's output rules: written to a
/// temporary file beside `path`, put in place by [`JobLogs::finish`].
fn create(path: PathBuf) -> Result<(PathBuf, BufWriter<OutputFile>), String> {
    let f = Output::new(&path)
        .option("log file")
        .create()
        .map_err(|e| e.to_string())?;
    Ok((path, BufWriter::with_capacity(BUF_BYTES, f)))
}

impl JobLogs {
    /// Create the job's log files (each replaces an old one when the job
    /// finishes, as fio truncates it; a failed log leaves the old one); None
    /// when the job writes no log.
    pub fn create(spec: &LogSpec, job: &str, number: usize) -> Result<Option<JobLogs>, String> {
        if !spec.any() {
            return Ok(None);
        }
        let path = |p: &Option<String>, kind: &str| spec.path(p, kind, job, number);
        let open = |p: Option<PathBuf>| p.map(create).transpose();
        // The logs are made as the job starts: their time 0 is now.
        // Under log_unix_epoch or log_alternate_epoch, counted from the
        // epoch of the clock log_alternate_epoch_clock_id names.
        let epoch_ms = if spec.unix_epoch || spec.alternate_epoch {
            drivelab_engine::clock::clock_ms(spec.epoch_clock).map_err(|e| {
                format!(
                    "log_alternate_epoch_clock_id={}: clock_gettime: {e}",
                    spec.epoch_clock
                )
            })?
        } else {
            0
        };
        let logs = JobLogs {
            bw: open(path(&spec.bw, "bw"))?,
            lat: open(path(&spec.lat, "lat"))?,
            clat: open(path(&spec.lat, "clat"))?,
            iops: open(path(&spec.iops, "iops"))?,
            avg_ns: spec.avg_msec * 1_000_000,
            offset: spec.offset,
            max_value: spec.max_value,
            next_ns: spec.avg_msec * 1_000_000,
            win: [Window::default(); 3],
            hist: open(path(&spec.hist, "clat_hist"))?
                .map(|(p, w)| HistLog::new(p, w, spec.hist_msec, spec.hist_coarseness, epoch_ms)),
            error: None,
            log_prio: spec.prio,
            prio_field: 0,
            epoch_ms,
        };
        // The submission latency log: created, left empty (see the module doc).
        if let Some(p) = path(&spec.lat, "slat") {
            Output::new(&p)
                .option("log file")
                .write(b"")
                .map_err(|e| e.to_string())?;
        }
        Ok(Some(logs))
    }

    fn line(
        out: &mut Option<(PathBuf, BufWriter<OutputFile>)>,
        error: &mut Option<String>,
        (with_offset, hex): (bool, bool),
        f: (u64, u64, usize, u64, u64, u16),
    ) {
        let Some((path, w)) = out.as_mut() else {
            return;
        };
        let (t, v, d, bs, off, prio) = f;
        // log_prio's values are hexadecimal, as fio writes them.
        let r = match (with_offset, hex) {
            (true, true) => writeln!(w, "{t}, {v}, {d}, {bs}, {off}, 0x{prio:04x}"),
            (true, false) => writeln!(w, "{t}, {v}, {d}, {bs}, {off}, {prio}"),
            (false, true) => writeln!(w, "{t}, {v}, {d}, {bs}, 0x{prio:04x}"),
            (false, false) => writeln!(w, "{t}, {v}, {d}, {bs}, {prio}"),
        };
        if let Err(e) = r {
            if error.is_none() {
                *error = Some(format!("cannot write log file {}: {e}", path.display()));
            }
            *out = None;
        }
    }

    /// The priority of the I/Os logged next (the kernel's ioprio value).
    #[inline]
    pub fn set_ioprio(&mut self, ioprio: u16) {
        self.prio_field = if self.log_prio {
            ioprio
        } else {
            u16::from(ioprio >> 13 == 1)
        };
    }

    /// Log a completed I/O: `t_ns` after the start of measurement,
    /// direction `dir` (0 read, 1 write, 2 trim), `bytes` moved, its
    /// latency and offset.
    #[inline]
    pub fn io(&mut self, t_ns: u64, dir: usize, bytes: u64, lat_ns: u64, offset: u64) {
        if let Some(h) = self.hist.as_mut() {
            if let Err(e) = h.io(t_ns, dir, bytes, lat_ns) {
                if self.error.is_none() {
                    self.error = Some(format!("cannot write log file {}: {e}", h.path.display()));
                }
                self.hist = None;
            }
        }
        if self.bw.is_none() && self.lat.is_none() && self.iops.is_none() {
            return;
        }
        if self.avg_ns == 0 {
            let t = self.epoch_ms + t_ns / 1_000_000;
            let o = self.offset;
            let bw = bytes * 1_000_000 / lat_ns.max(1);
            Self::line(
                &mut self.bw,
                &mut self.error,
                (o, self.log_prio),
                (t, bw, dir, bytes, offset, self.prio_field),
            );
            Self::line(
                &mut self.lat,
                &mut self.error,
                (o, self.log_prio),
                (t, lat_ns, dir, bytes, offset, self.prio_field),
            );
            Self::line(
                &mut self.clat,
                &mut self.error,
                (o, self.log_prio),
                (t, lat_ns, dir, bytes, offset, self.prio_field),
            );
            Self::line(
                &mut self.iops,
                &mut self.error,
                (o, self.log_prio),
                (t, 1, dir, bytes, offset, self.prio_field),
            );
            return;
        }
        while t_ns >= self.next_ns {
            self.close_window(self.next_ns, self.avg_ns, true);
            self.next_ns += self.avg_ns;
        }
        let w = &mut self.win[dir];
        w.bytes += bytes;
        w.ios += 1;
        w.lat_sum += u128::from(lat_ns);
        w.lat_max = w.lat_max.max(lat_ns);
    }

    /// Write the averaged lines of the window ending at `end_ns`, `len_ns`
    /// long; the rates (bw, iops) only when `rates`.
    fn close_window(&mut self, end_ns: u64, len_ns: u64, rates: bool) {
        let t = self.epoch_ms + end_ns / 1_000_000;
        let ms = (len_ns / 1_000_000).max(1);
        let o = self.offset;
        for d in 0..3 {
            let w = std::mem::take(&mut self.win[d]);
            if w.ios == 0 {
                continue;
            }
            let bw = w.bytes * 1000 / ms / 1024;
            let iops = w.ios * 1000 / ms;
            let mean = if self.max_value {
                w.lat_max
            } else {
                ((w.lat_sum + u128::from(w.ios) / 2) / u128::from(w.ios)) as u64
            };
            if rates {
                Self::line(
                    &mut self.bw,
                    &mut self.error,
                    (o, self.log_prio),
                    (t, bw, d, 0, 0, 0),
                );
            }
            Self::line(
                &mut self.lat,
                &mut self.error,
                (o, self.log_prio),
                (t, mean, d, 0, 0, 0),
            );
            Self::line(
                &mut self.clat,
                &mut self.error,
                (o, self.log_prio),
                (t, mean, d, 0, 0, 0),
            );
            if rates {
                Self::line(
                    &mut self.iops,
                    &mut self.error,
                    (o, self.log_prio),
                    (t, iops, d, 0, 0, 0),
                );
            }
        }
    }

    /// Between turns of the loop: flush a buffer that is three quarters full.
    #[inline]
    pub fn between_turns(&mut self) {
        if let Some(h) = self.hist.as_mut() {
            if h.w.buffer().len() > BUF_BYTES / 4 * 3 {
                if let Err(e) = h.w.flush() {
                    if self.error.is_none() {
                        self.error =
                            Some(format!("cannot write log file {}: {e}", h.path.display()));
                    }
                    self.hist = None;
                }
            }
        }
        for slot in [&mut self.bw, &mut self.lat, &mut self.clat, &mut self.iops] {
            if let Some((path, w)) = slot.as_mut() {
                if w.buffer().len() > BUF_BYTES / 4 * 3 {
                    if let Err(e) = w.flush() {
                        if self.error.is_none() {
                            self.error =
                                Some(format!("cannot write log file {}: {e}", path.display()));
                        }
                        *slot = None;
                    }
                }
            }
        }
    }

    /// The job ended `end_ns` after the start of measurement: write the
    /// last, partial window's mean latencies (as fio does; not its rates,
    /// which a short window would overstate) and flush. The first write
    /// error, if any.
    pub fn finish(mut self, end_ns: u64) -> Result<(), String> {
        if self.avg_ns > 0 && end_ns > self.next_ns - self.avg_ns {
            let start = self.next_ns - self.avg_ns;
            self.close_window(end_ns, end_ns - start, false);
        }
        let hist = self.hist.map(|h| (h.path, h.w));
        for (path, w) in [self.bw, self.lat, self.clat, self.iops, hist]
            .into_iter()
            .flatten()
        {
            let done = w
                .into_inner()
                .map_err(|e| format!("cannot write log file {}: {}", path.display(), e.error()))
                .and_then(|f| f.commit().map_err(|e| e.to_string()));
            if let Err(e) = done {
                if self.error.is_none() {
                    self.error = Some(e);
                }
            }
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &std::path::Path, avg: u64, offset: bool) -> LogSpec {
        let p = dir.join("t").display().to_string();
        LogSpec {
            bw: Some(p.clone()),
            lat: Some(p.clone()),
            iops: Some(p),
            avg_msec: avg,
            offset,
            ..LogSpec::default()
        }
    }

    #[test]
    fn per_io_lines_are_fios() {
        let dir = drivelab_testkit::TempDir::new("logs-io");
        let s = spec(dir.path(), 0, false);
        let mut l = JobLogs::create(&s, "job", 3).unwrap().unwrap();
        // 4 KiB read in 226_615 ns at 1.5 ms: fio wrote 18074 for it.
        l.io(1_500_000, 0, 4096, 226_615, 8192);
        l.io(2_000_000, 1, 512, 1_000, 0);
        l.finish(3_000_000).unwrap();
        let read = |k: &str| std::fs::read_to_string(dir.join(&format!("t_{k}.3.log"))).unwrap();
        assert_eq!(read("bw"), "1, 18074, 0, 4096, 0\n2, 512000, 1, 512, 0\n");
        assert_eq!(read("lat"), "1, 226615, 0, 4096, 0\n2, 1000, 1, 512, 0\n");
        assert_eq!(read("clat"), read("lat"));
        assert_eq!(read("slat"), "");
        assert_eq!(read("iops"), "1, 1, 0, 4096, 0\n2, 1, 1, 512, 0\n");
    }

    #[test]
    fn averaged_lines_have_rates_and_zero_bs_and_offset() {
        let dir = drivelab_testkit::TempDir::new("logs-avg");
        let s = spec(dir.path(), 200, true);
        let mut l = JobLogs::create(&s, "job", 1).unwrap().unwrap();
        // 50 reads of 4 KiB in the first 200 ms: 1000 KiB/s, 250 IOPS.
        for i in 0..50u64 {
            l.io(i * 1_000_000, 0, 4096, 100 + i, i * 4096);
        }
        // Nothing in 200..400 ms; two writes in 400..600 ms; one at 650 ms,
        // and the job ends at 700 ms.
        l.io(450_000_000, 1, 4096, 10, 0);
        l.io(550_000_000, 1, 4096, 20, 0);
        l.io(650_000_000, 1, 4096, 31, 0);
        l.finish(700_000_000).unwrap();
        let bw = std::fs::read_to_string(dir.join("t_bw.1.log")).unwrap();
        // 8 KiB in 200 ms: 40 KiB/s. The last, partial window has no rate.
        assert_eq!(bw, "200, 1000, 0, 0, 0, 0\n600, 40, 1, 0, 0, 0\n");
        let lat = std::fs::read_to_string(dir.join("t_lat.1.log")).unwrap();
        // Mean of 100..=149 is 124.5, rounded half up; the partial window
        // ends at the job's end.
        assert_eq!(
            lat,
            "200, 125, 0, 0, 0, 0\n600, 15, 1, 0, 0, 0\n700, 31, 1, 0, 0, 0\n"
        );
        let iops = std::fs::read_to_string(dir.join("t_iops.1.log")).unwrap();
        assert_eq!(iops.lines().next(), Some("200, 250, 0, 0, 0, 0"));
    }

    #[test]
    fn histogram_log_counts_each_window_in_fios_buckets() {
        let dir = drivelab_testkit::TempDir::new("logs-hist");
        let s = LogSpec {
            hist: Some(dir.join("h").display().to_string()),
            hist_msec: 100,
            hist_coarseness: 2,
            ..LogSpec::default()
        };
        let mut l = JobLogs::create(&s, "job", 1).unwrap().unwrap();
        // Two reads in the first window: 50 ns (bucket 50) and 130 ns
        // (bucket 129: [128, 130) is bucket 128, 130 is bucket 129).
        l.io(10_000_000, 0, 4096, 50, 0);
        l.io(20_000_000, 0, 4096, 130, 0);
        // A write in the second; the third is partial and not written.
        l.io(150_000_000, 1, 512, 1_000_000, 0);
        l.io(250_000_000, 1, 512, 10, 0);
        l.finish(260_000_000).unwrap();
        let text = std::fs::read_to_string(dir.join("h_clat_hist.1.log")).unwrap();
        let lines: Vec<Vec<u64>> = text
            .lines()
            .map(|l| l.split(", ").map(|v| v.parse().unwrap()).collect())
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        // time, ddir, bs, then 1856 / 4 fields.
        assert_eq!(&lines[0][..3], [100, 0, 4096]);
        assert_eq!(lines[0].len(), 3 + 464);
        // 50 ns: bucket 50, field 12; 130 ns: bucket 129, field 32.
        assert_eq!(lines[0][3 + 12], 1);
        assert_eq!(lines[0][3 + 32], 1);
        assert_eq!(lines[0][3..].iter().sum::<u64>(), 2);
        assert_eq!(&lines[1][..3], [200, 1, 512]);
        assert_eq!(lines[1][3..].iter().sum::<u64>(), 1);
    }

    #[test]
    fn bare_option_names_logs_after_the_job_and_numbers_them() {
        let s = LogSpec {
            bw: Some(String::new()),
            lat: Some("x".into()),
            ..LogSpec::default()
        };
        let p: Vec<String> = s
            .paths("seq", 2)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            p,
            [
                "seq_bw.2.log",
                "x_lat.2.log",
                "x_clat.2.log",
                "x_slat.2.log"
            ]
        );
        assert_eq!(s.sample_window_ms(), 500);
        let s = LogSpec { avg_msec: 100, ..s };
        assert_eq!(s.sample_window_ms(), 100);
    }
}
