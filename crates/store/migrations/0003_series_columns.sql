-- drivelab store, schema version 3: a record's per-second series kept as
-- one row per series (engine job or device) with its seconds packed as
-- columns of numbers (see `crates/store/src/packed.rs`), instead of one
-- row per second. An hour of seconds of a job and a device is then 2 rows
-- rather than 7200: storing it costs a few ms, not tens, and the table
-- stays small on a store of 100,000 runs. `drivelab export --csv` and the
-- store's `series` give the per-second rows back. Records stored before
-- version 3 keep their rows in `series`, read as before.

CREATE TABLE series_columns (
    record_id BIGINT NOT NULL REFERENCES records (id),
    source    TEXT NOT NULL,
    name      TEXT NOT NULL,
    points    INTEGER NOT NULL,
    columns   {{bytes}} NOT NULL
);

CREATE INDEX series_columns_by_record ON series_columns (record_id);
