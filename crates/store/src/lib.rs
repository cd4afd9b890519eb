//! drivelab's result store: every run, test, erase and replay is kept, so
//! that a lab can ask how a drive did last month, whether firmware B is
//! slower than A, and get back exactly what a run printed.
//!
//! One interface, [`Store`], two backends: SQLite (the default, a file in
//! the user's data directory; WAL mode with a busy timeout so that many
//! drivelab processes can write at once) and PostgreSQL (a lab's shared
//! server). [`open`] picks the backend from a location string, and brings
//! the schema up to date (see [`migrate`]); a store written by a newer
//! drivelab is refused rather than guessed at.
//!
//! A record holds the result JSON as printed (byte for byte), the text
//! when text was printed, the spec, the drives involved, the host, and
//! the per-second series in their own table so that they can be read back
//! by record, source and name ([`Store::series`] gives [`SeriesRow`]s),
//! exported and plotted; each series is one row with its seconds packed
//! as columns (schema version 3), so that an hour of seconds stores in a
//! few ms.

pub mod extract;
pub mod migrate;
mod packed;
mod pg;
mod sqlite;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use migrate::{Migration, SCHEMA_VERSION};

/// The environment variable that names the store when `--store` is not
/// given: a path, or a `postgres://` / `postgresql://` connection string.
pub const STORE_ENV: &str = "DRIVELAB_STORE";

/// The environment variable a fleet's pod gets its node's name in (from
/// the Kubernetes downward API, `spec.nodeName`); with [`FLEET_RUN_ENV`]
/// it makes the [`FleetTag`] of every record the pod stores.
pub const FLEET_NODE_ENV: &str = "DRIVELAB_FLEET_NODE";

/// The environment variable a fleet's pod gets the fleet run's ID in.
pub const FLEET_RUN_ENV: &str = "DRIVELAB_FLEET_RUN";

/// Where in a fleet a record was made: the Kubernetes node and the fleet
/// run (`drivelab fleet`) it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetTag {
    /// The node's name, as Kubernetes names it.
    pub node: String,
    /// The fleet run's ID.
    pub run_id: String,
}

impl FleetTag {
    /// The tag the environment gives ([`FLEET_NODE_ENV`] and
    /// [`FLEET_RUN_ENV`], both set and not blank), or none.
    pub fn from_env() -> Option<FleetTag> {
        let get = |k: &str| {
            std::env::var(k)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        Some(FleetTag {
            node: get(FLEET_NODE_ENV)?,
            run_id: get(FLEET_RUN_ENV)?,
        })
    }
}

/// A record made in a fleet, as [`Store::fleet`] lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetRow {
    /// The record.
    pub id: RecordId,
    /// Its kind.
    pub kind: Kind,
    /// Where it was made.
    pub tag: FleetTag,
}

/// Why the store could not do what was asked. Each message is one line
/// that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The location string is not a path nor a PostgreSQL connection string.
    #[error("store {location}: {why}")]
    BadLocation {
        /// The location as given.
        location: String,
        /// What is wrong with it.
        why: String,
    },
    /// The store cannot be opened or reached (a missing directory that
    /// cannot be created, a server that does not answer).
    #[error("cannot open the store {location}: {why}; check --store or ${STORE_ENV}, or pass --no-store")]
    Unreachable {
        /// Where the store was looked for.
        location: String,
        /// What failed.
        why: String,
    },
    /// The store was written by a newer drivelab.
    #[error("the store {location} has schema version {found}, newer than the {supported} this drivelab knows: upgrade drivelab to read it (or give another store with --store)")]
    TooNew {
        /// Where the store is.
        location: String,
        /// Its schema version.
        found: u32,
        /// The newest schema version this build knows.
        supported: u32,
    },
    /// No record has that ID.
    #[error("no record {0} in the store; list them with 'drivelab history'")]
    NotFound(RecordId),
    /// A stored value cannot be read back (a damaged row).
    #[error("record {id}: {why}")]
    Corrupt {
        /// The record.
        id: RecordId,
        /// What is wrong.
        why: String,
    },
    /// An SQLite failure. Not a `source`: [`sqlite_words`] says all of it
    /// in one line, and a chain would print SQLite's message again.
    #[error("SQLite store: {}", sqlite_words(.0))]
    Sqlite(rusqlite::Error),
    /// A PostgreSQL failure.
    #[error("PostgreSQL store: {0}")]
    Postgres(#[from] postgres::Error),
    /// A file-system failure (creating the store's directory).
    #[error("store: {0}")]
    Io(#[from] std::io::Error),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        StoreError::Sqlite(e)
    }
}

