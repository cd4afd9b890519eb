//! The SQLite backend: one file, in WAL mode (readers never wait for a
//! writer, and a process killed mid-write leaves the last committed state),
//! with a busy timeout so that many drivelab processes (a 24-drive erase run
//! as 24 processes) write one after another instead of failing. Each record
//! is one `BEGIN IMMEDIATE` transaction: all of it is stored or none.
//! `synchronous = NORMAL`: committed records survive a crash of drivelab;
//! a power cut may lose the newest ones, never the file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{
    params, params_from_iter, Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior,
};

use crate::migrate::{self, Dialect, Migration, SCHEMA_VERSION};
use crate::packed;
use crate::{
    corrupt, count_query, history_query, Artifact, Drive, Filter, FleetRow, Kind, NewRecord, Param,
    Printed, Record, RecordId, Result, SeriesRow, Source, Store, StoreError, Summary,
    DRIVE_COLUMNS, RECORD_COLUMNS, RECORD_READ, SERIES_METRICS,
};

/// How long a writer waits for another one before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

/// The WAL's size, in pages (4 KiB), past which a commit copies it into
/// the database file (a checkpoint, with an fsync). SQLite's default, 1000
/// pages, is less than two 1-hour runs (2.3 MB each): every other put
/// paid for a checkpoint. A put leaves the copy to the store's close
/// instead (see `Drop`), which a command reaches right after; a process
/// that keeps the store open for many puts still checkpoints every 16 MiB.
const WAL_AUTOCHECKPOINT_PAGES: i64 = 4096;

/// An SQLite store.
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
}

/// Check the store file `path` and the files SQLite keeps beside it
/// (`-wal`, `-shm`, `-journal`) by the device crate's output rules (no
/// device, no loop device's backing file, no swap, no symlink to these);
/// returns the file to open (a symlink resolved). Nothing is created.
pub fn check_path(path: &Path) -> Result<PathBuf> {
    use drivelab_device::output::{Output, OutputError, Unsafe};
    // A device, a backing file or a symlink to one is bad input; a
    // directory that is missing or not one is a store that cannot be
    // reached (a warning when a result is saved).
    let bad = |e: OutputError| match e.unsafe_reason() {
        Some(Unsafe::NoDirectory { .. } | Unsafe::NotADirectory { .. }) | None => {
            StoreError::Unreachable {
                location: path.display().to_string(),
                why: e.to_string(),
            }
        }
        Some(_) => StoreError::BadLocation {
            location: path.display().to_string(),
            why: e.to_string(),
        },
    };
    let resolved = match Output::new(path).option("--store").check() {
        Ok(c) => c.path,
        // A missing directory is created by the caller.
        Err(e)
            if matches!(
                e.unsafe_reason(),
                Some(drivelab_device::output::Unsafe::NoDirectory { .. })
            ) =>
        {
            path.to_path_buf()
        }
        Err(e) => return Err(bad(e)),
    };
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut side = resolved.clone().into_os_string();
        side.push(suffix);
        match Output::new(PathBuf::from(side)).option("--store").check() {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.unsafe_reason(),
                    Some(drivelab_device::output::Unsafe::NoDirectory { .. })
                ) => {}
            Err(e) => return Err(bad(e)),
        }
    }
    Ok(resolved)
}

