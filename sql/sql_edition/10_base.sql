-- The SQL edition's own helpers (scripts/sql_edition.py puts them before
-- the first function the edition replaces): settings, argument checks, the
-- fence lock's key space, the history and NOTIFY, and epoch allocation.
-- Internal: named lease_sql_*, EXECUTE revoked from PUBLIC where a direct
-- call could do harm. Every function pins its search_path, but for the
-- two key folds, which are inlined (their names are all qualified).
--
-- A twin of a C function (in 50_ to 80_) starts with the very first line
-- of that function in sql/pg_lease--<current>.sql and goes on with its
-- LANGUAGE line: the rest of its signature (RETURNS, OUT parameters) is
-- taken from the full script, so the contract is written once.

-- The settings an administrator chooses (PGC_SUSET in the C edition):
-- pg_lease.max_ttl, takeover_timeout, max_leases_per_role,
-- event_retention and store_id. Without a superuser they cannot be set
-- for a database (ALTER DATABASE needs one for a parameter no library
-- defines), and a session may SET any such name: so the SQL edition
-- keeps them in this table, which only its owner writes; a session SET
-- counts only for the roles that may write it (lease_sql_setting). Values as
-- postgresql.conf takes them ('5s', '1000': milliseconds, or seconds for
-- event_retention). pg_lease.epoch stays a session setting, as in C.
CREATE TABLE @extschema@.lease_sql_settings (
	name		text PRIMARY KEY CHECK (name IN ('pg_lease.max_ttl', 'pg_lease.takeover_timeout',
												 'pg_lease.max_leases_per_role',
												 'pg_lease.event_retention', 'pg_lease.store_id')),
	value		text NOT NULL
);
COMMENT ON TABLE @extschema@.lease_sql_settings IS
	'the SQL edition''s pg_lease.* settings for this database (the C edition''s superuser settings); owner only';
REVOKE ALL ON @extschema@.lease_sql_settings FROM PUBLIC;
GRANT SELECT ON @extschema@.lease_sql_settings TO PUBLIC;
-- Under CREATE EXTENSION (trusted) the objects belong to the bootstrap
-- superuser: the role that created the extension still sets them.
GRANT INSERT, UPDATE, DELETE ON @extschema@.lease_sql_settings TO @extowner@;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.lease_sql_settings', '');

-- A setting's value: the session's own (SET, SET LOCAL, PGOPTIONS) when
-- the session's role may write lease_sql_settings (the owner: the trust a
-- superuser has in C, where these settings are superuser-only), else the
-- table's. Another role's SET changes nothing. session_user, not
-- current_user: the functions that ask run as their owner.
CREATE FUNCTION @extschema@.lease_sql_setting(setting text)
	RETURNS text
	LANGUAGE sql STABLE
	SET search_path = pg_catalog, pg_temp
	AS $setting$
	SELECT coalesce(
		CASE WHEN has_table_privilege(session_user, '@extschema@.lease_sql_settings', 'UPDATE')
			 THEN nullif(current_setting(setting, true), '') END,
		(SELECT s.value FROM @extschema@.lease_sql_settings s WHERE s.name = setting))
$setting$;

-- A setting in milliseconds (a bare number counts unit_ms each, as the
-- C edition's GUC unit: 1000 for event_retention's seconds; else an
-- interval), or its default.
CREATE FUNCTION @extschema@.lease_sql_setting_ms(setting text, default_ms bigint,
												 unit_ms bigint DEFAULT 1)
	RETURNS bigint
	LANGUAGE plpgsql STABLE
	SET search_path = pg_catalog, pg_temp
	AS $setting_ms$
DECLARE
	raw text := @extschema@.lease_sql_setting(setting);
BEGIN
	IF raw IS NULL OR raw = '' THEN
		RETURN default_ms;
	ELSIF raw ~ '^\s*[0-9]+\s*$' THEN
		RETURN raw::bigint * unit_ms;
	END IF;
	RETURN (extract(epoch FROM raw::interval) * 1000)::bigint;
EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR numeric_value_out_of_range THEN
	RAISE EXCEPTION 'invalid value for parameter "%": "%"', setting, raw USING ERRCODE = '22023';