/// An SQLite error in one line that says what to do: rusqlite's own text
/// repeats SQLite's message up to three times and, for a failed statement,
/// holds the whole SQL text (a migration's is a page). A full disk is named
/// as the kernel names it (ENOSPC); SQLite reports it as "database or disk
/// is full", or, when the write-ahead log or its index cannot grow, as a
/// disk I/O error.
pub fn sqlite_words(e: &rusqlite::Error) -> String {
    use rusqlite::ErrorCode;
    let (code, msg) = match e {
        rusqlite::Error::SqliteFailure(f, msg) => (Some(f.code), msg.clone()),
        rusqlite::Error::SqlInputError { error, msg, .. } => (Some(error.code), Some(msg.clone())),
        other => (other.sqlite_error_code(), None),
    };
    let msg = msg.unwrap_or_else(|| match e {
        rusqlite::Error::SqliteFailure(f, None) => f.to_string(),
        other => other.to_string(),
    });
    match code {
        Some(ErrorCode::DiskFull) => format!(
            "no space left on device (ENOSPC): {msg}; free space on the store's file system, or give another store with --store (or --no-store)"
        ),
        Some(ErrorCode::SystemIoFailure) => format!(
            "{msg}: the file system under the store failed a write; when it is full (ENOSPC, no space left on device) free space, else check it; or give another store with --store (or --no-store)"
        ),
        _ => msg,
    }
}

impl StoreError {
    /// Whether the error is in what the user gave (a location, an ID, a
    /// store too new): exit status 2 rather than a failure while running.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            StoreError::BadLocation { .. }
                | StoreError::Unreachable { .. }
                | StoreError::TooNew { .. }
                | StoreError::NotFound(_)
        )
    }
}

/// Shorthand for the store's results.
pub type Result<T> = std::result::Result<T, StoreError>;

/// A record's ID: a small integer that increases with every record, typed
/// as `17` (or `#17`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RecordId(pub i64);

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for RecordId {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<RecordId, String> {
        let t = s.trim();
        let t = t.strip_prefix('#').unwrap_or(t);
        match t.parse::<i64>() {
            Ok(n) if n > 0 => Ok(RecordId(n)),
            _ => Err(format!(
                "'{s}' is not a record ID (a number such as 17, as 'drivelab history' lists them)"
            )),
        }
    }
}

/// What kind of command made a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `drivelab run`: a workload.
    Run,
    /// `drivelab test`: test steps.
    Test,
    /// `drivelab erase`: erased drives and their certificates.
    Erase,
    /// `drivelab trace replay`.
    Replay,
    /// A trace audit.
    Audit,
    /// A season of repeated runs.
    Season,
}

impl Kind {
    /// Every kind, in the order the help lists them.
    pub const ALL: [Kind; 6] = [
        Kind::Run,
        Kind::Test,
        Kind::Erase,
        Kind::Replay,
        Kind::Audit,
        Kind::Season,
    ];

    /// The kind's word, as stored and typed.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Test => "test",
            Kind::Erase => "erase",
            Kind::Replay => "replay",
            Kind::Audit => "audit",
            Kind::Season => "season",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Kind, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown kind '{s}'; give one of {}",
                    Kind::ALL.map(Kind::as_str).join(", ")
                )
            })
    }
}

/// Which format the command printed its result in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Printed {
    /// Text (the record also keeps the JSON rendering).
    Text,
    /// JSON (exactly `result_json`).
    Json,
}

impl Printed {
    fn as_str(self) -> &'static str {
        match self {
            Printed::Text => "text",
            Printed::Json => "json",
        }
    }

    fn parse(s: &str) -> Option<Printed> {
        match s {
            "text" => Some(Printed::Text),
            "json" => Some(Printed::Json),
            _ => None,
        }
    }
}

