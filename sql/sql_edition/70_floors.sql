-- Downstream floors (extension/floors.c, floors_fence.c): per
-- (lease store, lease name) the highest epoch this database has seen. A
-- writer share-locks its token's floor lock (two-key advisory locks of
-- first key 19526, the second a 32-bit fold of the C edition's hash of
-- store, name and epoch), then reads the newest committed floor; a raise
-- from floor F takes F's lock exclusively before it commits, ending the
-- writers of F after pg_lease.takeover_timeout. Raises of one floor meet
-- at its row (FOR UPDATE), which READ COMMITTED reads at its newest.
--
-- SQL cannot read where an open raise goes (the C edition's dirty read),
-- so a raise that has written the row says so in the lock manager: two
-- shared two-key advisory locks, first keys 19528 (0x4C48, "LH") and 19532
-- (0x4C4C, "LL"), second keys the high and low 32 bits of its target, each
-- xor the floor's fold (lease_sql_floor_key(store, name, 0)). A higher
-- raise waiting for the row reads them back from pg_locks, pairs the two
-- halves of each backend, and ends a target below its own only through
-- that target's floor lock (19526), held by the backend: so it ends only
-- writers of a lower token of this floor, as C does.

CREATE FUNCTION @extschema@.lease_sql_floor_key(store text, name text, epoch bigint)
	RETURNS integer
	LANGUAGE sql IMMUTABLE
	AS $floor_key$
	SELECT @extschema@.lease_sql_fence_key(pg_catalog.hashtextextended(name COLLATE pg_catalog."C",
		pg_catalog.hashtextextended(store COLLATE pg_catalog."C", epoch)))
$floor_key$;

CREATE FUNCTION @extschema@.lease_store_id()
	LANGUAGE plpgsql STABLE STRICT
	SET search_path = pg_catalog, pg_temp
	AS $store_id$
DECLARE
	setting text := @extschema@.lease_sql_setting('pg_lease.store_id');
	system bigint;
BEGIN
	IF setting IS NOT NULL AND setting <> '' THEN
		RETURN setting;
	END IF;
	system := @extschema@.lease_sql_system();
	IF system = 0 THEN
		RAISE EXCEPTION 'this database''s identity as a lease store is unknown'
			USING ERRCODE = '55000',
				  DETAIL = 'The role may not read pg_control_system().',
				  HINT = 'Set it: INSERT INTO lease_sql_settings VALUES (''pg_lease.store_id'', ''...'').';
	END IF;
	-- as the C edition prints it: the system identifier unsigned
	RETURN CASE WHEN system < 0 THEN (system::numeric + 18446744073709551616)::text
				ELSE system::text END || '/' || current_database();
END
$store_id$;

-- The open raises of the floor of (store, name) to a target above the
-- committed floor and below epoch whose backend holds that target's floor
-- lock (a write of that token raised it, then did not end): ended as a
-- change of holder ends writers, through lease_sql_lock_exclusive (wait at
-- most pg_lease.takeover_timeout, then cancel or terminate, an evict event
-- each). Every raise holds that lock (a write's check takes it, and so does
-- lease_raise), so a lower raise stalled in its open transaction holds a
-- higher one up at most that long, as in C; a backend holding none (an
-- application's look-alike advisory locks, the owner's direct call of
-- lease_sql_floor_raise) is waited for.
CREATE FUNCTION @extschema@.lease_sql_floor_end_lower(store text, name text, epoch bigint)
	RETURNS void
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $floor_end_lower$
DECLARE
	fold bigint := @extschema@.lease_sql_floor_key(store, name, 0)::bigint & 4294967295;
	db oid := (SELECT d.oid FROM pg_database d WHERE d.datname = current_database());
	floor bigint;
	lower record;
BEGIN
	SELECT coalesce(max(f.epoch), 0) INTO floor FROM @extschema@.lease_floor_rows f
	 WHERE f.store = lease_sql_floor_end_lower.store AND f.name = lease_sql_floor_end_lower.name;
	FOR lower IN
		WITH halves AS (
			SELECT l.pid, l.classid, l.objid::text::bigint # fold AS half
			  FROM pg_locks l
			 WHERE l.locktype = 'advisory' AND l.database = db AND l.objsubid = 2
			   AND l.classid IN (19528::oid, 19532::oid) AND l.granted
			   AND l.pid IS NOT NULL AND l.pid <> pg_backend_pid())
		SELECT DISTINCT high.pid, (high.half << 32) | low.half AS target
		  FROM halves high JOIN halves low ON low.pid = high.pid AND low.classid = 19532::oid
		 WHERE high.classid = 19528::oid
		 ORDER BY 2
	LOOP
		CONTINUE WHEN lower.target <= floor OR lower.target >= epoch;
		CONTINUE WHEN NOT EXISTS (
			SELECT FROM pg_locks l
			 WHERE l.locktype = 'advisory' AND l.database = db AND l.objsubid = 2
			   AND l.classid = 19526::oid AND l.pid = lower.pid AND l.mode = 'ShareLock' AND l.granted
			   AND l.objid = (@extschema@.lease_sql_floor_key(store, name, lower.target)::bigint
							  & 4294967295)::oid);
		PERFORM @extschema@.lease_sql_lock_exclusive(19526,
			@extschema@.lease_sql_floor_key(store, name, lower.target), name, NULL, lower.target,
			clock_timestamp());
	END LOOP;
END
$floor_end_lower$;
REVOKE EXECUTE ON FUNCTION @extschema@.lease_sql_floor_end_lower(text, text, bigint) FROM PUBLIC;

-- Write the floor of (store, name) (its row locked, or none: old 0) as
-- epoch, and say where it goes (19528, 19532) for a higher raise
-- (lease_sql_floor_end_lower). False when a first raise's row was
-- committed meanwhile (look again).
CREATE FUNCTION @extschema@.lease_sql_floor_write(store text, name text, epoch bigint, old bigint)
	RETURNS boolean
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $floor_write$
DECLARE
	fold bigint := @extschema@.lease_sql_floor_key(store, name, 0)::bigint & 4294967295;
BEGIN
	IF old > 0 THEN
		UPDATE @extschema@.lease_floor_rows f SET epoch = lease_sql_floor_write.epoch,
			   raised_at = clock_timestamp()
		 WHERE f.store = lease_sql_floor_write.store AND f.name = lease_sql_floor_write.name;
	ELSE
		INSERT INTO @extschema@.lease_floor_rows AS f (store, name, epoch, raised_at)
		VALUES (store, name, epoch, clock_timestamp())
		ON CONFLICT ON CONSTRAINT lease_floor_rows_pkey DO NOTHING;
		IF NOT FOUND THEN
			RETURN false;
		END IF;
	END IF;
	PERFORM pg_advisory_xact_lock_shared(19528, ((epoch >> 32) # fold)::bit(32)::integer),
			pg_advisory_xact_lock_shared(19532, ((epoch & 4294967295) # fold)::bit(32)::integer);
	RETURN true;
END
$floor_write$;
REVOKE EXECUTE ON FUNCTION @extschema@.lease_sql_floor_write(text, text, bigint, bigint) FROM PUBLIC;

-- Raise the floor of (store, name) to epoch in this transaction, as the
-- floors table's owner, after the fenced transactions of the old floor
-- have ended; the floor afterwards (epoch, or a higher one left alone).
-- A row no other raise holds is locked at once; else (or with no row yet)
-- in steps of lock_timeout, inside a subtransaction, and between them
-- lower raises under way are ended (lease_sql_floor_end_lower). A user's
-- own lock_timeout still bounds the wait for the row, as it bounds C's.
CREATE FUNCTION @extschema@.lease_sql_floor_raise(store text, name text, epoch bigint)
	RETURNS bigint
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $floor_raise$
DECLARE
	old bigint;
	saved_lock_timeout text := current_setting('lock_timeout');
	user_ms double precision := extract(epoch FROM current_setting('lock_timeout')::interval) * 1000;
	started timestamptz := clock_timestamp();
	waited_ms double precision;
	step_ms integer := 10;
	written boolean;
BEGIN
	PERFORM @extschema@.lease_sql_durable();
	IF user_ms > 0 THEN
		step_ms := greatest(least(step_ms, ceil(user_ms)::integer), 1);
	END IF;
	LOOP
		SELECT f.epoch INTO old FROM @extschema@.lease_floor_rows f
		 WHERE f.store = lease_sql_floor_raise.store AND f.name = lease_sql_floor_raise.name
		   FOR UPDATE SKIP LOCKED;
		IF FOUND THEN
			IF old >= epoch THEN
				RETURN old;
			END IF;
			written := @extschema@.lease_sql_floor_write(store, name, epoch, old);
		ELSE
			BEGIN
				PERFORM set_config('lock_timeout', step_ms::text, true);
				SELECT f.epoch INTO old FROM @extschema@.lease_floor_rows f
				 WHERE f.store = lease_sql_floor_raise.store AND f.name = lease_sql_floor_raise.name
				   FOR UPDATE;
				IF FOUND AND old >= epoch THEN
					PERFORM set_config('lock_timeout', saved_lock_timeout, true);
					RETURN old;
				END IF;
				old := coalesce(old, 0);	-- 0: no floor before, no writer of a lower token passed
				written := @extschema@.lease_sql_floor_write(store, name, epoch, old);
				PERFORM set_config('lock_timeout', saved_lock_timeout, true);
			EXCEPTION WHEN lock_not_available THEN
				waited_ms := extract(epoch FROM clock_timestamp() - started) * 1000;
				IF user_ms > 0 AND waited_ms >= user_ms THEN
					RAISE;
				END IF;
				-- another raise holds the row: end it if it goes lower, else wait
				PERFORM @extschema@.lease_sql_floor_end_lower(store, name, epoch);
				step_ms := 100;
				IF user_ms > 0 THEN
					step_ms := greatest(least(step_ms, ceil(user_ms - waited_ms)::integer), 1);
				END IF;
				CONTINUE;
			END;
		END IF;
		IF written THEN
			-- the row shows where this raise goes; now end the writers of the old floor
			IF old > 0 THEN
				PERFORM @extschema@.lease_sql_lock_exclusive(19526,
					@extschema@.lease_sql_floor_key(store, name, old), name, NULL, old, clock_timestamp());
			END IF;
			RETURN epoch;
		END IF;
	END LOOP;
END
$floor_raise$;
REVOKE EXECUTE ON FUNCTION @extschema@.lease_sql_floor_raise(text, text, bigint) FROM PUBLIC;

-- Share-lock the floor lock of token epoch, then the newest committed
-- floor (0: none); under REPEATABLE READ a floor replaced after the
-- snapshot refuses the write with 40001, as the local fence does.
CREATE FUNCTION @extschema@.lease_sql_floor_hold(store text, name text, epoch bigint)
	RETURNS bigint
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $floor_hold$
DECLARE
	floor bigint;
	replaced xid;
BEGIN
	PERFORM pg_advisory_xact_lock_shared(19526, @extschema@.lease_sql_floor_key(store, name, epoch));
	SELECT f.epoch, f.xmax INTO floor, replaced FROM @extschema@.lease_floor_rows f
	 WHERE f.store = lease_sql_floor_hold.store AND f.name = lease_sql_floor_hold.name;
	IF FOUND AND current_setting('transaction_isolation') <> 'read committed'
	   AND @extschema@.lease_sql_committed(replaced) THEN
		RAISE EXCEPTION 'could not serialize access due to a concurrent raise of the floor of lease "%"', name
			USING ERRCODE = '40001', HINT = 'Retry the transaction.';
	END IF;
	RETURN coalesce(floor, 0);
END
$floor_hold$;

-- The downstream check of a write to a table fenced by (store, lease):
-- named tokens (lease_use) pass at or above the floor and raise it; unnamed
-- ones (pg_lease.epoch, the row) pass only when equal to it (SPEC 1.5).
-- Returns the token that passed.
CREATE FUNCTION @extschema@.lease_sql_floor_check(store text, lease text, tbl text, named boolean,
												  tokens bigint[])
	RETURNS bigint
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $floor_check$
DECLARE
	floor bigint;
	candidate bigint;
	highest bigint;
BEGIN
	IF named THEN
		floor := @extschema@.lease_sql_floor_hold(store, lease, tokens[1]);
		IF floor < tokens[1] THEN
			floor := @extschema@.lease_sql_floor_raise(store, lease, tokens[1]);
		END IF;
		IF floor > tokens[1] THEN
			RAISE EXCEPTION 'fenced write to "%" rejected: epoch % of lease "%" is below its floor', tbl, tokens[1], lease
				USING ERRCODE = 'LS001',
					  DETAIL = format('The floor of lease "%s" of store "%s" is %s; a newer grant replaced the writer''s.', lease, store, floor),
					  HINT = coalesce(@extschema@.lease_sql_copy_hint(), 'The writer no longer leads: it must stop and acquire the lease again.');
		END IF;
		RETURN tokens[1];
	END IF;
	SELECT coalesce(max(f.epoch), 0) INTO floor FROM @extschema@.lease_floor_rows f
	 WHERE f.store = lease_sql_floor_check.store AND f.name = lease;
	candidate := CASE WHEN cardinality(tokens) = 1 THEN tokens[1] ELSE floor END;
	WHILE candidate > 0 AND candidate = ANY (tokens) LOOP
		floor := @extschema@.lease_sql_floor_hold(store, lease, candidate);
		IF floor = candidate THEN
			RETURN candidate;
		END IF;
		candidate := floor;
	END LOOP;
	SELECT max(t) INTO highest FROM unnest(tokens) t;
	IF highest < floor THEN
		RAISE EXCEPTION 'fenced write to "%" rejected: epoch % of lease "%" is below its floor', tbl, highest, lease
			USING ERRCODE = 'LS001',
				  DETAIL = format('The floor of lease "%s" of store "%s" is %s; a newer grant replaced the writer''s.', lease, store, floor),
				  HINT = coalesce(@extschema@.lease_sql_copy_hint(), 'The writer no longer leads: it must stop and acquire the lease again.');
	END IF;
	RAISE EXCEPTION 'write to fenced table "%" carries no token known to be of lease "%"', tbl, lease
		USING ERRCODE = 'LS003',
			  DETAIL = format('Epoch %s is not the floor (%s) of lease "%s" of store "%s", and a token not named for the lease never moves its floor: it may be another lease''s.', highest, floor, lease, store),
			  HINT = coalesce(@extschema@.lease_sql_copy_hint(), format('Raise the floor first with lease_raise(), or call lease_use(''%s'', <epoch>) in the transaction.', lease));
END
$floor_check$;

CREATE FUNCTION @extschema@.lease_raise(store text, name text, epoch bigint)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $raise$
BEGIN
	store := @extschema@.lease_sql_label(store, 'lease store');
	name := @extschema@.lease_sql_label(name, 'lease name');
	epoch := @extschema@.lease_sql_epoch_arg(epoch);
	IF epoch <= 0 THEN
		RAISE EXCEPTION 'epoch must be positive' USING ERRCODE = '22023';
	ELSIF store = @extschema@.lease_store_id() THEN
		RAISE EXCEPTION 'lease store "%" is this database', store
			USING ERRCODE = '22023',
				  DETAIL = 'Floors fence the leases of other databases; this database''s own leases are fenced by their current epoch.';
	END IF;
	-- hold the floor lock of epoch as its writers do, until the transaction
	-- ends: a higher raise then ends this one as it ends them, after
	-- pg_lease.takeover_timeout, however long this transaction stays open
	PERFORM pg_advisory_xact_lock_shared(19526, @extschema@.lease_sql_floor_key(store, name, epoch));
	RETURN @extschema@.lease_sql_floor_raise(store, name, epoch) = epoch;
END
$raise$;
