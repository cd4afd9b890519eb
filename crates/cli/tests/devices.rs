//! `drivelab devices` run as the real binary against a loop device this test
//! attaches (and detaches on drop).

use std::process::Command;

use drivelab_testkit::{require_root, LoopDev, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn json_row_for_a_fresh_loop_device() {
    require_root();
    let dir = TempDir::new("json");
    let img = dir.0.join("disk.img");
    let size: u64 = 48 << 20;
    let f = std::fs::File::create(&img).unwrap();
    f.set_len(size).unwrap();
    drop(f);
    let lo = LoopDev::attach(&img, &["-b", "4096"]);
    let dev = lo.dev();

    let (code, out, err) = run(&["devices", dev, "--output-format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = v["devices"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r["name"], lo.name.as_str());
    assert_eq!(r["path"], dev);
    assert_eq!(r["size"], size);
    assert_eq!(r["logical_sector"], 4096);
    assert_eq!(r["kind"], "loop");
    assert_eq!(
        r["loop_backing_file"],
        img.canonicalize().unwrap().to_str().unwrap()
    );
    assert_eq!(r["state"], "free");
    assert_eq!(r["findings"], serde_json::json!([]));

    // The full listing holds it too, and the table names it with its size.
    let (code, out, _) = run(&["devices", "--output-format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == lo.name.as_str() && r["size"] == size));
    let (code, out, _) = run(&["devices", dev]);
    assert_eq!(code, 0);
    let line = out
        .lines()
        .find(|l| l.starts_with(&lo.name))
        .expect("a row for the device");
    assert!(
        line.contains("48 MiB") && line.contains("4096/") && line.ends_with("free"),
        "{line}"
    );
}

#[test]
fn state_names_a_signature() {
    require_root();
    let dir = TempDir::new("sig");
    let img = dir.0.join("disk.img");
    let f = std::fs::File::create(&img).unwrap();
    f.set_len(16 << 20).unwrap();
    // XFS superblock magic at byte 0.
    std::os::unix::fs::FileExt::write_all_at(&f, b"XFSB", 0).unwrap();
    drop(f);
    let lo = LoopDev::attach(&img, &[]);
    let (code, out, err) = run(&["devices", lo.dev(), "--output-format=json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["devices"][0]["state"], "has xfs signature");
    assert_eq!(v["devices"][0]["findings"][0]["reason"], "signature");
    assert_eq!(v["devices"][0]["findings"][0]["offset"], 0);
}

#[test]
fn a_regular_file_is_a_usage_error() {
    let (code, out, _) = run(&["devices", "/proc/self/status", "--output-format", "json"]);
    assert_eq!(code, 2);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["error"].as_str().unwrap().contains("not a block device"));
}

/// A python3 process holding a device `O_RDONLY|O_EXCL`; killed on drop.
struct Holder(std::process::Child);

impl Holder {
    fn hold(dev: &str) -> Holder {
        use std::io::BufRead;
        let script = format!(
            "import os,time\nfd=os.open({dev:?},os.O_RDONLY|os.O_EXCL)\nprint('held',flush=True)\ntime.sleep(60)"
        );
        let mut child = Command::new("python3")
            .args(["-c", &script])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("cannot run python3");
        let out = child.stdout.take().expect("piped stdout");
        let h = Holder(child);
        let mut line = String::new();
        std::io::BufReader::new(out).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "held", "python3 did not take the device");
        h
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn state_of(dev: &str) -> serde_json::Value {
    let (code, out, err) = run(&["devices", dev, "--no-probe", "--output-format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["devices"][0].clone()
}

#[test]
fn a_device_held_open_exclusively_is_in_use_by_its_holder() {
    require_root();
    let dir = TempDir::new("held");
    let img = dir.0.join("disk.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let lo = LoopDev::attach(&img, &[]);
    let holder = Holder::hold(lo.dev());
    let pid = format!("(pid {})", holder.0.id());
    let row = state_of(lo.dev());
    let state = row["state"].as_str().unwrap();
    // Every process with the device open is named (the kernel does not
    // say which one holds it exclusively), so a process that has it open
    // for a moment (a parallel test's losetup scanning loop devices) may
    // stand beside the holder.
    assert!(
        state.starts_with("in use: held exclusively by ")
            && state.contains(&format!("python3 {pid}")),
        "{state}"
    );
    assert_eq!(row["findings"][0]["reason"], "held_exclusively");
    drop(holder);
    assert_eq!(state_of(lo.dev())["state"], "free");
}

#[test]
fn a_loop_over_a_mounted_loops_bytes_is_in_use_by_it() {
    require_root();
    struct Umount(std::path::PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let dir = TempDir::new("alias");
    let img = dir.0.join("alias.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let inner = LoopDev::attach(&img, &["-o", "1048576"]);
    drivelab_testkit::sh("mkfs.ext4", &["-q", "-F", inner.dev()]);
    let mnt = dir.0.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    drivelab_testkit::sh("mount", &[inner.dev(), mnt.to_str().unwrap()]);
    let mounted = Umount(mnt.clone());
    let outer = LoopDev::attach(&img, &[]);
    let row = state_of(outer.dev());
    assert_eq!(
        row["state"],
        format!(
            "in use: shares bytes with {}, mounted at {} ({})",
            inner.name,
            mnt.display(),
            inner.name
        )
    );
    let f = &row["findings"][0];
    assert_eq!(f["reason"], "shares_bytes");
    assert_eq!(f["device"], inner.name.as_str());
    assert_eq!(f["start"], 1048576);
    assert_eq!(f["cause"]["reason"], "mounted");
    drop(mounted);
    assert_eq!(state_of(outer.dev())["state"], "free");
}
