//! The PostgreSQL backend, for a lab's shared server: the `postgres`
//! crate's synchronous client over TCP or a unix socket
//! (`postgres:///db?host=/run/postgresql`). Each record is one transaction;
//! each series is one row, its seconds packed (see `packed`). Migrations take a transaction-scoped advisory lock, so
//! that clients opening a new database at once apply each exactly once.

use std::str::FromStr;
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, Row};

use crate::migrate::{self, Dialect, Migration, SCHEMA_VERSION};
use crate::packed;
use crate::{
    corrupt, count_query, history_query, Artifact, Drive, Filter, FleetRow, NewRecord, Param,
    Printed, Record, RecordId, Result, SeriesRow, Source, Store, StoreError, Summary,
    DRIVE_COLUMNS, RECORD_COLUMNS, RECORD_READ, SERIES_METRICS,
};

/// The advisory lock key migrations hold ("drivelab" in ASCII, truncated).
const MIGRATION_LOCK: i64 = 0x6472_6976_656c_6162;

/// A PostgreSQL store.
pub struct PgStore {
    client: Client,
    shown: String,
}

/// The connection string without its password, for messages.
pub fn redact(s: &str) -> String {
    let mut out = s.to_string();
    if let Some(start) = s.find("://").map(|i| i + 3) {
        let rest = &s[start..];
        let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
        if let Some(at) = rest[..auth_end].rfind('@') {
            if let Some(colon) = rest[..at].find(':') {
                out = format!("{}{}:***{}", &s[..start], &rest[..colon], &rest[at..]);
            }
        }
    }
    if let Some(i) = out.find("password=") {
        let end = out[i..].find('&').map(|e| i + e).unwrap_or(out.len());
        out.replace_range(i..end, "password=***");
    }
    out
}

impl PgStore {
    /// Connect to the server `conn` names.
    pub fn connect(conn: &str) -> Result<PgStore> {
        let shown = redact(conn);
        let mut cfg = Config::from_str(conn).map_err(|e| StoreError::BadLocation {
            location: shown.clone(),
            why: format!("not a PostgreSQL connection string ({e})"),
        })?;
        if cfg.get_connect_timeout().is_none() {
            cfg.connect_timeout(Duration::from_secs(10));
        }
        if cfg.get_user().is_none() {
            if let Ok(u) = std::env::var("USER").or_else(|_| std::env::var("LOGNAME")) {
                cfg.user(&u);
            }
        }
        let client = cfg.connect(NoTls).map_err(|e| StoreError::Unreachable {
            location: shown.clone(),
            why: one_line(&e),
        })?;
        Ok(PgStore { client, shown })
    }

    fn version(&mut self) -> Result<u32> {
        let exists: bool = self
            .client
            .query_one("SELECT to_regclass('schema_version') IS NOT NULL", &[])?
            .get(0);
        if !exists {
            return Ok(0);
        }
        let v: i32 = self
            .client
            .query_one("SELECT COALESCE(MAX(version), 0) FROM schema_version", &[])?
            .get(0);
        Ok(u32::try_from(v).unwrap_or(0))
    }

    fn too_new(&self, found: u32) -> StoreError {
        StoreError::TooNew {
            location: self.shown.clone(),
            found,
            supported: SCHEMA_VERSION,
        }
    }

    /// Apply the migrations up to `target` (see [`crate::migrate_to`]).
    pub fn migrate_to(&mut self, target: u32) -> Result<Migration> {
        let target = target.min(SCHEMA_VERSION);
        let seen = self.version()?;
        if seen > SCHEMA_VERSION {
            return Err(self.too_new(seen));
        }
        if seen >= target {
            return Ok(Migration {
                from: seen,
                to: seen,
            });
        }
        let mut tx = self.client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        tx.batch_execute(migrate::VERSION_TABLE)?;
        let found: i32 = tx
            .query_one("SELECT COALESCE(MAX(version), 0) FROM schema_version", &[])?
            .get(0);
        let found = u32::try_from(found).unwrap_or(0);
        if found > SCHEMA_VERSION {
            drop(tx);
            return Err(self.too_new(found));
        }
        for (v, text) in migrate::pending(found, target) {
            tx.batch_execute(&migrate::sql(text, Dialect::Postgres))?;
            let v = i32::try_from(*v).unwrap_or(i32::MAX);
            tx.execute(
                "INSERT INTO schema_version (version, applied_ms) VALUES ($1, $2)",
                &[&v, &migrate::now_ms()],
            )?;
        }
        tx.commit()?;
        Ok(Migration {
            from: found,
            to: found.max(target),
        })
    }
}

/// A postgres error as one line (the server's message and detail).
fn one_line(e: &postgres::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s.replace('\n', " ")
}