/// One drive involved in a record, as the kernel described it when the
/// record was made. Every field but the path may be unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drive {
    /// The device as used (`/dev/sdb`), or a file's path.
    pub path: String,
    /// Model string.
    pub model: Option<String>,
    /// Serial number.
    pub serial: Option<String>,
    /// Firmware revision.
    pub firmware: Option<String>,
    /// World-wide name (the kernel's `wwid`).
    pub wwn: Option<String>,
    /// Capacity, bytes.
    pub capacity_bytes: Option<u64>,
    /// Logical sector size, bytes.
    pub logical_sector: Option<u32>,
    /// Physical sector size, bytes.
    pub physical_sector: Option<u32>,
    /// How it is attached: nvme, ata, scsi, virtio, loop, …
    pub transport: Option<String>,
}

impl Drive {
    /// "MODEL SERIAL" (or the path when neither is known).
    pub fn label(&self) -> String {
        let parts: Vec<&str> = [self.model.as_deref(), self.serial.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        if parts.is_empty() {
            self.path.clone()
        } else {
            parts.join(" ")
        }
    }
}

/// Where a series row comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// drivelab's own per-interval figures (`jobs[].timeseries`).
    #[default]
    Engine,
    /// The device's per-second counters (`device_check[].series`).
    Device,
}

impl Source {
    /// The source's word, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Engine => "engine",
            Source::Device => "device",
        }
    }

    fn parse(s: &str) -> Option<Source> {
        match s {
            "engine" => Some(Source::Engine),
            "device" => Some(Source::Device),
            _ => None,
        }
    }
}

/// One second (one interval) of one series: an engine job's figures or a
/// device's counters. Fields that do not apply to the source are `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesRow {
    /// Engine or device.
    pub source: Source,
    /// The job's name (engine) or the device's kernel name (device).
    pub name: String,
    /// Interval start, seconds from the start of measurement.
    pub t_s: f64,
    /// Engine: I/O per second.
    pub iops: Option<f64>,
    /// Engine: bytes per second.
    pub bw_bytes: Option<f64>,
    /// Engine: mean latency, ns.
    pub lat_mean_ns: Option<f64>,
    /// Engine: 99th percentile latency, ns.
    pub lat_p99_ns: Option<f64>,
    /// Device: reads per second.
    pub r_iops: Option<f64>,
    /// Device: writes per second.
    pub w_iops: Option<f64>,
    /// Device: bytes read per second.
    pub r_bw_bytes: Option<f64>,
    /// Device: bytes written per second.
    pub w_bw_bytes: Option<f64>,
    /// Device: busy time, percent.
    pub util_pct: Option<f64>,
    /// Device: average queue size.
    pub aqu_sz: Option<f64>,
    /// Device: average read wait, ms.
    pub r_await_ms: Option<f64>,
    /// Device: average write wait, ms.
    pub w_await_ms: Option<f64>,
}

/// The metric columns of a series row, in the order stored and exported.
pub const SERIES_METRICS: [&str; 12] = [
    "iops",
    "bw_bytes",
    "lat_mean_ns",
    "lat_p99_ns",
    "r_iops",
    "w_iops",
    "r_bw_bytes",
    "w_bw_bytes",
    "util_pct",
    "aqu_sz",
    "r_await_ms",
    "w_await_ms",
];

impl SeriesRow {
    /// The metric columns, in [`SERIES_METRICS`] order.
    pub fn metrics(&self) -> [Option<f64>; 12] {
        [
            self.iops,
            self.bw_bytes,
            self.lat_mean_ns,
            self.lat_p99_ns,
            self.r_iops,
            self.w_iops,
            self.r_bw_bytes,
            self.w_bw_bytes,
            self.util_pct,
            self.aqu_sz,
            self.r_await_ms,
            self.w_await_ms,
        ]
    }

