//! fio's `ioengine=net`: the job files in tests/data/fio-jobs/net (after
//! fio's examples/netio.fio and netio_multicast.fio; their first lines say
//! what was shrunk) run under fio 3.33 and drivelab, and each tool must
//! move what the other does. Every run gets a free port (`${PORT}`, which
//! both tools expand from the environment).
//!
//! - netio.fio (a tcp receiver and sender in one run) in each tool.
//! - Across tools, for tcp, udp and unix sockets, with and without
//!   `pingpong`: fio sends to a drivelab receiver and drivelab to a fio
//!   receiver (the receiver is started first and waited for until the
//!   kernel shows its socket bound).
//! - netio_multicast.fio (a udp multicast writer with pingpong and two
//!   readers) in each tool, inside a network namespace of its own
//!   (`unshare -n`, loopback up, 239.0.0.0/8 routed to it), so no real
//!   network is touched.
//! - Bad input: exit status 2 with one line naming the key.
//!
//! What is compared: a sender's bytes and I/Os are fio's exactly (size / bs
//! writes). A drivelab receiver reports every byte and block sent. A fio
//! receiver on a stream (tcp, unix) reports less when a receive came back
//! short: fio counts the short part in `short_ios` and requeues the rest,
//! then counts the rest as the I/O's bytes, so its `io_bytes` leaves the
//! short parts out (backend.c, io_queue_event) and its `total_ios` counts
//! the I/O twice; what holds for it is `total_ios - short_ios` = the blocks
//! sent and `io_bytes` at most the bytes sent. Over udp (one datagram a
//! block) fio's receiver reports exactly what was sent.
//!
//! Without fio 3.33, or without root for the namespace, a test says so on
//! one line and passes.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use drivelab_testkit::{effective_uid, TempDir};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");
/// Bytes each role file moves (size=1m, bs=4k).
const ROLE_BYTES: u64 = 1 << 20;
const ROLE_BS: u64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tool {
    Fio,
    Drivelab,
}

fn fio_or_skip(test: &str) -> bool {
    let v = Command::new("fio").arg("--version").output();
    if v.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("fio-3.33")) {
        return true;
    }
    eprintln!("{test}: skipped: needs fio 3.33 on PATH");
    false
}

fn job(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/fio-jobs/net")
        .join(name)
}

/// A port free for tcp and udp on every address, for one run.
fn free_port() -> u16 {
    loop {
        let l = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let p = l.local_addr().unwrap().port();
        if std::net::UdpSocket::bind(("0.0.0.0", p)).is_ok() {
            return p;
        }
    }
}

