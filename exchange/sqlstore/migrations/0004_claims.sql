-- Each request id claimed by the negotiation under way, so that two tries
-- of one request never answer differently (exchange/claim.go): holder is
-- the negotiation's token ('' when none holds it) until claim_until; ended
-- and outcome are the last negotiation that made no contract and its
-- answer, kept a minute for the tries that waited on it.
CREATE TABLE offer_claims (
    id          TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    claim_until TIMESTAMPTZ NOT NULL,
    ended       TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    ended_at    TIMESTAMPTZ
);

-- The pruning of ended claims.
CREATE INDEX offer_claims_ended ON offer_claims (ended_at) WHERE holder = '';
