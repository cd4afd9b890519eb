//! `drivelab station --policy FILE`: the command line around
//! `drivelab_station`: load and check the policy (one line naming the key,
//! exit status 2, nothing written), print what it will do, then run the
//! station until the operator quits, storing each drive's erase with the
//! host, bay and operator. `--dry-run` stops after the policy's checks and
//! lists the drives present with their bays.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde_json::json;

use drivelab_metrics::model::station::StationDrive;
use drivelab_station::drive::state::{State, View};
use drivelab_station::events::{Sink, StationRecord};
use drivelab_station::msg::DriveResult;
use drivelab_station::policy::{self, check};
use drivelab_station::{describe, watch, Ctx, Ui};

use crate::error::usage;

/// `--events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EventsArg {
    /// One JSON object per line on stdout; commands on stdin.
    Json,
}

/// Arguments of `drivelab station`.
#[derive(Args, Debug)]
pub struct StationArgs {
    /// The policy (TOML): the bays this station may erase and what it does
    /// (docs/station.md lists every key).
    #[arg(long, value_name = "FILE")]
    pub policy: PathBuf,
    /// JSON events on stdout instead of the screen (the default when
    /// stdout is not a terminal); control lines on stdin: hold DRIVE,
    /// resume DRIVE, confirm DRIVE, abort DRIVE, tag DRIVE TEXT, quit.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub events: Option<EventsArg>,
    /// Check the policy, print what it would do and the drives present
    /// with their bays; touch nothing.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// Serve live figures for Prometheus at http://ADDR/metrics while the
    /// station runs: each drive's state, progress, speed, time left and
    /// temperature, labelled by bay (ADDR: PORT on loopback, or
    /// HOST:PORT); see docs/metrics.md.
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// With --metrics-listen: keep serving the last figures for TIME (s
    /// when bare) after the station stops.
    #[arg(long = "metrics-linger", value_name = "TIME")]
    pub metrics_linger: Option<String>,
}

/// Run the subcommand.
pub fn run(a: StationArgs) -> anyhow::Result<u8> {
    let p = policy::load(&a.policy).map_err(|e| usage(e.to_string()))?;
    crate::output::check_dir(&p.erase.certificate_dir, "erase.certificate_dir")?;
    check::against_machine(&a.policy, &p).map_err(|e| usage(e.to_string()))?;
    if p.store.is_some() {
        crate::cmd_store::choose(p.store.clone(), false);
        crate::cmd_store::check()?;
    }
    let key_dir = drivelab_erase::cert::config_dir().map_err(|e| usage(e.to_string()))?;
    eprint!("{}", describe(&p));
    if a.dry_run {
        for d in watch::present(p.include_loop) {
            let names = watch::names::names_of(&d, p.include_loop);
            let bay = p.bay_of(&names);
            eprintln!(
                "  {} {}: {}",
                d.path.display(),
                names
                    .first()
                    .map(String::as_str)
                    .unwrap_or("(no by-path name)"),
                bay.map(|b| format!("in bay {b}"))
                    .unwrap_or_else(|| "in no bay: never touched".into())
            );
        }
        return Ok(0);
    }
    // The signing key exists before the first worker signs: workers that
    // each found it missing would race to create it.
    drivelab_erase::cert::sign::load_or_create_key(&key_dir)
        .map_err(|e| anyhow::Error::new(e).context("station"))?;
    let ui = if a.events.is_some() || !std::io::stdout().is_terminal() {
        Ui::Events
    } else {
        Ui::Screen
    };
    if ui == Ui::Screen {
        crate::cmd_store::quiet();
    }
    // Bound before any drive is touched: an address that cannot be bound
    // is bad input.
    let live = crate::metrics::Live::from_args(
        a.metrics_listen.as_deref(),
        a.metrics_linger.as_deref(),
        "station",
        true,
    )?;
    let ctx = Ctx {
        policy: p,
        policy_path: a.policy.clone(),
        key_dir,
        version: env!("CARGO_PKG_VERSION").to_string(),
    };
    let stop = crate::signal::stop_flag();
    let mut sink = StoreSink { live };
    drivelab_station::run(ctx, ui, stop, &mut sink)?;
    if let Some(l) = &sink.live {
        l.linger(stop);
    }
    Ok(0)
}

/// The station's rows as the metrics' drives.
fn station_drives(rows: &[View]) -> Vec<StationDrive> {
    rows.iter()
        .map(|v| StationDrive {
            device: v.name.clone(),
            serial: v.serial.clone().unwrap_or_default(),
            bay: v.bay.clone().unwrap_or_default(),
            state: v.state.word().to_string(),
            done_bytes: v.bytes_done,
            planned_bytes: v.bytes_total,
            progress: v.progress_pct / 100.0,
            throughput: if v.state.is_busy() {
                v.speed_bytes_per_s
            } else {
                0.0
            },
            eta_s: v.eta_s.filter(|_| v.state.is_busy()),
            temperature_c: v.temperature_c.map(|t| t as f64),
            health: v.health.clone(),
        })
        .collect()
}

/// Each drive's erase into the store, as `drivelab erase` keeps one, with
/// the station's record (bay, operator, grade, certificate fields) in its
/// options; every row's figures to `--metrics-listen`'s endpoint.
struct StoreSink {
    live: Option<crate::metrics::Live>,
}

impl Sink for StoreSink {
    fn store(&mut self, r: &DriveResult, rec: &StationRecord) -> Result<String, String> {
        let json = serde_json::to_value(&r.summary)
            .and_then(|v| serde_json::to_string_pretty(&v))
            .map_err(|e| e.to_string())?;
        let artifacts = crate::cmd_erase::certificate_artifacts(&r.summary);
        let code = u8::from(!r.summary.all_clean());
        crate::cmd_store::save_printed(
            drivelab_store::Kind::Erase,
            &format!("{json}\n"),
            true,
            &r.summary,
            code,
            json!({"station": rec, "devices": [r.view.device]}),
            artifacts,
        )
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "the store did not take it (see the warning above)".to_string())
    }

    fn observes(&self) -> bool {
        self.live.is_some()
    }

    fn observe(&mut self, rows: &[View]) {
        if let Some(l) = &self.live {
            let states: Vec<&str> = State::ALL.iter().map(|s| s.word()).collect();
            let drives = station_drives(rows);
            l.publish(drivelab_metrics::model::station::families(&drives, &states));
        }
    }
}