/// Start `tool` on `job` with `env`, its JSON going to `out` (stderr to
/// `out`.err); `netns`: inside a fresh network namespace with loopback up
/// and 239.0.0.0/8 routed to it.
fn start(tool: Tool, job: &Path, env: &[(&str, String)], out: &Path, netns: bool) -> Child {
    let (prog, mut args): (&str, Vec<String>) = match tool {
        Tool::Fio => ("fio", vec!["--output-format=json".into()]),
        Tool::Drivelab => (BIN, vec!["run".into(), "--output-format=json".into()]),
    };
    args.push(job.display().to_string());
    let mut c = if netns {
        let mut c = Command::new("unshare");
        c.args([
            "-n",
            "sh",
            "-c",
            "ip link set lo up && ip route add 239.0.0.0/8 dev lo && exec \"$0\" \"$@\"",
            prog,
        ]);
        c.args(&args);
        c
    } else {
        let mut c = Command::new(prog);
        c.args(&args);
        c
    };
    for (k, v) in env {
        c.env(k, v);
    }
    let err = PathBuf::from(format!("{}.err", out.display()));
    c.stdout(std::fs::File::create(out).unwrap())
        .stderr(std::fs::File::create(err).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {prog}: {e}"))
}

/// Start a TCP receiver (as [`start`]) and wait, at most 30 s, until it
/// listens on `port`.
fn start_tcp_receiver(
    tool: Tool,
    job: &Path,
    env: &[(&str, String)],
    out: &Path,
    port: u16,
) -> Child {
    let r = start(tool, job, env, out, false);
    let end = Instant::now() + Duration::from_secs(30);
    while !bound("tcp", port, Path::new("")) {
        assert!(
            Instant::now() < end,
            "the {tool:?} receiver never bound: {}",
            stderr_of(out)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    r
}

fn stderr_of(out: &Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(format!("{}.err", out.display())) {
        let _ = f.read_to_string(&mut s);
    }
    s
}

/// Wait (at most a minute) for a run to end successfully; its JSON.
/// `eisconn`: fio on a unix socket, whose jobs end with error 106
/// (EISCONN) and exit status 1 after moving all their data: fio 3.33 sends
/// its close message with sendto() and an address on a connected unix
/// socket. That is taken as success.
fn finish(c: Child, what: &str, out: &Path, eisconn: bool) -> Value {
    let status = wait(c, what, out);
    judge(status, what, out, eisconn)
}

/// Wait (at most a minute) for a run to end; its exit status.
fn wait(mut c: Child, what: &str, out: &Path) -> std::process::ExitStatus {
    let end = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            let _ = c.kill();
            let _ = c.wait();
            panic!(
                "{what}: still running after 60 s; stderr: {}",
                stderr_of(out)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    status
}

/// The JSON of a run that ended with `status` (see [`finish`]).
fn judge(status: std::process::ExitStatus, what: &str, out: &Path, eisconn: bool) -> Value {
    let text = std::fs::read_to_string(out).unwrap();
    // fio prints "fio: waiting for connection" before its JSON.
    let v: Option<Value> = text
        .find('{')
        .and_then(|at| serde_json::from_str(&text[at..]).ok());
    let fio_unix_close = |v: &Value| {
        v["jobs"]
            .as_array()
            .is_some_and(|js| js.iter().all(|j| j["error"] == 106))
    };
    match v {
        Some(mut v) if status.success() || (eisconn && fio_unix_close(&v)) => {
            if let Some(js) = v["jobs"].as_array_mut() {
                for j in js {
                    j["error"] = 0.into();
                }
            }
            v
        }
        _ => panic!(
            "{what}: {status}; stdout: {text}; stderr: {}",
            stderr_of(out)
        ),
    }
}

/// One job's counts in one direction.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Counts {
    bytes: u64,
    ios: u64,
    short: u64,
    drops: u64,
}

fn counts(v: &Value, job: &str, dir: &str) -> Counts {
    let j = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == job)
        .unwrap_or_else(|| panic!("no job {job} in {v}"));
    assert_eq!(j["error"], 0, "job {job} failed: {j}");
    let d = &j[dir];
    let n = |k: &str| {
        d[k].as_u64()
            .unwrap_or_else(|| panic!("{job} {dir} {k}: {d}"))
    };
    Counts {
        bytes: n("io_bytes"),
        ios: n("total_ios"),
        short: n("short_ios"),
        drops: n("drop_ios"),
    }
}

/// Whether the socket a receiver binds is there: a listening tcp socket
/// on `port`, a udp socket bound to it, or a listening unix socket at
/// `path`.
fn bound(proto: &str, port: u16, path: &Path) -> bool {
    let read = |f: &str| std::fs::read_to_string(f).unwrap_or_default();
    let port_hex = format!(":{port:04X}");
    match proto {
        "tcp" => (read("/proc/net/tcp") + &read("/proc/net/tcp6"))
            .lines()
            .skip(1)
            .any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 3 && f[1].ends_with(&port_hex) && f[3] == "0A"
            }),
        "udp" => (read("/proc/net/udp") + &read("/proc/net/udp6"))
            .lines()
            .skip(1)
            .any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|a| a.ends_with(&port_hex))
            }),
        _ => read("/proc/net/unix").lines().skip(1).any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // Flags 00010000: accepting connections.
            f.len() > 7 && f[3] == "00010000" && Path::new(f[7]) == path
        }),
    }
}

