-- The exchange's contracts, beside the ledger's tables so that a contract's
-- change of state and the money it moves commit in one transaction. SQL here
-- stays in what PostgreSQL and CockroachDB both accept.
--
-- The record is the protocol.Contract in JSON, what the store returns; the
-- other columns are copies of its fields for the queries to select and
-- order by. uid is a version-5 UUID of the id (see store.go), as the
-- ledger keys its rows. Times are TIMESTAMPTZ, which keeps microseconds,
-- plus an INT of the nanoseconds below them, so that comparisons are exact;
-- a zero time (a contract not yet seen) is 0001-01-01 00:00:00 UTC.

CREATE TABLE contracts (
    uid               UUID PRIMARY KEY,
    id                TEXT NOT NULL,
    client            TEXT NOT NULL,
    server            TEXT NOT NULL,
    state             TEXT NOT NULL,
    accepted_at       TIMESTAMPTZ NOT NULL,
    accepted_ns       INT NOT NULL,
    start_deadline    TIMESTAMPTZ NOT NULL,
    start_deadline_ns INT NOT NULL,
    last_seen         TIMESTAMPTZ NOT NULL,
    last_seen_ns      INT NOT NULL,
    record            TEXT NOT NULL
);

-- Contracts: a client's, newest first.
CREATE INDEX contracts_client ON contracts (client, accepted_at, accepted_ns, id);
-- Stale: running contracts by when they were last seen, accepted ones by
-- their start deadline. Settled and voided contracts, most of the table in
-- time, are in neither.
CREATE INDEX contracts_running ON contracts (last_seen, last_seen_ns) WHERE state = 'running';
CREATE INDEX contracts_accepted ON contracts (start_deadline, start_deadline_ns) WHERE state = 'accepted';
