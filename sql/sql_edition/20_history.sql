-- The history and NOTIFY pg_lease, in the transaction of the change: an
-- event is recorded, and followers notified, exactly when it commits (the
-- C edition's shared notify queue is not there: each transaction sends
-- its own NOTIFY). The payload is the C edition's, byte for byte.
CREATE FUNCTION @extschema@.lease_sql_record_event(event text, name text, holder text,
												   epoch bigint, expires_at timestamptz,
												   pid integer DEFAULT NULL)
	RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $record$
DECLARE
	-- pg_lease.event_retention is in seconds (a bare number) in the C edition
	retention_ms bigint := @extschema@.lease_sql_setting_ms('pg_lease.event_retention', 2592000000, 1000);
BEGIN
	INSERT INTO @extschema@.lease_events (event, name, holder, epoch, expires_at, role, pid)
	VALUES (event, name, holder, epoch, expires_at, session_user, pid);
	IF retention_ms > 0 THEN
		-- a new event of a lease deletes its events older than the
		-- retention, in the same transaction (an index range scan on
		-- (name, time): nothing to do costs one probe)
		DELETE FROM @extschema@.lease_events e
		 WHERE e.name = lease_sql_record_event.name
		   AND e.time < clock_timestamp() - retention_ms * interval '1 millisecond';
	END IF;
	PERFORM pg_notify('pg_lease',
		'{"event":' || to_json(event)::text
		|| ',"name":' || to_json(name)::text
		|| ',"holder":' || coalesce(to_json(holder)::text, 'null')
		|| ',"epoch":' || epoch::text
		|| ',"expires_at":' || coalesce(to_json(expires_at)::text, 'null')
		|| coalesce(',"pid":' || pid::text, '')
		|| '}');
END
$record$;
REVOKE EXECUTE ON FUNCTION @extschema@.lease_sql_record_event(text, text, text, bigint, timestamptz, integer) FROM PUBLIC;