    /// Build a row from its metric columns (in [`SERIES_METRICS`] order).
    pub fn from_metrics(source: Source, name: String, t_s: f64, m: [Option<f64>; 12]) -> SeriesRow {
        SeriesRow {
            source,
            name,
            t_s,
            iops: m[0],
            bw_bytes: m[1],
            lat_mean_ns: m[2],
            lat_p99_ns: m[3],
            r_iops: m[4],
            w_iops: m[5],
            r_bw_bytes: m[6],
            w_bw_bytes: m[7],
            util_pct: m[8],
            aqu_sz: m[9],
            r_await_ms: m[10],
            w_await_ms: m[11],
        }
    }
}

/// A file kept with a record (an erase certificate), as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// Its name (the file's name when it was written).
    pub name: String,
    /// Its content.
    pub content: String,
}

/// What a command hands the store: everything but the ID.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRecord {
    /// The kind of command.
    pub kind: Kind,
    /// When it started (or finished, when no start is known), Unix ms.
    pub time_ms: i64,
    /// Host name.
    pub host: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// drivelab's version.
    pub version: String,
    /// The full spec: command line and options, as JSON.
    pub spec: serde_json::Value,
    /// The result JSON text, exactly as printed (or as it would have been).
    pub result_json: String,
    /// The text printed, when text was printed.
    pub result_text: Option<String>,
    /// Which of the two was printed.
    pub printed: Printed,
    /// The verdict in a few words ("agrees", "passed", "erased", …).
    pub verdict: String,
    /// The command's exit status.
    pub exit_status: i32,
    /// One line of figures for `history` ("12.1k IOPS, 47.3 MB/s").
    pub headline: String,
    /// The drives involved.
    pub drives: Vec<Drive>,
    /// Per-second series.
    pub series: Vec<SeriesRow>,
    /// Files kept with the record.
    pub artifacts: Vec<Artifact>,
    /// The node and fleet run, for a record made in a fleet.
    pub fleet: Option<FleetTag>,
}

impl NewRecord {
    /// A digest of the kind and the spec's `options` (or the whole spec when
    /// it has none): two records with the same key ran the same workload.
    /// Repeats are records with the same key on the same drives.
    pub fn spec_key(&self) -> String {
        spec_key(self.kind, &self.spec)
    }

    /// The drives, "MODEL SERIAL" each, joined by ", ".
    pub fn drive_summary(&self) -> String {
        self.drives
            .iter()
            .map(Drive::label)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// See [`NewRecord::spec_key`].
pub fn spec_key(kind: Kind, spec: &serde_json::Value) -> String {
    use sha2::{Digest, Sha256};
    let options = spec.get("options").unwrap_or(spec);
    // serde_json's maps are sorted: the text is canonical.
    let text = format!("{kind}\n{options}");
    let d = Sha256::digest(text.as_bytes());
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// A stored record (without its series: see [`Store::series`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Its ID.
    pub id: RecordId,
    /// The kind of command.
    pub kind: Kind,
    /// When, Unix ms.
    pub time_ms: i64,
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// drivelab's version.
    pub version: String,
    /// The spec, as JSON text.
    pub spec_json: String,
    /// See [`NewRecord::spec_key`].
    pub spec_key: String,
    /// The result JSON, exactly as printed.
    pub result_json: String,
    /// The text printed, when text was printed.
    pub result_text: Option<String>,
    /// Which was printed.
    pub printed: Printed,
    /// The verdict in a few words.
    pub verdict: String,
    /// The command's exit status.
    pub exit_status: i32,
    /// One line of figures.
    pub headline: String,
    /// The drives involved.
    pub drives: Vec<Drive>,
    /// Files kept with it.
    pub artifacts: Vec<Artifact>,
}

/// One line of `history`: a record's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Its ID.
    pub id: RecordId,
    /// The kind.
    pub kind: Kind,
    /// When, Unix ms.
    pub time_ms: i64,
    /// Host name.
    pub host: String,
    /// The drives, "MODEL SERIAL" each.
    pub drives: String,
    /// The verdict.
    pub verdict: String,
    /// The exit status.
    pub exit_status: i32,
    /// One line of figures.
    pub headline: String,
    /// See [`NewRecord::spec_key`].
    pub spec_key: String,
    /// The node and fleet run, for a record made in a fleet.
    pub fleet: Option<FleetTag>,
}

/// What `history` selects. Every field narrows; the default is everything
/// (newest first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only records with a drive of this serial.
    pub serial: Option<String>,
    /// Only records with a drive of this model.
    pub model: Option<String>,
    /// Only this kind.
    pub kind: Option<Kind>,
    /// Only records at or after this Unix time, ms.
    pub since_ms: Option<i64>,
    /// Only records with this spec key.
    pub spec_key: Option<String>,
    /// Only records a fleet made on this node.
    pub node: Option<String>,
    /// Only records of this fleet run.
    pub fleet_run: Option<String>,
    /// At most this many (the newest); `None` = all.
    pub limit: Option<u64>,
}

