//! Prints the simulated SSD's steady-state write amplification under
//! uniform random writes beside the analytic FIFO/LRW value, for FIFO and
//! greedy cleaning at several over-provisioning levels (bench/ftl-wa).
//!
//! Usage: wa_table [LOGICAL_BLOCKS] [PAGES_PER_BLOCK] [WARM_CAPACITIES] [MEASURE_CAPACITIES]
//! (defaults 4096 64 4 4).

use std::process::ExitCode;
use std::time::Instant;

use drivelab_ftlsim::wa::steady_state;
use drivelab_ftlsim::{FtlConfig, Policy};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let defaults = [4096u64, 64, 4, 4];
    let mut v = defaults;
    for (i, a) in args.iter().enumerate().take(4) {
        match a.parse::<u64>() {
            Ok(n) if n > 0 => v[i] = n,
            _ => {
                eprintln!("wa_table: argument {} ({a:?}) must be a positive integer: usage wa_table [LOGICAL_BLOCKS] [PAGES_PER_BLOCK] [WARM_CAPACITIES] [MEASURE_CAPACITIES]", i + 1);
                return ExitCode::from(2);
            }
        }
    }
    let [blocks, np, warm, measure] = v;
    println!(
        "# {blocks} logical blocks x {np} pages, uniform random 1-page writes, {warm} capacities warm-up, {measure} measured"
    );
    println!(
        "# OP = (physical - logical) / logical; alpha = cleaned physical pages / logical pages"
    );
    println!("# analytic: fifo 1/(1-u) with (u-1)/ln u = 1/alpha; greedy Np/(Np-j) with H(Np)-H(j) = alpha(Np-j)/Np");
    println!(
        "{:7} {:>5} {:>7} {:>9} {:>10} {:>7} {:>9} {:>8}",
        "policy", "OP", "alpha", "analytic", "simulated", "error%", "fifo-anal", "Mpages/s"
    );
    for op in [0.07, 0.1, 0.2, 0.3, 0.5] {
        for (name, policy) in [("fifo", Policy::Fifo), ("greedy", Policy::Greedy)] {
            let mut c = FtlConfig::new(blocks * np);
            c.pages_per_block = np as u32;
            c.over_provisioning = op;
            c.policy = policy;
            let t = Instant::now();
            let row = match steady_state(&c, warm, measure, 1) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("wa_table: {e}");
                    return ExitCode::from(2);
                }
            };
            let pages = (1 + warm + measure) * blocks * np;
            let rate = pages as f64 / t.elapsed().as_secs_f64() / 1e6;
            println!(
                "{name:7} {op:5.2} {:7.4} {:9.3} {:10.3} {:+7.2} {:9.3} {rate:8.1}",
                row.alpha,
                row.analytic,
                row.simulated,
                row.error_pct(),
                row.analytic_fifo
            );
        }
    }
    ExitCode::SUCCESS
}
