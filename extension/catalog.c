/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Where the extension's objects are, and the statements prepared on them.
 *
 * The schema is found once per backend from the calling function's own
 * namespace, and the statements are prepared once and kept.  Every name in
 * them is schema-qualified, operators included, so a caller's search_path
 * can neither redirect them nor force a replan onto other objects.  A
 * relcache invalidation of the leases table (DROP EXTENSION, ALTER ... OWNER)
 * drops the cache; invalidations also reach lease_row_write.c's cache of the
 * tables' indexes.
 *
 * Twins of the caller's role: lease_sql_caller and
 * lease_sql_caller_is_superuser in sql/sql_edition/30_epochs.sql.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

typedef struct LeasePlanSpec
{
	const char *sql;			/* %s stands for the quoted schema */
	const char *sql_10;			/* for a 1.0 schema, when it differs */
	int			nargs;
	Oid			argtypes[9];
	int			cursor_options; /* CURSOR_OPT_CUSTOM_PLAN: plan with the values */
} LeasePlanSpec;

#define EQ " OPERATOR(pg_catalog.=) "

static const LeasePlanSpec lease_plan_specs[LEASE_PLAN_COUNT] = {
	[LEASE_PLAN_INSERT] = {
		"INSERT INTO %s.leases (name, holder, epoch, acquired_at, renewed_at, expires_at,"
		" ttl, transitions, owner_role, lock_delay) VALUES ($1, $2, $3, $4, $4, $5, $6, 0, $7, $8)"
		" ON CONFLICT (name) DO NOTHING",
		"INSERT INTO %s.leases (name, holder, epoch, acquired_at, renewed_at, expires_at,"
		" ttl, transitions, owner_role) VALUES ($1, $2, $3, $4, $4, $5, $6, 0, $7)"
		" ON CONFLICT (name) DO NOTHING",
		8, {TEXTOID, TEXTOID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, INTERVALOID, NAMEOID, INTERVALOID}
	},
	[LEASE_PLAN_GRANT] = {
		"UPDATE %s.leases SET holder = $2, epoch = $3, acquired_at = $4, renewed_at = $4,"
		" expires_at = $5, ttl = $6, transitions = transitions OPERATOR(pg_catalog.+) $7,"
		" owner_role = $8, lock_delay = $9 WHERE name" EQ "$1",
		"UPDATE %s.leases SET holder = $2, epoch = $3, acquired_at = $4, renewed_at = $4,"
		" expires_at = $5, ttl = $6, transitions = transitions OPERATOR(pg_catalog.+) $7,"
		" owner_role = $8 WHERE name" EQ "$1",
		9, {TEXTOID, TEXTOID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, INTERVALOID, INT8OID, NAMEOID,
		INTERVALOID}
	},
	[LEASE_PLAN_EXTEND] = {
		"UPDATE %s.leases SET renewed_at = $2, expires_at = $3, ttl = $4 WHERE name" EQ "$1",
		NULL,
		4, {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, INTERVALOID}
	},

	[LEASE_PLAN_FREE] = {
		"UPDATE %s.leases SET holder = NULL, expires_at = LEAST(expires_at, $2), lock_delay = $3"
		" WHERE name" EQ "$1",
		"UPDATE %s.leases SET holder = NULL, expires_at = LEAST(expires_at, $2)"
		" WHERE name" EQ "$1",
		3, {TEXTOID, TIMESTAMPTZOID, INTERVALOID}
	},
	[LEASE_PLAN_EVENT] = {
		"INSERT INTO %s.lease_events (event, name, holder, epoch, expires_at, role, pid)"
		" VALUES ($1, $2, $3, $4, $5, $6, $7)",
		"INSERT INTO %s.lease_events (event, name, holder, epoch, expires_at, role)"
		" VALUES ($1, $2, $3, $4, $5, $6)",
		7, {TEXTOID, TEXTOID, TEXTOID, INT8OID, TIMESTAMPTZOID, NAMEOID, INT4OID}
	},
	[LEASE_PLAN_PRUNE_EVENTS] = {
		"DELETE FROM %s.lease_events WHERE name" EQ "$1 AND time OPERATOR(pg_catalog.<) $2",
		NULL,
		2, {TEXTOID, TIMESTAMPTZOID},
		/* a generic plan made while the history was small scans all of it */
		CURSOR_OPT_CUSTOM_PLAN
	},
	[LEASE_PLAN_COUNT_ROLE] = {
		"SELECT pg_catalog.count(*) FROM %s.leases WHERE owner_role" EQ "$1",
		NULL,
		1, {NAMEOID},
		CURSOR_OPT_CUSTOM_PLAN
	},
	[LEASE_PLAN_FLOOR_INSERT] = {
		"INSERT INTO %s.lease_floor_rows (store, name, epoch, raised_at)"
		" VALUES ($1, $2, $3, pg_catalog.clock_timestamp()) ON CONFLICT (store, name) DO NOTHING",
		NULL,
		4, {TEXTOID, TEXTOID, INT8OID, INT8OID}
	},
	[LEASE_PLAN_FLOOR_UPDATE] = {
		"UPDATE %1$s.lease_floor_rows SET epoch = $3, raised_at = pg_catalog.clock_timestamp()"
		" WHERE ctid" EQ "(SELECT ctid FROM %1$s.lease_floor_rows WHERE store" EQ "$1"
		" AND name" EQ "$2 AND epoch" EQ "$4 FOR UPDATE SKIP LOCKED)",
		NULL,
		4, {TEXTOID, TEXTOID, INT8OID, INT8OID}
	},
	[LEASE_PLAN_ERA_READ] = {
		"SELECT system_identifier, base, high, mark_table FROM %s.lease_epoch_mark",
		NULL,
		0, {InvalidOid}
	},
	[LEASE_PLAN_ERA_RECORDED] = {
		"SELECT GREATEST((SELECT pg_catalog.max(epoch) FROM %1$s.leases),"
		" (SELECT pg_catalog.max(epoch) FROM %1$s.lease_events))",
		NULL,
		0, {InvalidOid}
	},
	[LEASE_PLAN_ERA_WRITE] = {
		"INSERT INTO %s.lease_epoch_mark (one, system_identifier, mark_table, base, high, recorded_at)"
		" VALUES (true, $1, $4, $2, $3, pg_catalog.clock_timestamp()) ON CONFLICT (one) DO UPDATE"
		" SET system_identifier = EXCLUDED.system_identifier, mark_table = EXCLUDED.mark_table,"
		" base = EXCLUDED.base, high = EXCLUDED.high, recorded_at = EXCLUDED.recorded_at",
		NULL,
		4, {INT8OID, INT8OID, INT8OID, OIDOID}
	},
};

