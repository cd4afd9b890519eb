//! The emulated controller over real TCP, driven by a small host written
//! here from the NVMe/TCP and NVMe specifications: connection set-up,
//! Connect, properties, Identify, writes in the capsule and by R2T, reads,
//! SMART counters, Format NVM, Sanitize in the background with its status
//! log, sanitize failure mode, and commands a fault leaves unanswered.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use drivelab_nvmeemu::cmd::{Cqe, Sqe, Status};
use drivelab_nvmeemu::faults::Faults;
use drivelab_nvmeemu::pdu::Pdu;
use drivelab_nvmeemu::{start, Config, Drive};

const NQN: &str = "nqn.2026-01.io.drivelab:test";

fn config() -> Config {
    Config {
        serial: "EMUTEST01".into(),
        model: "test model".into(),
        firmware: "1.0".into(),
        subnqn: NQN.into(),
        namespaces: vec![1 << 20, 2 << 20],
        capacity: 4 << 20,
        block_size: 512,
        sanitize_seconds: 3.0,
        faults: Faults::default(),
        control: None,
    }
}

struct Host {
    s: TcpStream,
    cid: u16,
}

impl Host {
    fn open(addr: std::net::SocketAddr, qid: u16, cntlid: u16) -> (Host, Cqe) {
        let mut s = TcpStream::connect(addr).unwrap();
        let icreq = Pdu::IcReq {
            pfv: 0,
            hpda: 0,
            digest: 0,
            maxr2t: 0,
        };
        s.write_all(&icreq.encode()).unwrap();
        match Pdu::read_from(&mut s).unwrap() {
            Pdu::IcResp {
                pfv: 0,
                cpda: 0,
                digest: 0,
                maxh2cdata,
            } => assert!(maxh2cdata >= 4096 && maxh2cdata % 4 == 0),
            other => panic!("{other:?}"),
        }
        let mut h = Host { s, cid: 0 };
        let mut data = vec![0u8; 1024];
        data[16..18].copy_from_slice(&cntlid.to_le_bytes());
        data[256..256 + NQN.len()].copy_from_slice(NQN.as_bytes());
        data[512..512 + 9].copy_from_slice(b"nqn.host1");
        let sqe = h
            .sqe(0x7F)
            .with_fctype(1)
            .with_cdw(10, u32::from(qid) << 16)
            .with_cdw(11, 31)
            .with_data_len(1024);
        h.send(sqe, data);
        let (cqe, _) = h.reply();
        (h, cqe)
    }

    fn sqe(&mut self, opcode: u8) -> Sqe {
        self.cid = self.cid.wrapping_add(1);
        Sqe::new(opcode, self.cid)
    }

    fn send(&mut self, sqe: Sqe, data: Vec<u8>) {
        let p = Pdu::CapsuleCmd { sqe, data };
        self.s.write_all(&p.encode()).unwrap();
    }

