-- drivelab store, schema version 1: the records (their summary and their
-- texts), the drives each involved, and the per-second series. The same
-- SQL runs on SQLite and PostgreSQL; {{id}} is the one per-backend type
-- (an auto-increasing 64-bit key).

CREATE TABLE records (
    id            {{id}},
    kind          TEXT NOT NULL,
    time_ms       BIGINT NOT NULL,
    host          TEXT NOT NULL,
    kernel        TEXT NOT NULL,
    version       TEXT NOT NULL,
    spec_key      TEXT NOT NULL,
    printed       TEXT NOT NULL,
    verdict       TEXT NOT NULL,
    exit_status   INTEGER NOT NULL,
    headline      TEXT NOT NULL,
    drive_summary TEXT NOT NULL
);

-- The large texts of a record, apart: `history` scans `records`, whose
-- rows stay small.
CREATE TABLE record_texts (
    record_id   BIGINT NOT NULL PRIMARY KEY REFERENCES records (id),
    spec_json   TEXT NOT NULL,
    result_json TEXT NOT NULL,
    result_text TEXT
);

CREATE TABLE drives (
    record_id       BIGINT NOT NULL REFERENCES records (id),
    position        INTEGER NOT NULL,
    path            TEXT NOT NULL,
    model           TEXT,
    serial          TEXT,
    firmware        TEXT,
    wwn             TEXT,
    capacity_bytes  BIGINT,
    logical_sector  INTEGER,
    physical_sector INTEGER,
    transport       TEXT
);

CREATE TABLE series (
    record_id   BIGINT NOT NULL REFERENCES records (id),
    source      TEXT NOT NULL,
    name        TEXT NOT NULL,
    t_s         DOUBLE PRECISION NOT NULL,
    iops        DOUBLE PRECISION,
    bw_bytes    DOUBLE PRECISION,
    lat_mean_ns DOUBLE PRECISION,
    lat_p99_ns  DOUBLE PRECISION,
    r_iops      DOUBLE PRECISION,
    w_iops      DOUBLE PRECISION,
    r_bw_bytes  DOUBLE PRECISION,
    w_bw_bytes  DOUBLE PRECISION,
    util_pct    DOUBLE PRECISION,
    aqu_sz      DOUBLE PRECISION,
    r_await_ms  DOUBLE PRECISION,
    w_await_ms  DOUBLE PRECISION
);

-- By record only: a wider key (source, name, t_s) costs a third more time
-- to store an hour of seconds, and one record's rows sort in no time.
CREATE INDEX series_by_record ON series (record_id);
CREATE INDEX drives_by_record ON drives (record_id);
