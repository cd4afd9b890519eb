//! Requests no device can carry are malformed lines in every reader: zero
//! lengths (except flushes) and offset + length that overflows or runs past
//! the largest offset a device can have. They are errors naming the line,
//! or counted and skipped under `--lenient`. Timestamps that run backwards
//! still give the right duration and IOPS.

use drivelab_trace::{analyze, open_reader, Format, Op, ReadOptions, Request, TraceError};

fn lenient() -> ReadOptions {
    ReadOptions {
        lenient: true,
        ..Default::default()
    }
}

/// Every request and the reader's skipped count, lenient.
fn read_lenient(bytes: &[u8], fmt: Format) -> (Vec<Request>, u64) {
    let (_, mut r) = open_reader(bytes, Some(fmt), lenient()).unwrap();
    let v: Vec<Request> = r.by_ref().map(|x| x.unwrap()).collect();
    (v, r.stats().skipped)
}

/// The first error, strict.
fn first_error(bytes: &[u8], fmt: Format) -> TraceError {
    let (_, r) = open_reader(bytes, Some(fmt), ReadOptions::default()).unwrap();
    r.into_iter()
        .find_map(|x| x.err())
        .unwrap_or_else(|| panic!("{fmt}: no error"))
}

#[test]
fn iolog_offset_and_length_of_u64_max_are_malformed_not_read() {
    // `--lenient` used to accept it and report 18446744073709551615 bytes read.
    let text = b"fio version 2 iolog\n/dev/sda add\n\
/dev/sda read 18446744073709551615 18446744073709551615\n\
/dev/sda read 0 4096\n";
    let (v, skipped) = read_lenient(text, Format::Fio);
    assert_eq!((v.len(), skipped), (1, 1));
    let a = analyze(&mut v.into_iter().map(Ok)).unwrap();
    assert_eq!(a.bytes_read, 4096);
    let e = first_error(text, Format::Fio).to_string();
    assert!(e.contains("line 3") && e.contains("overflows"), "{e}");
    // Past the largest offset a device can have (2^63 - 1) without
    // overflowing 64 bits: malformed too.
    let text = b"fio version 2 iolog\n/dev/sda add\n/dev/sda write 9223372036854775807 512\n";
    let e = first_error(text, Format::Fio).to_string();
    assert!(e.contains("line 3") && e.contains("largest"), "{e}");
}

#[test]
fn zero_length_requests_are_malformed_in_every_text_format() {
    let cases: &[(Format, &[u8])] = &[
        (
            Format::Fio,
            b"fio version 2 iolog\n/dev/sda add\n/dev/sda read 4096 0\n/dev/sda read 0 512\n/dev/sda write 0 512\n",
        ),
        (
            Format::Msr,
            b"1,h,0,Read,0,512,1\n2,h,0,Read,4096,0,1\n3,h,0,Write,0,512,1\n",
        ),
        (Format::Spc, b"0,8,512,R,0.1\n0,16,0,R,0.2\n0,24,512,W,0.3\n"),
        (Format::Mqsim, b"100 0 8 1 1\n200 0 16 0 1\n300 0 24 1 0\n"),
        (
            Format::Blkparse,
            b"  8,0    0        1     0.000001000  1  D   R 100 + 8 [x]\n  8,0    0        2     0.000002000  1  D   R 200 + 0 [x]\n  8,0    0        3     0.000003000  1  D   W 300 + 8 [x]\n",
        ),
    ];
    for (fmt, text) in cases {
        let (v, skipped) = read_lenient(text, *fmt);
        assert_eq!(skipped, 1, "{fmt}");
        assert_eq!(v.len(), 2, "{fmt}: {v:?}");
        assert!(v.iter().all(|r| r.len > 0), "{fmt}: {v:?}");
        let e = first_error(text, *fmt);
        let line = if *fmt == Format::Fio { 3 } else { 2 };
        match &e {
            TraceError::Parse { line: l, msg, .. } => {
                assert_eq!(*l, line, "{fmt}: {e}");
                assert!(msg.contains("zero-length"), "{fmt}: {e}");
            }
            other => panic!("{fmt}: {other}"),
        }
    }
}

