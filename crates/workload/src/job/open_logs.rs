//! A job's per-I/O logs (`write_iolog` and the latency/bandwidth logs)
//! kept open from its main pass into its read-back pass, so that the
//! verify phase's reads are logged as fio logs them, and finished after
//! both. fio closes the job's files when the main pass ends and opens each
//! again at the read-back's first read of it, so the iolog has
//! `close` ... `open` between the passes and a `close` of each reopened
//! file at the end; the latency logs count the reads as the job's reads.

use drivelab_engine::io::IoDesc;

use crate::run::fio_logs::JobLogs;
use crate::run::iolog::IoLog;

/// The logs of one job between its passes (nothing open: no log asked).
#[derive(Debug)]
pub struct OpenLogs {
    iolog: Option<IoLog>,
    logs: Option<JobLogs>,
    /// Monotonic time the job's measurement started, ns (the logs' times
    /// count from it).
    meas_start: u64,
    /// The priority a read-back read is logged with (the job's).
    ioprio: u16,
}

impl OpenLogs {
    /// The job's logs as its main pass left them.
    pub(crate) fn new(
        iolog: Option<IoLog>,
        logs: Option<JobLogs>,
        meas_start: u64,
        ioprio: u16,
    ) -> OpenLogs {
        OpenLogs {
            iolog,
            logs,
            meas_start,
            ioprio,
        }
    }

    /// A read-back read issued at `now` (monotonic ns).
    #[inline]
    pub(crate) fn read_issued(&mut self, now: u64, io: &IoDesc) {
        if let Some(l) = self.iolog.as_mut() {
            l.io(now, io);
        }
    }

    /// A read-back read that moved `bytes` completed at `now` after
    /// `lat_ns`.
    #[inline]
    pub(crate) fn read_done(&mut self, now: u64, io: &IoDesc, bytes: u64, lat_ns: u64) {
        if let Some(l) = self.logs.as_mut() {
            l.set_ioprio(self.ioprio);
            l.io(
                now.saturating_sub(self.meas_start),
                0,
                bytes,
                lat_ns,
                io.offset,
            );
        }
    }

    /// Close what the read-back opened (at `now`) and flush every log; the
    /// job's measured time is `runtime_ns`. The first write error, if any.
    pub fn finish(mut self, now: u64, runtime_ns: u64) -> Result<(), String> {
        if let Some(mut l) = self.iolog.take() {
            l.close_opened(now);
            l.finish()?;
        }
        match self.logs.take() {
            Some(l) => l.finish(runtime_ns),
            None => Ok(()),
        }
    }
}
