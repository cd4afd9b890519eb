//! The fleet's objects sent to the API server and read back: server-side
//! apply (one PATCH per object, `fieldManager=drivelab`: applying the same
//! run again changes nothing), the labelled nodes, a run's status (the
//! station's DaemonSet, the Jobs, their pods) and its deletion.

use serde_json::Value;

use crate::kube::Client;
use crate::objects::{RUN_LABEL, STATION};
use crate::spec::{Fleet, Label};
use crate::{FleetError, Result};

/// The API path of `obj` (by its apiVersion, kind, namespace and name).
pub fn path_of(obj: &Value) -> Result<String> {
    let s = |k: &str| obj.pointer(k).and_then(Value::as_str).unwrap_or("");
    let (api, kind, ns, name) = (
        s("/apiVersion"),
        s("/kind"),
        s("/metadata/namespace"),
        s("/metadata/name"),
    );
    let plural = match kind {
        "Namespace" => return Ok(format!("/api/v1/namespaces/{name}")),
        "ServiceAccount" => "serviceaccounts",
        "Secret" => "secrets",
        "ConfigMap" => "configmaps",
        "Role" => "roles",
        "RoleBinding" => "rolebindings",
        "DaemonSet" => "daemonsets",
        "Job" => "jobs",
        other => {
            return Err(FleetError::BadInput(format!(
                "no API path known for a {other}"
            )))
        }
    };
    let group = if api == "v1" {
        "/api/v1".to_string()
    } else {
        format!("/apis/{api}")
    };
    Ok(format!("{group}/namespaces/{ns}/{plural}/{name}"))
}

/// Apply every object in order; returns each one's path.
pub fn apply(c: &Client, objects: &[Value]) -> Result<Vec<String>> {
    let mut done = Vec::new();
    for o in objects {
        let path = path_of(o)?;
        c.request(
            "PATCH",
            &format!("{path}?fieldManager=drivelab&force=true"),
            Some(("application/apply-patch+yaml", o)),
        )?;
        done.push(path);
    }
    Ok(done)
}

/// `key=value` for a query string.
fn selector(key: &str, value: &str) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    format!("labelSelector={}%3D{}", enc(key), enc(value))
}

/// The names of the nodes that carry `label`, sorted.
pub fn nodes(c: &Client, label: &Label) -> Result<Vec<String>> {
    let v = c.get(&format!(
        "/api/v1/nodes?{}",
        selector(&label.key, &label.value)
    ))?;
    let mut out: Vec<String> = items(&v)
        .iter()
        .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str))
        .map(String::from)
        .collect();
    out.sort();
    Ok(out)
}

fn items(v: &Value) -> &[Value] {
    v.get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// One pod of a run, as `watch` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRow {
    /// The pod's name.
    pub name: String,
    /// The node it is on (empty until scheduled).
    pub node: String,
    /// Its component (station, run, erase, health).
    pub component: String,
    /// Pending, Running, Succeeded, Failed.
    pub phase: String,
    /// The container's state in a few words (waiting's reason, exit code).
    pub detail: String,
}

/// A run's state as the API server has it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStatus {
    /// The station's DaemonSet: (pods wanted, pods ready), when it exists.
    pub station: Option<(u64, u64)>,
    /// The Jobs: (name, succeeded, failed, active).
    pub jobs: Vec<(String, u64, u64, u64)>,
    /// The pods.
    pub pods: Vec<PodRow>,
}

impl RunStatus {
    /// Whether every Job has finished (succeeded or failed); false when
    /// the run has none.
    pub fn jobs_done(&self) -> bool {
        !self.jobs.is_empty() && self.jobs.iter().all(|(_, s, f, _)| s + f > 0)
    }

    /// Whether the station runs on every node it should (and on one at
    /// least).
    pub fn station_ready(&self) -> bool {
        matches!(self.station, Some((want, ready)) if want > 0 && ready == want)
    }
}