static struct
{
	bool		valid;
	char	   *schema_sql;		/* quoted schema name, in TopMemoryContext */
	Oid			leases;
	Oid			events;
	Oid			epoch_sequence;
	Oid			namespace;
	bool		schema_11;		/* the 1.1 columns exist */
	SPIPlanPtr	plans[LEASE_PLAN_COUNT];
}			lease_catalog;

static struct
{
	Oid			role;
	NameData	name;
}			lease_caller;

static void
LeaseRelcacheCallback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == lease_catalog.leases)
		lease_catalog.valid = false;
}

static void
LeaseRoleCallback(Datum arg, int cacheid, uint32 hashvalue)
{
	lease_caller.role = InvalidOid;
}

void
LeaseCatalogInit(void)
{
	CacheRegisterRelcacheCallback(LeaseRelcacheCallback, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, LeaseRoleCallback, (Datum) 0);
}

static Oid
LeaseRelationIn(Oid namespace, const char *relname)
{
	Oid			relid = get_relname_relid(relname, namespace);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("pg_lease relation \"%s\" is missing from schema \"%s\"",
						relname, get_namespace_name(namespace)),
				 errhint("Reinstall the extension with DROP EXTENSION and CREATE EXTENSION pg_lease.")));
	return relid;
}

/*
 * Make sure the cache describes the installation that member_func (one of
 * the extension's own functions) belongs to.
 */