/// How many records `drivelab history` lists when not told otherwise
/// (`--limit`): a listing stays quick on a store of any size.
pub const DEFAULT_HISTORY_LIMIT: u64 = 50;

/// How far `drivelab history` counts the records past its limit ("N more
/// match"); past this it says "at least".
pub const HISTORY_COUNT_LIMIT: u64 = 1_000;

/// The one interface over the backends.
pub trait Store {
    /// Keep a record; returns its new ID. All of it or nothing is stored.
    fn put(&mut self, record: &NewRecord) -> Result<RecordId>;
    /// Keep many records (an import), in as few transactions as the
    /// backend likes; returns their IDs in order. The default puts each.
    fn put_all(&mut self, records: &[NewRecord]) -> Result<Vec<RecordId>> {
        records.iter().map(|r| self.put(r)).collect()
    }
    /// A record by ID.
    fn get(&mut self, id: RecordId) -> Result<Record>;
    /// Records matching `filter`, newest first.
    fn history(&mut self, filter: &Filter) -> Result<Vec<Summary>>;
    /// How many records match `filter`, whatever its `limit`, counting no
    /// further than `at_most` (a count stays quick on a store of any size).
    fn count(&mut self, filter: &Filter, at_most: u64) -> Result<u64>;
    /// A record's series, by source, name and time.
    fn series(&mut self, id: RecordId) -> Result<Vec<SeriesRow>>;
    /// The records made in a fleet, of the run `run_id` (or of every run),
    /// oldest first.
    fn fleet(&mut self, run_id: Option<&str>) -> Result<Vec<FleetRow>>;
    /// Bring the schema up to [`SCHEMA_VERSION`] (done by [`open`]); a
    /// newer schema is refused.
    fn migrate(&mut self) -> Result<Migration>;
    /// The schema version the store is at.
    fn schema_version(&mut self) -> Result<u32>;
    /// Where the store is, for messages (a path, or a connection string
    /// without its password).
    fn location(&self) -> String;
}

/// Where a store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string.
    Postgres(String),
}

impl Location {
    /// Read a location: `postgres://…` or `postgresql://…` is a server,
    /// anything else a file path.
    pub fn parse(spec: &str) -> Result<Location> {
        let s = spec.trim();
        if s.is_empty() {
            return Err(StoreError::BadLocation {
                location: spec.into(),
                why: "empty; give a file path or postgres://HOST/DB".into(),
            });
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(Location::Postgres(s.to_string()));
        }
        if let Some((scheme, _)) = s.split_once("://") {
            return Err(StoreError::BadLocation {
                location: spec.into(),
                why: format!(
                    "'{scheme}://' is not a store; give a file path or postgres://HOST/DB"
                ),
            });
        }
        Ok(Location::Sqlite(PathBuf::from(s)))
    }

    /// The location to use: `spec` when given, else `$DRIVELAB_STORE`,
    /// else the default file (see [`default_path`]).
    pub fn resolve(spec: Option<&str>) -> Result<Location> {
        if let Some(s) = spec {
            return Location::parse(s);
        }
        match std::env::var(STORE_ENV) {
            Ok(s) if !s.trim().is_empty() => Location::parse(&s),
            _ => default_path().map(Location::Sqlite),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(s) => f.write_str(&pg::redact(s)),
        }
    }
}

