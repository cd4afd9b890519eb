//! `drivelab fleet` without a cluster: what a fleet Job's pod runs on its
//! node (`fleet exec`: the selected drives, then erase or a job file on
//! them, results in PostgreSQL with the node and the run), the merged
//! report of those records (`fleet report`), and the objects `fleet
//! render` prints (the manifests in deploy/k8s are its output). The
//! cluster itself is in crates/fleet/tests.

use std::path::Path;
use std::process::Command;

use drivelab_testkit::{digest, diskstats, read_all, require_root, LoopDev, PgServer, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_drivelab");

/// `drivelab ARGS` as a pod on `node` of the fleet run `run` would run it:
/// the store, node and run in the environment, a signing key of the
/// test's own.
fn as_pod(
    dir: &TempDir,
    store: &str,
    node: &str,
    run: &str,
    args: &[&str],
) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("DRIVELAB_STORE", store)
        .env(drivelab_store::FLEET_NODE_ENV, node)
        .env(drivelab_store::FLEET_RUN_ENV, run)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .output()
        .expect("run drivelab");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `drivelab fleet report --run RUN --json` of `store`, succeeded.
fn report_json(dir: &TempDir, store: &str, run: &str) -> serde_json::Value {
    let args = ["fleet", "report", "--run", run, "--store", store, "--json"];
    let (code, out, err) = as_pod(dir, store, "", "", &args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// Assert that `d`'s bytes and write counter are still `before`.
fn untouched(d: &LoopDev, before: (u64, u64)) {
    assert_eq!(
        digest(&d.backing),
        before.0,
        "an unselected drive's bytes changed"
    );
    assert_eq!(
        diskstats(&d.name).2,
        before.1,
        "writes to an unselected drive"
    );
}

fn fill(path: &Path, byte: u8) {
    let len = std::fs::metadata(path).unwrap().len() as usize;
    std::fs::write(path, vec![byte; len]).unwrap();
}

fn erase_on(
    dir: &TempDir,
    store: &str,
    node: &str,
    img: &Path,
    certs: &str,
) -> (i32, String, String) {
    let pattern = img.display().to_string();
    as_pod(
        dir,
        store,
        node,
        "burnin-1",
        &[
            "fleet",
            "exec",
            "--include-loop",
            "--by-path",
            &pattern,
            "--",
            "erase",
            "--yes",
            "{confirm}",
            "--certificate-dir",
            certs,
            "--output-format",
            "json",
            "{}",
        ],
    )
}

/// Two nodes' erases of the run burnin-1 (one drive each, selected by
/// backing file as a drive is by its by-path name), a third drive never
/// selected: the selected drives are zeroed, the other's bytes and write
/// counter are unchanged, and the run's report has a row per node with
/// its drive, and the drives ranked by rate.
#[test]
fn fleet_exec_erases_only_the_selected_drives_and_the_report_merges_the_nodes() {
    require_root();
    let pg = PgServer::start();
    let store = pg.database("fleet");
    let dir = TempDir::new("fleet-exec");
    let certs = dir.join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    let certs = certs.display().to_string();
    let (a, b, c) = (
        LoopDev::new_in(&dir, 8 << 20),
        LoopDev::new_in(&dir, 8 << 20),
        LoopDev::new_in(&dir, 8 << 20),
    );
    for d in [&a, &b, &c] {
        fill(&d.backing, 0x77);
    }
    let (c_digest, c_writes) = (digest(&c.backing), diskstats(&c.name).2);

    for (node, d) in [("node-a", &a), ("node-b", &b)] {
        let (code, out, err) = erase_on(&dir, &store, node, &d.backing, &certs);
        assert_eq!(code, 0, "{out}{err}");
        assert!(
            err.contains(&format!("{} (by-path {})", d.dev(), d.backing.display())),
            "{err}"
        );
        assert!(
            read_all(&d.backing).iter().all(|&x| x == 0),
            "{} not erased",
            d.dev()
        );
    }
    untouched(&c, (c_digest, c_writes));

    // A selection that names no drive here does nothing, successfully: an
    // erase of serials that sit on other nodes.
    let (code, _, err) = as_pod(
        &dir,
        &store,
        "node-c",
        "burnin-1",
        &[
            "fleet",
            "exec",
            "--serial",
            "NO-SUCH-SERIAL",
            "--",
            "erase",
            "--yes",
            "{confirm}",
            "{}",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("no selected drive on this node"), "{err}");
    assert_eq!(digest(&c.backing), c_digest);

    let rep = report_json(&dir, &store, "burnin-1");
    let rows: Vec<(String, u64, u64, u64)> = rep["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["node"].as_str().unwrap().to_string(),
                n["records"].as_u64().unwrap(),
                n["drives"].as_u64().unwrap(),
                n["failed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [("node-a".into(), 1, 1, 0), ("node-b".into(), 1, 1, 0)]
    );
    assert_eq!(rep["total"]["drives"], 2);
    for list in ["slowest", "fastest"] {
        let l = rep[list].as_array().unwrap();
        assert_eq!(l.len(), 2, "{list}: {l:?}");
        assert!(
            l.iter().all(|e| e["mb_per_s"].as_f64().unwrap() > 0.0),
            "{l:?}"
        );
    }
    let (code, _, err) = as_pod(
        &dir,
        &store,
        "",
        "",
        &["fleet", "report", "--run", "burnin-2", "--store", &store],
    );
    assert_eq!(code, 2, "a run with no record: {err}");
    // `history` across the fleet: each record with its node and run.
    let history = |args: &[&str]| {
        let (code, out, err) = as_pod(&dir, &store, "", "", args);
        assert_eq!(code, 0, "{err}");
        out
    };
    let listed: serde_json::Value = serde_json::from_str(&history(&[
        "history",
        "--fleet-run",
        "burnin-1",
        "--output-format",
        "json",
    ]))
    .unwrap();
    let mut nodes: Vec<(String, String)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["node"].as_str().unwrap().to_string(),
                r["fleet_run"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    nodes.sort();
    assert_eq!(
        nodes,
        [
            ("node-a".to_string(), "burnin-1".to_string()),
            ("node-b".to_string(), "burnin-1".to_string())
        ]
    );
    let text = history(&["history", "--node", "node-b"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("NODE"), "{text}");
    assert_eq!(lines.len(), 2, "node-b's one record: {text}");
    assert!(
        lines[1].contains("node-b") && lines[1].contains("erase"),
        "{text}"
    );
    assert!(history(&["history", "--node", "node-c"]).starts_with("no records"));
}

/// A fleet Job's `run`: the job file names the node's selected drives as
/// ${DRIVELAB_DRIVES}; only they are written, and the result is stored
/// with the node and the run.
#[test]
fn fleet_exec_runs_a_job_file_on_the_selected_drives() {
    require_root();
    let pg = PgServer::start();
    let store = pg.database("fleetrun");
    let dir = TempDir::new("fleet-run");
    let (a, b) = (
        LoopDev::new_in(&dir, 8 << 20),
        LoopDev::new_in(&dir, 8 << 20),
    );
    fill(&a.backing, 0x77);
    fill(&b.backing, 0x77);
    let (b_digest, b_writes) = (digest(&b.backing), diskstats(&b.name).2);
    let job = dir.join("job.fio");
    std::fs::write(
        &job,
        "[seq]\nfilename=${DRIVELAB_DRIVES}\nrw=write\nbs=64k\ndirect=1\nsize=4m\nbuffer_pattern=0x5a\n",
    )
    .unwrap();
    let pattern = a.backing.display().to_string();
    let (code, out, err) = as_pod(
        &dir,
        &store,
        "node-a",
        "fio-1",
        &[
            "fleet",
            "exec",
            "--include-loop",
            "--by-path",
            &pattern,
            "--",
            "run",
            job.to_str().unwrap(),
            "--output-format",
            "json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let data = read_all(&a.backing);
    assert!(
        data[..4 << 20].iter().all(|&x| x == 0x5a),
        "the job's bytes on the selected drive"
    );
    assert!(
        data[4 << 20..].iter().all(|&x| x == 0x77),
        "past the job's size"
    );
    untouched(&b, (b_digest, b_writes));
    let rep = report_json(&dir, &store, "fio-1");
    assert_eq!(rep["nodes"][0]["node"], "node-a");
    assert_eq!(rep["entries"][0]["kind"], "run");
    assert!(
        rep["entries"][0]["mb_per_s"].as_f64().unwrap() > 0.0,
        "{rep}"
    );
}

/// A health Job on a node: the command reads exactly the selected drive
/// (`{}` becomes its path) and its exit status is the Job's (a loop device
/// answers no health command: 1, as for a drive that fails it).
#[test]
fn fleet_exec_hands_the_selected_drive_to_health_and_its_exit_status_back() {
    require_root();
    let dir = TempDir::new("fleet-health");
    let (a, b) = (
        LoopDev::new_in(&dir, 8 << 20),
        LoopDev::new_in(&dir, 8 << 20),
    );
    let before = (digest(&b.backing), diskstats(&b.name).2);
    let pattern = a.backing.display().to_string();
    let args = [
        "fleet",
        "exec",
        "--include-loop",
        "--by-path",
        &pattern,
        "--",
        "health",
        "--output-format",
        "json",
        "{}",
    ];
    let (code, out, err) = as_pod(&dir, "", "node-a", "hc-1", &args);
    assert_eq!(code, 1, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let devices: Vec<&str> = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device"].as_str().unwrap())
        .collect();
    assert_eq!(devices, [a.dev()]);
    untouched(&b, before);
}

/// Bad input to render: one line, exit status 2, nothing printed.
#[test]
fn fleet_render_refuses_bad_input_in_one_line() {
    let dir = TempDir::new("fleet-render-bad");
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, "bays = [\"pci-*\"]\n").unwrap();
    let p = policy.to_str().unwrap();
    let base = [
        "fleet",
        "render",
        "--run",
        "r1",
        "--image",
        "drivelab.local/drivelab:t",
        "--store",
        "postgresql://lab@db/results",
    ];
    let cases: [(&[&str], &str); 6] = [
        (
            &["--work", "erase", "--by-path", "/dev/sdb", "--node", "n"],
            "kernel names",
        ),
        (&["--work", "erase", "--node", "n"], "no drive selected"),
        (&["--work", "health", "--serial", "S1"], "--node"),
        (&["--work", "station", "--policy", p], "certificate_dir"),
        (
            &[
                "--work",
                "run",
                "--job-file",
                p,
                "--serial",
                "S",
                "--node",
                "n",
            ],
            "DRIVELAB_DRIVES",
        ),
        (
            &[
                "--work",
                "station",
                "--policy",
                p,
                "--node-label",
                "no label",
            ],
            "--node-label",
        ),
    ];
    for (extra, want) in cases {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        let out = Command::new(BIN).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(want) && err.trim().lines().count() == 1,
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// deploy/k8s/base is exactly what `drivelab fleet render` prints for its
/// station (so the manifests and the code cannot drift apart); the
/// command that regenerates it is in deploy/k8s/base/kustomization.yaml.
#[test]
fn the_manifests_in_deploy_are_the_rendered_station() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let base = root.join("deploy/k8s/base");
    let out = Command::new(BIN)
        .args([
            "fleet",
            "render",
            "--work",
            "station",
            "--run",
            "lab",
            "--image",
            "drivelab.local/drivelab:0.1.0",
            "--store",
            "postgresql://drivelab@postgres.lab.invalid/drivelab",
            "--policy",
        ])
        .arg(base.join("policy.toml"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = std::fs::read_to_string(base.join("fleet.yaml")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        want,
        "deploy/k8s/base/fleet.yaml differs from the rendered objects: regenerate it (deploy/k8s/base/kustomization.yaml says how)"
    );
}
