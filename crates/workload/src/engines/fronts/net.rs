//! The front of fio's `net` engine: reads and writes are a socket's
//! receives and sends, under the job loop ([`crate::engines::noio::net`]).
//! fio's `netsplice` moves the same bytes over the same socket through a
//! pipe (splice(2)); it runs here as `net`, as `splice` runs on psync.

use std::time::Duration;

use crate::engines::front::EngineFront;
use crate::job::outcome::JobOutcome;
use crate::run::error::RunError;
use crate::run::start::{start_delay, JobRun};
use crate::spec::kinds::EngineKind;

/// fio's `net`.
pub struct NetFront;

/// The net front.
pub static NET: NetFront = NetFront;

impl EngineFront for NetFront {
    fn names(&self) -> &'static [&'static str] {
        &["net", "netsplice"]
    }

    fn choose(&self, spec: &mut crate::JobSpec, name: &str) {
        super::choose_kind(spec, EngineKind::Net, name);
    }

    fn on_targets(&self) -> bool {
        false
    }

    fn streams(&self) -> bool {
        true
    }

    fn run(&self, r: JobRun<'_>) -> Result<JobOutcome, RunError> {
        let spec = &r.job.spec;
        let made = |source| RunError::Engine {
            engine: "net",
            source,
        };
        let end = r.cfg.stream_end.clone().unwrap_or_default();
        let mut e = crate::engines::noio::net::engine(
            spec,
            r.job.clone,
            spec.max_bs() as usize,
            spec.randseed,
            r.ctl.stop,
            r.cfg.group_end.clone(),
            end,
        )
        .map_err(made)?;
        let s = r.start()?;
        // fio connects (or accepts) when the job starts, after its
        // startdelay, and counts from then.
        start_delay(spec.startdelay, s.ctl.stop, s.cfg);
        e.work_mut().open().map_err(made)?;
        let mut started = s.job.clone();
        started.spec.startdelay = Duration::ZERO;
        let mut o = s.run(&mut e, &started)?;
        o.drop_ios = e.work().dropped();
        Ok(o)
    }
}
