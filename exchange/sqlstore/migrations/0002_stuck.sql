-- Contracts the watchdog failed to settle or void (protocol.Contract's
-- Stuck). stuck_since is set while such a contract still holds its escrow
-- and NULL otherwise; retry_at is when the watchdog may try it again
-- (microseconds: a retry a microsecond early does no harm). Stale skips a
-- contract until its retry_at, so that failing contracts never hide the
-- others; Stuck lists them for operators.
--
-- ADD COLUMN with a NULL default is cheap on both databases: PostgreSQL and
-- CockroachDB fill no rows for it.
ALTER TABLE contracts ADD COLUMN stuck_since TIMESTAMPTZ NULL;
ALTER TABLE contracts ADD COLUMN retry_at TIMESTAMPTZ NULL;
CREATE INDEX contracts_stuck ON contracts (stuck_since) WHERE stuck_since IS NOT NULL;
