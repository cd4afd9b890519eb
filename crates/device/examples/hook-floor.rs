//! The kernel's own price of a BPF recorder's hooks: attaches a program
//! that does nothing (`r0 = 0; exit`) to each raw tracepoint named on the
//! command line, says `attached` on stdout, and holds them until it is
//! killed (the kernel detaches them when its descriptors close). With
//! `--clock` first, each program reads the monotonic clock
//! (`bpf_ktime_get_ns`) and drops it: the least a recorder that stamps
//! every event pays.
//!
//! `bench/record-overhead` runs it beside the recorders: what a run loses
//! to these programs is what any program on those tracepoints costs before
//! it does any work (the tracepoint's call into BPF and the program's
//! entry and exit), so the recorder's own cost is what it costs beyond
//! them.
//!
//!   cargo run --release -p drivelab-device --example hook-floor -- [--clock] block_bio_queue block_bio_complete

use std::io::Write;

use drivelab_device::bpf::{self, Prog};

/// `r0 = 0` (BPF_ALU64 | BPF_MOV | BPF_K), then `exit` (BPF_JMP | BPF_EXIT).
const NOTHING: [u64; 2] = [0xb7, 0x95];
/// `call bpf_ktime_get_ns` (BPF_JMP | BPF_CALL, helper 5), then [`NOTHING`].
const CLOCK: [u64; 3] = [0x85 | (5 << 32), 0xb7, 0x95];

fn main() {
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    let insns: &[u64] = if names.first().map(String::as_str) == Some("--clock") {
        names.remove(0);
        &CLOCK
    } else {
        &NOTHING
    };
    if names.is_empty() {
        eprintln!("hook-floor: name the raw tracepoints to hook (block_bio_queue, ...)");
        std::process::exit(2);
    }
    let mut held = Vec::new();
    for name in &names {
        let attached = Prog::load(bpf::PROG_RAW_TRACEPOINT, insns, "GPL", 0, 0)
            .and_then(|prog| Ok((prog.attach_raw_tracepoint(Some(name))?, prog)));
        match attached {
            Ok(both) => held.push(both),
            Err(e) => {
                eprintln!("hook-floor: cannot hook {name}: {e}; run as root on a kernel with BPF");
                std::process::exit(1);
            }
        }
    }
    println!("attached");
    let _ = std::io::stdout().flush();
    loop {
        std::thread::park();
    }
}
