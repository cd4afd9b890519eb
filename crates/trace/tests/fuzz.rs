//! Property tests: no parser panics on arbitrary bytes or on arbitrary
//! lines built from each format's alphabet, in strict and lenient mode; the
//! analyzer and comparison hold their invariants on arbitrary requests; the
//! native format round-trips any request sequence.

use drivelab_trace::{
    analyze, compare, open_reader, open_writer, Flags, Format, Op, ReadOptions, Request,
};
use proptest::prelude::*;

fn drain(bytes: &[u8], fmt: Option<Format>, lenient: bool, use_queue: bool) {
    let opts = ReadOptions { lenient, use_queue };
    if let Ok((_, r)) = open_reader(bytes, fmt, opts) {
        // Every item is either a request or an error; errors must not stop
        // the reader from being polled again.
        for _ in r.take(100_000) {}
    }
}

fn all_formats() -> Vec<Option<Format>> {
    let mut v: Vec<Option<Format>> = Format::ALL.iter().copied().map(Some).collect();
    v.push(None);
    v
}

fn line_text() -> impl Strategy<Value = String> {
    // Tokens that appear in the text formats, mixed with noise.
    let tok = prop_oneof![
        "[0-9]{1,20}",
        "[0-9]{1,4},[0-9]{1,4}",
        "[0-9]{1,10}\\.[0-9]{0,12}",
        Just("+".to_string()),
        Just("Read".to_string()),
        Just("Write".to_string()),
        Just("fio version 2 iolog".to_string()),
        Just("fio version 3 iolog".to_string()),
        "[QDCRMFAGIPUm]",
        "F?[RWDFN][FASM]{0,3}",
        "\\[[a-z0-9]{0,8}\\]",
        "/dev/[a-z]{1,4}",
        "(add|open|close|read|write|trim|sync|wait)",
        "[ -~]{0,12}",
    ];
    prop::collection::vec(tok, 0..12)
        .prop_flat_map(|toks| {
            let n = toks.len();
            (
                Just(toks),
                prop::collection::vec(prop_oneof![Just(" "), Just(","), Just("\t")], n),
            )
        })
        .prop_map(|(toks, seps)| {
            toks.iter()
                .zip(seps)
                .map(|(t, s)| format!("{t}{s}"))
                .collect()
        })
}

fn request() -> impl Strategy<Value = Request> {
    (
        any::<u64>(),
        prop::option::of(any::<u64>()),
        any::<u32>(),
        0u8..4,
        any::<u64>(),
        any::<u64>(),
        0u8..8,
    )
        .prop_map(
            |(issue_ns, complete_ns, device, op, offset, len, flags)| Request {
                issue_ns,
                complete_ns,
                device,
                op: [Op::Read, Op::Write, Op::Trim, Op::Flush][op as usize],
                offset,
                len,
                flags: Flags(flags),
            },
        )
}

/// A request every reader accepts: a length unless a flush, and offset +
/// length within 2^63 - 1 bytes (any value there, extremes included).
fn valid_request() -> impl Strategy<Value = Request> {
    request().prop_map(|mut r| {
        const END: u64 = i64::MAX as u64;
        r.offset %= END;
        let room = END - r.offset;
        r.len = if r.op == Op::Flush {
            r.len % (room + 1)
        } else {
            1 + r.len % room
        };
        r
    })
}