#[test]
fn blkparse_empty_preflush_is_a_flush_not_a_zero_length_write() {
    let text = b"  8,0    0        1     0.000001000  1  D FWS 0 [x]\n  8,0    0        2     0.000002000  1  D   W 300 + 8 [x]\n";
    let (v, skipped) = read_lenient(text, Format::Blkparse);
    assert_eq!(skipped, 0);
    assert_eq!(
        v.iter().map(|r| r.op).collect::<Vec<_>>(),
        vec![Op::Flush, Op::Write]
    );
}

/// One vscsi v1 record: {u32 sn, u32 len, u32 nSG, u16 cmd, u16 ver, u64 lbn, u64 ts}.
fn vscsi1(len: u32, cmd: u16, lbn: u64, ts: u64) -> Vec<u8> {
    let mut r = Vec::with_capacity(32);
    r.extend_from_slice(&0u32.to_le_bytes());
    r.extend_from_slice(&len.to_le_bytes());
    r.extend_from_slice(&0u32.to_le_bytes());
    r.extend_from_slice(&cmd.to_le_bytes());
    r.extend_from_slice(&0x0100u16.to_le_bytes());
    r.extend_from_slice(&lbn.to_le_bytes());
    r.extend_from_slice(&ts.to_le_bytes());
    r
}

#[test]
fn vscsi_zero_length_and_overflowing_lba_are_malformed() {
    for bad in [vscsi1(0, 0x28, 8, 2), vscsi1(512, 0x28, u64::MAX / 256, 2)] {
        let mut bytes = vscsi1(512, 0x28, 0, 1);
        bytes.extend(bad);
        bytes.extend(vscsi1(512, 0x2a, 16, 3));
        let (v, skipped) = read_lenient(&bytes, Format::Vscsi1);
        assert_eq!((v.len(), skipped), (2, 1));
        match first_error(&bytes, Format::Vscsi1) {
            TraceError::Binary { offset, .. } => assert_eq!(offset, 32),
            other => panic!("{other}"),
        }
    }
}

#[test]
fn backwards_timestamps_give_the_right_duration_and_iops() {
    // "duration 0.000000 s" before: the duration ran from the first line's
    // time to the latest, and the first line was the latest.
    let mqsim = b"3000000000 0 0 8 1\n2000000000 0 8 8 1\n1000000000 0 16 8 1\n0 0 24 8 1\n";
    let fio = b"fio version 3 iolog\n3000000 /dev/sda add\n3000000 /dev/sda read 0 4096\n2000000 /dev/sda read 4096 4096\n1000000 /dev/sda read 8192 4096\n0 /dev/sda read 12288 4096\n";
    for (fmt, text) in [(Format::Mqsim, &mqsim[..]), (Format::Fio, &fio[..])] {
        let (v, skipped) = read_lenient(text, fmt);
        assert_eq!((v.len(), skipped), (4, 0), "{fmt}");
        let a = analyze(&mut v.into_iter().map(Ok)).unwrap();
        assert_eq!(a.duration_s, 3.0, "{fmt}");
        assert!((a.iops - 4.0 / 3.0).abs() < 1e-9, "{fmt}: {}", a.iops);
        assert_eq!(a.out_of_order, 3, "{fmt}");
        // One request in each second of the series, earliest first.
        let per_s: Vec<u64> = a.throughput.points.iter().map(|p| p.requests).collect();
        assert_eq!(per_s, vec![1, 1, 1, 1], "{fmt}");
        assert_eq!(a.throughput.points[3].t_s, 3.0, "{fmt}");
        // The access map runs from the earliest issue.
        let t: Vec<u64> = a.access_map.iter().map(|p| p.t_ns).collect();
        assert_eq!(
            t,
            vec![0, 1_000_000_000, 2_000_000_000, 3_000_000_000],
            "{fmt}"
        );
    }
}