/// The default store: `$XDG_DATA_HOME/drivelab/results.db`, or
/// `~/.local/share/drivelab/results.db`.
pub fn default_path() -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_DATA_HOME") {
        Some(d) if Path::new(&d).is_absolute() => PathBuf::from(d),
        _ => match std::env::var_os("HOME") {
            Some(h) if !h.is_empty() => PathBuf::from(h).join(".local/share"),
            _ => {
                return Err(StoreError::BadLocation {
                    location: "(default)".into(),
                    why: "neither $XDG_DATA_HOME nor $HOME is set; give --store PATH".into(),
                })
            }
        },
    };
    Ok(base.join("drivelab").join("results.db"))
}

/// Open the store `spec` names (see [`Location::resolve`]), creating it on
/// first use and bringing its schema up to date.
pub fn open(spec: Option<&str>) -> Result<Box<dyn Store>> {
    open_location(&Location::resolve(spec)?)
}

/// Check, creating and writing nothing, that the store `spec` names (as
/// [`open`] takes it) may be written: an SQLite file is checked by the
/// device crate's output rules, with the `-wal`, `-shm` and `-journal`
/// files SQLite keeps beside it; a PostgreSQL
/// URL is not contacted.
pub fn check(spec: Option<&str>) -> Result<()> {
    match Location::resolve(spec)? {
        Location::Sqlite(p) => sqlite::check_path(&p).map(drop),
        Location::Postgres(_) => Ok(()),
    }
}

/// Open the store at `loc` (see [`open`]).
pub fn open_location(loc: &Location) -> Result<Box<dyn Store>> {
    let mut s: Box<dyn Store> = match loc {
        Location::Sqlite(p) => Box::new(sqlite::SqliteStore::open(p)?),
        Location::Postgres(c) => Box::new(pg::PgStore::connect(c)?),
    };
    s.migrate()?;
    Ok(s)
}

/// Open the store at `loc` without migrating it (for tests and tools that
/// look at an older schema on purpose).
pub fn open_unmigrated(loc: &Location) -> Result<Box<dyn Store>> {
    Ok(match loc {
        Location::Sqlite(p) => Box::new(sqlite::SqliteStore::open(p)?),
        Location::Postgres(c) => Box::new(pg::PgStore::connect(c)?),
    })
}

/// Bring the store at `loc` to schema version `target` exactly (at most
/// [`SCHEMA_VERSION`]): for tests of upgrades from older versions.
pub fn migrate_to(loc: &Location, target: u32) -> Result<Migration> {
    match loc {
        Location::Sqlite(p) => sqlite::SqliteStore::open(p)?.migrate_to(target),
        Location::Postgres(c) => pg::PgStore::connect(c)?.migrate_to(target),
    }
}

/// A value bound to a query parameter.
#[derive(Debug, Clone, PartialEq)]
enum Param {
    Text(String),
    Int(i64),
}

/// The query [`Store::fleet`] runs, with `ph(1)` the run's placeholder
/// when a run is given.
fn fleet_query(run_id: Option<&str>, ph: impl Fn(usize) -> String) -> String {
    let cond = match run_id {
        Some(_) => format!("fleet_run = {}", ph(1)),
        None => "fleet_run IS NOT NULL".to_string(),
    };
    format!("SELECT id, kind, node, fleet_run FROM records WHERE {cond} ORDER BY id")
}

/// A row of [`fleet_query`] read back.
fn fleet_row(id: i64, kind: &str, node: Option<String>, run: Option<String>) -> Result<FleetRow> {
    Ok(FleetRow {
        id: RecordId(id),
        kind: kind.parse().map_err(|e: String| corrupt(id, e))?,
        tag: FleetTag {
            node: node.ok_or_else(|| corrupt(id, "a fleet record without its node"))?,
            run_id: run.unwrap_or_default(),
        },
    })
}

/// A record's fleet tag from its `node` and `fleet_run` columns: none
/// unless the record was made in a fleet (the node is set).
fn fleet_tag(node: Option<String>, run: Option<String>) -> Option<FleetTag> {
    node.map(|node| FleetTag {
        node,
        run_id: run.unwrap_or_default(),
    })
}

