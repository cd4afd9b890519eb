//! `drivelab fleet`: the command line around `drivelab_fleet`. `render`
//! prints a fleet run's Kubernetes objects (YAML, for `kubectl apply -f
//! -`), `apply` sends them to the API server, `status` and `watch` read the
//! run back, `delete` removes it; `exec` is what the run's Job pods run on
//! each node (the selected drives, then the command on them); `report`
//! merges a run's records from the store. Bad input: one line, exit
//! status 2, nothing sent.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};

use drivelab_fleet::kube::{self, Client};
use drivelab_fleet::objects::{self, CONFIRM, DRIVES};
use drivelab_fleet::report::{self, Entry};
use drivelab_fleet::spec::{self, Fleet, Label, Selection, Work, DRIVES_ENV};
use drivelab_fleet::{apply, select, FleetError};

use crate::error::usage;

/// Arguments of `drivelab fleet`.
#[derive(Args, Debug)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub cmd: FleetCmd,
}

/// The fleet's subcommands.
#[derive(Subcommand, Debug)]
pub enum FleetCmd {
    /// Print a fleet run's Kubernetes objects as YAML (kubectl apply -f -).
    Render(RunArgs),
    /// Send a fleet run's objects to the API server (server-side apply).
    Apply(RunArgs),
    /// A fleet run's DaemonSet, Jobs and pods, once.
    Status(WhichRun),
    /// A fleet run's pods until the station is ready or the Jobs are done.
    Watch(WatchArgs),
    /// Delete a fleet run's DaemonSet (when it is the run's), Jobs and
    /// ConfigMaps.
    Delete(WhichRun),
    /// On a node (what a Job's pod runs): the selected drives, then the
    /// command after `--` with `{}` replaced by their paths and
    /// `{confirm}` by --confirm-serial for each; $DRIVELAB_DRIVES holds
    /// them as a job file's filename= (a:b).
    Exec(ExecArgs),
    /// One report of a fleet run from the store: a row per node, totals,
    /// the slowest and fastest drives.
    Report(ReportArgs),
}

/// The work of a fleet run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WorkKind {
    /// `drivelab station --policy` on every labelled node (a DaemonSet).
    Station,
    /// `drivelab run JOBFILE` on the selected drives of every labelled node.
    Run,
    /// `drivelab erase` of the selected drives, wherever they are.
    Erase,
    /// `drivelab health` of the selected drives.
    Health,
}

/// The drives a Job acts on.
#[derive(Args, Debug, Clone, Default)]
pub struct SelectArgs {
    /// A drive's serial (repeatable).
    #[arg(long = "serial", value_name = "SERIAL")]
    pub serials: Vec<String>,
    /// A drive's WWN (repeatable).
    #[arg(long = "wwn", value_name = "WWN")]
    pub wwns: Vec<String>,
    /// A /dev/disk/by-path name pattern (repeatable; *, ?).
    #[arg(long = "by-path", value_name = "PATTERN")]
    pub by_path: Vec<String>,
    /// Loop devices may be selected, by --by-path on their backing file
    /// (tests, demonstrations).
    #[arg(long = "include-loop")]
    pub include_loop: bool,
}

impl SelectArgs {
    fn selection(&self) -> Selection {
        Selection {
            serials: self.serials.clone(),
            wwns: self.wwns.clone(),
            by_path: self.by_path.clone(),
            include_loop: self.include_loop,
        }
    }
}

/// Which run, where.
#[derive(Args, Debug, Clone)]
pub struct WhichRun {
    /// The fleet run's ID.
    #[arg(long = "run", value_name = "ID")]
    pub run_id: String,
    /// The namespace.
    #[arg(long, default_value = spec::NAMESPACE)]
    pub namespace: String,
    /// The kubeconfig (default: $KUBECONFIG, ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
}

