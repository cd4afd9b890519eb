//! One report of a fleet run, merged from the records its pods stored:
//! a row per node (records, drives, failures, the bytes a second its
//! drives reached), the totals, and the slowest and fastest drives. The
//! figures come from each record's own result (the caller reads them with
//! the kind's figures, as `drivelab compare` does); this module only
//! groups and ranks them.

use std::collections::BTreeMap;

use serde::Serialize;

/// One drive's part of one record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// The node it ran on.
    pub node: String,
    /// The record.
    pub record: i64,
    /// The record's kind (run, erase, test, …).
    pub kind: String,
    /// The drive: "MODEL SERIAL" (or its path).
    pub drive: String,
    /// The drive's serial, when known.
    pub serial: Option<String>,
    /// The record's verdict.
    pub verdict: String,
    /// Whether the record's command succeeded (exit status 0).
    pub ok: bool,
    /// The drive's rate in MB/s (an erase's, a run's bandwidth), when the
    /// result has one.
    pub mb_per_s: Option<f64>,
}

/// A node's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRow {
    /// The node.
    pub node: String,
    /// Records stored from it.
    pub records: usize,
    /// Drives (entries) in them.
    pub drives: usize,
    /// Entries whose command failed.
    pub failed: usize,
    /// The sum of its drives' rates, MB/s.
    pub mb_per_s: f64,
}

/// The merged report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetReport {
    /// The fleet run.
    pub run_id: String,
    /// A row per node, by name.
    pub nodes: Vec<NodeRow>,
    /// The totals over every node (its `node` is "total").
    pub total: NodeRow,
    /// The slowest drives (lowest rate first), at most `rank` of them.
    pub slowest: Vec<Entry>,
    /// The fastest drives (highest rate first), at most `rank` of them.
    pub fastest: Vec<Entry>,
    /// Every entry, by node and record.
    pub entries: Vec<Entry>,
}

/// Merge `entries` of the run `run_id`, ranking `rank` drives each way.
pub fn merge(run_id: &str, mut entries: Vec<Entry>, rank: usize) -> FleetReport {
    entries.sort_by(|a, b| (&a.node, a.record).cmp(&(&b.node, b.record)));
    let mut by_node: BTreeMap<&str, (NodeRow, Vec<i64>)> = BTreeMap::new();
    for e in &entries {
        let (row, recs) = by_node.entry(&e.node).or_insert_with(|| {
            (
                NodeRow {
                    node: e.node.clone(),
                    records: 0,
                    drives: 0,
                    failed: 0,
                    mb_per_s: 0.0,
                },
                Vec::new(),
            )
        });
        if !recs.contains(&e.record) {
            recs.push(e.record);
        }
        row.drives += 1;
        row.failed += usize::from(!e.ok);
        row.mb_per_s += e.mb_per_s.unwrap_or(0.0);
    }
    let nodes: Vec<NodeRow> = by_node
        .into_values()
        .map(|(mut r, recs)| {
            r.records = recs.len();
            r
        })
        .collect();
    let total = NodeRow {
        node: "total".into(),
        records: nodes.iter().map(|r| r.records).sum(),
        drives: nodes.iter().map(|r| r.drives).sum(),
        failed: nodes.iter().map(|r| r.failed).sum(),
        mb_per_s: nodes.iter().map(|r| r.mb_per_s).sum(),
    };
    let mut rated: Vec<&Entry> = entries.iter().filter(|e| e.mb_per_s.is_some()).collect();
    rated.sort_by(|a, b| {
        a.mb_per_s
            .unwrap_or(0.0)
            .total_cmp(&b.mb_per_s.unwrap_or(0.0))
            .then(a.record.cmp(&b.record))
    });
    let slowest = rated.iter().take(rank).map(|e| (*e).clone()).collect();
    let fastest = rated
        .iter()
        .rev()
        .take(rank)
        .map(|e| (*e).clone())
        .collect();
    FleetReport {
        run_id: run_id.to_string(),
        nodes,
        total,
        slowest,
        fastest,
        entries,
    }
}

/// The report as text: the node table, then the ranked drives.
pub fn text(r: &FleetReport) -> String {
    let mut out = format!("fleet run {}\n", r.run_id);
    out.push_str(&format!(
        "{:<24} {:>8} {:>7} {:>7} {:>12}\n",
        "node", "records", "drives", "failed", "MB/s"
    ));
    for n in r.nodes.iter().chain(std::iter::once(&r.total)) {
        out.push_str(&format!(
            "{:<24} {:>8} {:>7} {:>7} {:>12.1}\n",
            n.node, n.records, n.drives, n.failed, n.mb_per_s
        ));
    }
    for (title, list) in [("slowest", &r.slowest), ("fastest", &r.fastest)] {
        if list.is_empty() {
            continue;
        }
        out.push_str(&format!("{title} drives:\n"));
        for e in list {
            out.push_str(&format!(
                "  {:>10.1} MB/s  {}  on {}  ({} #{}, {})\n",
                e.mb_per_s.unwrap_or(0.0),
                e.drive,
                e.node,
                e.kind,
                e.record,
                e.verdict
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(node: &str, record: i64, drive: &str, ok: bool, rate: Option<f64>) -> Entry {
        Entry {
            node: node.into(),
            record,
            kind: "erase".into(),
            drive: drive.into(),
            serial: None,
            verdict: if ok { "erased" } else { "failed" }.into(),
            ok,
            mb_per_s: rate,
        }
    }

    /// Two nodes, one record with two drives, a failure, a drive without
    /// a rate: per-node rows, totals and both rankings.
    #[test]
    fn records_of_many_nodes_merge_into_rows_totals_and_rankings() {
        let entries = vec![
            e("node-b", 7, "B1", true, Some(300.0)),
            e("node-a", 3, "A1", true, Some(100.0)),
            e("node-a", 3, "A2", false, Some(50.0)),
            e("node-a", 5, "A3", true, None),
            e("node-b", 8, "B2", true, Some(200.0)),
        ];
        let r = merge("burnin-1", entries, 2);
        let rows: Vec<(&str, usize, usize, usize, f64)> = r
            .nodes
            .iter()
            .map(|n| (n.node.as_str(), n.records, n.drives, n.failed, n.mb_per_s))
            .collect();
        assert_eq!(
            rows,
            [("node-a", 2, 3, 1, 150.0), ("node-b", 2, 2, 0, 500.0)]
        );
        assert_eq!(
            (
                r.total.records,
                r.total.drives,
                r.total.failed,
                r.total.mb_per_s
            ),
            (4, 5, 1, 650.0)
        );
        let names = |v: &[Entry]| v.iter().map(|e| e.drive.clone()).collect::<Vec<_>>();
        assert_eq!(names(&r.slowest), ["A2", "A1"]);
        assert_eq!(names(&r.fastest), ["B1", "B2"]);
        let t = text(&r);
        assert!(
            t.contains("node-a") && t.contains("total") && t.contains("slowest drives:"),
            "{t}"
        );
        assert!(merge("x", Vec::new(), 3).nodes.is_empty());
    }
}
