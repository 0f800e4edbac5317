-- Reports list every client's contracts by when they were accepted
-- (Store.Between).
CREATE INDEX contracts_accepted_at ON contracts (accepted_at, accepted_ns, id);
