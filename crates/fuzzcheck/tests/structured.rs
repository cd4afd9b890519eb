//! The fuzz targets on structured inputs proptest generates: job files from
//! the option table, sequence files from the step keys, traces written by
//! drivelab's own writers from arbitrary requests, certificates with
//! arbitrary field values signed by arbitrary keys, and sense data built
//! field by field. Random bytes rarely get past a parser's first check;
//! these reach the code behind it.

use drivelab_erase::cert::{check_signature, sign, Certificate};
use drivelab_fuzzcheck as fz;
use drivelab_trace::{open_writer, Device, Flags, Format, Op, Request};
use drivelab_workload::spec::options::OPTIONS;
use ed25519_dalek::SigningKey;
use proptest::prelude::*;

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,6}",
        "[0-9]{1,4}(k|m|g|t|p|KiB|MB|%|s|ms|us|h|min)",
        "[0-9]{0,3}\\.[0-9]{0,4}(k|m|%|s)?",
        "([0-9]{1,3}(k|m)?/[0-9]{0,3}:){1,4}",
        "(zipf|pareto|normal|gauss|random):[0-9.]{0,5}",
        "(read|write|randread|randwrite|rw|randrw|trim|randtrim|io_uring|psync|null)",
        "[ -~]{0,16}",
        prop::sample::select(fz::mutate::HUGE.to_vec()).prop_map(str::to_string),
    ]
}

fn option_line() -> impl Strategy<Value = String> {
    let names: Vec<&'static str> = OPTIONS
        .iter()
        .flat_map(|d| std::iter::once(d.name).chain(d.aliases.iter().copied()))
        .chain(["stonewall", "thread", "wait_for_previous", "nosuch"])
        .collect();
    (prop::sample::select(names), prop::option::of(value())).prop_map(|(k, v)| match v {
        Some(v) => format!("{k}={v}"),
        None => k.to_string(),
    })
}

fn jobfile_text() -> impl Strategy<Value = String> {
    let section = (
        prop_oneof![Just("global".to_string()), "[a-z]{1,6}"],
        prop::collection::vec(option_line(), 0..8),
    )
        .prop_map(|(name, lines)| format!("[{name}]\n{}\n", lines.join("\n")));
    prop::collection::vec(section, 1..5).prop_map(|s| s.concat())
}

fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "\"(write|read|verify|write-verify|compare|erase)\"",
        "\"(allzeros|random|stamped|incrementing|fixed:0x[0-9A-F]{0,9}|pattern=allones|bogus)\"",
        "\"[0-9]{1,3}(k|m)?(-[0-9]{1,3}(k|m)?)?\"",
        "\"(sequential|random|butterfly|seq|rand|all|stop-test|stop-sequence|continue)\"",
        "-?[0-9]{1,20}",
        "(true|false)",
        "\"[ -~]{0,10}\"",
    ]
}

fn sequence_text() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "kind", "pattern", "bs", "order", "start", "count", "qd", "fua", "on_error", "retries",
        "seed", "pass", "bogus",
    ]);
    let step = prop::collection::vec((key, toml_value()), 0..8).prop_map(|kv| {
        let mut seen = std::collections::HashSet::new();
        let body: Vec<String> = kv
            .into_iter()
            .filter(|(k, _)| seen.insert(*k))
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        format!("[[step]]\n{}\n", body.join("\n"))
    });
    (
        prop::option::of(toml_value()),
        prop::collection::vec(step, 0..4),
    )
        .prop_map(|(seed, steps)| {
            let head = seed.map(|s| format!("seed = {s}\n")).unwrap_or_default();
            head + &steps.concat()
        })
}

fn request() -> impl Strategy<Value = Request> {
    (
        prop_oneof![0u64..1 << 40, any::<u64>()],
        prop::option::of(prop_oneof![0u64..1 << 30, any::<u64>()]),
        prop_oneof![0u32..4, any::<u32>()],
        0usize..4,
        prop_oneof![(0u64..1 << 20).prop_map(|s| s * 512), any::<u64>()],
        prop_oneof![(1u64..256).prop_map(|s| s * 512), any::<u64>()],
        0u8..8,
    )
        .prop_map(|(t, svc, device, op, offset, len, flags)| {
            const END: u64 = i64::MAX as u64;
            let op = [Op::Read, Op::Write, Op::Trim, Op::Flush][op];
            let offset = offset % END;
            let room = END - offset;
            let len = if op == Op::Flush {
                0
            } else {
                1 + (len - 1) % room
            };
            Request {
                issue_ns: t,
                complete_ns: svc.map(|s| t.saturating_add(s)),
                device,
                op,
                offset,
                len,
                flags: Flags(flags),
            }
        })
}

