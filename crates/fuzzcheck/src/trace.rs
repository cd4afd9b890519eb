//! Every trace format: blkparse text, fio iolog v2/v3, MSR, SPC, MQSim,
//! vscsi v1/v2 and the native format, by name and by detection.

use drivelab_trace::source::MAX_EXTENT;
use drivelab_trace::{
    open_reader, open_writer, Analyzer, Device, Format, Op, ReadOptions, Request,
};

/// Most requests one input is read for (bounds the time per input).
const MAX_REQUESTS: usize = 20_000;
/// Most errors polled from one reader before it is dropped.
const MAX_ERRORS: usize = 1_000;

/// The first byte selects the reader: bits 0–3 a format in
/// [`Format::ALL`] order (8 and above: detect it, as `--format auto`), bit 4
/// lenient mode, bit 5 blkparse's queue-event mode. The rest is the trace.
///
/// Invariants: every request read has a length unless it is a flush, and
/// offset + length stays within [`MAX_EXTENT`]; a lenient text reader
/// reports no parse errors (it counts and skips them); the counters add up
/// (skipped and requests within lines consumed); the analyzer's totals
/// match the requests fed to it; and what was read round-trips through
/// each writer whose format can hold it: native exactly (requests and
/// device table), blkparse (times, devices, ops, offsets and lengths, when
/// they are whole sectors), fio iolog (microsecond times, ops, offsets and
/// lengths; flushes as flushes) and MSR CSV (reads and writes, 100 ns ticks
/// from the first request, which must not be preceded in time).
pub fn trace(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let format = Format::ALL.get(usize::from(sel & 0x0F)).copied();
    let opts = ReadOptions {
        lenient: sel & 0x10 != 0,
        use_queue: sel & 0x20 != 0,
    };
    let (reqs, devices) = read_all(body, format, opts);
    check_analysis(&reqs);
    roundtrip(&reqs, &devices);
}

fn read_all(body: &[u8], format: Option<Format>, opts: ReadOptions) -> (Vec<Request>, Vec<Device>) {
    let Ok((used, mut reader)) = open_reader(body, format, opts) else {
        return (Vec::new(), Vec::new());
    };
    if let Some(f) = format {
        assert_eq!(used, f, "the reader opened is not the format asked for");
    }
    let text = matches!(
        used,
        Format::Blkparse | Format::Fio | Format::Msr | Format::Spc | Format::Mqsim
    );
    let mut reqs = Vec::new();
    let mut errors = 0;
    while reqs.len() < MAX_REQUESTS {
        match reader.next() {
            None => break,
            Some(Ok(r)) => {
                check_request(&r);
                reqs.push(r);
            }
            Some(Err(e)) => {
                // Reading from memory there is no I/O error: a lenient
                // text reader skips every bad line.
                assert!(!(opts.lenient && text), "lenient {used} reader failed: {e}");
                let msg = e.to_string();
                assert!(!msg.is_empty() && !msg.contains('\n'), "{msg:?}");
                errors += 1;
                if errors >= MAX_ERRORS {
                    break;
                }
            }
        }
    }
    let st = reader.stats();
    assert!(st.skipped <= st.lines, "{st:?}");
    if used != Format::Blkparse {
        // blkparse builds a request from an issue line; the others from one
        // line or record each.
        assert!(
            reqs.len() as u64 <= st.lines,
            "{} requests from {st:?}",
            reqs.len()
        );
    }
    if !opts.lenient {
        assert_eq!(st.skipped, 0, "strict reader skipped lines: {st:?}");
    }
    let devices = reader.devices();
    (reqs, devices)
}

fn check_request(r: &Request) {
    assert!(r.len > 0 || r.op == Op::Flush, "zero-length {r:?}");
    let end = r.offset.checked_add(r.len);
    assert!(
        end.is_some_and(|e| e <= MAX_EXTENT),
        "offset + len out of range: {r:?}"
    );
}

