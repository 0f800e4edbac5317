-- Canary audits' results (package canary, exchange.Store.PutCanary): one
-- row a canary contract, the latest judgment of it. The canary runner
-- (bourse admin canary) writes them on this database, as an
-- administrator does; no party on the wire can. server is the contract's
-- (PutCanary checks it against contracts); deviation is U's relative
-- deviation from the truth, NULL where the canary was inconclusive;
-- result is the whole canary.Result in JSON. Store.Canaries counts them
-- by server over a window of judged_at. No foreign key: the row is the
-- server's history, kept whatever becomes of the contract's.
CREATE TABLE canaries (
  contract TEXT PRIMARY KEY,
  server TEXT NOT NULL,
  judged_at TIMESTAMPTZ NOT NULL,
  verdict TEXT NOT NULL,
  deviation DECIMAL NULL,
  result JSONB NOT NULL
);
CREATE INDEX canaries_judged_at ON canaries (judged_at);
