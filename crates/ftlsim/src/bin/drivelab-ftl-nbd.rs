//! `drivelab-ftl-nbd`: serves the simulated SSD as an NBD export.
//!
//! - `attach /dev/nbdN [MODEL]`: backs the kernel's NBD device directly
//!   over a socket pair (no network, no nbd-client); runs until the device
//!   is detached, then prints the model's counts as JSON.
//! - `serve --unix PATH [MODEL]`: one client over a Unix socket, with the
//!   fixed newstyle handshake (e.g. `nbd-client -unix PATH /dev/nbd0`).
//! - `detach /dev/nbdN`: asks the kernel to disconnect.
//!
//! MODEL options (defaults in brackets): --size BYTES[K|M|G] [64M]
//! --page-bytes N [4096] --pages-per-block N [64] --op F [0.1]
//! --policy greedy|fifo [greedy] --watermark BLOCKS [2] --read-us N [60]
//! --program-us N [600] --erase-us N [3000] --units N [1] --cache-pages N [0]
//! --cache-program-us N [150] --stats FILE (rewritten when idle, on flush,
//! at the end).

use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::thread;

use drivelab_device::nbd::NbdDevice;
use drivelab_ftlsim::nbd::{handshake, serve, stats_json, Export, Handshake, ServeOptions};
use drivelab_ftlsim::{FtlConfig, Policy, Ssd, Timing};

const USAGE: &str = "usage: drivelab-ftl-nbd attach /dev/nbdN [MODEL] | serve --unix PATH [MODEL] | detach /dev/nbdN";

struct Model {
    cfg: FtlConfig,
    timing: Timing,
    page_bytes: u32,
    stats: Option<PathBuf>,
}

fn parse_size(s: &str) -> Option<u64> {
    let (num, mul) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mul)
}

fn parse_model(args: &[String]) -> Result<Model, String> {
    let mut size = 64u64 << 20;
    let mut page_bytes = 4096u32;
    let mut cfg = FtlConfig::new(1);
    let mut timing = Timing::default();
    let mut stats = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let val = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value; {USAGE}"))?;
        let bad = || format!("{flag} {val}: not a valid value; see the MODEL options in --help");
        let num = |v: &str| v.parse::<u64>().map_err(|_| bad());
        match flag.as_str() {
            "--size" => size = parse_size(val).ok_or_else(bad)?,
            "--page-bytes" => page_bytes = num(val)?.try_into().map_err(|_| bad())?,
            "--pages-per-block" => cfg.pages_per_block = num(val)?.try_into().map_err(|_| bad())?,
            "--op" => cfg.over_provisioning = val.parse().map_err(|_| bad())?,
            "--policy" => {
                cfg.policy = match val.as_str() {
                    "greedy" => Policy::Greedy,
                    "fifo" => Policy::Fifo,
                    _ => return Err(bad()),
                }
            }
            "--watermark" => cfg.gc_watermark_blocks = num(val)?.try_into().map_err(|_| bad())?,
            "--read-us" => timing.page_read_ns = num(val)? * 1000,
            "--program-us" => timing.page_program_ns = num(val)? * 1000,
            "--erase-us" => timing.block_erase_ns = num(val)? * 1000,
            "--units" => timing.units = num(val)?.try_into().map_err(|_| bad())?,
            "--cache-pages" => timing.cache_pages = num(val)?,
            "--cache-program-us" => timing.cache_program_ns = num(val)? * 1000,
            "--stats" => stats = Some(PathBuf::from(val)),
            _ => return Err(format!("unknown option {flag}; {USAGE}")),
        }
    }
    if !(512..=4096).contains(&page_bytes) || !page_bytes.is_power_of_two() {
        return Err(format!(
            "--page-bytes {page_bytes}: use a power of two from 512 to 4096"
        ));
    }
    if size == 0 || size % u64::from(page_bytes) != 0 {
        return Err(format!(
            "--size {size}: use a positive multiple of the page size ({page_bytes} bytes)"
        ));
    }
    cfg.logical_pages = size / u64::from(page_bytes);
    // Validate now, before touching any device.
    Ssd::new(cfg.clone(), timing.clone()).map_err(|e| e.to_string())?;
    Ok(Model {
        cfg,
        timing,
        page_bytes,
        stats,
    })
}