fn check_analysis(reqs: &[Request]) {
    let mut a = Analyzer::new();
    for r in reqs {
        a.add(r);
    }
    let an = a.finish();
    assert_eq!(an.requests, reqs.len() as u64);
    assert_eq!(an.reads + an.writes + an.trims + an.flushes, an.requests);
    let sum = |op: Op| {
        reqs.iter()
            .filter(|r| r.op == op)
            .fold(0u64, |s, r| s.saturating_add(r.len))
    };
    assert_eq!(an.bytes_read, sum(Op::Read));
    assert_eq!(an.bytes_written, sum(Op::Write));
    assert_eq!(an.bytes_trimmed, sum(Op::Trim));
    assert!(
        an.duration_s.is_finite() && an.duration_s >= 0.0,
        "{}",
        an.duration_s
    );
    assert!(an.iops.is_finite() && an.iops >= 0.0, "{}", an.iops);
    assert!((0.0..=1.0).contains(&an.read_fraction));
    let sizes: u64 = an.sizes.iter().map(|b| b.count).sum();
    assert_eq!(sizes, an.requests);
}

fn write(reqs: &[Request], devices: &[Device], f: Format) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    {
        let mut w = open_writer(&mut out, f, devices).expect("a writable format");
        for r in reqs {
            // A request the format cannot hold is refused, not mangled.
            if w.write(r).is_err() {
                return None;
            }
        }
        w.finish().expect("finish into memory");
    }
    Some(out)
}

fn read_back(bytes: &[u8], f: Format) -> (Vec<Request>, Vec<Device>) {
    let (used, reader) = open_reader(bytes, None, ReadOptions::default())
        .unwrap_or_else(|e| panic!("{f} output not readable: {e}"));
    // Detection finds the format drivelab wrote.
    assert_eq!(used, f, "{f} output detected as {used}");
    let devices = reader.devices();
    let reqs: Vec<Request> = reader
        .map(|r| r.unwrap_or_else(|e| panic!("{f} output does not read back: {e}")))
        .collect();
    (reqs, devices)
}

fn roundtrip(reqs: &[Request], devices: &[Device]) {
    // Native: exact.
    let bytes = write(reqs, devices, Format::Native).expect("native holds every valid request");
    let (back, devs) = read_back(&bytes, Format::Native);
    assert_eq!(back, reqs, "native round trip changed requests");
    assert_eq!(devs, devices, "native round trip changed the device table");

    if reqs.is_empty() {
        return;
    }
    // blkparse: whole sectors only; completions are matched by sector, so
    // only the issue side is compared.
    if let Some(bytes) = write(reqs, devices, Format::Blkparse) {
        let (back, _) = read_back(&bytes, Format::Blkparse);
        let key = |r: &Request| (r.issue_ns, r.device, r.op, r.offset, r.len);
        let want: Vec<_> = reqs.iter().map(key).collect();
        let got: Vec<_> = back.iter().map(key).collect();
        assert_eq!(got, want, "blkparse round trip");
    }
    // fio iolog v3: microseconds; a flush is written as `sync 0 0`.
    if let Some(bytes) = write(reqs, devices, Format::Fio) {
        let (back, _) = read_back(&bytes, Format::Fio);
        let key = |r: &Request| match r.op {
            Op::Flush => (r.issue_ns / 1000, r.op, 0, 0),
            op => (r.issue_ns / 1000, op, r.offset, r.len),
        };
        let want: Vec<_> = reqs.iter().map(key).collect();
        let got: Vec<_> = back.iter().map(key).collect();
        assert_eq!(got, want, "fio round trip");
    }
    // MSR: reads and writes; ticks of 100 ns from the first line.
    let t0 = reqs[0].issue_ns / 100;
    if reqs.iter().all(|r| r.issue_ns / 100 >= t0) {
        if let Some(bytes) = write(reqs, devices, Format::Msr) {
            let (back, _) = read_back(&bytes, Format::Msr);
            let key = |r: &Request, base: u64| {
                let t = r.issue_ns / 100 - base;
                let svc = r.service_ns().unwrap_or(0) / 100;
                (t, t + svc, r.device, r.op, r.offset, r.len)
            };
            let want: Vec<_> = reqs.iter().map(|r| key(r, t0)).collect();
            let got: Vec<_> = back
                .iter()
                .map(|r| {
                    let c = r.complete_ns.expect("MSR lines carry a response time");
                    (r.issue_ns / 100, c / 100, r.device, r.op, r.offset, r.len)
                })
                .collect();
            assert_eq!(got, want, "msr round trip");
        }
    }
}