END
$setting_ms$;

-- A lease name, holder, successor or store: 1 to 255 bytes (22004, 22023).
CREATE FUNCTION @extschema@.lease_sql_label(value text, what text)
	RETURNS text
	LANGUAGE plpgsql IMMUTABLE
	SET search_path = pg_catalog, pg_temp
	AS $label$
BEGIN
	IF value IS NULL THEN
		RAISE EXCEPTION '% must not be null', what USING ERRCODE = '22004';
	ELSIF octet_length(value) < 1 THEN
		RAISE EXCEPTION '% must not be empty', what USING ERRCODE = '22023';
	ELSIF octet_length(value) > 255 THEN
		RAISE EXCEPTION '% must be at most 255 bytes long', what
			USING ERRCODE = '22023', DETAIL = format('The value is %s bytes long.', octet_length(value));
	END IF;
	RETURN value;
END
$label$;

-- A ttl (positive) or lock delay (zero_ok) as microseconds, at most
-- pg_lease.max_ttl. A month counts 30 days and a day 24 hours, as in C.
CREATE FUNCTION @extschema@.lease_sql_interval_us(value interval, what text, zero_ok boolean)
	RETURNS bigint
	LANGUAGE plpgsql STABLE
	SET search_path = pg_catalog, pg_temp
	AS $interval$
DECLARE
	max_ms bigint := @extschema@.lease_sql_setting_ms('pg_lease.max_ttl', 86400000);
	months numeric;
	days numeric;
	us numeric;
BEGIN
	IF value IS NULL THEN
		RAISE EXCEPTION '% must not be null', what USING ERRCODE = '22004';
	END IF;
	months := (extract(year FROM value) * 12 + extract(month FROM value))::numeric;
	days := extract(day FROM value)::numeric;
	us := (months * 30 + days) * 86400000000
		  + round(extract(epoch FROM value - make_interval(months => months::integer,
														   days => days::integer))::numeric * 1000000);
	IF (zero_ok AND us < 0) OR (NOT zero_ok AND us <= 0) THEN
		RAISE EXCEPTION 'lease % must %', what, CASE WHEN zero_ok THEN 'not be negative' ELSE 'be positive' END
			USING ERRCODE = '22023';
	ELSIF us > max_ms * 1000 THEN
		RAISE EXCEPTION 'lease % must not exceed pg_lease.max_ttl', what
			USING ERRCODE = '22023', DETAIL = format('pg_lease.max_ttl is %s ms.', max_ms),
				  HINT = 'A superuser can raise pg_lease.max_ttl.';
	END IF;
	RETURN us::bigint;
END
$interval$;

CREATE FUNCTION @extschema@.lease_sql_epoch_arg(epoch bigint)
	RETURNS bigint
	LANGUAGE plpgsql IMMUTABLE
	SET search_path = pg_catalog, pg_temp
	AS $epoch_arg$
BEGIN
	IF epoch IS NULL THEN
		RAISE EXCEPTION 'epoch must not be null' USING ERRCODE = '22004';
	END IF;
	RETURN epoch;
END
$epoch_arg$;

-- The fence lock, in PostgreSQL's lock manager through two-key advisory
-- locks whose first key is 19539 (0x4C53, "LS"), the SQL edition's own key
-- space: an application must not use two-key advisory locks with that
-- first key, nor with the edition's others (19526 floors, 19525 the epoch
-- mark, 19528 and 19532 an open raise's target: docs/sql.md). The second
-- key folds the epoch's 64 bits into 32; two epochs that fold alike only
-- make a change of holder wait for (and end) writers it need not have:
-- never a write passing that should not. The fold is
-- inlined into its callers (hence no SET clause: every name in it is
-- schema-qualified or a keyword, so no search_path can redirect it); as a
-- call, it cost a third of a fenced write.
CREATE FUNCTION @extschema@.lease_sql_fence_key(epoch bigint)
	RETURNS integer
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	AS $key$
	SELECT (epoch OPERATOR(pg_catalog.#) (epoch OPERATOR(pg_catalog.>>) 32))::bit(32)::integer
$key$;
