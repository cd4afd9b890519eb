//! bench/trace's generator: N requests as blkparse's default text (a D line
//! when each is issued, a C line when it completes), written to standard
//! output in time order as fast as a pipe takes them, so a trace of any
//! length is analyzed without being stored. A closed loop at depth 8 on one
//! device: 0.5 to 64 KiB, 70 % reads, 80 % random, 1 to 20 us between
//! issues, 60 to 660 us of service time, completions in issue order.
//!
//! Built by bench/trace with `rustc -O`; no dependencies.
//!
//!   blkparse-gen N

use std::io::Write;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn put_u64(out: &mut Vec<u8>, mut v: u64, width: usize) {
    let mut b = [b' '; 20];
    let mut i = 20;
    loop {
        i -= 1;
        b[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let digits = 20 - i;
    for _ in digits..width {
        out.push(b' ');
    }
    out.extend_from_slice(&b[i..]);
}

fn put_time(out: &mut Vec<u8>, ns: u64) {
    put_u64(out, ns / 1_000_000_000, 5);
    out.push(b'.');
    let frac = ns % 1_000_000_000;
    let mut b = [b'0'; 9];
    let mut v = frac;
    for i in (0..9).rev() {
        b[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    out.extend_from_slice(&b);
}

/// One line: `  8,16   1 SEQ TIME PID  A RW SECTOR + NSECT [COMM]`.
#[allow(clippy::too_many_arguments)]
fn line(out: &mut Vec<u8>, seq: u64, t: u64, pid: u64, action: u8, rw: u8, sector: u64, nsect: u64) {
    out.extend_from_slice(b"  8,16   1 ");
    put_u64(out, seq, 8);
    out.push(b' ');
    put_time(out, t);
    out.push(b' ');
    put_u64(out, pid, 5);
    out.extend_from_slice(b"  ");
    out.push(action);
    out.extend_from_slice(b"   ");
    out.push(rw);
    out.push(b' ');
    put_u64(out, sector, 0);
    out.extend_from_slice(b" + ");
    put_u64(out, nsect, 0);
    out.extend_from_slice(if action == b'C' { b" [0]\n" } else { b" [fio]\n" });
}

fn main() {
    let n: u64 = match std::env::args().nth(1).map(|s| s.parse()) {
        Some(Ok(n)) => n,
        _ => {
            eprintln!("usage: blkparse-gen N (requests)");
            std::process::exit(2);
        }
    };
    const DEPTH: usize = 8;
    const SIZES: [u64; 8] = [8, 16, 32, 128, 8, 8, 64, 1]; // sectors
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    let mut out = Vec::with_capacity(1 << 20);
    // Requests in flight, oldest first: (completion time, sector, nsect, rw).
    let mut inflight: std::collections::VecDeque<(u64, u64, u64, u8)> =
        std::collections::VecDeque::with_capacity(DEPTH);
    let (mut t, mut seq, mut issued, mut last_end) = (1_000u64, 0u64, 0u64, 0u64);
    while issued < n || !inflight.is_empty() {
        let due = inflight.front().map(|c| c.0);
        let can_issue = issued < n && inflight.len() < DEPTH;
        match due {
            Some(c) if !can_issue || c <= t => {
                let (c, sector, nsect, rw) = inflight.pop_front().unwrap_or_default();
                seq += 1;
                line(&mut out, seq, c, 0, b'C', rw, sector, nsect);
                t = t.max(c);
            }
            _ => {
                let r = rng.next();
                let nsect = SIZES[(r & 7) as usize];
                let sector = if (r >> 3) % 5 == 0 {
                    last_end
                } else {
                    ((r >> 8) % (1 << 30)) & !7
                };
                last_end = sector + nsect;
                let rw = if (r >> 40) % 10 < 7 { b'R' } else { b'W' };
                seq += 1;
                line(&mut out, seq, t, 4242, b'D', rw, sector, nsect);
                // Service 60-660 us; issue order kept: each completion is
                // after the one before it.
                let svc = 60_000 + (r >> 44) % 600_000;
                let c = (t + svc).max(inflight.back().map_or(0, |b| b.0 + 1));
                inflight.push_back((c, sector, nsect, rw));
                issued += 1;
                t += 1_000 + (r >> 20) % 19_000;
            }
        }
        if out.len() > (1 << 20) - 256 {
            if w.write_all(&out).is_err() {
                return;
            }
            out.clear();
        }
    }
    let _ = w.write_all(&out);
}
