-- The treasury's audit trail and settings, in the ledger's database so
-- that an administrative action, the money it moves and its line in the
-- trail commit in one transaction. SQL that PostgreSQL and CockroachDB
-- both accept (no sequences): the trail is ordered by time, then key.

CREATE TABLE treasury_actions (
    idem_key TEXT PRIMARY KEY,
    at       TIMESTAMPTZ NOT NULL,
    actor    TEXT NOT NULL,
    kind     TEXT NOT NULL,
    target   TEXT NOT NULL,
    record   TEXT NOT NULL -- the whole treasury.Action, as JSON
);

CREATE INDEX treasury_actions_at ON treasury_actions (at, idem_key);

CREATE TABLE treasury_settings (
    kind   TEXT NOT NULL,
    name   TEXT NOT NULL,
    value  TEXT NOT NULL,
    set_by TEXT NOT NULL,
    set_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (kind, name)
);
