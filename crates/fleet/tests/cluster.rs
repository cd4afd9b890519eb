//! The fleet on a real single-node Kubernetes cluster on loopback, built
//! and started by the test (tests/k8s/build, tests/k8s/cluster): the image
//! made from the static binary by tools/oci-image and imported into the
//! node's containerd, PostgreSQL on 127.0.0.1, the node labelled. The
//! station's DaemonSet erases the loop devices its policy's bays name
//! (certificates on the node, records in PostgreSQL with the node's name)
//! and leaves a drive outside its bays untouched; deleting it mid-erase
//! leaves a journal and no certificate; a Job runs a job file on the
//! node's selected drive and its result is in the store. Everything is
//! torn down at the end, also when an assertion fails.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use drivelab_testkit::{
    digest, diskstats, make_image, read_all, require_root, LoopDev, PgServer, TempDir,
};

const NODE: &str = "127.0.0.1";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Run a program; its stdout, or a panic with its stderr.
fn must(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Poll `f` every 2 s until it gives a value, for at most `secs`.
fn poll<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "{what}: not after {secs} s");
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// The cluster, stopped on drop (processes, mounts).
struct Cluster {
    dir: PathBuf,
    kubeconfig: String,
    bin: String,
}

impl Cluster {
    fn up(dir: &Path, bin: &str) -> Cluster {
        // Made before the cluster starts: a failed start is torn down too.
        let mut c = Cluster {
            dir: dir.to_path_buf(),
            kubeconfig: String::new(),
            bin: bin.to_string(),
        };
        let out = must(
            Command::new(root().join("tests/k8s/cluster"))
                .arg("up")
                .arg(dir)
                .arg(bin),
        );
        c.kubeconfig = out.trim().lines().last().unwrap_or("").to_string();
        c
    }

    fn kubectl(&self, args: &[&str]) -> String {
        must(
            Command::new(format!("{}/kubectl", self.bin))
                .arg("--kubeconfig")
                .arg(&self.kubeconfig)
                .args(args),
        )
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(root().join("tests/k8s/cluster"))
            .arg("down")
            .arg(&self.dir)
            .status();
    }
}

/// The static drivelab, built for musl, and its image tarball.
fn image(dir: &Path) -> (PathBuf, String) {
    must(Command::new(env!("CARGO")).current_dir(root()).args([
        "build",
        "--target",
        "x86_64-unknown-linux-musl",
        "-p",
        "drivelab-cli",
    ]));
    let bin = root().join("target/x86_64-unknown-linux-musl/debug/drivelab");
    let tar = dir.join("drivelab.oci.tar");
    let out = must(
        Command::new(root().join("tools/oci-image"))
            .arg("--binary")
            .arg(&bin)
            .arg("--out")
            .arg(&tar),
    );
    let name = out
        .split_whitespace()
        .next()
        .expect("image name")
        .to_string();
    assert!(out.contains(" sha256:"), "{out}");
    (tar, name)
}

