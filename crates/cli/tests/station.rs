//! `drivelab station` with real parts: loop devices over files this test
//! creates, attached and detached while the station (a child process,
//! JSON events on stdout, control lines on stdin) runs under a policy in a
//! temp dir. Drives in the bays are erased and certified (bytes checked
//! after), a drive attached mid-run is picked up from the kernel's events,
//! one detached mid-erase is reported removed and never certified, a loop
//! outside the bays and one holding ext4 (held until confirmed) are left
//! untouched; every result is in the store with the host, bay and
//! operator. Bad policies exit 2 with one line naming the key.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drivelab_testkit::{digest, make_image, mkfs_ext4, require_root, sh, LoopDev, TempDir};
use serde_json::Value;

mod metrics_common;

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// Generous: the machine may be busy with other builds and tests.
const DEADLINE: Duration = Duration::from_secs(240);

/// The pattern the policy writes; not zeroes, so every byte of an erased
/// drive is known and a loop device streams it (at the policy's rate).
const FILL: u8 = 0xA5;

/// A station running as a child process.
struct Station {
    child: Child,
    stdin: Option<ChildStdin>,
    events: Arc<Mutex<Vec<Value>>>,
    stderr: Arc<Mutex<String>>,
}

impl Station {
    fn start(dir: &TempDir, policy: &Path) -> Station {
        Station::start_with(dir, policy, &[])
    }

    fn start_with(dir: &TempDir, policy: &Path, extra: &[&str]) -> Station {
        let mut child = Command::new(BIN)
            .args(["station", "--policy"])
            .arg(policy)
            .args(["--events", "json"])
            .args(extra)
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("DRIVELAB_STORE", dir.join("results.db"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start drivelab station");
        let events = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let ev = events.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {line}"));
                ev.lock().unwrap().push(v);
            }
        });
        let se = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                se.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let stdin = child.stdin.take();
        Station {
            child,
            stdin,
            events,
            stderr,
        }
    }

    fn events(&self) -> Vec<Value> {
        self.events.lock().unwrap().clone()
    }

    /// Wait for an event `pred` accepts; panics with what was seen.
    fn wait_for(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let t0 = Instant::now();
        loop {
            if let Some(v) = self.events().into_iter().find(|v| pred(v)) {
                return v;
            }
            assert!(
                t0.elapsed() < DEADLINE,
                "no event for {what} in {DEADLINE:?}; events:\n{}\nstderr:\n{}",
                self.events()
                    .iter()
                    .map(|v| format!(
                        "{} {} {} {}",
                        v["event"], v["name"], v["state"], v["detail"]
                    ))
                    .collect::<Vec<_>>()
                    .join("\n"),
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Wait for `name` to reach `state`.
    fn wait_state(&self, name: &str, state: &str) -> Value {
        self.wait_for(&format!("{name} {state}"), |v| {
            v["event"] == "state" && v["name"] == name && v["state"] == state
        })
    }

    fn send(&mut self, line: &str) {
        let s = self.stdin.as_mut().expect("stdin");
        writeln!(s, "{line}").expect("write to the station");
        s.flush().unwrap();
    }

    /// Quit and wait for the exit status.
    fn quit(mut self) -> (i32, Vec<Value>, String) {
        self.send("quit");
        let t0 = Instant::now();
        let code = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s.code().unwrap_or(-1);
            }
            assert!(t0.elapsed() < DEADLINE, "the station did not quit");
            std::thread::sleep(Duration::from_millis(100));
        };
        // The reader threads finish with the pipes.
        std::thread::sleep(Duration::from_millis(300));
        let err = self.stderr.lock().unwrap().clone();
        (code, self.events(), err)
    }
}

impl Drop for Station {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A backing file of `size` bytes filled with `byte`, attached.
fn loop_filled(dir: &TempDir, name: &str, size: u64, byte: u8) -> LoopDev {
    let img = dir.join(name);
    make_image(&img, size, &[]);
    std::fs::write(&img, vec![byte; size as usize]).unwrap();
    LoopDev::attach(&img, &[])
}

/// A backing file like [`loop_filled`]'s, attached at `node`'s device once
/// the kernel has cleared it (else at any free one: another test took it).
fn attach_at(dir: &TempDir, name: &str, size: u64, byte: u8, node: &LoopDev) -> LoopDev {
    let img = dir.join(name);
    make_image(&img, size, &[]);
    std::fs::write(&img, vec![byte; size as usize]).unwrap();
    let t0 = Instant::now();
    let backing = format!("/sys/class/block/{}/loop/backing_file", node.name);
    while Path::new(&backing).exists() && t0.elapsed() < DEADLINE {
        std::thread::sleep(Duration::from_millis(100));
    }
    let ok = Command::new("losetup")
        .arg(&node.path)
        .arg(&img)
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        LoopDev {
            path: node.path.clone(),
            name: node.name.clone(),
            backing: img,
        }
    } else {
        eprintln!(
            "{} was taken by another test: {name} attached elsewhere",
            node.name
        );
        LoopDev::attach(&img, &[])
    }
}