fn export(m: &Model) -> Result<Export, String> {
    let ssd = Ssd::new(m.cfg.clone(), m.timing.clone()).map_err(|e| e.to_string())?;
    Ok(Export::new(ssd, m.page_bytes))
}

fn attach(dev: &Path, m: Model) -> Result<(), String> {
    let e = export(&m)?;
    let nbd = NbdDevice::open(dev).map_err(|e| e.to_string())?;
    let (kernel, ours) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
    let writer = ours.try_clone().map_err(|e| format!("socket: {e}"))?;
    nbd.set_block_size(m.page_bytes)
        .map_err(|e| e.to_string())?;
    nbd.set_size_blocks(e.size() / u64::from(m.page_bytes))
        .map_err(|e| e.to_string())?;
    nbd.set_flags(drivelab_ftlsim::nbd::TRANSMISSION_FLAGS)
        .map_err(|e| e.to_string())?;
    nbd.set_sock(kernel.as_fd()).map_err(|e| e.to_string())?;
    let opts = ServeOptions {
        stats_path: m.stats.clone(),
    };
    let server = thread::spawn(move || serve(ours, writer, e, &opts));
    eprintln!(
        "drivelab-ftl-nbd: {} is the simulated SSD ({} logical pages of {} bytes, {} physical blocks of {})",
        dev.display(),
        m.cfg.logical_pages,
        m.page_bytes,
        m.cfg.physical_blocks(),
        m.cfg.pages_per_block
    );
    let ran = nbd.do_it();
    drop(kernel);
    let served = server
        .join()
        .map_err(|_| "the server thread panicked".to_string())?;
    ran.map_err(|e| e.to_string())?;
    let e = served.map_err(|e| format!("serving {}: {e}", dev.display()))?;
    print!("{}", stats_json(&e.ssd().stats()));
    Ok(())
}

fn serve_unix(path: &Path, m: Model) -> Result<(), String> {
    let e = export(&m)?;
    let l = UnixListener::bind(path).map_err(|e| {
        format!(
            "cannot listen on {}: {e}; remove a stale socket or pick another path",
            path.display()
        )
    })?;
    let (mut s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
    let h = handshake(&mut s, e.size(), m.page_bytes).map_err(|e| format!("handshake: {e}"))?;
    if h == Handshake::Aborted {
        return Ok(());
    }
    let w = s.try_clone().map_err(|e| format!("socket: {e}"))?;
    let opts = ServeOptions {
        stats_path: m.stats.clone(),
    };
    let e = serve(s, w, e, &opts).map_err(|e| format!("serving: {e}"))?;
    print!("{}", stats_json(&e.ssd().stats()));
    Ok(())
}

fn run(args: &[String]) -> Result<(), (u8, String)> {
    let bad = |m: String| (2u8, m);
    match args.first().map(String::as_str) {
        Some("attach") => {
            let dev = args.get(1).ok_or_else(|| bad(USAGE.into()))?;
            let m = parse_model(&args[2..]).map_err(bad)?;
            attach(Path::new(dev), m).map_err(|e| (1, e))
        }
        Some("serve") => {
            if args.get(1).map(String::as_str) != Some("--unix") {
                return Err(bad(USAGE.into()));
            }
            let path = args.get(2).ok_or_else(|| bad(USAGE.into()))?;
            let m = parse_model(&args[3..]).map_err(bad)?;
            serve_unix(Path::new(path), m).map_err(|e| (1, e))
        }
        Some("detach") => {
            let dev = args.get(1).ok_or_else(|| bad(USAGE.into()))?;
            let nbd = NbdDevice::open(Path::new(dev)).map_err(|e| (1, e.to_string()))?;
            nbd.disconnect().map_err(|e| (1, e.to_string()))
        }
        Some("--help" | "-h") => {
            println!(
                "{USAGE}\n{}",
                include_str!("drivelab-ftl-nbd.rs")
                    .lines()
                    .skip(2)
                    .take(14)
                    .map(|l| l.trim_start_matches("//!").trim())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            Ok(())
        }
        _ => Err(bad(USAGE.into())),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, msg)) => {
            eprintln!("drivelab-ftl-nbd: {msg}");
            ExitCode::from(code)
        }
    }
}
