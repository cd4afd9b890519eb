//! `drivelab-nvmeemu`: runs the emulated NVMe/TCP controller until killed.
//!
//! ```text
//! drivelab-nvmeemu [--listen 127.0.0.1:4420] [--nqn NQN] [--serial S]
//!     [--model M] [--firmware F] [--namespace-mib N]... [--capacity-mib N]
//!     [--sanitize-seconds S] [--self-test-seconds S] [--bad-lba LBA]
//!     [--media memory|ftl] [--fault LINE]... [--control FILE] [--state FILE]
//! ```
//!
//! `--self-test-seconds` is how long a short Device Self-test runs (the
//! extended one four times it; 5 s by default); `--bad-lba` gives
//! namespace 1 a block it cannot read: a self-test that covers it fails
//! when its scan reaches it (result 7h, the LBA in the log).
//!
//! `--media ftl` puts the FTL model (crates/ftlsim) behind every
//! namespace: writes go through its mapping and garbage collection, and
//! the media log (C0h) reports the NAND writes; `memory` (the default) is
//! plain memory.
//!
//! The state file is written once the port is bound (a script waits for
//! it) and again whenever the controller's state changes.

use std::process::ExitCode;
use std::time::Duration;

use drivelab_ftlsim::media::MediaKind;
use drivelab_nvmeemu::faults::Faults;
use drivelab_nvmeemu::{Config, Drive};

const USAGE: &str = "usage: drivelab-nvmeemu [--listen ADDR] [--nqn NQN] [--serial S] [--model M] [--firmware F] [--namespace-mib N]... [--capacity-mib N] [--sanitize-seconds S] [--self-test-seconds S] [--bad-lba LBA] [--media memory|ftl] [--fault LINE]... [--control FILE] [--state FILE]";

struct Args {
    listen: String,
    cfg: Config,
    media: MediaKind,
    state: Option<std::path::PathBuf>,
    self_test_seconds: f64,
    bad_lba: Option<u64>,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        listen: "127.0.0.1:4420".into(),
        cfg: Config {
            serial: "DLNVMEEMU0001".into(),
            model: "drivelab NVMe-TCP emulator".into(),
            firmware: "1.0".into(),
            subnqn: "nqn.2026-01.io.drivelab:nvmeemu".into(),
            namespaces: Vec::new(),
            capacity: 0,
            block_size: 512,
            sanitize_seconds: 4.0,
            faults: Faults::default(),
            control: None,
        },
        media: MediaKind::Memory,
        state: None,
        self_test_seconds: 5.0,
        bad_lba: None,
    };
    let mut capacity_mib = None;
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value; {USAGE}"));
        let num = |v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag} {v:?}: give a whole number"))
        };
        match flag.as_str() {
            "--listen" => a.listen = value()?,
            "--nqn" => a.cfg.subnqn = value()?,
            "--serial" => a.cfg.serial = value()?,
            "--model" => a.cfg.model = value()?,
            "--firmware" => a.cfg.firmware = value()?,
            "--namespace-mib" => a.cfg.namespaces.push(num(value()?)? << 20),
            "--capacity-mib" => capacity_mib = Some(num(value()?)? << 20),
            "--sanitize-seconds" => {
                let v = value()?;
                a.cfg.sanitize_seconds = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .ok_or(format!("--sanitize-seconds {v:?}: give seconds, e.g. 4"))?;
            }
            "--self-test-seconds" => {
                let v = value()?;
                a.self_test_seconds = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0 && *s <= 3600.0)
                    .ok_or(format!("--self-test-seconds {v:?}: give seconds, e.g. 5"))?;
            }
            "--bad-lba" => a.bad_lba = Some(num(value()?)?),
            "--media" => a.media = value()?.parse().map_err(|e| format!("{e}; {USAGE}"))?,
            "--fault" => a.cfg.faults.add(&value()?)?,
            "--control" => a.cfg.control = Some(value()?.into()),
            "--state" => a.state = Some(value()?.into()),
            other => return Err(format!("unknown option {other}; {USAGE}")),
        }
    }
    if a.cfg.namespaces.is_empty() {
        a.cfg.namespaces.push(16 << 20);
    }
    a.cfg.capacity = capacity_mib.unwrap_or(a.cfg.namespaces.iter().sum());
    a.cfg.check()?;
    let ns1 = a.cfg.namespaces[0] / a.cfg.block_size as u64;
    if a.bad_lba.is_some_and(|l| l >= ns1) {
        return Err(format!(
            "--bad-lba must be below namespace 1's {ns1} blocks"
        ));
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("drivelab-nvmeemu: {e}");
            return ExitCode::from(2);
        }
    };
    let drive = match Drive::with_media(args.cfg, args.media) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("drivelab-nvmeemu: {e}");
            return ExitCode::from(2);
        }
    };
    {
        let mut c = drive.lock();
        let short = Duration::from_secs_f64(args.self_test_seconds);
        c.self_test.short = short;
        c.self_test.extended = short * 4;
        let blocks = c.namespaces[0].blocks();
        c.self_test.bad = args.bad_lba.map(|l| (1, l, blocks));
    }
    let bound = match drivelab_nvmeemu::start(std::sync::Arc::clone(&drive), &args.listen) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("drivelab-nvmeemu: cannot listen on {}: {e}", args.listen);
            return ExitCode::from(1);
        }
    };
    eprintln!("drivelab-nvmeemu: listening on {bound}");
    match args.state {
        Some(path) => {
            if let Err(e) = drivelab_nvmeemu::write_state(&drive, &path) {
                eprintln!("drivelab-nvmeemu: {}: {e}", path.display());
                return ExitCode::from(1);
            }
            drivelab_nvmeemu::keep_state(drive, &path, Duration::from_millis(100));
        }
        None => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
    }
    ExitCode::SUCCESS
}
