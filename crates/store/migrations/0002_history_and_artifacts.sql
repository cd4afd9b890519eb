-- drivelab store, schema version 2: files kept with a record (an erase's
-- certificates), and the indexes `drivelab history` filters by.

CREATE TABLE artifacts (
    record_id BIGINT NOT NULL REFERENCES records (id),
    name      TEXT NOT NULL,
    content   TEXT NOT NULL
);

CREATE INDEX artifacts_by_record ON artifacts (record_id);
CREATE INDEX drives_by_serial ON drives (serial, record_id);
CREATE INDEX drives_by_model ON drives (model, record_id);
CREATE INDEX records_by_time ON records (time_ms);
CREATE INDEX records_by_kind ON records (kind, id);
CREATE INDEX records_by_spec ON records (spec_key, id);
