-- A setting's version counts its writes, so that what is keyed by a
-- version (an allowance's payments) is never taken for another's.
-- Removing a setting keeps its row with an empty value, so that the next
-- write's version follows. Rows written before this have version 1.
ALTER TABLE treasury_settings ADD COLUMN version INT8 NOT NULL DEFAULT 1;