fn written(reqs: &[Request], devices: &[Device], f: Format) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    {
        let mut w = open_writer(&mut out, f, devices).ok()?;
        for r in reqs {
            w.write(r).ok()?;
        }
        w.finish().ok()?;
    }
    Some(out)
}

fn base_certificate() -> Certificate {
    let text = std::fs::read_to_string(fz::corpus_dir("cert").join("erase-zeroout-verified.json"))
        .unwrap();
    check_signature(&text).unwrap().certificate
}

fn sense_bytes() -> impl Strategy<Value = Vec<u8>> {
    let descriptor = (
        prop::sample::select(vec![0x00u8, 0x01, 0x02, 0x09, 0x80]),
        prop::collection::vec(any::<u8>(), 0..16),
        any::<bool>(),
    )
        .prop_map(|(code, body, honest)| {
            let len = if honest {
                body.len() as u8
            } else {
                body.len() as u8 ^ 0x0C
            };
            let mut d = vec![code, len];
            d.extend(body);
            d
        });
    (
        prop::sample::select(vec![0x70u8, 0x71, 0x72, 0x73, 0xF0, 0xF2, 0x7F, 0x00]),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        prop::collection::vec(any::<u8>(), 0..24),
        prop::collection::vec(descriptor, 0..4),
        prop::option::of(any::<u8>()),
    )
        .prop_map(|(rc, key, asc, ascq, fixed_tail, descs, add_len)| {
            if rc & 0x7F >= 0x72 {
                let body: Vec<u8> = descs.concat();
                let mut s = vec![rc, key, asc, ascq, 0, 0, 0];
                s.push(add_len.unwrap_or(body.len() as u8));
                s.extend(body);
                s
            } else {
                let mut s = vec![rc, 0, key];
                s.extend(fixed_tail);
                if s.len() > 13 {
                    s[12] = asc;
                    s[13] = ascq;
                }
                if let (Some(l), true) = (add_len, s.len() > 7) {
                    s[7] = l;
                }
                s
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn generated_job_files(text in jobfile_text()) {
        fz::jobfile(text.as_bytes());
    }

    #[test]
    fn generated_sequence_files(text in sequence_text()) {
        fz::sequence(text.as_bytes());
    }

}

proptest! {
    // Each case writes four formats and reads each back in several ways;
    // each certificate case signs and verifies Ed25519 several times (slow
    // in debug builds): fewer cases keep `cargo test` well under a minute.
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn traces_drivelab_wrote(
        reqs in prop::collection::vec(request(), 0..40),
        names in prop::collection::vec("[ -~]{0,12}", 0..3),
        lenient in any::<bool>(),
    ) {
        let devices: Vec<Device> = names
            .into_iter()
            .enumerate()
            .map(|(i, name)| Device { id: i as u32, name })
            .collect();
        for (i, f) in Format::ALL.iter().enumerate() {
            if !f.writable() {
                continue;
            }
            if let Some(bytes) = written(&reqs, &devices, *f) {
                for sel in [i as u8, 8] {
                    let mut input = vec![sel | if lenient { 0x10 } else { 0 }];
                    input.extend_from_slice(&bytes);
                    fz::trace(&input);
                }
            }
        }
    }

    #[test]
    fn certificates_with_any_fields(
        key in any::<[u8; 32]>(),
        serial in prop::option::of("[ -~\u{80}-\u{10FFFF}]{0,20}"),
        capacity in any::<u64>(),
        seconds in prop_oneof![any::<f64>(), -1e300f64..1e300],
        coverage in 0f64..100.0,
        mismatch in prop::option::of(any::<u64>()),
        errors in prop::collection::vec("[ -~\n\"<>&]{0,30}", 0..3),
    ) {
        let mut c = base_certificate();
        c.drive.serial = serial;
        c.drive.capacity_bytes = capacity;
        c.timing.erase_seconds = if seconds.is_finite() { seconds } else { 0.0 };
        c.verification.coverage_percent = coverage;
        c.verification.mismatch_lba = mismatch;
        c.errors = errors;
        let text = sign(&c, &SigningKey::from_bytes(&key)).unwrap();
        fz::cert(text.as_bytes());
        let s = check_signature(&text).unwrap();
        prop_assert_eq!(s.certificate, c);
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn sense_built_field_by_field(s in sense_bytes()) {
        fz::sense(&s);
    }

    #[test]
    fn device_data_of_every_kind(sel in 0u8..12, body in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut input = vec![sel];
        input.extend(body);
        fz::device_data(&input);
    }
}