impl SqliteStore {
    /// Open (creating it and its directory when missing) the store at `path`.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        let unreachable = |why: String| StoreError::Unreachable {
            location: path.display().to_string(),
            why,
        };
        if path.is_dir() {
            return Err(StoreError::BadLocation {
                location: path.display().to_string(),
                why: "is a directory; give a file name such as results.db".into(),
            });
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| unreachable(format!("cannot create {}: {e}", dir.display())))?;
        }
        let path = &check_path(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn =
            Connection::open_with_flags(path, flags).map_err(|e| unreachable(e.to_string()))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| not_a_store(path, e))?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| not_a_store(path, e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(unreachable(format!(
                "the file system refused WAL mode (journal mode {mode}); put the store on a local file system"
            )));
        }
        // NORMAL, in WAL mode: a committed record survives the process
        // being killed (the WAL is written before the commit returns); a
        // power cut may take back the last records but never corrupts the
        // file. FULL would add an fsync per record (~15 ms here) to keep
        // those too; the result has been printed by then anyway.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .and_then(|_| conn.pragma_update(None, "foreign_keys", "ON"))
            .and_then(|_| conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES))
            .map_err(|e| not_a_store(path, e))?;
        Ok(SqliteStore {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The version recorded, 0 for a new store (no version table yet).
    fn version(&self) -> Result<u32> {
        let has_table: Option<i64> = self
            .conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| not_a_store(&self.path, e))?;
        if has_table.is_none() {
            // A database of tables but not ours: migrating would fail on
            // a name it holds, or mix drivelab's tables into it.
            let other: Option<String> = self
                .conn
                .query_row(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .optional()
                .map_err(|e| not_a_store(&self.path, e))?;
            if let Some(t) = other {
                return Err(StoreError::BadLocation {
                    location: self.path.display().to_string(),
                    why: format!(
                        "is an SQLite database of another program (table {t:?}), not a drivelab store; give another path"
                    ),
                });
            }
            return Ok(0);
        }
        let v: i64 = self.conn.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_version",
            [],
            |r| r.get(0),
        )?;
        Ok(u32::try_from(v).unwrap_or(u32::MAX))
    }

    fn too_new(&self, found: u32) -> StoreError {
        StoreError::TooNew {
            location: self.path.display().to_string(),
            found,
            supported: SCHEMA_VERSION,
        }
    }

    /// Apply the migrations up to `target` (see [`crate::migrate_to`]).
    pub fn migrate_to(&mut self, target: u32) -> Result<Migration> {
        let target = target.min(SCHEMA_VERSION);
        // A read first: an up-to-date store takes no write lock.
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
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(migrate::VERSION_TABLE)?;
        let found: i64 = tx.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_version",
            [],
            |r| r.get(0),
        )?;
        let found = u32::try_from(found).unwrap_or(u32::MAX);
        if found > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                location: self.path.display().to_string(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        for (v, text) in migrate::pending(found, target) {
            tx.execute_batch(&migrate::sql(text, Dialect::Sqlite))?;
            tx.execute(
                "INSERT INTO schema_version (version, applied_ms) VALUES (?1, ?2)",
                params![v, migrate::now_ms()],
            )?;
        }
        tx.commit()?;
        Ok(Migration {
            from: found,
            to: found.max(target),
        })
    }
}

fn parse_source(id: RecordId, s: &str) -> Result<Source> {
    Source::parse(s).ok_or_else(|| corrupt(id.0, format!("unknown series source '{s}'")))
}

impl Drop for SqliteStore {
    /// Copy the WAL into the database file now that this connection's
    /// puts are done (see [`WAL_AUTOCHECKPOINT_PAGES`]). PASSIVE: it waits
    /// for no reader or writer, and what it cannot copy the next close or
    /// autocheckpoint copies. SQLite does the same when the last connection
    /// closes; this does it when others are open too (24 erase processes).
    fn drop(&mut self) {
        let _ = self.conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE)");
    }
}

/// An SQLite error while opening: a file that is not a database is bad
/// input; anything else is reported as it is.
fn not_a_store(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => StoreError::BadLocation {
            location: path.display().to_string(),
            why: "is not a drivelab store (not an SQLite database); give another path".into(),
        },
        Some(rusqlite::ErrorCode::CannotOpen) | Some(rusqlite::ErrorCode::ReadOnly) => {
            StoreError::Unreachable {
                location: path.display().to_string(),
                why: e.to_string(),
            }
        }
        _ => StoreError::Sqlite(e),
    }
}

fn to_sql(p: &Param) -> rusqlite::types::Value {
    match p {
        Param::Text(s) => rusqlite::types::Value::Text(s.clone()),
        Param::Int(i) => rusqlite::types::Value::Integer(*i),
    }
}

fn summary(r: &Row<'_>) -> rusqlite::Result<(i64, String, Summary)> {
    let id: i64 = r.get(0)?;
    let kind: String = r.get(1)?;
    Ok((
        id,
        kind,
        Summary {
            id: RecordId(id),
            kind: Kind::Run,
            time_ms: r.get(2)?,
            host: r.get(3)?,
            drives: r.get(4)?,
            verdict: r.get(5)?,
            exit_status: r.get(6)?,
            headline: r.get(7)?,
            spec_key: r.get(8)?,
            fleet: crate::fleet_tag(r.get(9)?, r.get(10)?),
        },
    ))
}