fn summary(r: &Row) -> Result<Summary> {
    let id: i64 = r.try_get(0)?;
    let kind: String = r.try_get(1)?;
    Ok(Summary {
        id: RecordId(id),
        kind: kind.parse().map_err(|e: String| corrupt(id, e))?,
        time_ms: r.try_get(2)?,
        host: r.try_get(3)?,
        drives: r.try_get(4)?,
        verdict: r.try_get(5)?,
        exit_status: r.try_get(6)?,
        headline: r.try_get(7)?,
        spec_key: r.try_get(8)?,
        fleet: crate::fleet_tag(r.try_get(9)?, r.try_get(10)?),
    })
}

fn owned_params(params: Vec<Param>) -> Vec<Box<dyn ToSql + Sync>> {
    params
        .into_iter()
        .map(|p| -> Box<dyn ToSql + Sync> {
            match p {
                Param::Text(s) => Box::new(s),
                Param::Int(i) => Box::new(i),
            }
        })
        .collect()
}

fn parse_source(id: RecordId, s: &str) -> Result<Source> {
    Source::parse(s).ok_or_else(|| corrupt(id.0, format!("unknown series source '{s}'")))
}

impl Store for PgStore {
    fn put(&mut self, rec: &NewRecord) -> Result<RecordId> {
        let mut tx = self.client.transaction()?;
        let placeholders: Vec<String> = (1..=RECORD_COLUMNS.len())
            .map(|i| format!("${i}"))
            .collect();
        let spec = rec.spec.to_string();
        let key = rec.spec_key();
        let drives = rec.drive_summary();
        let row = tx.query_one(
            &format!(
                "INSERT INTO records ({}) VALUES ({}) RETURNING id",
                RECORD_COLUMNS.join(", "),
                placeholders.join(", ")
            ),
            &[
                &rec.kind.as_str(),
                &rec.time_ms,
                &rec.host,
                &rec.kernel,
                &rec.version,
                &key,
                &rec.printed.as_str(),
                &rec.verdict,
                &rec.exit_status,
                &rec.headline,
                &drives,
            ],
        )?;
        let id: i64 = row.try_get(0)?;
        if let Some(f) = &rec.fleet {
            tx.execute(
                "UPDATE records SET node = $1, fleet_run = $2 WHERE id = $3",
                &[&f.node, &f.run_id, &id],
            )?;
        }
        tx.execute(
            "INSERT INTO record_texts (record_id, spec_json, result_json, result_text) VALUES ($1, $2, $3, $4)",
            &[&id, &spec, &rec.result_json, &rec.result_text],
        )?;
        if !rec.drives.is_empty() {
            let st = tx.prepare(&format!(
                "INSERT INTO drives (record_id, {DRIVE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
            ))?;
            for (i, d) in rec.drives.iter().enumerate() {
                let pos = i32::try_from(i).unwrap_or(i32::MAX);
                let cap = d.capacity_bytes.and_then(|c| i64::try_from(c).ok());
                let ls = d.logical_sector.and_then(|c| i32::try_from(c).ok());
                let ps = d.physical_sector.and_then(|c| i32::try_from(c).ok());
                tx.execute(
                    &st,
                    &[
                        &id,
                        &pos,
                        &d.path,
                        &d.model,
                        &d.serial,
                        &d.firmware,
                        &d.wwn,
                        &cap,
                        &ls,
                        &ps,
                        &d.transport,
                    ],
                )?;
            }
        }
        if !rec.series.is_empty() {
            let st = tx.prepare(
                "INSERT INTO series_columns (record_id, source, name, points, columns) VALUES ($1, $2, $3, $4, $5)",
            )?;
            for p in packed::pack(&rec.series) {
                let points = i32::try_from(p.points).unwrap_or(i32::MAX);
                tx.execute(
                    &st,
                    &[&id, &p.source.as_str(), &p.name, &points, &p.columns],
                )?;
            }
        }
        for a in &rec.artifacts {
            tx.execute(
                "INSERT INTO artifacts (record_id, name, content) VALUES ($1, $2, $3)",
                &[&id, &a.name, &a.content],
            )?;
        }
        tx.commit()?;
        Ok(RecordId(id))
    }

