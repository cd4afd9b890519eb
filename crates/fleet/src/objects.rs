//! The Kubernetes objects of a fleet run, as JSON values (the API server
//! and `kubectl apply` take JSON as they take YAML): the namespace, the
//! pods' ServiceAccount (no API access: no token is mounted), a Role for
//! the people or tools that run `drivelab fleet`, the store's Secret, and
//! the work: the station's DaemonSet with its policy's ConfigMap, or one
//! Job per node for `run`, `erase` and `health`.
//!
//! What the pods may do, and why (docs/fleet.md says the same to a lab):
//! `privileged: true`, because Kubernetes grants access to block devices
//! that appear after a container starts only to a privileged container
//! (the device cgroup; there is no capability for it), and the station
//! sees drives arrive; `hostNetwork`, for the kernel's uevent socket (it
//! is per network namespace) and to reach the store without pod
//! addresses; host paths `/dev` (the drives' nodes, hot-plugged ones too),
//! `/sys` read-only is given by the runtime, and the fleet's state
//! directory (certificates, journals, the signing key) so that a pod
//! restarted after an interruption finds its journal. The root file system
//! is read-only, no service account token is mounted, and the image holds
//! only the static drivelab binary.

use serde_json::{json, Value};

use crate::spec::{Fleet, Work};

/// The ServiceAccount the pods run as.
pub const SERVICE_ACCOUNT: &str = "drivelab";
/// The Secret holding the store's URL (key `url`).
pub const STORE_SECRET: &str = "drivelab-store";
/// The station's DaemonSet.
pub const STATION: &str = "drivelab-station";
/// The Role for the people and tools that run `drivelab fleet`.
pub const OPERATOR_ROLE: &str = "drivelab-fleet-operator";
/// The label every object carries with the fleet run's ID.
pub const RUN_LABEL: &str = "drivelab.io/run";
/// The label that says which part of the fleet an object is.
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
/// In `drivelab fleet exec`'s command: the selected drives' paths.
pub const DRIVES: &str = "{}";
/// In `drivelab fleet exec`'s command: `--confirm-serial S` for each
/// selected drive (its serial, or its path when it has none): the
/// selection the operator typed is the erase's confirmation.
pub const CONFIRM: &str = "{confirm}";
/// Where the policy and job file ConfigMaps are mounted.
const CONFIG_MOUNT: &str = "/etc/drivelab";

/// Every object of a fleet run doing `work`, in the order they are
/// applied (namespace first). `nodes` are the labelled nodes' names: each
/// gets one Job (the station's DaemonSet needs none: Kubernetes places it
/// on every labelled node, those added later too).
pub fn render(f: &Fleet, work: &Work, nodes: &[String]) -> Vec<Value> {
    let mut out = vec![
        namespace(f),
        service_account(f),
        operator_role(f),
        operator_binding(f),
        store_secret(f),
    ];
    match work {
        Work::Station { policy } => {
            out.push(config_map(
                f,
                "drivelab-policy",
                "station",
                "policy.toml",
                policy,
            ));
            out.push(station(f));
        }
        Work::Run { job_file, .. } => {
            out.push(config_map(
                f,
                &config_name(f, work),
                "run",
                "job.fio",
                job_file,
            ));
            out.extend(nodes.iter().map(|n| job(f, work, n)));
        }
        Work::Erase { .. } | Work::Health { .. } => {
            out.extend(nodes.iter().map(|n| job(f, work, n)));
        }
    }
    out
}

/// The objects as YAML documents, for `kubectl apply -f -`.
pub fn to_yaml(objects: &[Value]) -> String {
    let mut out = String::new();
    for o in objects {
        out.push_str("---\n");
        // A JSON value always has a YAML form.
        out.push_str(&serde_yaml::to_string(o).unwrap_or_default());
    }
    out
}

/// The labels every object of the run carries.
fn labels(f: &Fleet, component: &str) -> Value {
    json!({
        "app.kubernetes.io/name": "drivelab",
        "app.kubernetes.io/part-of": "drivelab-fleet",
        COMPONENT_LABEL: component,
        RUN_LABEL: f.run_id,
    })
}

fn meta(f: &Fleet, name: &str, component: &str) -> Value {
    json!({"name": name, "namespace": f.namespace, "labels": labels(f, component)})
}

fn namespace(f: &Fleet) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": f.namespace, "labels": {"app.kubernetes.io/part-of": "drivelab-fleet"}}})
}

