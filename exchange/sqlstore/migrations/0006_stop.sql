-- A client's kill or suspend of a running contract (trade.Stop): stop_by is
-- its By (and stop_ns the nanoseconds below its microseconds), when what the
-- exchange believes of the job ends and the watchdog settles the contract
-- whatever its server says; NULL for a contract its client did not stop.
-- The partial index holds the few running contracts with a stop, so that
-- the readings of all the others (which rewrite their rows) cost no more.
ALTER TABLE contracts ADD COLUMN stop_by TIMESTAMPTZ NULL;
ALTER TABLE contracts ADD COLUMN stop_ns INT NULL;
CREATE INDEX contracts_stopping ON contracts (stop_by, stop_ns) WHERE state = 'running' AND stop_by IS NOT NULL;
