//! One job: its I/O loop ([`io_loop`]) and everything that shapes the I/O
//! of one job: the offset/operation generator, pacing, flow, priorities,
//! verify, zones, open files, the error policy, the latency target,
//! steady state, dedupe and compression, batching, NUMA placement and the
//! per-job samples.

pub mod batch;
pub mod blktrace_replay;
pub mod buffers;
pub mod checksums;
pub mod cpus;
pub mod dedupe;
pub mod error_policy;
pub mod flow;
pub mod gen;
pub mod io_loop;
pub mod iolog_replay;
pub mod latency_target;
pub mod lockfile;
pub mod numa;
pub mod offsets;
pub mod open_logs;
pub mod openfiles;
pub mod outcome;
pub mod prio;
pub mod rate;
pub mod samples;
pub mod steadystate;
pub mod sync;
pub mod target_opts;
pub mod think;
pub mod trim;
pub mod types;
pub mod verify;
pub mod verify_state;
pub mod zbd;