/// Insert one record in the open transaction `tx`.
fn insert(tx: &rusqlite::Transaction<'_>, rec: &NewRecord) -> Result<RecordId> {
    let placeholders: Vec<String> = (1..=RECORD_COLUMNS.len())
        .map(|i| format!("?{i}"))
        .collect();
    tx.execute(
        &format!(
            "INSERT INTO records ({}) VALUES ({})",
            RECORD_COLUMNS.join(", "),
            placeholders.join(", ")
        ),
        params![
            rec.kind.as_str(),
            rec.time_ms,
            rec.host,
            rec.kernel,
            rec.version,
            rec.spec_key(),
            rec.printed.as_str(),
            rec.verdict,
            rec.exit_status,
            rec.headline,
            rec.drive_summary(),
        ],
    )?;
    let id = tx.last_insert_rowid();
    // Only for a fleet's record: a store below schema version 4 has no
    // such columns (tests put records into one on purpose).
    if let Some(f) = &rec.fleet {
        tx.execute(
            "UPDATE records SET node = ?1, fleet_run = ?2 WHERE id = ?3",
            params![f.node, f.run_id, id],
        )?;
    }
    tx.execute(
        "INSERT INTO record_texts (record_id, spec_json, result_json, result_text) VALUES (?1, ?2, ?3, ?4)",
        params![id, rec.spec.to_string(), rec.result_json, rec.result_text],
    )?;
    {
        let mut st = tx.prepare_cached(&format!(
            "INSERT INTO drives (record_id, {DRIVE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
        ))?;
        for (i, d) in rec.drives.iter().enumerate() {
            st.execute(params![
                id,
                i as i64,
                d.path,
                d.model,
                d.serial,
                d.firmware,
                d.wwn,
                d.capacity_bytes.and_then(|c| i64::try_from(c).ok()),
                d.logical_sector,
                d.physical_sector,
                d.transport,
            ])?;
        }
    }
    if !rec.series.is_empty() {
        let mut st = tx.prepare_cached(
            "INSERT INTO series_columns (record_id, source, name, points, columns) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for p in packed::pack(&rec.series) {
            st.execute(params![
                id,
                p.source.as_str(),
                p.name,
                i64::try_from(p.points).unwrap_or(i64::MAX),
                p.columns
            ])?;
        }
    }
    // Only when there are some: a store at schema version 1 has no
    // artifacts table (tests put records into one on purpose).
    if !rec.artifacts.is_empty() {
        let mut st = tx.prepare_cached(
            "INSERT INTO artifacts (record_id, name, content) VALUES (?1, ?2, ?3)",
        )?;
        for a in &rec.artifacts {
            st.execute(params![id, a.name, a.content])?;
        }
    }
    Ok(RecordId(id))
}