fn small_request() -> impl Strategy<Value = Request> {
    (
        0u64..1_000_000,
        prop::option::of(0u64..100_000),
        0u32..3,
        0u8..4,
        0u64..1 << 30,
        0u64..1 << 20,
    )
        .prop_map(|(t, svc, device, op, offset, len)| Request {
            issue_ns: t,
            complete_ns: svc.map(|s| t + s),
            device,
            op: [Op::Read, Op::Write, Op::Trim, Op::Flush][op as usize],
            offset,
            len,
            flags: Flags::empty(),
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn no_reader_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048), lenient: bool) {
        for f in all_formats() {
            drain(&bytes, f, lenient, false);
        }
        drain(&bytes, Some(Format::Blkparse), lenient, true);
    }

    #[test]
    fn no_reader_panics_on_plausible_lines(lines in prop::collection::vec(line_text(), 0..40), lenient: bool) {
        let text = lines.join("\n");
        for f in all_formats() {
            drain(text.as_bytes(), f, lenient, false);
        }
        drain(text.as_bytes(), Some(Format::Blkparse), lenient, true);
        let with_header = format!("fio version 3 iolog\n{text}");
        drain(with_header.as_bytes(), Some(Format::Fio), lenient, false);
    }

    #[test]
    fn no_reader_panics_on_corrupted_native(reqs in prop::collection::vec(valid_request(), 0..20), cut in any::<usize>(), flip in any::<(usize, u8)>()) {
        let mut buf = Vec::new();
        {
            let mut w = open_writer(&mut buf, Format::Native, &[]).unwrap();
            for r in &reqs { w.write(r).unwrap(); }
            w.finish().unwrap();
        }
        let mut b2 = buf.clone();
        if !b2.is_empty() { let i = flip.0 % b2.len(); b2[i] ^= flip.1; }
        drain(&b2, None, false, false);
        b2.truncate(cut % (buf.len() + 1));
        drain(&b2, Some(Format::Native), false, false);
    }

    #[test]
    fn native_roundtrips_anything(reqs in prop::collection::vec(valid_request(), 0..50)) {
        let mut buf = Vec::new();
        {
            let mut w = open_writer(&mut buf, Format::Native, &[]).unwrap();
            for r in &reqs { w.write(r).unwrap(); }
            w.finish().unwrap();
        }
        let (_, r) = open_reader(&buf[..], None, ReadOptions::default()).unwrap();
        let got: Vec<Request> = r.map(|x| x.unwrap()).collect();
        prop_assert_eq!(got, reqs);
    }

    #[test]
    fn analyzer_invariants(reqs in prop::collection::vec(request(), 0..200)) {
        let a = analyze(&mut reqs.iter().map(|r| Ok(*r))).unwrap();
        prop_assert_eq!(a.requests, reqs.len() as u64);
        prop_assert_eq!(a.reads + a.writes + a.trims + a.flushes, a.requests);
        prop_assert_eq!(a.sizes.iter().map(|s| s.count).sum::<u64>(), a.requests);
        prop_assert_eq!(a.throughput.points.iter().map(|p| p.requests).sum::<u64>(), a.requests);
        if !a.queue_depth.is_empty() {
            let f: f64 = a.queue_depth.iter().map(|d| d.fraction).sum();
            prop_assert!((f - 1.0).abs() < 1e-9);
        }
        prop_assert!(a.read_fraction >= 0.0 && a.read_fraction <= 1.0);
    }

    #[test]
    fn compare_with_itself_never_differs(reqs in prop::collection::vec(small_request(), 0..200)) {
        let mut sorted = reqs.clone();
        sorted.sort_by_key(|r| r.issue_ns);
        let c = compare(&mut sorted.iter().map(|r| Ok(*r)), &mut sorted.iter().map(|r| Ok(*r)), 0.0).unwrap();
        prop_assert_eq!(c.matched, sorted.len() as u64);
        prop_assert!(!c.differs, "{:?}", c.reasons);
    }

    #[test]
    fn compare_against_a_permutation_matches_everything(reqs in prop::collection::vec(small_request(), 1..100), seed in any::<u64>()) {
        let mut b = reqs.clone();
        // Fisher-Yates with a tiny LCG.
        let mut x = seed | 1;
        for i in (1..b.len()).rev() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            b.swap(i, (x >> 33) as usize % (i + 1));
        }
        let c = compare(&mut reqs.iter().map(|r| Ok(*r)), &mut b.iter().map(|r| Ok(*r)), 0.05).unwrap();
        prop_assert_eq!(c.matched, reqs.len() as u64);
        prop_assert_eq!(c.extra_in_b, 0);
        prop_assert!(c.order_agreement >= 0.0 && c.order_agreement <= 1.0);
    }
}
