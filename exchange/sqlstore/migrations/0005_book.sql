-- The book: offers waiting for GPUs (trade.Waiting), shared by every
-- exchange instance and kept across restarts. id is the contract id the
-- offer becomes; a contract's Open deletes its row in the same
-- transaction. record is the waiting offer in JSON; the other columns are
-- copies of its fields for the queries. price is the price at full use
-- that orders the book (highest first), then queued_at (with the
-- nanoseconds below its microseconds in queued_ns), then id.
CREATE TABLE book (
    id        TEXT PRIMARY KEY,
    client    TEXT NOT NULL,
    currency  TEXT NOT NULL,
    price     DECIMAL(38, 18) NOT NULL,
    queued_at TIMESTAMPTZ NOT NULL,
    queued_ns INT NOT NULL,
    until_at  TIMESTAMPTZ NOT NULL,
    record    TEXT NOT NULL
);

-- The book of a currency in its order, for matching and market data.
CREATE INDEX book_order ON book (currency, price DESC, queued_at, queued_ns, id);
-- A client's waiting offers, for its bound and its listing.
CREATE INDEX book_client ON book (client);
-- The expiry sweep.
CREATE INDEX book_until ON book (until_at);