/// The columns `history` reads, in [`Summary`] order.
const SUMMARY_COLUMNS: &str =
    "id, kind, time_ms, host, drive_summary, verdict, exit_status, headline, spec_key, node, fleet_run";

/// The columns of `records` a record is written with (its large texts go
/// to `record_texts`).
const RECORD_COLUMNS: [&str; 11] = [
    "kind",
    "time_ms",
    "host",
    "kernel",
    "version",
    "spec_key",
    "printed",
    "verdict",
    "exit_status",
    "headline",
    "drive_summary",
];

/// The columns of a drive row after `record_id`, in [`Drive`] order.
const DRIVE_COLUMNS: &str = "position, path, model, serial, firmware, wwn, capacity_bytes, logical_sector, physical_sector, transport";

/// The columns of a record read back (after `id`), in [`Record`] order.
const RECORD_READ: &str = "r.kind, r.time_ms, r.host, r.kernel, r.version, t.spec_json, r.spec_key, t.result_json, t.result_text, r.printed, r.verdict, r.exit_status, r.headline FROM records r JOIN record_texts t ON t.record_id = r.id";

/// The `WHERE` clause (from " WHERE") that selects the records `f` asks
/// for, whatever its limit, with placeholders made by `ph(n)` (n from 1),
/// and its parameters.
fn history_where(f: &Filter, ph: impl Fn(usize) -> String) -> (String, Vec<Param>) {
    let mut sql = String::from(" WHERE 1 = 1");
    let mut params = Vec::new();
    let mut add = |cond: &str, p: Param, sql: &mut String| {
        params.push(p);
        sql.push_str(&cond.replace('?', &ph(params.len())));
    };
    if let Some(k) = f.kind {
        add(" AND kind = ?", Param::Text(k.as_str().into()), &mut sql);
    }
    if let Some(t) = f.since_ms {
        add(" AND time_ms >= ?", Param::Int(t), &mut sql);
    }
    if let Some(k) = &f.spec_key {
        add(" AND spec_key = ?", Param::Text(k.clone()), &mut sql);
    }
    if let Some(n) = &f.node {
        add(" AND node = ?", Param::Text(n.clone()), &mut sql);
    }
    if let Some(r) = &f.fleet_run {
        add(" AND fleet_run = ?", Param::Text(r.clone()), &mut sql);
    }
    if let Some(s) = &f.serial {
        // IN: one drive's records are few, found by the serial's index.
        add(
            " AND id IN (SELECT record_id FROM drives WHERE serial = ?)",
            Param::Text(s.clone()),
            &mut sql,
        );
    }
    if let Some(m) = &f.model {
        // A part of the model, any case: labs type "MZ7L3" for "SAMSUNG MZ7L3480HCHQ".
        let mut pat = String::from("%");
        for c in m.to_lowercase().chars() {
            if matches!(c, '%' | '_' | '\\') {
                pat.push('\\');
            }
            pat.push(c);
        }
        pat.push('%');
        // EXISTS, record by record newest first: a listing stops at its
        // limit. (IN built the list of every matching record first: 50,000
        // on a store of 100,000 runs of two models, 300 ms.)
        add(
            " AND EXISTS (SELECT 1 FROM drives d WHERE d.record_id = records.id AND LOWER(d.model) LIKE ? ESCAPE '\\')",
            Param::Text(pat),
            &mut sql,
        );
    }
    (sql, params)
}

/// `history`'s query for `f`, with placeholders made by `ph(n)` (n from 1),
/// and its parameters.
fn history_query(f: &Filter, ph: impl Fn(usize) -> String) -> (String, Vec<Param>) {
    let (cond, mut params) = history_where(f, &ph);
    let mut sql = format!("SELECT {SUMMARY_COLUMNS} FROM records{cond} ORDER BY id DESC");
    if let Some(n) = f.limit {
        params.push(Param::Int(i64::try_from(n).unwrap_or(i64::MAX)));
        sql.push_str(&format!(" LIMIT {}", ph(params.len())));
    }
    (sql, params)
}

