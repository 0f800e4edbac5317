-- When a settled contract settled (protocol.Contract's settled_at; NULL
-- for every other, voided ones included), for market data, which prices
-- what settled contracts were charged for what they used
-- (Store.Settled). Contracts settled before this column are not
-- back-filled: market data looks back an hour.
--
-- ADD COLUMN with a NULL default is cheap on both databases.
ALTER TABLE contracts ADD COLUMN settled_at TIMESTAMPTZ NULL;
CREATE INDEX contracts_settled_at ON contracts (settled_at, id) WHERE settled_at IS NOT NULL;