impl Store for SqliteStore {
    fn put(&mut self, rec: &NewRecord) -> Result<RecordId> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let id = insert(&tx, rec)?;
        tx.commit()?;
        Ok(id)
    }

    fn put_all(&mut self, records: &[NewRecord]) -> Result<Vec<RecordId>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let ids = records
            .iter()
            .map(|r| insert(&tx, r))
            .collect::<Result<Vec<_>>>()?;
        tx.commit()?;
        Ok(ids)
    }

    fn get(&mut self, id: RecordId) -> Result<Record> {
        let row = self
            .conn
            .query_row(
                &format!("SELECT {RECORD_READ} WHERE r.id = ?1"),
                [id.0],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, String>(6)?,
                        r.get::<_, String>(7)?,
                        r.get::<_, Option<String>>(8)?,
                        r.get::<_, String>(9)?,
                        r.get::<_, String>(10)?,
                        r.get::<_, i32>(11)?,
                        r.get::<_, String>(12)?,
                    ))
                },
            )
            .optional()?
            .ok_or(StoreError::NotFound(id))?;
        let (
            kind,
            time_ms,
            host,
            kernel,
            version,
            spec_json,
            spec_key,
            result_json,
            result_text,
            printed,
            verdict,
            exit_status,
            headline,
        ) = row;
        let kind: Kind = kind.parse().map_err(|e: String| corrupt(id.0, e))?;
        let printed = Printed::parse(&printed)
            .ok_or_else(|| corrupt(id.0, format!("unknown printed format '{printed}'")))?;
        let mut st = self.conn.prepare_cached(&format!(
            "SELECT {DRIVE_COLUMNS} FROM drives WHERE record_id = ?1 ORDER BY position"
        ))?;
        let drives = st
            .query_map([id.0], |r| {
                Ok(Drive {
                    path: r.get(1)?,
                    model: r.get(2)?,
                    serial: r.get(3)?,
                    firmware: r.get(4)?,
                    wwn: r.get(5)?,
                    capacity_bytes: r
                        .get::<_, Option<i64>>(6)?
                        .and_then(|c| u64::try_from(c).ok()),
                    logical_sector: r.get(7)?,
                    physical_sector: r.get(8)?,
                    transport: r.get(9)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut st = self.conn.prepare_cached(
            "SELECT name, content FROM artifacts WHERE record_id = ?1 ORDER BY rowid",
        )?;
        let artifacts = st
            .query_map([id.0], |r| {
                Ok(Artifact {
                    name: r.get(0)?,
                    content: r.get(1)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Record {
            id,
            kind,
            time_ms,
            host,
            kernel,
            version,
            spec_json,
            spec_key,
            result_json,
            result_text,
            printed,
            verdict,
            exit_status,
            headline,
            drives,
            artifacts,
        })
    }

    fn history(&mut self, f: &Filter) -> Result<Vec<Summary>> {
        let (sql, params) = history_query(f, |n| format!("?{n}"));
        let mut st = self.conn.prepare_cached(&sql)?;
        let rows = st.query_map(params_from_iter(params.iter().map(to_sql)), summary)?;
        let mut out = Vec::new();
        for r in rows {
            let (id, kind, mut s) = r?;
            s.kind = kind.parse().map_err(|e: String| corrupt(id, e))?;
            out.push(s);
        }
        Ok(out)
    }

    fn count(&mut self, f: &Filter, at_most: u64) -> Result<u64> {
        let (sql, params) = count_query(f, at_most, |n| format!("?{n}"));
        let mut st = self.conn.prepare_cached(&sql)?;
        let n: i64 = st.query_row(params_from_iter(params.iter().map(to_sql)), |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn series(&mut self, id: RecordId) -> Result<Vec<SeriesRow>> {
        let mut out = Vec::new();
        let mut st = self.conn.prepare_cached(
            "SELECT source, name, points, columns FROM series_columns WHERE record_id = ?1",
        )?;
        let packs = st
            .query_map([id.0], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Vec<u8>>(3)?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        for (source, name, points, columns) in packs {
            let source = parse_source(id, &source)?;
            let points = usize::try_from(points)
                .map_err(|_| corrupt(id.0, format!("series '{name}': {points} seconds")))?;
            out.extend(
                packed::unpack(source, &name, points, &columns).map_err(|e| corrupt(id.0, e))?,
            );
        }
        // Records stored before schema version 3: one row a second.
        let cols = SERIES_METRICS.join(", ");
        let mut st = self.conn.prepare_cached(&format!(
            "SELECT source, name, t_s, {cols} FROM series WHERE record_id = ?1"
        ))?;
        let rows = st.query_map([id.0], |r| {
            let mut m = [None; 12];
            for (i, v) in m.iter_mut().enumerate() {
                *v = r.get::<_, Option<f64>>(3 + i)?;
            }
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, f64>(2)?,
                m,
            ))
        })?;
        for r in rows {
            let (source, name, t_s, m) = r?;
            out.push(SeriesRow::from_metrics(
                parse_source(id, &source)?,
                name,
                t_s,
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
        let mut st = self
            .conn
            .prepare(&crate::fleet_query(run_id, |i| format!("?{i}")))?;
        let read = |r: &Row<'_>| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        };
        let rows = match run_id {
            Some(run) => st
                .query_map([run], read)?
                .collect::<rusqlite::Result<Vec<_>>>()?,
            None => st
                .query_map([], read)?
                .collect::<rusqlite::Result<Vec<_>>>()?,
        };
        rows.into_iter()
            .map(|(id, kind, node, run)| crate::fleet_row(id, &kind, node, run))
            .collect()
    }

    fn schema_version(&mut self) -> Result<u32> {
        self.version()
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_a_database_is_bad_input() {
        let dir = std::env::temp_dir().join(format!("drivelab-store-notdb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("notes.txt");
        std::fs::write(&f, vec![b'x'; 4096]).unwrap();
        let e = SqliteStore::open(&f)
            .and_then(|mut s| s.migrate())
            .expect_err("a text file opened as a store");
        assert!(e.is_bad_input(), "{e}");
        let e = SqliteStore::open(&dir)
            .err()
            .expect("a directory opened as a store");
        assert!(e.is_bad_input(), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
