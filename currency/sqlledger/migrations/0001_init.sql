-- The ledger's tables. SQL here stays in what PostgreSQL and CockroachDB
-- both accept: no sequences, triggers, stored procedures or extensions.
--
-- Rows of the busy tables are keyed by a UUID that the ledger derives from
-- the row's string ID (version 5, see ids.go): 16 bytes in other tables'
-- keys, spread evenly over CockroachDB's ranges. The string stays in the row.
-- For movements, holds and results the UUID key is what keeps the string
-- unique (the derivation is one-to-one in practice), and Audit checks it.
--
-- Amounts are DECIMAL(38, 18) (currency.MaxScale = 18). Times are
-- TIMESTAMPTZ, which keeps microseconds, plus an INT column of the
-- nanoseconds below them, so that a time read back equals the one written.
-- There are no foreign keys: every write goes through currency.Apply, and
-- Audit checks the relations instead of paying for them on every insert.

CREATE TABLE currencies (
    code  TEXT PRIMARY KEY,
    scale INT NOT NULL
);

CREATE TABLE accounts (
    uid         UUID PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    currency    TEXT NOT NULL,
    kind        TEXT NOT NULL,
    parent      TEXT NOT NULL,
    balance     DECIMAL(38, 18) NOT NULL,
    entry_count BIGINT NOT NULL,
    created     TIMESTAMPTZ NOT NULL,
    created_ns  INT NOT NULL
);

CREATE TABLE holds (
    uid          UUID PRIMARY KEY,
    id           TEXT NOT NULL,
    currency     TEXT NOT NULL,
    from_uid     UUID NOT NULL,
    from_account TEXT NOT NULL,
    amount       DECIMAL(38, 18) NOT NULL,
    status       TEXT NOT NULL,
    deadline     TIMESTAMPTZ NOT NULL,
    deadline_ns  INT NOT NULL,
    captured_to  TEXT NOT NULL,
    captured     DECIMAL(38, 18) NOT NULL,
    released     DECIMAL(38, 18) NOT NULL,
    created      TIMESTAMPTZ NOT NULL,
    created_ns   INT NOT NULL,
    resolved     TIMESTAMPTZ,
    resolved_ns  INT NOT NULL
);

-- DueHolds: open holds, oldest deadline first.
CREATE INDEX holds_due ON holds (deadline, deadline_ns, id) WHERE status = 'open';
-- Balance: the open holds of a wallet.
CREATE INDEX holds_open_from ON holds (from_uid) WHERE status = 'open';

CREATE TABLE movements (
    uid          UUID PRIMARY KEY,
    id           TEXT NOT NULL,
    idem_key     TEXT NOT NULL,
    currency     TEXT NOT NULL,
    from_account TEXT NOT NULL,
    to_account   TEXT NOT NULL,
    amount       DECIMAL(38, 18) NOT NULL,
    hold_id      TEXT NOT NULL,
    memo         TEXT NOT NULL,
    posted       TIMESTAMPTZ NOT NULL,
    posted_ns    INT NOT NULL
);

-- One line of an account's statement: seq counts from 1 per account, and
-- balance_after is the running balance.
CREATE TABLE entries (
    account_uid   UUID NOT NULL,
    seq           BIGINT NOT NULL,
    movement_uid  UUID NOT NULL,
    amount        DECIMAL(38, 18) NOT NULL,
    balance_after DECIMAL(38, 18) NOT NULL,
    PRIMARY KEY (account_uid, seq)
);

-- The outcome of every idempotency key, as currency.Result in JSON.
CREATE TABLE results (
    uid         UUID PRIMARY KEY,
    idem_key    TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    result      TEXT NOT NULL
);
