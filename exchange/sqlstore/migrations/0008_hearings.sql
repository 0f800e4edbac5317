-- What each exchange instance heard its servers say (exchange.Hearing):
-- one row an instance, written every quarter of server_lost_after, so that
-- an instance that does not hear a server (a NATS node cut off from the
-- others) does not settle as lost a contract its server, heard by another
-- instance, says it runs or holds the final reading of. servers is a JSON
-- object, server id to the contract ids its last heartbeat listed. Rows of
-- instances gone stay until an hour old, when Hear deletes them.
CREATE TABLE hearings (
  instance TEXT PRIMARY KEY,
  heard_at TIMESTAMPTZ NOT NULL,
  servers JSONB NOT NULL
);