/// `render` and `apply`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// What the run does.
    #[arg(long, value_enum)]
    pub work: WorkKind,
    #[command(flatten)]
    pub which: WhichRun,
    /// The image (the name tools/oci-image prints).
    #[arg(long)]
    pub image: String,
    /// The label of the fleet's nodes.
    #[arg(long = "node-label", default_value = spec::NODE_LABEL, value_name = "KEY=VALUE")]
    pub node_label: String,
    /// The PostgreSQL store every pod writes to (default: $DRIVELAB_STORE).
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// The directory on each node for certificates, journals and the key.
    #[arg(long = "state-dir", default_value = spec::STATE_DIR, value_name = "DIR")]
    pub state_dir: PathBuf,
    /// The station's policy (--work station).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The job file (--work run); it names the drives as
    /// filename=${DRIVELAB_DRIVES}.
    #[arg(long = "job-file", value_name = "FILE")]
    pub job_file: Option<PathBuf>,
    /// An option passed on to `drivelab erase` (--work erase; repeatable,
    /// such as --erase-option=--verify=full).
    #[arg(long = "erase-option", value_name = "ARG", allow_hyphen_values = true)]
    pub erase_options: Vec<String>,
    #[command(flatten)]
    pub select: SelectArgs,
    /// The nodes to give Jobs to (default for apply: the labelled nodes,
    /// asked of the API server; render needs them).
    #[arg(long = "node", value_name = "NAME")]
    pub nodes: Vec<String>,
}

/// `watch`.
#[derive(Args, Debug)]
pub struct WatchArgs {
    #[command(flatten)]
    pub which: WhichRun,
    /// Stop watching after this many seconds (exit status 1).
    #[arg(long = "timeout-s", default_value_t = 3600)]
    pub timeout_s: u64,
    /// Seconds between looks.
    #[arg(long = "interval-s", default_value_t = 2)]
    pub interval_s: u64,
}

/// `exec`.
#[derive(Args, Debug)]
pub struct ExecArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    /// The drivelab command to run on the drives.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The fleet run's ID.
    #[arg(long = "run", value_name = "ID")]
    pub run_id: String,
    /// The store (default: $DRIVELAB_STORE).
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// How many slowest and fastest drives to list.
    #[arg(long, default_value_t = 5)]
    pub rank: usize,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Run the subcommand.
pub fn run(a: FleetArgs) -> anyhow::Result<u8> {
    match a.cmd {
        FleetCmd::Render(r) => {
            let (fleet, work) = run_spec(&r)?;
            if !matches!(work, Work::Station { .. }) && r.nodes.is_empty() {
                return Err(usage(
                    "render of Jobs needs the nodes: give --node NAME for each (apply asks the API server)",
                ));
            }
            print!(
                "{}",
                objects::to_yaml(&objects::render(&fleet, &work, &r.nodes))
            );
            Ok(0)
        }
        FleetCmd::Apply(r) => {
            let (fleet, work) = run_spec(&r)?;
            let c = client(r.which.kubeconfig.as_ref())?;
            let nodes = if r.nodes.is_empty() {
                apply::nodes(&c, &fleet.node_label).map_err(fleet_err)?
            } else {
                r.nodes.clone()
            };
            if nodes.is_empty() {
                eprintln!(
                    "drivelab fleet: no node carries {}={}: label them (kubectl label node NAME {}={})",
                    fleet.node_label.key, fleet.node_label.value, fleet.node_label.key, fleet.node_label.value
                );
            }
            let objs = objects::render(&fleet, &work, &nodes);
            for p in apply::apply(&c, &objs).map_err(fleet_err)? {
                println!("applied {p}");
            }
            Ok(0)
        }
        FleetCmd::Status(w) => {
            let c = client(w.kubeconfig.as_ref())?;
            let st = apply::status(&c, &which_fleet(&w)).map_err(fleet_err)?;
            print!("{}", status_text(&st));
            Ok(0)
        }
        FleetCmd::Watch(w) => watch(&w),
        FleetCmd::Delete(w) => {
            let c = client(w.kubeconfig.as_ref())?;
            for p in apply::delete(&c, &which_fleet(&w)).map_err(fleet_err)? {
                println!("deleted {p}");
            }
            Ok(0)
        }
        FleetCmd::Exec(e) => exec(&e),
        FleetCmd::Report(r) => fleet_report(&r),
    }
}