    fn get(&mut self, id: RecordId) -> Result<Record> {
        let rows = self
            .client
            .query(&format!("SELECT {RECORD_READ} WHERE r.id = $1"), &[&id.0])?;
        let r = rows.first().ok_or(StoreError::NotFound(id))?;
        let kind: String = r.try_get(0)?;
        let printed: String = r.try_get(9)?;
        let mut rec = Record {
            id,
            kind: kind.parse().map_err(|e: String| corrupt(id.0, e))?,
            time_ms: r.try_get(1)?,
            host: r.try_get(2)?,
            kernel: r.try_get(3)?,
            version: r.try_get(4)?,
            spec_json: r.try_get(5)?,
            spec_key: r.try_get(6)?,
            result_json: r.try_get(7)?,
            result_text: r.try_get(8)?,
            printed: Printed::parse(&printed)
                .ok_or_else(|| corrupt(id.0, format!("unknown printed format '{printed}'")))?,
            verdict: r.try_get(10)?,
            exit_status: r.try_get(11)?,
            headline: r.try_get(12)?,
            drives: Vec::new(),
            artifacts: Vec::new(),
        };
        for r in self.client.query(
            &format!("SELECT {DRIVE_COLUMNS} FROM drives WHERE record_id = $1 ORDER BY position"),
            &[&id.0],
        )? {
            rec.drives.push(Drive {
                path: r.try_get(1)?,
                model: r.try_get(2)?,
                serial: r.try_get(3)?,
                firmware: r.try_get(4)?,
                wwn: r.try_get(5)?,
                capacity_bytes: r
                    .try_get::<_, Option<i64>>(6)?
                    .and_then(|c| u64::try_from(c).ok()),
                logical_sector: r
                    .try_get::<_, Option<i32>>(7)?
                    .and_then(|c| u32::try_from(c).ok()),
                physical_sector: r
                    .try_get::<_, Option<i32>>(8)?
                    .and_then(|c| u32::try_from(c).ok()),
                transport: r.try_get(9)?,
            });
        }
        for r in self.client.query(
            "SELECT name, content FROM artifacts WHERE record_id = $1 ORDER BY ctid",
            &[&id.0],
        )? {
            rec.artifacts.push(Artifact {
                name: r.try_get(0)?,
                content: r.try_get(1)?,
            });
        }
        Ok(rec)
    }

    fn history(&mut self, f: &Filter) -> Result<Vec<Summary>> {
        let (sql, params) = history_query(f, |n| format!("${n}"));
        let owned = owned_params(params);
        let refs: Vec<&(dyn ToSql + Sync)> = owned.iter().map(|b| b.as_ref()).collect();
        self.client
            .query(&sql, &refs)?
            .iter()
            .map(summary)
            .collect()
    }

    fn count(&mut self, f: &Filter, at_most: u64) -> Result<u64> {
        let (sql, params) = count_query(f, at_most, |n| format!("${n}"));
        let owned = owned_params(params);
        let refs: Vec<&(dyn ToSql + Sync)> = owned.iter().map(|b| b.as_ref()).collect();
        let n: i64 = self.client.query_one(&sql, &refs)?.try_get(0)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn series(&mut self, id: RecordId) -> Result<Vec<SeriesRow>> {
        let mut out = Vec::new();
        for r in self.client.query(
            "SELECT source, name, points, columns FROM series_columns WHERE record_id = $1",
            &[&id.0],
        )? {
            let source = parse_source(id, &r.try_get::<_, String>(0)?)?;
            let name: String = r.try_get(1)?;
            let points: i32 = r.try_get(2)?;
            let points = usize::try_from(points)
                .map_err(|_| corrupt(id.0, format!("series '{name}': {points} seconds")))?;
            let columns: Vec<u8> = r.try_get(3)?;
            out.extend(
                packed::unpack(source, &name, points, &columns).map_err(|e| corrupt(id.0, e))?,
            );
        }
        // Records stored before schema version 3: one row a second.
        let cols = SERIES_METRICS.join(", ");
        let rows = self.client.query(
            &format!("SELECT source, name, t_s, {cols} FROM series WHERE record_id = $1"),
            &[&id.0],
        )?;
        for r in rows {
            let source = parse_source(id, &r.try_get::<_, String>(0)?)?;
            let mut m = [None; 12];
            for (i, v) in m.iter_mut().enumerate() {
                *v = r.try_get::<_, Option<f64>>(3 + i)?;
            }
            out.push(SeriesRow::from_metrics(
                source,
                r.try_get(1)?,
                r.try_get(2)?,
                m,
            ));
        }
        crate::sort_series(&mut out);
        Ok(out)
    }

    fn migrate(&mut self) -> Result<Migration> {
        self.migrate_to(SCHEMA_VERSION)
    }

    fn fleet(&mut self, run_id: Option<&str>) -> Result<Vec<FleetRow>> {
        let sql = crate::fleet_query(run_id, |i| format!("${i}"));
        let rows = match run_id {
            Some(run) => self.client.query(&sql, &[&run])?,
            None => self.client.query(&sql, &[])?,
        };
        rows.iter()
            .map(|r| {
                let id: i64 = r.try_get(0)?;
                let kind: String = r.try_get(1)?;
                crate::fleet_row(id, &kind, r.try_get(2)?, r.try_get(3)?)
            })
            .collect()
    }

    fn schema_version(&mut self) -> Result<u32> {
        self.version()
    }

    fn location(&self) -> String {
        self.shown.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(
            redact("postgres://lab:s3cret@db.example/results"),
            "postgres://lab:***@db.example/results"
        );
        assert_eq!(
            redact("postgresql:///results?host=/tmp/pg&password=x&user=u"),
            "postgresql:///results?host=/tmp/pg&password=***&user=u"
        );
        assert_eq!(redact("postgres:///r?host=/tmp"), "postgres:///r?host=/tmp");
    }
}