/// The digest `testkit::digest` gives a file of `len` bytes of `byte`.
fn digest_of_fill(len: usize, byte: u8) -> u64 {
    std::iter::repeat_n(byte, len).fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn erased(d: &LoopDev) -> bool {
    let len = std::fs::metadata(&d.backing).unwrap().len() as usize;
    digest(&d.backing) == digest_of_fill(len, FILL)
}

fn write_policy(dir: &TempDir, extra: &str) -> std::path::PathBuf {
    policy_with_bays(dir, &dir.0, extra)
}

/// The test policy with its bays the `bay-*.img` files of `bays`.
fn policy_with_bays(dir: &TempDir, bays: &Path, extra: &str) -> std::path::PathBuf {
    let p = dir.join("policy.toml");
    std::fs::write(
        &p,
        format!(
            "bays = [\"{}/bay-*.img\"]\ninclude_loop = true\noperator = \"test operator\"\n\n[erase]\npattern = \"fixed:0x{FILL:02X}\"\nrate_limit = \"4m\"\ncertificate_dir = \"{}\"\n{extra}\n[certificate]\norganisation = \"drivelab tests\"\ncustomer = \"Globex\"\ncustomer_address = \"1 Main Street, Springfield\"\ncustomer_contact = \"ops@globex.example\"\nasset_tag = \"operator\"\nformats = [\"json\", \"pdf\"]\npaper = \"letter\"\n",
            bays.display(),
            dir.join("certs").display()
        ),
    )
    .unwrap();
    p
}

#[test]
fn station_erases_the_drives_in_its_bays_as_they_come_and_go() {
    require_root();
    drivelab_testkit::require_tools(&[
        "/usr/sbin/mkfs.ext4",
        "/usr/sbin/losetup",
        "/usr/bin/pdfinfo",
    ]);
    let dir = TempDir::new("station");
    let a = loop_filled(&dir, "bay-a.img", 4 << 20, 0x11);
    let b = loop_filled(&dir, "bay-b.img", 4 << 20, 0x22);
    let outside = loop_filled(&dir, "outside.img", 4 << 20, 0x33);
    let fs = loop_filled(&dir, "bay-fs.img", 8 << 20, 0);
    mkfs_ext4(fs.dev());
    let (outside_before, fs_before) = (digest(&outside.backing), digest(&fs.backing));
    let policy = write_policy(&dir, "");
    let mut st = Station::start(&dir, &policy);
    st.wait_for("start", |v| v["event"] == "start");

    // Present at start: both bays certified, the outside loop shown only,
    // the ext4 loop held.
    let ca = st.wait_state(&a.name, "certified");
    let cb = st.wait_state(&b.name, "certified");
    for (c, d) in [(&ca, &a), (&cb, &b)] {
        assert_eq!(c["bay"], d.backing.display().to_string());
        let cert = c["certificate"].as_str().expect("a certificate path");
        assert!(Path::new(cert).exists(), "{cert}");
    }
    let out = st.wait_state(&outside.name, "outside");
    assert_eq!(out["bay"], Value::Null);
    let held = st.wait_state(&fs.name, "held");
    assert!(held["detail"].as_str().unwrap().contains("ext4"), "{held}");

    // Attached mid-run: picked up from the kernel's event.
    let late = loop_filled(&dir, "bay-late.img", 4 << 20, 0x44);
    st.wait_state(&late.name, "certified");

    // Detached mid-erase (32 MiB at 4 MiB/s): removed, never certified.
    let pulled = loop_filled(&dir, "bay-pulled.img", 32 << 20, 0x55);
    st.wait_for("the pulled drive's erase under way", |v| {
        v["name"] == pulled.name.as_str()
            && v["state"] == "erasing"
            && v["progress_pct"].as_f64().is_some_and(|p| p >= 10.0)
    });
    sh("losetup", &["-d", pulled.dev()]);
    let gone = st.wait_state(&pulled.name, "removed");
    let detail = gone["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("removed at ") && detail.ends_with("%: not erased"),
        "{detail}"
    );
    assert!(
        !erased(&pulled),
        "a pulled drive cannot have been erased whole"
    );

    // Held by the operator mid-erase, then resumed from its journal; and
    // one aborted mid-erase (not erased). 32 MiB each at 4 MiB/s.
    // The held drive goes into the pulled drive's node when it is free, as
    // the next drive plugged into a slot would: the pulled drive's journal
    // (same node, same size, no serial) must not be resumed on it.
    let held = attach_at(&dir, "bay-held.img", 32 << 20, 0x66, &pulled);
    let aborted = loop_filled(&dir, "bay-aborted.img", 32 << 20, 0x77);
    for d in [&held, &aborted] {
        st.wait_for("an erase under way", |v| {
            v["name"] == d.name.as_str()
                && v["state"] == "erasing"
                && v["progress_pct"].as_f64().is_some_and(|p| p >= 10.0)
        });
    }
    st.send(&format!("hold {}", held.name));
    st.send(&format!("abort {}", aborted.dev()));
    let h = st.wait_state(&held.name, "held");
    let detail = h["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("held at ") && detail.contains("journal kept"),
        "{detail}"
    );
    let journal = h["journal"].as_str().expect("the journal kept");
    assert!(Path::new(journal).exists(), "{journal}");
    let ab = st.wait_state(&aborted.name, "aborted");
    assert!(
        ab["detail"].as_str().unwrap().contains("not erased"),
        "{ab}"
    );
    st.send(&format!("resume {}", held.name));
    st.wait_state(&held.name, "certified");
    assert!(erased(&held) && !erased(&aborted));
    assert!(
        !Path::new(journal).exists(),
        "the journal outlived its erase"
    );

    // Held until confirmed: untouched while held, erased once confirmed.
    assert_eq!(digest(&fs.backing), fs_before, "a held drive was written");
    st.send(&format!("tag {} ASSET-7", fs.name));
    st.send(&format!("confirm {}", fs.name));
    let cf = st.wait_state(&fs.name, "certified");
    check_signed_parties(&dir, &cf, Some("ASSET-7"));
    check_signed_parties(&dir, &ca, None);

    let (code, events, err) = st.quit();
    assert_eq!(code, 0, "stderr: {err}");
    assert!(err.contains("drivelab station: the policy's bays"), "{err}");
    assert!(events.iter().any(|v| v["event"] == "stop"));

    for d in [&a, &b, &late, &fs] {
        assert!(erased(d), "{} not erased to 0x{FILL:02X}", d.name);
    }
    assert_eq!(
        digest(&outside.backing),
        outside_before,
        "a loop outside the bays was written"
    );
    let pulled_bay = pulled.backing.display().to_string();
    check_events(&events, &a.name, &outside.name, &pulled_bay);
    check_store(&dir, &events, &fs.name, &pulled_bay);
}

/// The certificate of a station erase holds the policy's certificate
/// fields, the operator as technician and the drive's asset tag, signed:
/// it verifies, and with its organisation changed it does not.
fn check_signed_parties(dir: &TempDir, certified: &Value, tag: Option<&str>) {
    let cert = Path::new(certified["certificate"].as_str().expect("a certificate"));
    let text = std::fs::read_to_string(cert).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let p = &doc["certificate"]["parties"];
    assert_eq!(p["organisation"], "drivelab tests", "{p}");
    assert_eq!(p["customer"]["name"], "Globex");
    assert_eq!(p["customer"]["address"], "1 Main Street, Springfield");
    assert_eq!(p["customer"]["contact"], "ops@globex.example");
    assert_eq!(p["technician"], "test operator");
    assert_eq!(p["asset_tag"].as_str(), tag, "{p}");
    let verify = |file: &Path| {
        Command::new(BIN)
            .args(["erase", "verify-cert"])
            .arg(file)
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .output()
            .expect("run drivelab")
            .status
            .code()
    };
    assert_eq!(verify(cert), Some(0), "{}", cert.display());
    // The policy's formats: json and pdf on Letter, no HTML page.
    let pdf = Path::new(certified["pdf"].as_str().expect("a PDF"));
    assert_eq!(pdf, cert.with_extension("pdf"));
    assert_eq!(verify(pdf), Some(0), "{}", pdf.display());
    assert!(
        !cert.with_extension("html").exists(),
        "html was not asked for"
    );
    let info = Command::new("pdfinfo").arg(pdf).output().expect("pdfinfo");
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(info.contains("612 x 792 pts (letter)"), "{info}");
    let changed = dir.join("changed-organisation.json");
    let forged = text.replacen("\"drivelab tests\"", "\"drivelab forged\"", 1);
    assert_ne!(forged, text);
    std::fs::write(&changed, forged).unwrap();
    assert_eq!(verify(&changed), Some(1), "a changed organisation verified");
}

/// Every drive event carries its identity, state and times; a bay's drive
/// goes detected -> identified -> triage -> erasing -> certified; the
/// outside drive and the pulled one are never certified.
fn check_events(events: &[Value], bay: &str, outside: &str, pulled: &str) {
    for v in events.iter().filter(|v| v["event"] == "state") {
        for k in [
            "name",
            "device",
            "state",
            "time",
            "t_s",
            "size",
            "progress_pct",
        ] {
            assert!(!v[k].is_null(), "{k} missing in {v}");
        }
    }
    let states: Vec<&str> = events
        .iter()
        .filter(|v| v["event"] == "state" && v["name"] == bay)
        .filter_map(|v| v["state"].as_str())
        .collect();
    let order = ["detected", "identified", "triage", "erasing", "certified"];
    let pos: Vec<usize> = order
        .iter()
        .map(|s| {
            states
                .iter()
                .position(|x| x == s)
                .unwrap_or_else(|| panic!("{s} missing: {states:?}"))
        })
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "{states:?}");
    // Kernel names are reused (the next loop attached may get the pulled
    // one's): the pulled drive is known by its bay.
    assert!(
        !events
            .iter()
            .any(|v| (v["name"] == outside || v["bay"] == pulled) && v["state"] == "certified"),
        "the outside or the pulled drive certified"
    );
    assert!(!events
        .iter()
        .any(|v| v["name"] == outside && matches!(v["state"].as_str(), Some("erasing" | "held"))));
}

