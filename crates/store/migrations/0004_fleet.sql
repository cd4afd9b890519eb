-- drivelab store, schema version 4: a record made on a node of a fleet
-- (`drivelab fleet`: a DaemonSet's station or a Job on Kubernetes) keeps
-- the node's name and the fleet run's ID, so that one run's records from
-- every node are found together and merged (`drivelab fleet report`).
-- Both are empty for a record made outside a fleet.

ALTER TABLE records ADD COLUMN node TEXT;
ALTER TABLE records ADD COLUMN fleet_run TEXT;

CREATE INDEX records_by_fleet_run ON records (fleet_run, id);
