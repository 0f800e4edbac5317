-- The migrations of other packages that keep their tables in the ledger's
-- database (Ledger.Migrate): each package's versions count from 1 in a scope
-- of its own. Their transactions take schema_migrations' lock row like the
-- ledger's own.

CREATE TABLE package_migrations (
    package TEXT NOT NULL,
    version INT NOT NULL,
    name    TEXT NOT NULL,
    applied TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (package, version)
);