/// Each erase is a record of the store with the host, the bay and the
/// operator: the certified ones and the pulled one (stopped, not erased).
fn check_store(dir: &TempDir, events: &[Value], tagged: &str, pulled: &str) {
    let db = rusqlite::Connection::open(dir.join("results.db")).expect("the store");
    let mut q = db
        .prepare("SELECT r.id, r.kind, r.host, t.spec_json FROM records r JOIN record_texts t ON t.record_id = r.id")
        .unwrap();
    let rows: Vec<(i64, String, String, String)> = q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let stored: Vec<&Value> = events.iter().filter(|v| v["event"] == "stored").collect();
    assert_eq!(rows.len(), stored.len(), "records {rows:?}");
    // Five certified, one removed, one held mid-erase (a record) then
    // certified, one aborted.
    assert_eq!(stored.len(), 8, "{stored:?}");
    for (id, kind, host, spec) in &rows {
        assert_eq!(kind, "erase");
        assert!(!host.is_empty());
        let spec: Value = serde_json::from_str(spec).unwrap();
        let s = &spec["options"]["station"];
        assert_eq!(s["operator"], "test operator", "record {id}: {spec}");
        assert_eq!(s["organisation"], "drivelab tests");
        assert!(
            s["bay"].as_str().is_some_and(|b| b.ends_with(".img")),
            "{spec}"
        );
        let ev = stored
            .iter()
            .find(|v| v["record"].as_str() == Some(id.to_string().as_str()))
            .unwrap_or_else(|| panic!("no stored event for record {id}"));
        assert_eq!(s["state"], ev["state"]);
        if ev["name"] == tagged {
            assert_eq!(s["asset_tag"], "ASSET-7");
        }
        if ev["bay"] == pulled {
            assert_eq!(s["state"], "removed");
        }
    }
}