    /// The next response, with any C2HData before it; answers R2Ts from
    /// `out`.
    fn reply_with(&mut self, out: &[u8]) -> (Cqe, Vec<u8>) {
        let mut data = Vec::new();
        loop {
            match Pdu::read_from(&mut self.s).unwrap() {
                Pdu::C2HData { datao, data: d, .. } => {
                    assert_eq!(datao as usize, data.len());
                    data.extend_from_slice(&d);
                }
                Pdu::R2T {
                    cccid,
                    ttag,
                    r2to,
                    r2tl,
                } => {
                    let (o, l) = (r2to as usize, r2tl as usize);
                    for (i, chunk) in out[o..o + l].chunks(32 * 1024).enumerate() {
                        let p = Pdu::H2CData {
                            cccid,
                            ttag,
                            datao: (o + i * 32 * 1024) as u32,
                            last: o + (i + 1) * 32 * 1024 >= o + l,
                            data: chunk.to_vec(),
                        };
                        self.s.write_all(&p.encode()).unwrap();
                    }
                }
                Pdu::CapsuleResp { cqe } => return (cqe, data),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    fn reply(&mut self) -> (Cqe, Vec<u8>) {
        self.reply_with(&[])
    }

    fn admin(&mut self, sqe: Sqe, len: u32) -> (Cqe, Vec<u8>) {
        self.send(sqe.with_data_len(len), Vec::new());
        self.reply()
    }

    fn identify(&mut self, cns: u32, nsid: u32) -> (Status, Vec<u8>) {
        let s = self.sqe(0x06).with_nsid(nsid).with_cdw(10, cns);
        let (c, d) = self.admin(s, 4096);
        (c.status, d)
    }

    fn log(&mut self, lid: u32, len: u32) -> Vec<u8> {
        let numd = len / 4 - 1;
        let s = self
            .sqe(0x02)
            .with_nsid(0xFFFF_FFFF)
            .with_cdw(10, lid | (numd << 16));
        let (c, d) = self.admin(s, len);
        assert_eq!(c.status, Status::SUCCESS, "log {lid:#x}");
        d
    }

    fn write(&mut self, nsid: u32, lba: u64, data: &[u8]) -> Status {
        let n = data.len() as u32 / 512;
        let s = self
            .sqe(0x01)
            .with_nsid(nsid)
            .with_cdw(10, lba as u32)
            .with_cdw(12, n - 1)
            .with_data_len(data.len() as u32);
        let inline = if data.len() <= 8192 {
            data.to_vec()
        } else {
            Vec::new()
        };
        self.send(s, inline);
        self.reply_with(data).0.status
    }

    fn read(&mut self, nsid: u32, lba: u64, blocks: u32) -> (Status, Vec<u8>) {
        let s = self
            .sqe(0x02)
            .with_nsid(nsid)
            .with_cdw(10, lba as u32)
            .with_cdw(12, blocks - 1);
        let (c, d) = self.admin(s, blocks * 512);
        (c.status, d)
    }
}

fn le64(d: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(d[at..at + 8].try_into().unwrap())
}
fn le16(d: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([d[at], d[at + 1]])
}

/// An admin and an I/O connection to a fresh controller, enabled.
fn up(cfg: Config) -> (Arc<Drive>, Host, Host) {
    let drive = Drive::new(cfg);
    let addr = start(Arc::clone(&drive), "127.0.0.1:0").unwrap();
    let (mut a, c) = Host::open(addr, 0, 0xFFFF);
    assert_eq!((c.status, c.dw0), (Status::SUCCESS, 1), "cntlid 1");
    // Property Set CC.EN, then CSTS.RDY.
    let set = a
        .sqe(0x7F)
        .with_fctype(0)
        .with_cdw(11, 0x14)
        .with_cdw(12, 1);
    assert_eq!(a.admin(set, 0).0.status, Status::SUCCESS);
    let get = a.sqe(0x7F).with_fctype(4).with_cdw(11, 0x1C);
    assert_eq!(a.admin(get, 0).0.dw0 & 1, 1);
    // Number of Queues: 2 asked (0's based 1), 2 granted.
    let q = a.sqe(0x09).with_cdw(10, 7).with_cdw(11, 1 | (1 << 16));
    assert_eq!(a.admin(q, 0).0.dw0, 1 | (1 << 16));
    let (io, c) = Host::open(addr, 1, 1);
    assert_eq!(c.status, Status::SUCCESS);
    (drive, a, io)
}

#[test]
fn connect_properties_and_identify_answer_as_linux_expects() {
    let (_d, mut a, _io) = up(config());
    let cap = a.sqe(0x7F).with_fctype(4).with_cdw(10, 1).with_cdw(11, 0);
    let (c, _) = a.admin(cap, 0);
    let cap = u64::from(c.dw0) | (u64::from(c.dw1) << 32);
    assert_eq!((cap & 0xFFFF, (cap >> 37) & 1), (127, 1));
    let (s, id) = a.identify(1, 0);
    assert_eq!(s, Status::SUCCESS);
    assert_eq!(&id[4..13], b"EMUTEST01");
    assert_eq!(le16(&id, 78), 1, "CNTLID as the Connect gave");
    assert_ne!(le16(&id, 320), 0, "KAS: keep alive is mandatory on fabrics");
    assert!(
        u32::from_le_bytes(id[1792..1796].try_into().unwrap()) >= 4,
        "IOCCSZ"
    );
    assert_eq!(le16(&id, 514), 128, "MAXCMD");
    assert_eq!(id[536] & 1, 1, "SGLs");
    assert_eq!(u32::from_le_bytes(id[328..332].try_into().unwrap()) & 7, 7);
    assert_eq!(
        u32::from_le_bytes(id[516..520].try_into().unwrap()),
        2,
        "NN"
    );
    assert_eq!(le64(&id, 280), 4 << 20, "TNVMCAP");
    assert_eq!(
        le64(&id, 296),
        1 << 20,
        "UNVMCAP: what the namespaces leave"
    );
    assert_eq!(&id[768..768 + NQN.len()], NQN.as_bytes());
    let (_, list) = a.identify(2, 0);
    assert_eq!(&list[..12], &[1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
    let (_, ns) = a.identify(0, 2);
    assert_eq!((le64(&ns, 0), ns[33]), (4096, 0x09), "2 MiB of 512 B");
    let (_, desc) = a.identify(3, 1);
    assert_eq!((desc[0], desc[1], desc[12], desc[13]), (1, 8, 2, 16));
    assert_eq!(a.identify(0, 3).0, Status::INVALID_NS);
    assert_eq!(a.identify(0x42, 0).0, Status::INVALID_FIELD);
    let ka = a.sqe(0x18);
    assert_eq!(a.admin(ka, 0).0.status, Status::SUCCESS);
}

#[test]
fn a_connect_to_another_subsystem_is_refused() {
    let drive = Drive::new(config());
    let addr = start(drive, "127.0.0.1:0").unwrap();
    let (_a, c) = Host::open(addr, 0, 0xFFFF);
    assert_eq!(c.status, Status::SUCCESS);
    let mut cfg = config();
    cfg.subnqn = "nqn.other".into();
    let addr = start(Drive::new(cfg), "127.0.0.1:0").unwrap();
    let (_b, c) = Host::open(addr, 0, 0xFFFF);
    assert_eq!(c.status, Status::CONNECT_INVALID_HOST);
}

#[test]
fn writes_in_capsule_and_by_r2t_read_back_and_count_in_smart() {
    let (_d, mut a, mut io) = up(config());
    let small: Vec<u8> = (0..4096).map(|i| (i % 251) as u8).collect();
    let large: Vec<u8> = (0..128 * 1024).map(|i| (i % 241) as u8 ^ 0x5A).collect();
    assert_eq!(io.write(1, 0, &small), Status::SUCCESS);
    assert_eq!(io.write(2, 100, &large), Status::SUCCESS);
    assert_eq!(io.read(1, 0, 8), (Status::SUCCESS, small.clone()));
    assert_eq!(io.read(2, 100, 256).1, large);
    assert_eq!(io.read(2, 99, 1).1, vec![0; 512], "never written: zeroes");
    assert_eq!(io.read(1, 2047, 2).0, Status::LBA_RANGE);
    let smart = a.log(2, 512);
    let written = 4096 + 128 * 1024u64;
    assert_eq!(le64(&smart, 48), written.div_ceil(512).div_ceil(1000));
    assert_eq!(
        le64(&smart, 32),
        (written + 512).div_ceil(512).div_ceil(1000)
    );
    assert_eq!(
        (le64(&smart, 64), le64(&smart, 80)),
        (3, 2),
        "read, write commands"
    );
    assert_eq!(
        le64(&smart, 176),
        1,
        "the out-of-range read is an error entry"
    );
    let errors = a.log(1, 64);
    assert_eq!(le64(&errors, 0), 1);
    assert_eq!(le16(&errors, 12) >> 1, Status::LBA_RANGE.field());
    assert_eq!(le64(&errors, 16), 2047, "the LBA");
    // Write Zeroes (deallocating) and DSM deallocate; NUSE follows.
    let wz = io
        .sqe(0x08)
        .with_nsid(2)
        .with_cdw(10, 100)
        .with_cdw(12, 127 | (1 << 25));
    assert_eq!(io.admin(wz, 0).0.status, Status::SUCCESS);
    let mut range = vec![0u8; 16];
    range[4..8].copy_from_slice(&64u32.to_le_bytes());
    range[8..16].copy_from_slice(&228u64.to_le_bytes());
    let dsm = io.sqe(0x09).with_nsid(2).with_cdw(11, 4).with_data_len(16);
    io.send(dsm, range);
    assert_eq!(io.reply().0.status, Status::SUCCESS);
    let (_, back) = io.read(2, 100, 256);
    assert!(back[..192 * 512].iter().all(|&b| b == 0), "deallocated");
    assert!(back[192 * 512..] == large[192 * 512..], "the rest kept");
    let (_, ns) = a.identify(0, 2);
    assert_eq!(le64(&ns, 16), 256 - 128 - 64, "NUSE");
}

fn sanitize_until_done(a: &mut Host, cdw10: u32) -> Vec<u16> {
    let s = a.sqe(0x84).with_cdw(10, cdw10);
    assert_eq!(a.admin(s, 0).0.status, Status::SUCCESS);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = Vec::new();
    loop {
        let log = a.log(0x81, 512);
        let (sprog, sstat) = (le16(&log, 0), le16(&log, 2) & 7);
        assert_eq!(u32::from_le_bytes(log[4..8].try_into().unwrap()), cdw10);
        assert_eq!(
            u32::from_le_bytes(log[12..16].try_into().unwrap()),
            3,
            "EST"
        );
        seen.push(sprog);
        if sstat != 2 {
            seen.push(sstat);
            return seen;
        }
        assert!(Instant::now() < deadline, "sanitize never ended: {seen:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sanitize_runs_in_the_background_and_refuses_io_meanwhile() {
    let (d, mut a, mut io) = up(config());
    let data = vec![0xC3u8; 64 * 1024];
    io.write(1, 0, &data);
    io.write(2, 0, &data);
    let s = a.sqe(0x84).with_cdw(10, 2);
    assert_eq!(a.admin(s, 0).0.status, Status::SUCCESS);
    assert_eq!(io.read(1, 0, 1).0, Status::SANITIZE_IN_PROGRESS);
    let again = a.sqe(0x84).with_cdw(10, 2);
    assert_eq!(a.admin(again, 0).0.status, Status::SANITIZE_IN_PROGRESS);
    let fmt = a.sqe(0x80).with_nsid(1).with_cdw(10, 1 << 9);
    assert_eq!(a.admin(fmt, 0).0.status, Status::SANITIZE_IN_PROGRESS);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut progress = Vec::new();
    let sstat = loop {
        let log = a.log(0x81, 512);
        let sstat = le16(&log, 2);
        if sstat & 7 != 2 {
            break sstat;
        }
        progress.push(le16(&log, 0));
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(sstat & 7, 1, "completed");
    assert_eq!(sstat & 0x100, 0x100, "global data erased");
    assert!(progress.windows(2).all(|w| w[0] <= w[1]), "{progress:?}");
    assert_eq!(io.read(1, 0, 128).1, vec![0; 64 * 1024]);
    assert_eq!(io.read(2, 0, 128).1, vec![0; 64 * 1024]);
    let st = d.lock().state_json();
    assert_eq!(st["sanitize"]["blocks_erased"], 2048 + 4096);
    assert_eq!(st["erases"][0]["result"], "completed");
    assert_eq!(
        a.log(0x81, 512)[0..2],
        [0xFF, 0xFF],
        "SPROG FFFFh when done"
    );
}

#[test]
fn crypto_erase_reads_back_noise_and_overwrite_the_pattern() {
    let (_d, mut a, mut io) = up(config());
    let data = vec![0x11u8; 8192];
    io.write(1, 0, &data);
    let seen = sanitize_until_done(&mut a, 4);
    assert_eq!(seen.last(), Some(&1));
    let after = io.read(1, 0, 16).1;
    assert_ne!(after, data);
    assert!(
        after.iter().filter(|&&b| b == 0).count() < 256,
        "not zeroes"
    );
    assert_eq!(io.read(1, 16, 1).1, vec![0; 512], "unwritten stays zero");
    // Overwrite, 2 passes, OIPBP: the last pass writes the inverted pattern.
    let seen = sanitize_until_done(&mut a, 3 | (2 << 4) | (1 << 8));
    assert_eq!(seen.last(), Some(&1));
    let b = io.read(2, 7, 1).1;
    assert!(b.chunks(4).all(|w| w == [0xFF; 4]), "!0 pattern");
    // Format NVM SES 2 on namespace 2 only: its blocks go to noise.
    let fmt = a.sqe(0x80).with_nsid(2).with_cdw(10, 2 << 9);
    assert_eq!(a.admin(fmt, 0).0.status, Status::SUCCESS);
    assert!(io.read(2, 7, 1).1.chunks(4).any(|w| w != [0xFF; 4]));
    // SES 1: zeroes.
    let fmt = a.sqe(0x80).with_nsid(2).with_cdw(10, 1 << 9);
    assert_eq!(a.admin(fmt, 0).0.status, Status::SUCCESS);
    assert_eq!(io.read(2, 7, 1).1, vec![0; 512]);
    let bad = a.sqe(0x80).with_nsid(2).with_cdw(10, 1);
    assert_eq!(a.admin(bad, 0).0.status, Status::INVALID_FORMAT);
}

#[test]
fn a_failed_sanitize_leaves_failure_mode_until_exited() {
    let mut cfg = config();
    cfg.faults.add("sanitize-fail").unwrap();
    let (d, mut a, mut io) = up(cfg);
    io.write(1, 0, &[0xEE; 512 * 64]);
    let seen = sanitize_until_done(&mut a, 2);
    assert_eq!(seen.last(), Some(&3), "SSTAT failed");
    assert_eq!(io.read(1, 0, 1).0, Status::SANITIZE_FAILED);
    assert_eq!(d.lock().state_json()["erases"][0]["result"], "failed");
    let exit = a.sqe(0x84).with_cdw(10, 1);
    assert_eq!(a.admin(exit, 0).0.status, Status::SUCCESS);
    assert_eq!(io.read(1, 0, 1).0, Status::SUCCESS);
    // One-shot: the next sanitize works.
    assert_eq!(sanitize_until_done(&mut a, 2).last(), Some(&1));
}

#[test]
fn a_stalled_sanitize_stays_in_progress_at_half_and_refuses_io() {
    let mut cfg = config();
    cfg.faults.add("sanitize-stall").unwrap();
    let (d, mut a, mut io) = up(cfg);
    io.write(1, 0, &[0xEE; 512 * 64]);
    let s = a.sqe(0x84).with_cdw(10, 2);
    assert_eq!(a.admin(s, 0).0.status, Status::SUCCESS);
    // Three times the sanitize's 3 s: it would long have ended.
    let deadline = Instant::now() + Duration::from_secs(9);
    let mut last = (0, 0);
    while Instant::now() < deadline {
        let log = a.log(0x81, 512);
        last = (le16(&log, 0), le16(&log, 2) & 7);
        assert_eq!(last.1, 2, "SSTAT in progress, never another");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(last.0, 32768, "SPROG stopped at half");
    assert_eq!(io.read(1, 0, 1).0, Status::SANITIZE_IN_PROGRESS);
    let st = d.lock().state_json();
    assert_eq!(st["sanitize"]["stalled"], true);
    assert_eq!(st["erases"], serde_json::json!([]));
}

/// Waits until the controller has taken `n` commands it will not answer.
fn wait_unanswered(d: &Drive, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while d.lock().unanswered < n {
        assert!(
            Instant::now() < deadline,
            "the command never reached the controller"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn hung_commands_and_a_frozen_drive_are_never_answered() {
    let dir = std::env::temp_dir().join(format!("nvmeemu-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let control = dir.join("control");
    std::fs::write(&control, "hang admin 06\n").unwrap();
    let mut cfg = config();
    cfg.control = Some(control.clone());
    let (d, mut a, mut io) = up(cfg);
    let id = a.sqe(0x06).with_cdw(10, 1).with_data_len(4096);
    let hung_cid = id.cid();
    a.send(id, Vec::new());
    let ka = a.sqe(0x18);
    let (c, _) = a.admin(ka, 0);
    // Responses leave in order of execution: the Identify taken first
    // would have been answered before the Keep Alive.
    assert_ne!(c.cid, hung_cid);
    assert_eq!(c.status, Status::SUCCESS);
    assert_eq!(d.lock().unanswered, 1);
    // Frozen: nothing is answered, not even a read.
    std::fs::write(&control, "freeze\n").unwrap();
    let r = io.sqe(0x02).with_nsid(1).with_data_len(512);
    io.send(r, Vec::new());
    wait_unanswered(&d, 2);
    io.s.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let e = io.s.read(&mut byte).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_delayed_command_is_carried_out_at_once_and_answered_late() {
    let mut cfg = config();
    cfg.faults = Faults::parse("delay admin 84 2").unwrap();
    let (d, mut a, _io) = up(cfg);
    // Sanitize block erase: started at once, its completion held back.
    let t0 = Instant::now();
    let san = a.sqe(0x84).with_cdw(10, 2);
    let san_cid = san.cid();
    a.send(san, Vec::new());
    // Meanwhile the queue answers a Keep Alive, before the Sanitize.
    let ka = a.sqe(0x18);
    let ka_cid = ka.cid();
    let (c, _) = a.admin(ka, 0);
    assert_eq!((c.cid, c.status), (ka_cid, Status::SUCCESS));
    assert_eq!(d.lock().delayed, 1);
    assert_ne!(d.lock().sanitize.status, 0, "the sanitize started at once");
    let (c, _) = a.reply();
    assert_eq!((c.cid, c.status), (san_cid, Status::SUCCESS));
    assert!(t0.elapsed() >= Duration::from_secs(2), "{:?}", t0.elapsed());
    // The delayed answer to a host that has gone is dropped; the
    // controller serves the next connection.
    let san = a.sqe(0x84).with_cdw(10, 1);
    a.send(san, Vec::new());
    drop(a);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(d.lock().delayed, 2);
}