/// The query that counts the records `f` selects (whatever its limit),
/// newest first, up to `at_most`.
fn count_query(f: &Filter, at_most: u64, ph: impl Fn(usize) -> String) -> (String, Vec<Param>) {
    let (cond, mut params) = history_where(f, &ph);
    params.push(Param::Int(i64::try_from(at_most).unwrap_or(i64::MAX)));
    (
        format!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM records{cond} ORDER BY id DESC LIMIT {}) AS counted",
            ph(params.len())
        ),
        params,
    )
}

/// Series rows in the order [`Store::series`] gives them: by source
/// ("device" before "engine"), name and time; stable, so that the seconds
/// of one series keep their stored order.
fn sort_series(rows: &mut [SeriesRow]) {
    rows.sort_by(|a, b| {
        (a.source.as_str(), &a.name)
            .cmp(&(b.source.as_str(), &b.name))
            .then(a.t_s.total_cmp(&b.t_s))
    });
}

/// A number stored as a float: non-finite values are kept as unknown.
fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

fn corrupt(id: i64, why: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        id: RecordId(id),
        why: why.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_read_as_files_or_servers() {
        assert_eq!(
            Location::parse("/tmp/x.db").unwrap(),
            Location::Sqlite("/tmp/x.db".into())
        );
        assert!(matches!(
            Location::parse("postgresql:///lab?host=/tmp/s").unwrap(),
            Location::Postgres(_)
        ));
        assert!(matches!(
            Location::parse("mysql://x/y"),
            Err(StoreError::BadLocation { .. })
        ));
        assert!(Location::parse(" ").is_err());
    }

    #[test]
    fn ids_and_kinds_read_as_typed() {
        assert_eq!("17".parse::<RecordId>().unwrap(), RecordId(17));
        assert_eq!("#3".parse::<RecordId>().unwrap(), RecordId(3));
        assert!("0".parse::<RecordId>().is_err());
        assert!("x1".parse::<RecordId>().is_err());
        for k in Kind::ALL {
            assert_eq!(k.as_str().parse::<Kind>().unwrap(), k);
        }
        assert!("runs".parse::<Kind>().is_err());
    }

    #[test]
    fn the_spec_key_follows_the_options_not_the_command_line() {
        let a = serde_json::json!({"command_line": ["drivelab", "run", "--bs=4k"], "options": {"bs": "4k"}});
        let b = serde_json::json!({"command_line": ["drivelab", "run", "--bs", "4k"], "options": {"bs": "4k"}});
        let c = serde_json::json!({"command_line": ["drivelab", "run"], "options": {"bs": "8k"}});
        assert_eq!(spec_key(Kind::Run, &a), spec_key(Kind::Run, &b));
        assert_ne!(spec_key(Kind::Run, &a), spec_key(Kind::Run, &c));
        assert_ne!(spec_key(Kind::Run, &a), spec_key(Kind::Test, &a));
    }

    #[test]
    fn sqlite_errors_are_one_line_and_a_full_disk_is_enospc() {
        use rusqlite::ffi;
        let sql = "CREATE TABLE records (id INTEGER PRIMARY KEY); CREATE TABLE drives (x)";
        let cases = [
            (
                rusqlite::Error::SqliteFailure(
                    ffi::Error::new(ffi::SQLITE_FULL),
                    Some("database or disk is full".into()),
                ),
                "no space left on device (ENOSPC): database or disk is full; free space",
            ),
            (
                rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_IOERR_WRITE), None),
                "ENOSPC, no space left on device",
            ),
            (
                rusqlite::Error::SqlInputError {
                    error: ffi::Error::new(ffi::SQLITE_ERROR),
                    msg: "table records already exists".into(),
                    sql: sql.into(),
                    offset: 13,
                },
                "SQLite store: table records already exists",
            ),
        ];
        for (e, want) in cases {
            let text = StoreError::from(e).to_string();
            assert!(text.contains(want), "{text}");
            assert!(
                !text.contains("CREATE TABLE") && !text.contains('\n'),
                "{text}"
            );
            for piece in [
                "database or disk is full",
                "disk I/O error",
                "already exists",
            ] {
                assert!(text.matches(piece).count() <= 1, "{text}");
            }
        }
    }
}