/// Read a run's status.
pub fn status(c: &Client, f: &Fleet) -> Result<RunStatus> {
    let ns = &f.namespace;
    let sel = selector(RUN_LABEL, &f.run_id);
    let mut st = RunStatus::default();
    match c.get(&format!(
        "/apis/apps/v1/namespaces/{ns}/daemonsets/{STATION}"
    )) {
        Ok(ds) if label_of(&ds, RUN_LABEL) == f.run_id => {
            let n = |k: &str| ds.pointer(k).and_then(Value::as_u64).unwrap_or(0);
            st.station = Some((
                n("/status/desiredNumberScheduled"),
                n("/status/numberReady"),
            ));
        }
        Ok(_) | Err(FleetError::Refused { status: 404, .. }) => {}
        Err(e) => return Err(e),
    }
    let jobs = c.get(&format!("/apis/batch/v1/namespaces/{ns}/jobs?{sel}"))?;
    for j in items(&jobs) {
        let n = |k: &str| j.pointer(k).and_then(Value::as_u64).unwrap_or(0);
        let name = j
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        st.jobs.push((
            name.to_string(),
            n("/status/succeeded"),
            n("/status/failed"),
            n("/status/active"),
        ));
    }
    st.jobs.sort();
    let pods = c.get(&format!("/api/v1/namespaces/{ns}/pods?{sel}"))?;
    for p in items(&pods) {
        let s = |k: &str| {
            p.pointer(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let cs = p.pointer("/status/containerStatuses/0/state");
        let detail = match cs {
            Some(v) if v.get("waiting").is_some() => format!(
                "waiting: {}",
                v.pointer("/waiting/reason")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ),
            Some(v) if v.get("terminated").is_some() => format!(
                "exit {}",
                v.pointer("/terminated/exitCode")
                    .and_then(Value::as_i64)
                    .unwrap_or(-1)
            ),
            Some(v) if v.get("running").is_some() => "running".to_string(),
            _ => String::new(),
        };
        st.pods.push(PodRow {
            name: s("/metadata/name"),
            node: s("/spec/nodeName"),
            component: label_of(p, crate::objects::COMPONENT_LABEL),
            phase: s("/status/phase"),
            detail,
        });
    }
    st.pods
        .sort_by(|a, b| (&a.node, &a.name).cmp(&(&b.node, &b.name)));
    Ok(st)
}

fn label_of(obj: &Value, key: &str) -> String {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Delete a run's objects: its Jobs and ConfigMaps, and the station's
/// DaemonSet when it is the run's. Pods go with their owners (background
/// propagation); a station stopped mid-erase leaves its journal on the
/// node. Returns the paths deleted.
pub fn delete(c: &Client, f: &Fleet) -> Result<Vec<String>> {
    let ns = &f.namespace;
    let sel = selector(RUN_LABEL, &f.run_id);
    let mut done = Vec::new();
    let ds = format!("/apis/apps/v1/namespaces/{ns}/daemonsets/{STATION}");
    match c.get(&ds) {
        Ok(v) if label_of(&v, RUN_LABEL) == f.run_id => {
            c.request(
                "DELETE",
                &format!("{ds}?propagationPolicy=Background"),
                None,
            )?;
            done.push(ds);
        }
        Ok(_) | Err(FleetError::Refused { status: 404, .. }) => {}
        Err(e) => return Err(e),
    }
    for (list, kind) in [
        (format!("/apis/batch/v1/namespaces/{ns}/jobs"), "jobs"),
        (format!("/api/v1/namespaces/{ns}/configmaps"), "configmaps"),
    ] {
        let v = c.get(&format!("{list}?{sel}"))?;
        for o in items(&v) {
            if let Some(name) = o.pointer("/metadata/name").and_then(Value::as_str) {
                let p = format!("{list}/{name}");
                c.request("DELETE", &format!("{p}?propagationPolicy=Background"), None)?;
                done.push(format!("{kind}/{name}"));
            }
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_api_path() {
        let o = |api: &str, kind: &str| serde_json::json!({"apiVersion": api, "kind": kind, "metadata": {"name": "n", "namespace": "ns"}});
        let cases = [
            (o("v1", "Namespace"), "/api/v1/namespaces/n"),
            (o("v1", "Secret"), "/api/v1/namespaces/ns/secrets/n"),
            (
                o("apps/v1", "DaemonSet"),
                "/apis/apps/v1/namespaces/ns/daemonsets/n",
            ),
            (o("batch/v1", "Job"), "/apis/batch/v1/namespaces/ns/jobs/n"),
            (
                o("rbac.authorization.k8s.io/v1", "Role"),
                "/apis/rbac.authorization.k8s.io/v1/namespaces/ns/roles/n",
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(path_of(&obj).unwrap(), want);
        }
        assert!(path_of(&o("v1", "Service")).is_err());
        assert_eq!(
            selector("drivelab.io/run", "r-1"),
            "labelSelector=drivelab.io%2Frun%3Dr-1"
        );
    }
}
