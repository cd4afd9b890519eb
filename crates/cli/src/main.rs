//! The `drivelab` binary: parse the command line, dispatch to a subcommand,
//! map the outcome onto an exit status. Nothing below this crate knows about
//! the command line.

mod cmd_compare;
mod cmd_device;
mod cmd_devices;
mod cmd_erase;
mod cmd_erase_pdf;
mod cmd_fleet;
mod cmd_health;
mod cmd_history;
mod cmd_replay;
mod cmd_report;
mod cmd_run;
mod cmd_season;
mod cmd_shell;
mod cmd_station;
mod cmd_store;
mod cmd_test;
mod cmd_trace;
mod error;
mod fio_flags;
mod metrics;
mod output;
mod progress;
mod results;
mod signal;
mod status;
mod trace_input;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// drivelab: a storage test bench. Workloads, test steps, whole-drive
/// erase, block traces and device checks in one binary.
#[derive(Parser, Debug)]
#[command(name = "drivelab", version, about, long_about = None)]
struct Cli {
    /// Keep results in this store: an SQLite file, or postgres://… /
    /// postgresql://… [default: $DRIVELAB_STORE, else
    /// ~/.local/share/drivelab/results.db]. A store that fails is a warning:
    /// the result is printed and the exit status unchanged.
    #[arg(long, global = true, value_name = "PATH|URL")]
    store: Option<String>,
    /// Do not keep the results of run, test, erase and trace replay.
    #[arg(long, global = true)]
    no_store: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a workload (fio option names; a fio job file; an Iometer preset).
    Run(cmd_run::RunArgs),
    /// List block devices with sizes, sector sizes, limits and use.
    Devices(cmd_devices::DevicesArgs),
    /// Send one device command (SCSI, ATA, NVMe passthrough) and show the answer.
    Device(cmd_device::DeviceArgs),
    /// DMM-style test steps: write / read / verify with data patterns.
    Test(cmd_test::TestArgs),
    /// Drive health (SMART, SCSI log pages, NVMe health) and hidden capacity
    /// (HPA, AMA, DCO, NVMe namespaces); reads only.
    Health(cmd_health::HealthArgs),
    /// Write or erase whole drives, many at once, verified and certified.
    Erase(Box<cmd_erase::EraseArgs>),
    /// An erasure station: drives come and go, each in a bay of the policy
    /// triaged, erased, verified and certified on its own.
    Station(cmd_station::StationArgs),
    /// drivelab on many hosts through Kubernetes: a DaemonSet of stations,
    /// Jobs on selected drives, every result in one PostgreSQL store.
    Fleet(cmd_fleet::FleetArgs),
    /// Precondition SSDs to their used, steady state (SNIA PTS); fresh vs used.
    Season(cmd_season::SeasonArgs),
    /// Block traces: record, analyze, convert, compare.
    Trace(cmd_trace::TraceArgs),
    /// One self-contained HTML page with interactive charts from result
    /// JSON files (run, test, erase, trace analyze, trace replay).
    Report(cmd_report::ReportArgs),
    /// Stored results, newest first: by drive, model, kind, date.
    History(cmd_history::HistoryArgs),
    /// One stored result (JSON: exactly as the command printed it).
    Show(cmd_history::ShowArgs),
    /// Stored results side by side: change per metric, noise of repeats.
    Compare(cmd_compare::CompareArgs),
    /// A stored result's summary and per-second series as CSV files.
    Export(cmd_history::ExportArgs),
    /// Shell completions on stdout: bash, zsh, fish.
    Completions(cmd_shell::CompletionsArgs),
    /// Man pages: one on stdout, or every page into --dir.
    Man(cmd_shell::ManArgs),
}

fn main() -> ExitCode {
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // `run` parses its own (fio) options and prints its own help: `drivelab
    // help run` is `drivelab run --help`, not clap's summary of it.
    if argv.len() >= 3 && argv[1] == "help" && argv[2] == "run" {
        argv = vec![argv[0].clone(), "run".into(), "--help".into()];
    }
    let json = output::argv_wants_json(&argv);
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            return error::report_usage(&e.to_string(), json);
        }
    };
    cmd_store::choose(cli.store, cli.no_store);
    if let Err(e) = cmd_store::check() {
        return error::report(&e, json);
    }
    // An alias of a claimed target appearing mid-write stops every writer
    // as Ctrl-C would; the outcome is then that alias (below). The station
    // stops only the aliased drive's erase (it looks at each refresh).
    let station = matches!(cli.command, Command::Station(_));
    if !station {
        drivelab_device::watch::on_alias(drivelab_engine::sys::request_stop);
    }
    let result = match cli.command {
        Command::Run(a) => cmd_run::run(a),
        Command::Devices(a) => cmd_devices::run(a),
        Command::Device(a) => cmd_device::run(a),
        Command::Test(a) => cmd_test::run(a),
        Command::Erase(a) => cmd_erase::run(*a),
        Command::Station(a) => cmd_station::run(a),
        Command::Fleet(a) => cmd_fleet::run(a),
        Command::Season(a) => cmd_season::run(a),
        Command::Health(a) => cmd_health::run(a),
        Command::Trace(a) => cmd_trace::run(a),
        Command::Report(a) => cmd_report::run(a),
        Command::History(a) => cmd_history::history(a),
        Command::Show(a) => cmd_history::show(a),
        Command::Compare(a) => cmd_compare::run(a),
        Command::Export(a) => cmd_history::export(a),
        Command::Completions(a) => cmd_shell::completions(a, Cli::command()),
        Command::Man(a) => cmd_shell::man(a, Cli::command()),
    };
    if let Some(alias) = drivelab_device::watch::alias().filter(|_| !station) {
        return error::report_alias(&alias);
    }
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => error::report(&e, json),
    }
}
