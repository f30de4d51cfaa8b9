-- pg_lease 1.4 -> 1.5: a token that moves a floor names its lease; epochs
-- never go back.
\echo Use "ALTER EXTENSION pg_lease UPDATE TO '1.5'" to load this file. \quit

-- 1.5: the epoch mark (extension/epoch.c).  pg_upgrade, a dump and restore
-- onto a new cluster and pg_resetwal start again at timeline 1, whose bits
-- are the epochs' high bits: the mark records the system that issued
-- epochs and the incarnation of this table (its oid: a restore, in place or
-- elsewhere, creates the table again), the base added to the timeline, and
-- the highest era used, so every later epoch is above every earlier one.
-- One row at most, written by the grant functions only; dumped with the
-- extension's data.
CREATE TABLE @extschema@.lease_epoch_mark (
	one			boolean PRIMARY KEY DEFAULT true CHECK (one),
	system_identifier bigint NOT NULL,
	mark_table	oid NOT NULL,
	base		bigint NOT NULL CHECK (base >= 0),
	high		bigint NOT NULL CHECK (high > 0),
	recorded_at timestamptz NOT NULL
);
COMMENT ON TABLE @extschema@.lease_epoch_mark IS
	'the era (high bits) of the epochs this database issues: timeline plus base, and the highest era used; never edit it';
COMMENT ON COLUMN @extschema@.lease_epoch_mark.system_identifier IS
	'the system identifier (pg_control_system(), as a signed bigint) of the cluster that recorded the mark';
COMMENT ON COLUMN @extschema@.lease_epoch_mark.mark_table IS
	'the oid this table had when the mark was recorded: another one means the data was restored';
COMMENT ON COLUMN @extschema@.lease_epoch_mark.base IS
	'added to the WAL timeline to make the era: moved to the highest era when the system or timeline changed under the data';
COMMENT ON COLUMN @extschema@.lease_epoch_mark.high IS
	'the highest era any epoch of this database used';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.lease_epoch_mark', '');
REVOKE ALL ON @extschema@.lease_epoch_mark FROM PUBLIC;
GRANT SELECT ON @extschema@.lease_epoch_mark TO PUBLIC;

-- The history's ids, dumped too: a restore used to start them again at 1,
-- and every grant then failed on lease_events_pkey.
SELECT pg_catalog.pg_extension_config_dump('@extschema@.lease_events_id_seq', '');

-- 1.5: lease_writers shows the writers of downstream floors too, with their
-- store (floor locks: advisory tags of class 0x4C46 = 19526, keyed by a
-- hash of store, name and epoch that hashtextextended computes as
-- extension/floors.c does).  Only the writers of the current floor can be
-- named; a writer of another token shows with name and epoch null.
CREATE OR REPLACE VIEW @extschema@.lease_writers AS
	WITH locks AS (
		SELECT p.pid, p.granted, p.objsubid, p.classid, p.objid::bigint AS low,
			   ((p.classid::bigint OPERATOR(pg_catalog.<<) 32) OPERATOR(pg_catalog.|) p.objid::bigint) AS key
		  FROM pg_catalog.pg_locks p
		 WHERE p.locktype OPERATOR(pg_catalog.=) 'advisory'
		   AND (p.objsubid OPERATOR(pg_catalog.=) ANY ('{19539,19526}'::integer[])
				OR (p.objsubid OPERATOR(pg_catalog.=) 2
					AND p.classid OPERATOR(pg_catalog.=) ANY ('{19539,19526}'::oid[])))
		   AND p.mode OPERATOR(pg_catalog.=) 'ShareLock'
		   AND p.database OPERATOR(pg_catalog.=)
			   (SELECT d.oid FROM pg_catalog.pg_database d
				 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()))
	SELECT l.name, k.pid, k.key AS epoch, k.granted, a.xact_start, NULL::text AS store
	  FROM locks k
	  LEFT JOIN @extschema@.leases l ON l.epoch OPERATOR(pg_catalog.=) k.key
	  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) k.pid
	 WHERE k.objsubid OPERATOR(pg_catalog.=) 19539
	UNION ALL
	SELECT f.name, k.pid, f.epoch, k.granted, a.xact_start, f.store
	  FROM locks k
	  LEFT JOIN @extschema@.lease_floor_rows f
		ON pg_catalog.hashtextextended(f.name COLLATE "C",
			   pg_catalog.hashtextextended(f.store COLLATE "C", f.epoch)) OPERATOR(pg_catalog.=) k.key
	  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) k.pid
	 WHERE k.objsubid OPERATOR(pg_catalog.=) 19526
	-- The SQL edition's locks (sql.md, "The SQL edition"): two-key advisory
	-- locks of first key 19539 (fence) or 19526 (floor), the second the
	-- epoch (or the floor's hash) folded to 32 bits: the epoch shown is the
	-- current grant's (or floor's) that folds alike, null when none does.
	UNION ALL
	SELECT l.name, k.pid, l.epoch, k.granted, a.xact_start, NULL::text
	  FROM locks k
	  LEFT JOIN @extschema@.leases l
		ON ((l.epoch OPERATOR(pg_catalog.#) (l.epoch OPERATOR(pg_catalog.>>) 32))
			OPERATOR(pg_catalog.&) 4294967295) OPERATOR(pg_catalog.=) k.low
	  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) k.pid
	 WHERE k.objsubid OPERATOR(pg_catalog.=) 2 AND k.classid OPERATOR(pg_catalog.=) 19539::oid
	UNION ALL
	SELECT f.name, k.pid, f.epoch, k.granted, a.xact_start, f.store
	  FROM locks k
	  LEFT JOIN (SELECT r.store, r.name, r.epoch,
					pg_catalog.hashtextextended(r.name COLLATE "C",
						pg_catalog.hashtextextended(r.store COLLATE "C", r.epoch)) AS h
			  FROM @extschema@.lease_floor_rows r) f
		ON ((f.h OPERATOR(pg_catalog.#) (f.h OPERATOR(pg_catalog.>>) 32))
			OPERATOR(pg_catalog.&) 4294967295) OPERATOR(pg_catalog.=) k.low
	  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) k.pid
	 WHERE k.objsubid OPERATOR(pg_catalog.=) 2 AND k.classid OPERATOR(pg_catalog.=) 19526::oid;
COMMENT ON VIEW @extschema@.lease_writers IS
	'one row per backend holding (granted) or waiting for a fence lock: the lease, the epoch of the grant (or floor), the transaction''s start, and for a downstream floor its store';

-- Nothing is recorded in lease_upgrades: a 1.4 library still loaded in an
-- older session keeps 1.4's downstream rule until it ends; restart the
-- server (or end those sessions) to have 1.5's everywhere.
