-- The fence, as extension/fence_trigger.c checks it: a write's token (declared
-- with lease_use, listed in pg_lease.epoch, or the row's epoch column)
-- share-locks its grant's fence lock until the transaction ends, then the
-- lease row is read: the write passes only under the current, held,
-- unexpired epoch. The tokens a transaction declared live in a
-- transaction-local setting, which a savepoint rolled back undoes, together
-- with the advisory locks it took.
--
-- Twins (the decisions and SQLSTATEs, kept equal by
-- tests/contract/cases.json): extension/fence_trigger.c; the test double's
-- lease_store::fence_check (client/src/testing/lease_store.cpp).

-- Whether transaction id x (a row's xmax) committed: the 32-bit id is
-- widened against the current snapshot's xmax, as it is recent: within
-- 2^31 of it, on either side (a transaction that began after a REPEATABLE
-- READ snapshot, or a subtransaction of one, has an id above its xmax).
CREATE FUNCTION @extschema@.lease_sql_committed(x xid)
	RETURNS boolean
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $committed$
DECLARE
	upper bigint := pg_snapshot_xmax(pg_current_snapshot())::text::bigint;
	low bigint := x::text::bigint;
	wide bigint;
BEGIN
	IF low = 0 THEN
		RETURN false;
	END IF;
	wide := upper + (((low - (upper & 4294967295) + 2147483648) & 4294967295) - 2147483648);
	RETURN coalesce(pg_xact_status(wide::text::xid8) = 'committed', true);
END
$committed$;

-- A fenced write refused inside COPY FROM is, as like as not, a data-only
-- restore of a dump (pg_restore --data-only, a data-only SQL dump), whose
-- rows carry the epochs of earlier grants and never pass: the refusal (same
-- message, same SQLSTATE) then says how a dump is restored, as
-- extension/fence.h's LEASE_FENCE_RESTORE_HINT does. The C edition reads
-- the command's tag; here the client's statement tells. Null otherwise.
-- Only the hint depends on it, never whether a write passes.
CREATE FUNCTION @extschema@.lease_sql_copy_hint()
	RETURNS text
	LANGUAGE sql STABLE
	SET search_path = pg_catalog, pg_temp
	AS $copy_hint$
	SELECT CASE WHEN current_query() ~* '^\s*copy\s' THEN
		'If this COPY restores a dump (pg_restore --data-only, or a data-only SQL dump), rows written under earlier grants never pass the fence: restore the whole dump in one run (its data goes in before the fence triggers), or disable trigger pg_lease_fence of the table for the data step and enable it after (docs/operations.md, "Moving from the C edition to a managed service").'
	END
$copy_hint$;

-- The epochs listed in pg_lease.epoch (empty: none).
CREATE FUNCTION @extschema@.lease_sql_setting_epochs()
	RETURNS bigint[]
	LANGUAGE plpgsql STABLE
	SET search_path = pg_catalog, pg_temp
	AS $setting_epochs$
DECLARE
	raw text := current_setting('pg_lease.epoch', true);
	listed numeric[];
BEGIN
	IF raw ~ '^\s*[0-9]+\s*(,\s*[0-9]+\s*)*$' THEN
		listed := string_to_array(raw, ',')::numeric[];	-- (numeric's input skips the blanks)
		IF 9223372036854775807 >= ALL (listed) THEN
			RETURN listed::bigint[];
		END IF;
	ELSIF raw IS NULL OR raw ~ '^\s*$' THEN
		RETURN '{}';
	END IF;
	RAISE EXCEPTION 'invalid value for parameter "pg_lease.epoch": "%"', raw
		USING ERRCODE = '22023',
			  DETAIL = 'pg_lease.epoch must be a comma-separated list of positive epochs.';
END
$setting_epochs$;

CREATE FUNCTION @extschema@.lease_use(name text, epoch bigint)
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $use$
DECLARE
	current_epoch bigint;
	until timestamptz;
BEGIN
	IF name IS NULL OR epoch IS NULL OR octet_length(name) NOT BETWEEN 1 AND 255 OR epoch <= 0 THEN
		-- (the checks, as calls, only when one fails: they cost a third of the call)
		name := @extschema@.lease_sql_label(name, 'lease name');
		epoch := @extschema@.lease_sql_epoch_arg(epoch);
		RAISE EXCEPTION 'epoch must be positive' USING ERRCODE = '22023';
	END IF;
	PERFORM set_config('pg_lease_sql.declared',
		jsonb_set(coalesce(nullif(current_setting('pg_lease_sql.declared', true), ''), '{}')::jsonb,
				  ARRAY[name], to_jsonb(epoch))::text, true);
	-- A fenced transaction from here on: the grant's fence lock at once when
	-- the token is this database's grant of the lease (else at the first
	-- write: a token of another store's lease takes only its floor's lock).
	-- (and a writer its owner may not end bounds itself: lease_sql_bound_idle)
	SELECT l.epoch, l.expires_at INTO current_epoch, until FROM @extschema@.leases l WHERE l.name = lease_use.name;
	IF current_epoch = epoch THEN
		PERFORM pg_advisory_xact_lock_shared(19539, @extschema@.lease_sql_fence_key(epoch));
		IF current_setting('pg_lease_sql.may_end', true) IS DISTINCT FROM session_user THEN
			PERFORM @extschema@.lease_sql_bound_idle(until);
		END IF;
	END IF;
END
$use$;

-- SECURITY DEFINER: a writer need not read the floors, nor raise one but
-- through a write under a token named for the lease (as in C, where the
-- floor is written as the floors table's owner). No SET search_path: it
-- would cost a tenth of a fenced write (the setting is made and undone on
-- every call). Instead every name the trigger looks up is
-- schema-qualified, functions, operators and types alike, so no
-- search_path a writer sets can redirect it (regress: security); the full
-- check, which pins its search_path, is a function of its own.
CREATE FUNCTION @extschema@.lease_fence_trigger()
	LANGUAGE plpgsql SECURITY DEFINER
	AS $fence_trigger$
DECLARE
	token bigint;
	raw pg_catalog.text;	-- pg_lease.epoch
	ok boolean;
	passed boolean;
	bound boolean;	-- a writer the owner may not end bounds itself
	until pg_catalog.timestamptz;
	newrow pg_catalog.jsonb;
	-- the names as text of the default collation: passed as names
	-- (collation "C"), they would make the callee's text parameters "C"
	-- too, and its lookups could not use the leases' and floors' indexes
	tbl pg_catalog.text;
	trg pg_catalog.text;
BEGIN
	-- The fast path, in as few statements as PL/pgSQL allows (each costs
	-- one evaluation per row): a row of a local fence, under a token
	-- declared by lease_use or pg_lease.epoch (one epoch), or on INSERT the
	-- row's own in a column named epoch (the default); it takes the same
	-- fence lock and reads the same row as the full check. It only ever
	-- lets a write pass: anything else (a list, another column, a snapshot
	-- older than the row's last change, every refusal) goes on to the full
	-- check, which decides and names the error.
	IF TG_NARGS OPERATOR(pg_catalog.=) 2 AND TG_LEVEL OPERATOR(pg_catalog.=) 'ROW'
	   AND TG_WHEN OPERATOR(pg_catalog.=) 'BEFORE' THEN
		IF pg_catalog.current_setting('pg_lease_sql.declared', true) OPERATOR(pg_catalog.<>) '' THEN
			token := (pg_catalog.current_setting('pg_lease_sql.declared', true)::pg_catalog.jsonb
					  OPERATOR(pg_catalog.->>) TG_ARGV[0])::bigint;
		END IF;
		IF token IS NULL THEN
			-- one epoch of 1 to 18 digits (no regular expression: it would
			-- cost a tenth of a fenced write)
			raw := pg_catalog.current_setting('pg_lease.epoch', true);
			IF pg_catalog.ltrim(raw, '0123456789') OPERATOR(pg_catalog.=) '' AND raw OPERATOR(pg_catalog.<>) ''
			   AND pg_catalog.octet_length(raw) OPERATOR(pg_catalog.<=) 18 THEN
				token := raw::bigint;
			ELSIF (raw IS NULL OR raw OPERATOR(pg_catalog.=) '') AND TG_OP OPERATOR(pg_catalog.=) 'INSERT'
				  AND TG_ARGV[1] OPERATOR(pg_catalog.=) 'epoch' THEN
				token := NEW.epoch;	-- (named only where the column is: a missing one raises 42703)
			END IF;
		END IF;
	END IF;
	IF token IS NOT NULL THEN
		-- (an assignment: PERFORM would run a whole query)
		ok := pg_catalog.pg_advisory_xact_lock_shared(19539, @extschema@.lease_sql_fence_key(token)) IS NULL;
		-- A new statement: its snapshot is taken after the lock is granted.
		-- Under REPEATABLE READ or SERIALIZABLE, a row version that some
		-- transaction replaced or locked (its xmax set) goes on to the full
		-- check, which tells an old snapshot from a lock.
		SELECT l.epoch OPERATOR(pg_catalog.=) token AND l.holder IS NOT NULL
			   AND pg_catalog.clock_timestamp() OPERATOR(pg_catalog.<) l.expires_at
			   AND (l.xmax OPERATOR(pg_catalog.=) '0'::pg_catalog.xid
					OR pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.=) 'read committed'),
			   l.expires_at,
			   (pg_catalog.current_setting('pg_lease_sql.may_end', true) OPERATOR(pg_catalog.=) session_user) IS NOT TRUE
		  INTO passed, until, bound
		  FROM @extschema@.leases l WHERE l.name OPERATOR(pg_catalog.=) TG_ARGV[0];
		IF passed THEN
			IF bound THEN
				PERFORM @extschema@.lease_sql_bound_idle(until);
			END IF;
			IF TG_ARGV[1] OPERATOR(pg_catalog.=) 'epoch' AND TG_OP OPERATOR(pg_catalog.<>) 'DELETE' THEN
				NEW.epoch := token;	-- the token goes into the row (by name: a third of jsonb's cost)
				RETURN NEW;
			ELSIF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
				RETURN OLD;
			END IF;
			newrow := pg_catalog.to_jsonb(NEW);
			IF newrow OPERATOR(pg_catalog.?) TG_ARGV[1] THEN
				IF ((newrow OPERATOR(pg_catalog.->>) TG_ARGV[1])::bigint OPERATOR(pg_catalog.=) token) IS NOT TRUE THEN
					NEW := pg_catalog.jsonb_populate_record(NEW, pg_catalog.jsonb_build_object(TG_ARGV[1], token));
				END IF;
				RETURN NEW;
			END IF;
		END IF;
	END IF;

	tbl := TG_TABLE_NAME;
	trg := TG_NAME;
	token := @extschema@.lease_sql_fence_full(TG_OP, TG_WHEN, TG_LEVEL, TG_NARGS, trg, tbl, TG_ARGV[0], TG_ARGV[1],
											 TG_ARGV[2], pg_catalog.to_jsonb(NEW), pg_catalog.to_jsonb(OLD));
	IF TG_OP OPERATOR(pg_catalog.=) 'TRUNCATE' THEN
		RETURN NULL;
	ELSIF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
		RETURN OLD;
	ELSIF token IS NOT NULL THEN
		-- a declared token goes into the row, so the table records who wrote it
		NEW := pg_catalog.jsonb_populate_record(NEW, pg_catalog.jsonb_build_object(TG_ARGV[1], token));
	END IF;
	RETURN NEW;
END
$fence_trigger$;

-- The full check of lease_fence_trigger, run as the trigger is, as the
-- owner (the trigger's own variables come as arguments; store names a
-- downstream fence's lease store): every kind of trigger, token and fence,
-- each refusal named. Returns the token the row must carry when it does
-- not yet (NULL: nothing to write into the row).
CREATE FUNCTION @extschema@.lease_sql_fence_full(op text, fire text, level text, nargs integer,
												 trigger_name text, tbl text, lease text, col text,
												 store text, newrow jsonb, oldrow jsonb)
	RETURNS bigint
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $fence_full$
DECLARE
	source text;	-- declared, setting, row
	token bigint;
	raw text;		-- pg_lease.epoch
	listed bigint[];
	therow jsonb := coalesce(newrow, oldrow);	-- NEW (or OLD for DELETE)
BEGIN
	IF fire <> 'BEFORE' OR (level <> 'ROW' AND op <> 'TRUNCATE') THEN
		RAISE EXCEPTION 'lease_fence_trigger() must fire BEFORE, for each row or on TRUNCATE'
			USING ERRCODE = '39P01', HINT = 'Install fences with lease_fence().';
	ELSIF nargs NOT IN (2, 3) THEN
		RAISE EXCEPTION 'fence trigger "%" on "%" must have two or three arguments', trigger_name, tbl
			USING ERRCODE = '39P01', HINT = 'Install fences with lease_fence().';
	END IF;
	IF level = 'ROW' AND NOT therow ? col THEN
		RAISE EXCEPTION 'epoch column "%" of fenced table "%" does not exist', col, tbl
			USING ERRCODE = '42703';
	END IF;
	-- 1. A token the transaction declared: lease_use, or pg_lease.epoch
	--    (from a list, the lease's current epoch, else the largest listed).
	token := (nullif(current_setting('pg_lease_sql.declared', true), '')::jsonb ->> lease)::bigint;
	IF token IS NOT NULL THEN
		source := 'declared';
	ELSE
		raw := current_setting('pg_lease.epoch', true);
		IF raw ~ '^\s*[0-9]{1,18}\s*$' THEN
			listed := ARRAY[raw::bigint];	-- one epoch, the usual case, parsed here
		ELSE
			listed := @extschema@.lease_sql_setting_epochs();
		END IF;
		IF cardinality(listed) > 0 THEN
			source := 'setting';
			token := listed[1];
		END IF;
		IF cardinality(listed) > 1 AND store IS NULL THEN
			SELECT l.epoch INTO token FROM @extschema@.leases l WHERE l.name = lease;
			IF token IS NULL OR NOT token = ANY (listed) THEN
				SELECT max(e) INTO token FROM unnest(listed) e;
			END IF;
		END IF;
	END IF;
	-- 2, 3. The row's epoch column: on INSERT, and on UPDATE when the
	-- statement changes it (a stale writer that leaves it alone must not
	-- pass on the epoch the current leader wrote earlier).
	IF source IS NULL AND op IN ('INSERT', 'UPDATE') THEN
		token := (therow ->> col)::bigint;
		IF op = 'UPDATE' AND token IS NOT DISTINCT FROM (oldrow ->> col)::bigint THEN
			token := NULL;
		END IF;
		IF token IS NOT NULL THEN
			source := 'row';
		END IF;
	END IF;
	IF source IS NULL THEN
		RAISE EXCEPTION 'write to fenced table "%" carries no fencing token for lease "%"', tbl, lease
			USING ERRCODE = 'LS003',
				  DETAIL = format('The table is fenced by lease "%s".', lease),
				  HINT = coalesce(@extschema@.lease_sql_copy_hint(), format('Call lease_use(''%s'', <epoch>) in the transaction, set pg_lease.epoch, or write the epoch into column "%s".', lease, col));
	END IF;

	IF store IS NOT NULL THEN
		-- Downstream: only a token named for the lease moves the floor.
		token := @extschema@.lease_sql_floor_check(store, lease, tbl, source = 'declared',
			CASE WHEN source = 'setting' THEN listed ELSE ARRAY[token] END);
	ELSE
		token := @extschema@.lease_sql_fence_check(lease, tbl, source, token, listed);
	END IF;

	IF op IN ('TRUNCATE', 'DELETE') OR source = 'row' OR (therow ->> col)::bigint IS NOT DISTINCT FROM token THEN
		RETURN NULL;
	END IF;
	RETURN token;
END
$fence_full$;
REVOKE EXECUTE ON FUNCTION @extschema@.lease_sql_fence_full(text, text, text, integer, text, text, text, text, text, jsonb, jsonb)
	FROM PUBLIC;

-- The local check: the grant's fence lock, then the newest row; the write
-- passes only under the current, held, unexpired epoch. Returns the token
-- that passed.
CREATE FUNCTION @extschema@.lease_sql_fence_check(lease text, tbl text, source text, token bigint,
												  listed bigint[])
	RETURNS bigint
	LANGUAGE plpgsql VOLATILE
	SET search_path = pg_catalog, pg_temp
	AS $fence_check$
DECLARE
	held boolean;
	current_epoch bigint;
	expires_at timestamptz;
	replaced xid;
	present boolean;
	code text;		-- a refusal: SQLSTATE, message, detail, hint
	msg text;
	detail text;
	hint text;
BEGIN
	-- The grant's fence lock (taken again, it is only counted), then the
	-- newest row. With a list, the grant may change between choosing and
	-- locking: if the new one is listed too, lock that one instead (epochs
	-- only grow, so this ends).
	LOOP
		PERFORM pg_advisory_xact_lock_shared(19539, @extschema@.lease_sql_fence_key(token));
		SELECT l.holder IS NOT NULL, l.epoch, l.expires_at, l.xmax
		  INTO held, current_epoch, expires_at, replaced
		  FROM @extschema@.leases l WHERE l.name = lease;
		present := FOUND;
		EXIT WHEN source <> 'setting' OR NOT present OR current_epoch <= token
			OR NOT current_epoch = ANY (listed);
		token := current_epoch;
	END LOOP;
	-- Under REPEATABLE READ or SERIALIZABLE the snapshot may predate a
	-- change: when the version it sees was replaced by a committed one,
	-- the write is refused with 40001 (retry the transaction), never passed.
	IF present AND current_setting('transaction_isolation') <> 'read committed'
	   AND @extschema@.lease_sql_committed(replaced) THEN
		RAISE EXCEPTION 'could not serialize access due to a concurrent change of lease "%"', lease
			USING ERRCODE = '40001',
				  DETAIL = 'The lease changed after this transaction''s snapshot was taken.',
				  HINT = 'Retry the transaction.';
	END IF;

	-- Each test fails closed: a NULL never lets the write through.
	IF present IS NOT TRUE THEN
		code := 'LS002';
		msg := format('fenced write to "%s" rejected: lease "%s" does not exist', tbl, lease);
		detail := format('The write carries epoch %s.', token);
	ELSIF token < current_epoch THEN
		code := 'LS001';
		msg := format('fenced write to "%s" rejected: epoch %s of lease "%s" is stale', tbl, token, lease);
		detail := format('The current epoch is %s; a newer grant replaced the writer''s.', current_epoch);
		hint := 'The writer no longer leads: it must stop and acquire the lease again.';
	ELSIF token <> current_epoch THEN
		code := 'LS001';
		msg := format('fenced write to "%s" rejected: epoch %s was never granted for lease "%s"', tbl, token, lease);
		detail := format('The current epoch is %s.', current_epoch);
	ELSIF held IS NOT TRUE THEN
		code := 'LS002';
		msg := format('fenced write to "%s" rejected: lease "%s" is not held', tbl, lease);
		detail := format('Epoch %s is the latest grant, but it was released or revoked.', token);
	ELSIF expires_at IS NULL OR clock_timestamp() >= expires_at THEN
		code := 'LS002';
		msg := format('fenced write to "%s" rejected: lease "%s" expired', tbl, lease);
		detail := format('Epoch %s is the latest grant, but it expired at %s.', token, expires_at);
	ELSE
		IF current_setting('pg_lease_sql.may_end', true) IS DISTINCT FROM session_user THEN
			PERFORM @extschema@.lease_sql_bound_idle(expires_at);
		END IF;
		RETURN token;
	END IF;
	hint := coalesce(@extschema@.lease_sql_copy_hint(), hint);
	IF hint IS NULL THEN
		RAISE EXCEPTION USING ERRCODE = code, MESSAGE = msg, DETAIL = detail;
	END IF;
	RAISE EXCEPTION USING ERRCODE = code, MESSAGE = msg, DETAIL = detail, HINT = hint;
END
$fence_check$;