/// A drive pulled mid-erase and plugged straight back, before its worker
/// has stopped: the same backing file attached again at once lands on
/// another loop device while the old one (detached, its autoclear set)
/// is still held by the old worker's claim. The new arrival was taken at
/// once and refused (its bytes shared with a device held exclusively),
/// so the drive came back and was never erased. It now waits until the
/// old worker has ended, then is erased whole and certified. The pulled
/// erase is stored with the size the station saw, though its node is
/// cleared by then.
#[test]
fn a_drive_reseated_before_its_worker_ended_is_erased_once_it_has() {
    require_root();
    drivelab_testkit::require_tools(&["/usr/sbin/losetup"]);
    let dir = TempDir::new("station-reseat");
    let size: u64 = 32 << 20;
    let first = loop_filled(&dir, "bay-reseat.img", size, 0x5E);
    let policy = write_policy(&dir, "");
    let st = Station::start(&dir, &policy);
    st.wait_for("the erase under way", |v| {
        v["name"] == first.name.as_str()
            && v["state"] == "erasing"
            && v["progress_pct"].as_f64().is_some_and(|p| p >= 10.0)
    });
    sh("losetup", &["-d", first.dev()]);
    let again = LoopDev::attach(&first.backing, &[]);
    // The first node is cleared once the old worker lets it go, and may
    // then be another test's: never detached by name again here.
    let (first_name, first_dev) = (first.name.clone(), first.path.clone());
    std::mem::forget(first);
    assert_ne!(again.name, first_name, "a held loop device was reused");

    let gone = st.wait_state(&first_name, "removed");
    assert!(
        gone["detail"]
            .as_str()
            .is_some_and(|d| d.ends_with("not erased")),
        "{gone}"
    );
    let queued = st.wait_for("the reseated drive queued", |v| {
        v["event"] == "queued" && v["name"] == again.name.as_str()
    });
    assert_eq!(queued["behind"], first_name.as_str(), "{queued}");
    let cert = st.wait_state(&again.name, "certified");
    assert_eq!(cert["bay"], again.backing.display().to_string());
    assert!(erased(&again), "the reseated drive is not erased whole");
    let stored = st.wait_for("the pulled erase stored", |v| {
        v["event"] == "stored" && v["name"] == first_name.as_str()
    });
    let (code, events, err) = st.quit();
    assert_eq!(code, 0, "stderr: {err}");
    for v in events.iter().filter(|v| v["name"] == again.name.as_str()) {
        assert!(
            !matches!(v["state"].as_str(), Some("failed" | "held")),
            "the reseated drive was refused: {v}"
        );
    }
    assert_eq!(
        events
            .iter()
            .filter(|v| v["event"] == "state"
                && v["name"] == again.name.as_str()
                && v["state"] == "detected")
            .count(),
        1,
        "one worker for the reseated drive"
    );

    // The pulled drive's record: its node and the size the station saw.
    let id = stored["record"].as_str().expect("a record id");
    let out = Command::new(BIN)
        .args(["show", id])
        .env("DRIVELAB_STORE", dir.join("results.db"))
        .output()
        .expect("drivelab show");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("drive {}:", first_dev.display())))
        .unwrap_or_else(|| panic!("no drive line: {text}"));
    assert!(line.contains(&format!(", {size} bytes,")), "{line}");
}