/// The pods' account: they call no API, so it is bound to nothing and
/// its token is not mounted.
fn service_account(f: &Fleet) -> Value {
    json!({"apiVersion": "v1", "kind": "ServiceAccount",
           "metadata": meta(f, SERVICE_ACCOUNT, "account"),
           "automountServiceAccountToken": false})
}

/// What `drivelab fleet apply`, `watch` and `delete` need in the
/// namespace, and nothing else (the node list is cluster-scoped: read
/// with a ClusterRole of the lab's choosing, or pass the nodes).
fn operator_role(f: &Fleet) -> Value {
    let rw = [
        "get", "list", "watch", "create", "patch", "update", "delete",
    ];
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
    "metadata": meta(f, OPERATOR_ROLE, "operator"),
    "rules": [
        {"apiGroups": [""], "resources": ["configmaps", "secrets", "serviceaccounts"], "verbs": rw},
        {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": rw},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": rw},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["get", "create", "patch"]}
    ]})
}

/// The Role bound to the group `drivelab-operators`: a lab puts its
/// operators (or a CI's account) in that group.
fn operator_binding(f: &Fleet) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
           "metadata": meta(f, OPERATOR_ROLE, "operator"),
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": OPERATOR_ROLE},
           "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "drivelab-operators"}]})
}

fn store_secret(f: &Fleet) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
           "metadata": meta(f, STORE_SECRET, "store"),
           "stringData": {"url": f.store_url}})
}

fn config_map(f: &Fleet, name: &str, component: &str, key: &str, text: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": meta(f, name, component),
           "data": {key: text}})
}

/// The ConfigMap a Job's files are in.
fn config_name(f: &Fleet, work: &Work) -> String {
    format!("drivelab-{}-{}", work.component(), f.run_id)
}

/// The name of the Job of `work` on `node`: a short tag of the node's
/// name (FNV-1a, stable across Rust releases as std's hasher is not)
/// rather than the name itself, which may be longer than a Job's name
/// allows; the node is in the Job's `drivelab.io/node` annotation.
pub fn job_name(f: &Fleet, work: &Work, node: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in node.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    format!("drivelab-{}-{}-{h:08x}", work.component(), f.run_id)
}

/// The container every fleet pod runs: drivelab with `args`, the store's
/// URL from the Secret, the node's name and the run's ID for the records,
/// the state directory for the signing key.
fn container(f: &Fleet, args: Vec<String>, config: Option<&str>) -> Value {
    let state = f.state_dir.display().to_string();
    let mut mounts = vec![
        json!({"name": "dev", "mountPath": "/dev"}),
        json!({"name": "state", "mountPath": state}),
    ];
    if config.is_some() {
        mounts.push(json!({"name": "config", "mountPath": CONFIG_MOUNT, "readOnly": true}));
    }
    json!({
        "name": "drivelab",
        "image": f.image,
        "imagePullPolicy": "IfNotPresent",
        "args": args,
        "workingDir": state,
        "env": [
            {"name": "DRIVELAB_STORE", "valueFrom": {"secretKeyRef": {"name": STORE_SECRET, "key": "url"}}},
            {"name": drivelab_store::FLEET_NODE_ENV, "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": drivelab_store::FLEET_RUN_ENV, "value": f.run_id},
            {"name": "XDG_CONFIG_HOME", "value": format!("{state}/config")},
            {"name": "HOME", "value": state}
        ],
        "securityContext": {
            "privileged": true,
            "readOnlyRootFilesystem": true,
            "runAsUser": 0
        },
        "volumeMounts": mounts
    })
}

/// The pod spec every fleet pod shares, around `c`.
fn pod_spec(f: &Fleet, c: Value, config: Option<&str>, restart: &str) -> Value {
    let mut volumes = vec![
        json!({"name": "dev", "hostPath": {"path": "/dev", "type": "Directory"}}),
        json!({"name": "state", "hostPath": {"path": f.state_dir.display().to_string(), "type": "DirectoryOrCreate"}}),
    ];
    if let Some(name) = config {
        volumes.push(json!({"name": "config", "configMap": {"name": name}}));
    }
    json!({
        "serviceAccountName": SERVICE_ACCOUNT,
        "automountServiceAccountToken": false,
        "hostNetwork": true,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "restartPolicy": restart,
        "nodeSelector": {f.node_label.key.clone(): f.node_label.value},
        // A stopped erase leaves its journal; give it time to write it.
        "terminationGracePeriodSeconds": 30,
        "containers": [c],
        "volumes": volumes
    })
}