void
LeaseCatalogEnsure(Oid member_func)
{
	Oid			namespace;
	int			i;

	if (lease_catalog.valid)
		return;

	for (i = 0; i < LEASE_PLAN_COUNT; i++)
	{
		if (lease_catalog.plans[i] != NULL)
			SPI_freeplan(lease_catalog.plans[i]);
		lease_catalog.plans[i] = NULL;
	}
	if (lease_catalog.schema_sql != NULL)
		pfree(lease_catalog.schema_sql);
	lease_catalog.schema_sql = NULL;

	namespace = get_func_namespace(member_func);
	lease_catalog.namespace = namespace;
	lease_catalog.leases = LeaseRelationIn(namespace, "leases");
	lease_catalog.events = LeaseRelationIn(namespace, "lease_events");
	lease_catalog.epoch_sequence = LeaseRelationIn(namespace, "lease_epoch_seq");
	/* a new library may meet the old schema until ALTER EXTENSION ... UPDATE */
	lease_catalog.schema_11 = get_attnum(lease_catalog.leases, "lock_delay") != InvalidAttrNumber;

	lease_catalog.schema_sql =
		MemoryContextStrdup(TopMemoryContext,
							quote_identifier(get_namespace_name(namespace)));
	lease_catalog.valid = true;
}

/* A prepared statement; the caller is connected to SPI. */
SPIPlanPtr
LeaseGetPlan(LeasePlan id)
{
	SPIPlanPtr	plan = lease_catalog.plans[id];

	Assert(lease_catalog.schema_sql != NULL);
	if (plan == NULL)
	{
		const LeasePlanSpec *spec = &lease_plan_specs[id];
		const char *text = !lease_catalog.schema_11 && spec->sql_10 ? spec->sql_10 : spec->sql;
		char	   *sql = psprintf(text, lease_catalog.schema_sql);

		plan = SPI_prepare_cursor(sql, spec->nargs, (Oid *) spec->argtypes,
								  spec->cursor_options);
		if (plan == NULL)
			elog(ERROR, "pg_lease: SPI_prepare failed for \"%s\": %s",
				 sql, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "pg_lease: SPI_keepplan failed");
		lease_catalog.plans[id] = plan;
		pfree(sql);
	}
	return plan;
}

/* Run a prepared statement; returns how many rows it processed. */
uint64
LeaseExecute(LeasePlan plan, Datum *values, const char *nulls, int expected)
{
	uint64		processed;
	int			rc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_lease: SPI_connect failed");
	rc = SPI_execute_plan(LeaseGetPlan(plan), values, nulls, false, 0);
	if (rc != expected)
		elog(ERROR, "pg_lease: statement %d failed: %s", (int) plan,
			 SPI_result_code_string(rc));
	processed = SPI_processed;
	SPI_finish();
	return processed;
}

Oid
LeaseTableRelid(void)
{
	return lease_catalog.leases;
}

Oid
LeaseEventsRelid(void)
{
	return lease_catalog.events;
}

/*
 * lease_upgrades, looked up afresh (1.3 and later; InvalidOid before): an
 * update adds it without touching the leases table.
 */
Oid
LeaseUpgradesRelid(void)
{
	return get_relname_relid("lease_upgrades", lease_catalog.namespace);
}

/* lease_floor_rows, looked up afresh (1.4 and later; InvalidOid before). */
Oid
LeaseFloorsRelid(void)
{
	Oid			relid = get_relname_relid("lease_floor_rows", lease_catalog.namespace);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("pg_lease relation \"lease_floor_rows\" is missing"),
				 errhint("Update the extension: ALTER EXTENSION pg_lease UPDATE.")));
	return relid;
}

/* lease_epoch_mark, looked up afresh (1.5 and later; InvalidOid before). */
Oid
LeaseEpochMarkRelid(void)
{
	return get_relname_relid("lease_epoch_mark", lease_catalog.namespace);
}

/* Whether the installed SQL objects are those of version 1.1 or later. */
bool
LeaseSchema11(void)
{
	return lease_catalog.schema_11;
}

Oid
LeaseEpochSequence(void)
{
	return lease_catalog.epoch_sequence;
}

/*
 * The role that calls: the session's current role, which SECURITY DEFINER
 * does not change (it changes only the current user).
 */
Oid
LeaseCallerRole(void)
{
	return GetOuterUserId();
}

Datum
LeaseCallerRoleName(void)
{
	Oid			role = LeaseCallerRole();

	if (lease_caller.role != role)
	{
		namestrcpy(&lease_caller.name, GetUserNameFromId(role, false));
		lease_caller.role = role;
	}
	return NameGetDatum(&lease_caller.name);
}

bool
LeaseCallerIsSuperuser(void)
{
	return superuser_arg(LeaseCallerRole());
}
