-- The console's sessions, in the ledger's database so that several
-- consoles share them and they outlive a restart. id is the SHA-256 of
-- the cookie's token, never the token. SQL that PostgreSQL and
-- CockroachDB both accept.

CREATE TABLE console_sessions (
    id       TEXT PRIMARY KEY,
    username TEXT NOT NULL,
    role     TEXT NOT NULL,
    stamp    TEXT NOT NULL,
    csrf     TEXT NOT NULL,
    created  TIMESTAMPTZ NOT NULL,
    expires  TIMESTAMPTZ NOT NULL
);

CREATE INDEX console_sessions_user ON console_sessions (username);
CREATE INDEX console_sessions_expires ON console_sessions (expires);