fn fleet_err(e: FleetError) -> anyhow::Error {
    if e.is_bad_input() {
        usage(e.to_string())
    } else {
        anyhow::Error::new(e).context("drivelab fleet")
    }
}

fn client(path: Option<&PathBuf>) -> anyhow::Result<Client> {
    let p = kube::kubeconfig_path(path.map(PathBuf::as_path))
        .ok_or_else(|| usage("no kubeconfig: give --kubeconfig FILE or set $KUBECONFIG"))?;
    Client::from_kubeconfig(&p).map_err(fleet_err)
}

/// A fleet for the commands that need only its namespace and run.
fn which_fleet(w: &WhichRun) -> Fleet {
    Fleet {
        namespace: w.namespace.clone(),
        image: String::new(),
        node_label: Label {
            key: String::new(),
            value: String::new(),
        },
        run_id: w.run_id.clone(),
        store_url: String::new(),
        state_dir: PathBuf::from(spec::STATE_DIR),
    }
}

/// The fleet and work `render` and `apply` were given, checked.
fn run_spec(r: &RunArgs) -> anyhow::Result<(Fleet, Work)> {
    let store = r
        .store
        .clone()
        .or_else(|| std::env::var(drivelab_store::STORE_ENV).ok())
        .ok_or_else(|| usage("no store: give --store postgres://… (or set $DRIVELAB_STORE)"))?;
    let fleet = Fleet {
        namespace: r.which.namespace.clone(),
        image: r.image.clone(),
        node_label: Label::parse(&r.node_label).map_err(fleet_err)?,
        run_id: r.which.run_id.clone(),
        store_url: store,
        state_dir: r.state_dir.clone(),
    };
    fleet.check().map_err(fleet_err)?;
    let read = |flag: &str, p: &Option<PathBuf>| -> anyhow::Result<String> {
        let p = p
            .as_ref()
            .ok_or_else(|| usage(format!("--work {} needs {flag} FILE", work_name(r.work))))?;
        std::fs::read_to_string(p).map_err(|e| usage(format!("{flag} {}: {e}", p.display())))
    };
    let selection = r.select.selection();
    let work = match r.work {
        WorkKind::Station => Work::Station {
            policy: read("--policy", &r.policy)?,
        },
        WorkKind::Run => Work::Run {
            job_file: read("--job-file", &r.job_file)?,
            selection,
        },
        WorkKind::Erase => Work::Erase {
            selection,
            options: r.erase_options.clone(),
        },
        WorkKind::Health => Work::Health { selection },
    };
    work.check(&fleet).map_err(fleet_err)?;
    Ok((fleet, work))
}

fn work_name(w: WorkKind) -> &'static str {
    match w {
        WorkKind::Station => "station",
        WorkKind::Run => "run",
        WorkKind::Erase => "erase",
        WorkKind::Health => "health",
    }
}

fn status_text(st: &apply::RunStatus) -> String {
    let mut out = String::new();
    if let Some((want, ready)) = st.station {
        out.push_str(&format!("station: {ready}/{want} nodes ready\n"));
    }
    for (name, ok, failed, active) in &st.jobs {
        out.push_str(&format!(
            "job {name}: {ok} succeeded, {failed} failed, {active} active\n"
        ));
    }
    for p in &st.pods {
        out.push_str(&format!(
            "  {:<10} {:<24} {:<10} {} {}\n",
            p.component, p.node, p.phase, p.name, p.detail
        ));
    }
    out
}

/// Print the run's status whenever it changes, until the station is ready
/// on every node or every Job has finished.
fn watch(w: &WatchArgs) -> anyhow::Result<u8> {
    let c = client(w.which.kubeconfig.as_ref())?;
    let fleet = which_fleet(&w.which);
    let deadline = Instant::now() + Duration::from_secs(w.timeout_s);
    let mut last = String::new();
    loop {
        let st = apply::status(&c, &fleet).map_err(fleet_err)?;
        let text = status_text(&st);
        if text != last {
            print!("{text}");
            last = text;
        }
        if st.jobs_done() {
            let failed = st.jobs.iter().any(|(_, _, f, _)| *f > 0);
            return Ok(u8::from(failed));
        }
        if st.station_ready() && st.jobs.is_empty() {
            return Ok(0);
        }
        if Instant::now() >= deadline {
            eprintln!("drivelab fleet watch: not done after {} s", w.timeout_s);
            return Ok(1);
        }
        std::thread::sleep(Duration::from_secs(w.interval_s.max(1)));
    }
}

