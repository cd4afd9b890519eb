//! The `drivelab-ftl-nbd` executable: serving on a Unix socket with the
//! oldest newstyle path (`NBD_OPT_EXPORT_NAME`), and bad input refused in
//! one line with exit status 2 before anything is opened.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab-ftl-nbd");

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b.try_into().unwrap())
}

#[test]
fn serves_a_unix_socket_client_and_prints_the_counts() {
    let dir = std::env::temp_dir().join(format!("ftlsim-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("ssd.sock");
    let child = Command::new(BIN)
        .args(["serve", "--unix"])
        .arg(&sock)
        .args(["--size", "1M", "--pages-per-block", "16", "--op", "0.25"])
        .args(["--program-us", "100"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let mut s = loop {
        match UnixStream::connect(&sock) {
            Ok(s) => break s,
            Err(_) if t0.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("cannot connect to {}: {e}", sock.display()),
        }
    };
    let mut hello = [0u8; 18];
    s.read_exact(&mut hello).unwrap();
    assert_eq!(&hello[..8], b"NBDMAGIC");
    assert_eq!(&hello[8..16], b"IHAVEOPT");
    // Fixed newstyle, no zeroes; then NBD_OPT_EXPORT_NAME "".
    s.write_all(&3u32.to_be_bytes()).unwrap();
    let mut opt = Vec::new();
    opt.extend_from_slice(b"IHAVEOPT");
    opt.extend_from_slice(&1u32.to_be_bytes());
    opt.extend_from_slice(&0u32.to_be_bytes());
    s.write_all(&opt).unwrap();
    let mut info = [0u8; 10];
    s.read_exact(&mut info).unwrap();
    assert_eq!(be64(&info[..8]), 1 << 20);
    // Write one page at 8 KiB, read it back, disconnect.
    let page: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    let req = |kind: u16, handle: u64, off: u64, len: u32| {
        let mut m = Vec::new();
        m.extend_from_slice(&0x2560_9513u32.to_be_bytes());
        m.extend_from_slice(&0u16.to_be_bytes());
        m.extend_from_slice(&kind.to_be_bytes());
        m.extend_from_slice(&handle.to_be_bytes());
        m.extend_from_slice(&off.to_be_bytes());
        m.extend_from_slice(&len.to_be_bytes());
        m
    };
    let mut w = req(1, 1, 8192, 4096);
    w.extend_from_slice(&page);
    s.write_all(&w).unwrap();
    let mut rep = [0u8; 16];
    s.read_exact(&mut rep).unwrap();
    assert_eq!((be64(&rep[..8]) >> 32, be64(&rep[8..])), (0x6744_6698, 1));
    s.write_all(&req(0, 2, 8192, 4096)).unwrap();
    s.read_exact(&mut rep).unwrap();
    assert_eq!(be64(&rep[..8]), 0x6744_6698_0000_0000, "magic, error 0");
    let mut back = vec![0; 4096];
    s.read_exact(&mut back).unwrap();
    assert_eq!(back, page);
    s.write_all(&req(2, 3, 0, 0)).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"host_writes\":1,"), "{text}");
    assert!(text.contains("\"host_reads\":1,"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_model_options_exit_2_in_one_line() {
    for args in [
        &["attach", "/dev/nbd-none", "--op", "abc"][..],
        &["attach", "/dev/nbd-none", "--size", "3"],
        &["attach", "/dev/nbd-none", "--op", "0.001"],
        &["serve", "--unix", "/nonexistent/x.sock", "--policy", "lru"],
        &["frobnicate"],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("drivelab-ftl-nbd: "), "{err}");
    }
}