/// `drivelab ARGS` (the test's own build of the cli).
fn drivelab(args: &[&str]) -> (i32, String, String) {
    let bin = root().join("target/debug/drivelab");
    let out = Command::new(&bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{bin:?}: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The run's report from the store, when it has `drives` drives.
fn report(store: &str, run: &str, drives: u64) -> Option<serde_json::Value> {
    let (code, out, _) = drivelab(&["fleet", "report", "--run", run, "--store", store, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).ok()?;
    (code == 0 && v["total"]["drives"].as_u64() == Some(drives)).then_some(v)
}

fn fill(path: &Path, byte: u8) {
    let len = std::fs::metadata(path).unwrap().len() as usize;
    std::fs::write(path, vec![byte; len]).unwrap();
}

#[test]
fn the_fleet_erases_and_runs_on_a_loopback_cluster() {
    require_root();
    let dir = TempDir::new("fleet-cluster");
    let k8s = must(&mut Command::new(root().join("tests/k8s/build")));
    let k8s = k8s.trim().lines().last().unwrap_or("").to_string();
    let (tar, image_name) = image(dir.path());
    let port = free_port();
    let pg = PgServer::start_tcp(port);
    let store = pg.database_tcp("fleet");

    // The drives: two in the station's bays, one outside them.
    let state = dir.join("state");
    let drives = dir.join("drives");
    std::fs::create_dir_all(&drives).unwrap();
    let attach = |name: &str, size: u64| {
        let img = drives.join(name);
        make_image(&img, size, &[]);
        fill(&img, 0x77);
        LoopDev::attach(&img, &[])
    };
    let (a, b, outside) = (
        attach("bay-a.img", 8 << 20),
        attach("bay-b.img", 8 << 20),
        attach("other.img", 8 << 20),
    );
    let (out_digest, out_writes) = (digest(&outside.backing), diskstats(&outside.name).2);

    let cluster = Cluster::up(&dir.join("k8s"), &k8s);
    must(
        Command::new("ctr")
            .arg("-a")
            .arg(dir.join("k8s/containerd.sock"))
            .args(["-n", "k8s.io", "images", "import", "--all-platforms"])
            .arg(&tar),
    );
    cluster.kubectl(&["label", "node", NODE, "drivelab.io/fleet=true"]);

    // A pattern the drives must be streamed (not zeroed by the kernel), so
    // that the policy's rate limit holds the late drive's erase long
    // enough to be interrupted.
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "include_loop = true\nbays = [\"{}/bay-*.img\"]\noperator = \"fleet-test\"\n[erase]\npattern = \"fixed:0xa5\"\nverify = \"full\"\non_content = \"erase\"\nrate_limit = \"2m\"\ncertificate_dir = \"{}/certificates\"\n",
            drives.display(),
            state.display()
        ),
    )
    .unwrap();
    let kc = cluster.kubeconfig.clone();
    let common = |work: &str, run: &str| -> Vec<String> {
        [
            "fleet",
            "apply",
            "--work",
            work,
            "--run",
            run,
            "--image",
            &image_name,
            "--store",
            &store,
            "--state-dir",
            &state.display().to_string(),
            "--kubeconfig",
            &kc,
        ]
        .map(String::from)
        .to_vec()
    };
    let mut args = common("station", "erase-1");
    args.extend(["--policy".into(), policy.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = drivelab(&args);
    assert_eq!(code, 0, "{out}{err}");

    // The station's records: both bay drives, on the node, in PostgreSQL.
    let rep = poll("the station's erases in the store", 900, || {
        report(&store, "erase-1", 2)
    });
    assert_eq!(rep["nodes"][0]["node"], NODE, "{rep}");
    assert_eq!(rep["total"]["failed"], 0, "{rep}");
    for d in [&a, &b] {
        assert!(
            read_all(&d.backing).iter().all(|&x| x == 0xa5),
            "{} not erased",
            d.dev()
        );
    }
    let certs = state.join("certificates");
    let names: Vec<String> = std::fs::read_dir(&certs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for d in [&a, &b] {
        assert!(
            names
                .iter()
                .any(|n| n.contains(&d.name) && n.ends_with(".json")),
            "no certificate of {} in {names:?}",
            d.name
        );
    }
    assert_eq!(
        digest(&outside.backing),
        out_digest,
        "a drive outside the bays changed"
    );
    assert_eq!(
        diskstats(&outside.name).2,
        out_writes,
        "writes to a drive outside the bays"
    );

    // A drive that arrives while the station runs, erased slowly (the
    // policy's rate limit): the DaemonSet deleted mid-erase leaves its
    // journal and no certificate.
    let slow = attach("bay-slow.img", 256 << 20);
    let journal = poll("the slow drive's journal", 600, || {
        std::fs::read_dir(&certs)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                let n = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                n.contains(&slow.name) && n.ends_with(".journal")
            })
    });
    let (code, out, err) = drivelab(&["fleet", "delete", "--run", "erase-1", "--kubeconfig", &kc]);
    assert_eq!(code, 0, "{out}{err}");
    poll("the station's pod gone", 300, || {
        let pods = cluster.kubectl(&[
            "get",
            "pods",
            "-n",
            "drivelab",
            "-l",
            "app.kubernetes.io/component=station",
            "-o",
            "name",
        ]);
        pods.trim().is_empty().then_some(())
    });
    assert!(
        journal.exists(),
        "the journal of the interrupted erase is gone"
    );
    let names: Vec<String> = std::fs::read_dir(&certs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.contains(&slow.name) && n.ends_with(".json")),
        "a certificate of the interrupted erase: {names:?}"
    );
    assert!(
        !read_all(&slow.backing).iter().all(|&x| x == 0xa5),
        "the interrupted erase finished"
    );

    // A Job runs a job file on the node's selected drive.
    let job = dir.join("job.fio");
    std::fs::write(&job, "[seq]\nfilename=${DRIVELAB_DRIVES}\nrw=write\nbs=64k\ndirect=1\nsize=4m\nbuffer_pattern=0x5a\n").unwrap();
    let mut args = common("run", "fio-1");
    args.extend([
        "--job-file".into(),
        job.display().to_string(),
        "--include-loop".into(),
        "--by-path".into(),
        a.backing.display().to_string(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = drivelab(&args);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = drivelab(&[
        "fleet",
        "watch",
        "--run",
        "fio-1",
        "--kubeconfig",
        &kc,
        "--timeout-s",
        "900",
    ]);
    assert_eq!(code, 0, "the Job did not succeed: {out}{err}");
    let rep = poll("the Job's run in the store", 120, || {
        report(&store, "fio-1", 1)
    });
    assert_eq!(rep["entries"][0]["node"], NODE);
    assert_eq!(rep["entries"][0]["kind"], "run");
    assert!(
        read_all(&a.backing)[..4 << 20].iter().all(|&x| x == 0x5a),
        "the job's bytes"
    );
    assert_eq!(
        digest(&outside.backing),
        out_digest,
        "a drive outside the selection changed"
    );
    drop(cluster);
}