/// `recv` receives and `send` sends `proto` (with `pingpong` 0 or 1) with
/// the role files; the receiver's and the sender's counts.
fn pair(proto: &str, pingpong: u8, recv: Tool, send: Tool, dir: &TempDir) -> (Counts, Counts) {
    let port = free_port();
    let sock = dir.join(&format!("{proto}-{pingpong}-{recv:?}.sock"));
    let env = [
        ("PORT", port.to_string()),
        ("SOCK", sock.display().to_string()),
        ("PINGPONG", pingpong.to_string()),
    ];
    let what = format!("{proto} pingpong={pingpong}: {send:?} sends to {recv:?}");
    let rout = dir.join(&format!("{proto}-{pingpong}-{recv:?}-recv.json"));
    let sout = dir.join(&format!("{proto}-{pingpong}-{send:?}-send.json"));
    let mut r = start(
        recv,
        &job(&format!("{proto}-receiver.fio")),
        &env,
        &rout,
        false,
    );
    let end = Instant::now() + Duration::from_secs(30);
    while !bound(proto, port, &sock) {
        if Instant::now() > end || r.try_wait().unwrap().is_some() {
            let _ = r.kill();
            let _ = r.wait();
            panic!(
                "{what}: the receiver never bound; stderr: {}",
                stderr_of(&rout)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let s = start(
        send,
        &job(&format!("{proto}-sender.fio")),
        &env,
        &sout,
        false,
    );
    let unix = proto == "unix";
    let sv = finish(
        s,
        &format!("{what} (sender)"),
        &sout,
        unix && send == Tool::Fio,
    );
    let rv = finish(
        r,
        &format!("{what} (receiver)"),
        &rout,
        unix && recv == Tool::Fio,
    );
    let _ = std::fs::remove_file(&sock);
    (
        counts(&rv, "receiver", "read"),
        counts(&sv, "sender", "write"),
    )
}

/// What a receiver of `tool` must report for what `sent` says went out.
/// `to_close`: the receiver could take more than was sent, so it read up
/// to the sender's close message (else fio's receiver, which counts the
/// requeued rest of a short receive as issued again, stops early).
fn check_received(what: &str, tool: Tool, stream: bool, to_close: bool, got: Counts, sent: Counts) {
    match (tool, stream) {
        (Tool::Fio, true) => {
            let blocks = got.ios - got.short;
            if to_close {
                assert_eq!(
                    blocks, sent.ios,
                    "{what}: fio's blocks: {got:?} for {sent:?}"
                );
            } else {
                assert!(
                    blocks <= sent.ios && blocks > 0,
                    "{what}: fio's blocks: {got:?} for {sent:?}"
                );
            }
            assert!(got.bytes <= sent.bytes, "{what}: {got:?} for {sent:?}");
        }
        // A datagram lost on a loaded host is a drop (fio's sequence
        // records tell), in both tools; every one is either.
        (_, false) => {
            assert_eq!(
                got.ios + got.drops,
                sent.ios,
                "{what}: {got:?} for {sent:?}"
            );
            assert_eq!(got.bytes, got.ios * ROLE_BS, "{what}: {got:?}");
            assert_eq!(got.short, 0, "{what}: {got:?}");
        }
        (Tool::Drivelab, true) => {
            assert_eq!(
                (got.bytes, got.ios),
                (sent.bytes, sent.ios),
                "{what}: {got:?} for {sent:?}"
            );
            assert_eq!((got.short, got.drops), (0, 0), "{what}: {got:?}");
        }
    }
}

fn cross_tool(proto: &str) {
    let dir = TempDir::new(&format!("fio-net-{proto}"));
    let stream = proto != "udp";
    for pingpong in [0u8, 1] {
        for (recv, send) in [(Tool::Drivelab, Tool::Fio), (Tool::Fio, Tool::Drivelab)] {
            let what = format!("{proto} pingpong={pingpong}: {send:?} -> {recv:?}");
            let (got, sent) = pair(proto, pingpong, recv, send, &dir);
            // Both senders write size / bs blocks, as fio's does.
            assert_eq!(
                (sent.bytes, sent.ios, sent.short),
                (ROLE_BYTES, ROLE_BYTES / ROLE_BS, 0),
                "{what}: sender"
            );
            check_received(&what, recv, stream, true, got, sent);
            eprintln!("{what}: sent {sent:?}, received {got:?}");
        }
    }
}

#[test]
fn tcp_across_tools_both_ways() {
    if fio_or_skip("tcp_across_tools_both_ways") {
        cross_tool("tcp");
    }
}

#[test]
fn udp_across_tools_both_ways() {
    if fio_or_skip("udp_across_tools_both_ways") {
        cross_tool("udp");
    }
}

#[test]
fn unix_across_tools_both_ways() {
    if fio_or_skip("unix_across_tools_both_ways") {
        cross_tool("unix");
    }
}

/// Run `file` with `tool` on a free port; its JSON.
fn whole(tool: Tool, file: &str, dir: &TempDir, netns: bool) -> Value {
    let what = format!("{file} under {tool:?}");
    let mut attempt = 1;
    loop {
        let out = dir.join(&format!("{file}-{tool:?}-{attempt}.json"));
        let c = start(
            tool,
            &job(file),
            &[("PORT", free_port().to_string())],
            &out,
            netns,
        );
        let status = wait(c, &what, &out);
        // fio's own receiver may close its socket before its sender's
        // last write (ECONNRESET, 104) on a loaded machine: that run of
        // the peer is run again, once, and said.
        let reset = std::fs::read_to_string(&out).is_ok_and(|t| t.contains("\"error\" : 104"));
        if tool == Tool::Fio && attempt == 1 && !status.success() && reset {
            println!("{what}: fio's sender failed with ECONNRESET, and run again");
            attempt += 1;
            continue;
        }
        return judge(status, &what, &out, false);
    }
}

#[test]
fn netio_example_moves_the_same_in_both_tools() {
    if !fio_or_skip("netio_example_moves_the_same_in_both_tools") {
        return;
    }
    let dir = TempDir::new("fio-net-netio");
    let f = whole(Tool::Fio, "netio.fio", &dir, false);
    let d = whole(Tool::Drivelab, "netio.fio", &dir, false);
    let (fs, ds) = (counts(&f, "sender", "write"), counts(&d, "sender", "write"));
    assert_eq!(fs, ds, "the senders");
    assert_eq!((ds.bytes, ds.ios), (4 << 20, 1024));
    check_received(
        "fio's netio",
        Tool::Fio,
        true,
        false,
        counts(&f, "receiver", "read"),
        fs,
    );
    check_received(
        "drivelab's netio",
        Tool::Drivelab,
        true,
        false,
        counts(&d, "receiver", "read"),
        ds,
    );
}

#[test]
fn netio_multicast_example_in_a_network_namespace() {
    let test = "netio_multicast_example_in_a_network_namespace";
    if !fio_or_skip(test) {
        return;
    }
    if effective_uid() != 0 {
        eprintln!("{test}: skipped: needs root (unshare -n)");
        return;
    }
    let dir = TempDir::new("fio-net-multicast");
    let blocks = (256 << 10) / 64;
    for tool in [Tool::Fio, Tool::Drivelab] {
        let v = whole(tool, "netio_multicast.fio", &dir, true);
        let w = counts(&v, "pingpong_writer", "write");
        let pr = counts(&v, "pingpong_reader", "read");
        let nr = counts(&v, "normal_reader", "read");
        eprintln!("{tool:?}: writer {w:?}, pingpong reader {pr:?}, normal reader {nr:?}");
        // Both readers get every datagram the writer sent, or count it
        // dropped (the pingpong reader, which the writer waits for, drops
        // none).
        for r in [pr, nr] {
            assert_eq!(r.ios + r.drops, blocks, "{tool:?}: {r:?}");
            assert_eq!(r.bytes, r.ios * 64, "{tool:?}: {r:?}");
        }
        assert_eq!(pr.drops, 0, "{tool:?}: {pr:?}");
        // The writer's last round trip may end at a close message instead:
        // both readers end with the last datagram and send theirs to the
        // writer, and the normal reader's can come before the pingpong
        // reply (in fio as in drivelab, which takes a close message as the
        // end wherever it comes, as fio does). Then that write is not
        // counted.
        assert!(w.ios == blocks || w.ios + 1 == blocks, "{tool:?}: {w:?}");
        assert_eq!(w.bytes, w.ios * 64, "{tool:?}: {w:?}");
        assert_eq!(w.ios, pr.ios.min(w.ios), "{tool:?}: {w:?} {pr:?}");
    }
}

#[test]
fn bad_net_input_exits_2_naming_the_key() {
    let dir = TempDir::new("fio-net-bad");
    let cases = [
        (
            "hostname",
            "[r]\nioengine=net\nport=9000\nlisten\nhostname=localhost\nrw=read\nsize=1m\n",
        ),
        ("port", "[s]\nioengine=net\nhostname=localhost\nrw=write\nsize=1m\n"),
        ("protocol", "[s]\nioengine=net\nprotocol=sctp\nport=9000\nhostname=localhost\nrw=write\nsize=1m\n"),
        ("port", "[s]\nioengine=net\nprotocol=unix\nport=9000\nhostname=/tmp/x.sock\nrw=write\nsize=1m\n"),
        ("listen", "[r]\nioengine=net\nprotocol=udp\nport=9000\nlisten\nrw=read\nsize=1m\n"),
    ];
    for (i, (key, text)) in cases.iter().enumerate() {
        let f = dir.join(&format!("bad{i}.fio"));
        std::fs::write(&f, text).unwrap();
        let o = Command::new(BIN).arg("run").arg(&f).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{key}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{key}: one line: {err}");
        assert!(lines[0].contains(key), "{key}: {err}");
    }
}

/// A stream receiver whose block is larger than what is left when the
/// sender closes gets a short last block: fio's sender writes 40 KiB in
/// 4 KiB blocks, drivelab's receiver reads 16 KiB blocks, so it takes two
/// whole blocks and one of 8 KiB, and says so in `short_ios` (per
/// direction, fio's key), with every byte counted.
#[test]
fn a_short_last_block_is_counted_in_short_ios() {
    let test = "a_short_last_block_is_counted_in_short_ios";
    if !fio_or_skip(test) {
        return;
    }
    let dir = TempDir::new("fio-net-short");
    let port = free_port();
    let recv_job = dir.join("recv.fio");
    let send_job = dir.join("send.fio");
    std::fs::write(
        &recv_job,
        "[receiver]\nioengine=net\nprotocol=tcp\nport=${PORT}\nlisten\nrw=read\nbs=16k\nsize=1m\n",
    )
    .unwrap();
    std::fs::write(
        &send_job,
        "[sender]\nioengine=net\nprotocol=tcp\nport=${PORT}\nhostname=127.0.0.1\nrw=write\nbs=4k\nsize=40k\n",
    )
    .unwrap();
    let env = [("PORT", port.to_string())];
    let rout = dir.join("recv.json");
    let sout = dir.join("send.json");
    let r = start_tcp_receiver(Tool::Drivelab, &recv_job, &env, &rout, port);
    let s = start(Tool::Fio, &send_job, &env, &sout, false);
    let sv = finish(s, "fio sender", &sout, false);
    let rv = finish(r, "drivelab receiver", &rout, false);
    let sent = counts(&sv, "sender", "write");
    let got = counts(&rv, "receiver", "read");
    eprintln!("{test}: sent {sent:?}, received {got:?}");
    assert_eq!((sent.bytes, sent.ios), (40960, 10), "fio's sender");
    assert_eq!(
        (got.bytes, got.ios, got.short),
        (40960, 3, 1),
        "drivelab's receiver: {got:?}"
    );
    assert_eq!(rv["jobs"][0]["write"]["short_ios"], 0);
}

/// fio's `netsplice` (the net engine moving data through a pipe with
/// splice(2)) runs as `net`: a drivelab netsplice receiver takes what
/// fio's netsplice sender sends, and the other way round.
#[test]
fn netsplice_moves_what_fio_s_netsplice_moves() {
    let test = "netsplice_moves_what_fio_s_netsplice_moves";
    if !fio_or_skip(test) {
        return;
    }
    let dir = TempDir::new("fio-netsplice");
    let recv_job = dir.join("recv.fio");
    let send_job = dir.join("send.fio");
    std::fs::write(
        &recv_job,
        "[receiver]\nioengine=netsplice\nprotocol=tcp\nport=${PORT}\nlisten\nrw=read\nbs=4k\nsize=256k\n",
    )
    .unwrap();
    std::fs::write(
        &send_job,
        "[sender]\nioengine=netsplice\nprotocol=tcp\nport=${PORT}\nhostname=127.0.0.1\nrw=write\nbs=4k\nsize=256k\n",
    )
    .unwrap();
    for (recv, send) in [(Tool::Drivelab, Tool::Fio), (Tool::Fio, Tool::Drivelab)] {
        let port = free_port();
        let env = [("PORT", port.to_string())];
        let rout = dir.join("recv.json");
        let sout = dir.join("send.json");
        let r = start_tcp_receiver(recv, &recv_job, &env, &rout, port);
        let s = start(send, &send_job, &env, &sout, false);
        let sv = finish(s, "sender", &sout, false);
        let rv = finish(r, "receiver", &rout, false);
        let sent = counts(&sv, "sender", "write");
        let got = counts(&rv, "receiver", "read");
        assert_eq!((sent.bytes, sent.ios), (256 << 10, 64), "{send:?} sender");
        // A stream read may come short under load: every byte, in at
        // least as many reads.
        assert_eq!(got.bytes, 256 << 10, "{recv:?} receiver");
        assert!(got.ios >= 64, "{recv:?} receiver: {got:?}");
    }
}