/// A write the drive fails (its backing file on a full tmpfs: the loop
/// device answers a write to the file's hole with an I/O error) leaves a
/// range of the drive unwritten, the rest written. The erase skips the
/// range after its retries and lists it as an exception in its
/// certificate; the station showed the drive certified. It is failed,
/// saying how many ranges could not be written, and every byte that could
/// be written was.
#[test]
fn a_write_error_mid_erase_fails_the_drive() {
    require_root();
    drivelab_testkit::require_tools(&["/usr/sbin/losetup"]);
    let dir = TempDir::new("station-write-error");
    let (size, hole, hole_len) = (8usize << 20, 3usize << 20, 64usize << 10);
    let tmp = drivelab_testkit::Tmpfs::mount_in(&dir, "full", 9 << 20);
    let img = tmp.join("bay-ioerr.img");
    // Every page written (allocated) but a 64 KiB hole at 3 MiB.
    make_image(&img, size as u64, &[]);
    {
        let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
        let old = vec![0x11u8; size];
        std::os::unix::fs::FileExt::write_all_at(&f, &old[..hole], 0).unwrap();
        let rest = hole + hole_len;
        std::os::unix::fs::FileExt::write_all_at(&f, &old[rest..], rest as u64).unwrap();
        f.sync_all().unwrap();
    }
    tmp.fill();
    let bad = LoopDev::attach(&img, &[]);
    let policy = policy_with_bays(&dir, &tmp.path, "");
    let st = Station::start(&dir, &policy);
    let failed = st.wait_for("the drive failed or certified", |v| {
        v["event"] == "state"
            && v["name"] == bad.name.as_str()
            && matches!(v["state"].as_str(), Some("failed" | "certified"))
    });
    assert_eq!(failed["state"], "failed", "{failed}");
    let detail = failed["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("could not be written"), "{detail}");
    let stored = st.wait_for("its result stored", |v| {
        v["event"] == "stored" && v["name"] == bad.name.as_str()
    });
    assert_eq!(stored["state"], "failed", "{stored}");
    let (code, events, err) = st.quit();
    assert_eq!(code, 0, "stderr: {err}");
    assert!(
        !events
            .iter()
            .any(|v| v["name"] == bad.name.as_str() && v["state"] == "certified"),
        "a drive with an unwritten range was certified"
    );
    drop(bad);
    let bytes = std::fs::read(&img).unwrap();
    let (before, rest) = bytes.split_at(hole);
    let (gap, after) = rest.split_at(hole_len);
    assert!(
        before.iter().chain(after).all(|&b| b == FILL),
        "the writable part was not erased"
    );
    assert!(
        gap.iter().all(|&b| b == 0),
        "the hole was written on a full tmpfs"
    );
}

#[test]
fn bad_policies_exit_2_with_one_line_naming_the_key() {
    require_root();
    let dir = TempDir::new("station-policy");
    let certs = dir.join("certs");
    let table: [(&str, &str); 12] = [
        ("operator = \"x\"\n", "bays: the policy names no bays"),
        ("bays = []\n", "bays: the policy names no bays"),
        (
            "bays = [\"pci-*\"]\nbay = 1\n",
            "line 2: bay: unknown field `bay`",
        ),
        (
            "bays = [\"pci-*\"]\n[erase]\nmethd = \"auto\"\n",
            "erase.methd: unknown field `methd`",
        ),
        (
            "bays = [\"pci-*\"]\n[erase]\nmethod = \"fast\"\n",
            "erase.method: unknown variant `fast`",
        ),
        (
            "bays = [\"/dev/loop7\"]\n",
            "bays[0]: '/dev/loop7' is not a /dev/disk/by-path name",
        ),
        (
            "bays = [\"pci-*\"]\n[filter]\nmin_size = \"2t\"\nmax_size = \"1t\"\n",
            "filter.min_size: is larger",
        ),
        (
            "bays = [\"pci-*\"]\n[filter]\ntransport = [\"floppy\"]\n",
            "filter.transport: 'floppy' is not a transport",
        ),
        (
            "bays = [\"pci-*\"]\n[certificate]\nformats = [\"pdf\"]\n",
            "certificate.formats: json is the signed record",
        ),
        (
            "bays = [\"pci-*\"]\n[certificate]\nformats = [\"json\", \"docx\"]\n",
            "certificate.formats: unknown variant `docx`",
        ),
        (
            "bays = [\"pci-*\"]\n[certificate]\npaper = \"a3\"\n",
            "certificate.paper: unknown variant `a3`",
        ),
        // Every disk of this machine, the one holding / among them.
        ("bays = [\"*\"]\n", "the running system"),
    ];
    for (text, needle) in table {
        let p = dir.join("bad.toml");
        std::fs::write(&p, text).unwrap();
        let out = Command::new(BIN)
            .args(["station", "--events", "json", "--policy"])
            .arg(&p)
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("DRIVELAB_STORE", dir.join("results.db"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{text}: one line: {err}");
        assert!(err.contains(needle), "{text}: {needle:?} not in {err}");
        assert!(out.stdout.is_empty(), "{text}: wrote events");
        assert!(
            !certs.exists() && !dir.join("results.db").exists(),
            "{text}: wrote files"
        );
    }
}

/// A tmux server of this test's own (its own socket), killed on drop.
struct Tmux(String);

impl Tmux {
    fn new() -> Tmux {
        Tmux(format!("drivelab-station-test-{}", std::process::id()))
    }

    fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.0])
            .args(args)
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "station"])
    }

    /// Wait until the screen shows what `pred` accepts.
    fn wait(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            assert!(
                t0.elapsed() < DEADLINE,
                "the screen never showed {what}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .output();
    }
}