/// On a node: the selected drives, then drivelab with the command.
fn exec(e: &ExecArgs) -> anyhow::Result<u8> {
    let sel = e.select.selection();
    sel.check().map_err(fleet_err)?;
    let drives = select::select(&sel);
    if drives.is_empty() {
        eprintln!("drivelab fleet exec: no selected drive on this node; nothing to do");
        return Ok(0);
    }
    for d in &drives {
        eprintln!("drivelab fleet exec: {} ({})", d.path.display(), d.by);
    }
    let mut args = Vec::new();
    for a in &e.command {
        match a.as_str() {
            DRIVES => args.extend(drives.iter().map(|d| d.path.display().to_string())),
            CONFIRM => {
                for d in &drives {
                    args.push("--confirm-serial".to_string());
                    args.push(d.confirmation());
                }
            }
            _ => args.push(a.clone()),
        }
    }
    let list: Vec<String> = drives
        .iter()
        .map(|d| d.path.display().to_string())
        .collect();
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("drivelab fleet exec: {e}"))?;
    let status = std::process::Command::new(exe)
        .args(&args)
        .env(DRIVES_ENV, list.join(":"))
        .status()
        .map_err(|e| anyhow::anyhow!("drivelab fleet exec: {e}"))?;
    Ok(status
        .code()
        .and_then(|c| u8::try_from(c).ok())
        .unwrap_or(1))
}

/// The run's records from the store, merged.
fn fleet_report(r: &ReportArgs) -> anyhow::Result<u8> {
    let mut store = drivelab_store::open(r.store.as_deref()).map_err(|e| {
        if e.is_bad_input() {
            usage(e.to_string())
        } else {
            anyhow::Error::new(e)
        }
    })?;
    let rows = store.fleet(Some(&r.run_id))?;
    if rows.is_empty() {
        return Err(usage(format!(
            "no record of the fleet run '{}' in the store {}; list runs' records with 'drivelab history'",
            r.run_id,
            store.location()
        )));
    }
    let mut entries = Vec::new();
    for row in rows {
        let rec = store.get(row.id)?;
        let v: serde_json::Value = serde_json::from_str(&rec.result_json).unwrap_or_default();
        let metrics = crate::results::metrics(rec.kind, &v);
        let base = |drive: String, serial: Option<String>, rate: Option<f64>| Entry {
            node: row.tag.node.clone(),
            record: rec.id.0,
            kind: rec.kind.as_str().to_string(),
            drive,
            serial,
            verdict: rec.verdict.clone(),
            ok: rec.exit_status == 0,
            mb_per_s: rate,
        };
        if rec.kind == drivelab_store::Kind::Erase {
            // An erase's figures are per drive: "DEVICE erase rate".
            for d in &rec.drives {
                let rate = metrics
                    .iter()
                    .find(|m| m.name == format!("{} erase rate", d.path))
                    .map(|m| m.value);
                entries.push(base(d.label(), d.serial.clone(), rate));
            }
        } else {
            let rate = metrics
                .iter()
                .filter(|m| m.unit == "MB/s" && m.higher_is_better)
                .map(|m| m.value)
                .reduce(f64::max);
            let label = rec
                .drives
                .iter()
                .map(|d| d.label())
                .collect::<Vec<_>>()
                .join(", ");
            let serial = (rec.drives.len() == 1)
                .then(|| rec.drives[0].serial.clone())
                .flatten();
            entries.push(base(label, serial, rate));
        }
    }
    let rep = report::merge(&r.run_id, entries, r.rank);
    if r.json {
        println!("{}", serde_json::to_string_pretty(&rep)?);
    } else {
        print!("{}", report::text(&rep));
    }
    Ok(0)
}