/// The station's DaemonSet: one `drivelab station` on every labelled node.
fn station(f: &Fleet) -> Value {
    let args = [
        "station",
        "--policy",
        &format!("{CONFIG_MOUNT}/policy.toml"),
        "--events",
        "json",
    ]
    .map(String::from)
    .to_vec();
    let c = container(f, args, Some("drivelab-policy"));
    let sel = json!({"app.kubernetes.io/name": "drivelab", COMPONENT_LABEL: "station"});
    json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
    "metadata": meta(f, STATION, "station"),
    "spec": {
        "selector": {"matchLabels": sel},
        // One node at a time: a new policy never stops every
        // node's erases at once.
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
        "template": {
            "metadata": {"labels": labels(f, "station")},
            "spec": pod_spec(f, c, Some("drivelab-policy"), "Always")
        }
    }})
}

/// One Job of `work` pinned to `node`: `drivelab fleet exec` there picks
/// the selected drives and runs the command on them.
fn job(f: &Fleet, work: &Work, node: &str) -> Value {
    let mut args = vec!["fleet".to_string(), "exec".to_string()];
    let (config, tail): (Option<String>, Vec<String>) = match work {
        Work::Run { selection, .. } => {
            args.extend(selection.to_args());
            (
                Some(config_name(f, work)),
                vec!["run".into(), format!("{CONFIG_MOUNT}/job.fio")],
            )
        }
        Work::Erase { selection, options } => {
            args.extend(selection.to_args());
            let mut t = vec!["erase".to_string()];
            t.extend(options.iter().cloned());
            t.push("--certificate-dir".into());
            t.push(f.certificate_dir().display().to_string());
            t.push("--yes".into());
            t.push(CONFIRM.into());
            t.push(DRIVES.into());
            (None, t)
        }
        Work::Health { selection } => {
            args.extend(selection.to_args());
            (
                None,
                vec![
                    "health".into(),
                    "--output-format".into(),
                    "json".into(),
                    DRIVES.into(),
                ],
            )
        }
        Work::Station { .. } => (None, Vec::new()),
    };
    args.push("--".into());
    args.extend(tail);
    let c = container(f, args, config.as_deref());
    let mut spec = pod_spec(f, c, config.as_deref(), "Never");
    // Pinned to the node by name, as the DaemonSet controller pins its pods.
    spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}});
    let mut m = meta(f, &job_name(f, work, node), work.component());
    m["annotations"] = json!({"drivelab.io/node": node});
    json!({"apiVersion": "batch/v1", "kind": "Job",
    "metadata": m,
    "spec": {
        // A drive's work is not retried behind the operator's back:
        // a failed pod stays failed, with its journal.
        "backoffLimit": 0,
        "ttlSecondsAfterFinished": 86400,
        "template": {
            "metadata": {"labels": labels(f, work.component())},
            "spec": spec
        }
    }})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Label, Selection, NODE_LABEL, STATE_DIR};

    fn fleet() -> Fleet {
        Fleet {
            namespace: "lab".into(),
            image: "drivelab.local/drivelab:0.1.0".into(),
            node_label: Label::parse(NODE_LABEL).unwrap(),
            run_id: "burnin-1".into(),
            store_url: "postgresql://lab@db/results".into(),
            state_dir: STATE_DIR.into(),
        }
    }

    fn sel() -> Selection {
        Selection {
            serials: vec!["S1".into(), "S2".into()],
            ..Selection::default()
        }
    }

    fn find<'a>(objs: &'a [Value], kind: &str) -> Vec<&'a Value> {
        objs.iter().filter(|o| o["kind"] == kind).collect()
    }

    /// Every object is in the run's namespace with the run's label; the
    /// pods run privileged on the host network with /dev and the state
    /// directory from the host, no API token, the store's URL from the
    /// Secret and the node's name from the downward API.
    #[test]
    fn every_pod_gets_the_devices_the_store_and_its_node_and_nothing_more() {
        let f = fleet();
        let nodes = ["n1".to_string(), "n2".to_string()];
        let works = [
            (
                Work::Station {
                    policy: "bays = [\"*\"]\n".into(),
                },
                "DaemonSet",
                1,
            ),
            (
                Work::Run {
                    job_file: "[j]\nfilename=${DRIVELAB_DRIVES}\n".into(),
                    selection: sel(),
                },
                "Job",
                2,
            ),
            (
                Work::Erase {
                    selection: sel(),
                    options: vec!["--verify=full".into()],
                },
                "Job",
                2,
            ),
            (Work::Health { selection: sel() }, "Job", 2),
        ];
        for (work, kind, count) in works {
            let objs = render(&f, &work, &nodes);
            assert_eq!(objs[0]["kind"], "Namespace");
            for o in &objs[1..] {
                assert_eq!(o["metadata"]["namespace"], "lab", "{o}");
                assert_eq!(o["metadata"]["labels"][RUN_LABEL], "burnin-1", "{o}");
            }
            let pods = find(&objs, kind);
            assert_eq!(pods.len(), count, "{kind}s of {}", work.component());
            for w in pods {
                let spec = &w["spec"]["template"]["spec"];
                assert_eq!(spec["hostNetwork"], true);
                assert_eq!(spec["automountServiceAccountToken"], false);
                assert_eq!(spec["nodeSelector"]["drivelab.io/fleet"], "true");
                let c = &spec["containers"][0];
                assert_eq!(c["securityContext"]["privileged"], true);
                assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
                let env = c["env"].as_array().unwrap();
                let by_name = |n: &str| env.iter().find(|e| e["name"] == n).cloned().unwrap();
                assert_eq!(
                    by_name("DRIVELAB_STORE")["valueFrom"]["secretKeyRef"]["name"],
                    STORE_SECRET
                );
                assert_eq!(
                    by_name(drivelab_store::FLEET_NODE_ENV)["valueFrom"]["fieldRef"]["fieldPath"],
                    "spec.nodeName"
                );
                assert_eq!(by_name(drivelab_store::FLEET_RUN_ENV)["value"], "burnin-1");
                let hosts: Vec<&str> = spec["volumes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|v| v["hostPath"]["path"].as_str())
                    .collect();
                assert_eq!(hosts, ["/dev", STATE_DIR]);
            }
        }
        let health = render(&f, &Work::Health { selection: sel() }, &nodes);
        let secret = find(&health, "Secret")[0];
        assert_eq!(secret["stringData"]["url"], "postgresql://lab@db/results");
    }

    /// One Job per node, pinned to it by name, running `fleet exec` with
    /// the selection and the command after `--`.
    #[test]
    fn each_node_gets_its_own_job_with_the_selection() {
        let f = fleet();
        let nodes = ["rack1-host-a".to_string(), "rack2-host-b".to_string()];
        let erase = Work::Erase {
            selection: sel(),
            options: vec!["--verify=full".into()],
        };
        let objs = render(&f, &erase, &nodes);
        let jobs = find(&objs, "Job");
        let names: Vec<&str> = jobs
            .iter()
            .map(|j| j["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_ne!(names[0], names[1]);
        assert!(names
            .iter()
            .all(|n| n.starts_with("drivelab-erase-burnin-1-") && n.len() <= 63));
        for (j, node) in jobs.iter().zip(&nodes) {
            let terms = &j["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
                ["matchFields"][0];
            assert_eq!(terms["values"][0], node.as_str());
            assert_eq!(j["spec"]["backoffLimit"], 0);
            let args: Vec<&str> = j["spec"]["template"]["spec"]["containers"][0]["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect();
            assert_eq!(
                args,
                [
                    "fleet",
                    "exec",
                    "--serial",
                    "S1",
                    "--serial",
                    "S2",
                    "--",
                    "erase",
                    "--verify=full",
                    "--certificate-dir",
                    "/var/lib/drivelab/certificates",
                    "--yes",
                    CONFIRM,
                    DRIVES
                ]
            );
        }
    }

    /// The YAML reads back as the same objects.
    #[test]
    fn the_yaml_reads_back_as_the_objects() {
        let objs = render(
            &fleet(),
            &Work::Station {
                policy: "bays = [\"pci-*\"]\n".into(),
            },
            &[],
        );
        let yaml = to_yaml(&objs);
        let back: Vec<Value> = yaml
            .split("---\n")
            .filter(|d| !d.trim().is_empty())
            .map(|d| serde_yaml::from_str(d).unwrap())
            .collect();
        assert_eq!(back, objs);
    }
}