/// The screen's row of the drive whose bay is `bay` (its backing file).
fn row_of<'a>(screen: &'a str, bay: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(bay))
}

#[test]
fn the_screen_has_a_row_per_drive_at_80x24_and_takes_keys() {
    drivelab_testkit::require_tools(&["/usr/bin/tmux", "/usr/sbin/mkfs.ext4"]);
    let dir = TempDir::new("station-tmux");
    let a = loop_filled(&dir, "bay-a.img", 4 << 20, 0x11);
    let fs = loop_filled(&dir, "bay-f.img", 8 << 20, 0);
    mkfs_ext4(fs.dev());
    let fs_before = digest(&fs.backing);
    let policy = write_policy(&dir, "");
    let tmux = Tmux::new();
    let command = format!(
        "env XDG_CONFIG_HOME={} DRIVELAB_STORE={} {BIN} station --policy {}; echo station exited $?; sleep 600",
        dir.join("config").display(),
        dir.join("results.db").display(),
        policy.display()
    );
    tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "station",
        "-x",
        "80",
        "-y",
        "24",
        &command,
    ]);
    let s = tmux.wait("the certified bay and the held one", |s| {
        row_of(s, "bay-a.img").is_some_and(|r| r.contains("certified"))
            && row_of(s, "bay-f.img").is_some_and(|r| r.contains("held"))
    });
    let header = s
        .lines()
        .find(|l| l.starts_with("BAY"))
        .expect("the header row");
    for col in [
        "MODEL", "SERIAL", "SIZE", "GRADE", "STATE", "PROGRESS", "SPEED", "ETA",
    ] {
        assert!(header.contains(col), "{col} not in {header}");
    }
    assert!(row_of(&s, "bay-a.img").unwrap().contains("#####"), "{s}");
    assert!(s.contains("q quit"), "{s}");
    assert_eq!(digest(&fs.backing), fs_before, "a held drive was written");

    // Select the held drive (the line under the table names it), confirm.
    let t0 = Instant::now();
    let held = format!("{}: held", fs.dev());
    while !tmux.screen().contains(&held) {
        assert!(
            t0.elapsed() < DEADLINE,
            "cannot select {}:\n{}",
            fs.dev(),
            tmux.screen()
        );
        tmux.cmd(&["send-keys", "-t", "station", "Down"]);
        std::thread::sleep(Duration::from_millis(300));
    }
    tmux.cmd(&["send-keys", "-t", "station", "c"]);
    tmux.wait("the confirmed drive certified", |s| {
        row_of(s, "bay-f.img").is_some_and(|r| r.contains("certified"))
    });
    // Its log: every state it went through, in order, newest last; l
    // again returns to the table.
    tmux.cmd(&["send-keys", "-t", "station", "l"]);
    let log = tmux.wait("the drive's log", |s| {
        s.contains(&format!("log of {}", fs.dev())) && s.contains(" certified")
    });
    let order = [
        "detected",
        "identified",
        "triage",
        "held",
        "erasing",
        "certified",
    ];
    let at: Vec<usize> = order
        .iter()
        .map(|w| {
            log.lines()
                .position(|l| l.get(8..).is_some_and(|t| t.starts_with(&format!(" {w}"))))
                .unwrap_or_else(|| panic!("{w} not in the log:\n{log}"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{log}");
    assert!(
        row_of(&log, "bay-a.img").is_none(),
        "the table under the log:\n{log}"
    );
    tmux.cmd(&["send-keys", "-t", "station", "l"]);
    tmux.wait("the table again", |s| row_of(s, "bay-a.img").is_some());
    tmux.cmd(&["send-keys", "-t", "station", "q"]);
    tmux.wait("the station's exit", |s| s.contains("station exited 0"));
    assert!(erased(&a) && erased(&fs));
}

/// The scrape's sample `name{labels}` (labels as written), or None.
fn scraped(text: &str, name: &str, labels: &str) -> Option<f64> {
    metrics_common::sample(text, &format!("{name}{{{labels}}}"))
}

/// `--metrics-listen`: a scrape while a drive is erased shows it erasing
/// in its bay with the bytes planned its events give; once it is
/// certified, the scrape's figures are its last event's (state, bytes,
/// share done); the drive outside the bays is counted outside, bay empty.
#[test]
fn station_metrics_show_each_drive_in_its_bay_as_its_events_do() {
    require_root();
    let dir = TempDir::new("station-metrics");
    let a = loop_filled(&dir, "bay-m.img", 24 << 20, 0x12);
    let outside = loop_filled(&dir, "outside-m.img", 4 << 20, 0x34);
    let policy = write_policy(&dir, "");
    let port = metrics_common::free_port();
    let st = Station::start_with(&dir, &policy, &["--metrics-listen", &port.to_string()]);
    st.wait_for("start", |v| v["event"] == "start");
    let bay = a.backing.display().to_string();
    let labels = |state: Option<&str>| match state {
        Some(s) => format!(
            "device=\"{}\",serial=\"\",bay=\"{bay}\",state=\"{s}\"",
            a.name
        ),
        None => format!("device=\"{}\",serial=\"\",bay=\"{bay}\"", a.name),
    };
    let scrape = || {
        metrics_common::get(port, "/metrics", None)
            .map(|(_, _, body)| body)
            .unwrap_or_default()
    };
    let erasing = st.wait_for("the erase under way", |v| {
        v["name"] == a.name.as_str()
            && v["state"] == "erasing"
            && v["progress_pct"].as_f64().is_some_and(|p| p >= 10.0)
    });
    // Poll: the figures are published a few times a second, so a scrape
    // may trail the events a little; it catches up with the event seen.
    let seen_done = erasing["bytes_done"].as_f64().unwrap();
    let t0 = Instant::now();
    let during = loop {
        let text = scrape();
        let get = |name: &str| scraped(&text, name, &labels(None));
        if scraped(
            &text,
            "drivelab_station_drive_state",
            &labels(Some("erasing")),
        ) == Some(1.0)
            && get("drivelab_station_drive_done_bytes").is_some_and(|d| d >= seen_done)
            && get("drivelab_station_drive_throughput_bytes_per_second").is_some_and(|t| t > 0.0)
        {
            break text;
        }
        assert!(
            t0.elapsed() < DEADLINE,
            "no scrape showed the erase:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let planned = scraped(
        &during,
        "drivelab_station_drive_planned_bytes",
        &labels(None),
    );
    assert_eq!(planned, erasing["bytes_total"].as_f64(), "{during}");
    let done = scraped(&during, "drivelab_station_drive_done_bytes", &labels(None)).unwrap();
    assert!(done <= planned.unwrap(), "{during}");
    assert!(
        scraped(
            &during,
            "drivelab_station_drive_throughput_bytes_per_second",
            &labels(None)
        )
        .is_some_and(|t| t > 0.0),
        "{during}"
    );
    assert_eq!(
        scraped(
            &during,
            "drivelab_station_drive_state",
            &labels(Some("certified"))
        ),
        Some(0.0)
    );
    // A loop device has no temperature: absent, not 0.
    assert!(
        !during.contains("drivelab_station_drive_temperature_celsius{"),
        "{during}"
    );

    let certified = st.wait_state(&a.name, "certified");
    let t0 = Instant::now();
    let after = loop {
        let text = scrape();
        if scraped(
            &text,
            "drivelab_station_drive_state",
            &labels(Some("certified")),
        ) == Some(1.0)
        {
            break text;
        }
        assert!(
            t0.elapsed() < DEADLINE,
            "no scrape showed it certified:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    for (name, field) in [
        ("drivelab_station_drive_done_bytes", "bytes_done"),
        ("drivelab_station_drive_planned_bytes", "bytes_total"),
    ] {
        assert_eq!(
            scraped(&after, name, &labels(None)),
            certified[field].as_f64(),
            "{name}: {certified}"
        );
    }
    let ratio = scraped(
        &after,
        "drivelab_station_drive_progress_ratio",
        &labels(None),
    )
    .unwrap();
    let pct = certified["progress_pct"].as_f64().unwrap();
    assert!((ratio * 100.0 - pct).abs() < 1e-9, "{ratio} vs {pct}");
    assert_eq!(
        scraped(
            &after,
            "drivelab_station_drive_state",
            &format!(
                "device=\"{}\",serial=\"\",bay=\"\",state=\"outside\"",
                outside.name
            )
        ),
        Some(1.0),
        "{after}"
    );
    // Counted by state, as the events say: other loop devices of other
    // tests may be seen (outside), never in this policy's bays.
    assert_eq!(
        scraped(&after, "drivelab_station_drives", "state=\"certified\""),
        Some(1.0),
        "{after}"
    );
    assert!(after.contains("drivelab_build_info{"), "{after}");
    let (code, _, err) = st.quit();
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!("metrics at http://127.0.0.1:{port}/metrics")),
        "{err}"
    );
}

#[test]
fn prometheus_sees_the_station_erase_and_certify_two_drives() {
    require_root();
    let dir = TempDir::new("station-prometheus");
    let policy = write_policy(&dir, "");
    let port = metrics_common::free_port();
    let prom = metrics_common::Prometheus::start("station", port);
    let st = Station::start_with(&dir, &policy, &["--metrics-listen", &port.to_string()]);
    // The drives arrive once Prometheus scrapes the station, so it sees
    // them from the start.
    prom.value("drivelab_build_info", None);
    let a = loop_filled(&dir, "bay-p1.img", 24 << 20, 0x21);
    let b = loop_filled(&dir, "bay-p2.img", 24 << 20, 0x43);
    for d in [&a, &b] {
        st.wait_state(&d.name, "certified");
    }
    for d in [&a, &b] {
        // By device and bay: the station also sees other tests' loop
        // devices (outside its bays), and a kernel name is reused.
        let bay = d.backing.display().to_string();
        let sel = |state: &str| format!("device=\"{}\",bay=\"{bay}\",state=\"{state}\"", d.name);
        // Seen erasing (the policy's 4 MiB/s limit keeps each erase a few
        // seconds long, several scrapes), then certified, as the events say.
        let erasing = format!(
            "max_over_time(drivelab_station_drive_state{{{}}}[10m])",
            sel("erasing")
        );
        assert_eq!(prom.value(&erasing, None), 1.0, "{}", d.name);
        let certified = format!("drivelab_station_drive_state{{{}}} == 1", sel("certified"));
        assert_eq!(prom.value(&certified, None), 1.0, "{}", d.name);
        // The speed Prometheus saw while the drive was erasing stays under
        // the policy's limit (the limit is the erase's: a verification
        // reads at the drive's own speed).
        let speed = format!(
            "max_over_time((drivelab_station_drive_throughput_bytes_per_second{{device=\"{0}\",bay=\"{bay}\"}} and on(device, bay) (drivelab_station_drive_state{{{1}}} == 1))[10m:1s])",
            d.name,
            sel("erasing")
        );
        let s = prom.value(&speed, None);
        assert!(
            s > 0.0 && s <= 1.25 * f64::from(4u32 << 20),
            "{}: {s} B/s",
            d.name
        );
    }
    assert_eq!(
        prom.value("drivelab_station_drives{state=\"certified\"} == 2", None),
        2.0
    );
    let (code, _, err) = st.quit();
    assert_eq!(code, 0, "{err}");
    for d in [&a, &b] {
        assert!(erased(d), "{} not erased", d.name);
    }
}
