/*-------------------------------------------------------------------------
 *
 * counters.c
 *	  Per-lease counters in shared memory: grants, renewals, releases,
 *	  revocations, handovers, evictions, and fence rejections by SQLSTATE.
 *
 * Fence rejections happen in transactions that then abort, so no table
 * could keep them; shared memory can, and a counter costs an atomic add.
 * The counters exist when the library is in shared_preload_libraries
 * (shared memory is only handed out at server start); otherwise counting is
 * a no-op and lease_counters() says how to turn it on.  They start at zero
 * with the server, and a lease first counted when the table is full
 * (pg_lease.max_counted_leases) is not counted.  Nothing on the fence's
 * passing path touches them.
 *
 * Twins: lease_counters_snapshot and lease_counters_reset in
 * sql/sql_edition/80_counters.sql, which count from lease_events (no
 * renewals, no rejections: they leave no row).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

typedef struct LeaseCounterKey
{
	Oid			database;
	char		name[LEASE_NAME_MAX_BYTES + 1];
} LeaseCounterKey;

typedef struct LeaseCounterEntry
{
	LeaseCounterKey key;
	pg_atomic_uint64 counts[LEASE_COUNTER_KINDS];
} LeaseCounterEntry;

typedef struct LeaseCounterShared
{
	LWLock	   *lock;			/* guards the hash table's shape */
	TimestampTz since;			/* server start or last reset */
} LeaseCounterShared;

static int	lease_max_counted_leases = 10000;
static LeaseCounterShared *lease_counters = NULL;
static HTAB *lease_counter_table = NULL;
static Size
LeaseCountersStructSize(void)
{
	return sizeof(LeaseCounterShared);
}

static Size
LeaseCountersTableSize(void)
{
	return hash_estimate_size(lease_max_counted_leases, sizeof(LeaseCounterEntry));
}

static void
LeaseCountersShmemInit(void *memory, bool found)
{
	HASHCTL		info;

	lease_counters = memory;
	if (!found)
	{
		lease_counters->lock = &(GetNamedLWLockTranche("pg_lease"))->lock;
		lease_counters->since = GetCurrentTimestamp();
	}
	info.keysize = sizeof(LeaseCounterKey);
	info.entrysize = sizeof(LeaseCounterEntry);
	lease_counter_table = ShmemInitHash("pg_lease counter table",
										lease_max_counted_leases, lease_max_counted_leases,
										&info, HASH_ELEM | HASH_BLOBS);
}

static const LeaseShmemPart lease_counters_part = {
	"pg_lease counters", LeaseCountersStructSize, LeaseCountersTableSize, "pg_lease",
	LeaseCountersShmemInit
};

/* From _PG_init: set up the counters when loaded at server start. */
void
LeaseCountersInit(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("pg_lease.max_counted_leases",
							"Leases whose counters lease_counters keeps.",
							"Needs pg_lease in shared_preload_libraries; set at server start.",
							&lease_max_counted_leases,
							10000, 16, 1000000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	LeaseShmemRegister(&lease_counters_part);
}

static void
LeaseCounterKeyFor(LeaseCounterKey *key, const char *name, int len)
{
	memset(key, 0, sizeof(*key));
	key->database = MyDatabaseId;
	memcpy(key->name, name, Min(len, LEASE_NAME_MAX_BYTES));
}

/* Count one event of kind for lease name (len bytes, not terminated). */
void
LeaseCount(const char *name, int len, LeaseCounterKind kind)
{
	LeaseCounterKey key;
	LeaseCounterEntry *entry;
	bool		found;

	if (lease_counters == NULL)
		return;
	LeaseCounterKeyFor(&key, name, len);

	LWLockAcquire(lease_counters->lock, LW_SHARED);
	entry = hash_search(lease_counter_table, &key, HASH_FIND, NULL);
	if (entry != NULL)
	{
		pg_atomic_fetch_add_u64(&entry->counts[kind], 1);
		LWLockRelease(lease_counters->lock);
		return;
	}
	LWLockRelease(lease_counters->lock);

	/* first event of this lease since start: add it */
	LWLockAcquire(lease_counters->lock, LW_EXCLUSIVE);
	entry = hash_search(lease_counter_table, &key, HASH_ENTER_NULL, &found);
	if (entry != NULL)
	{
		if (!found)
		{
			int			i;

			for (i = 0; i < LEASE_COUNTER_KINDS; i++)
				pg_atomic_init_u64(&entry->counts[i], 0);
		}
		pg_atomic_fetch_add_u64(&entry->counts[kind], 1);
	}
	LWLockRelease(lease_counters->lock);
}

void
LeaseCountText(text *name, LeaseCounterKind kind)
{
	LeaseCount(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name), kind);
}

static void
LeaseRequireCounters(void)
{
	if (lease_counters == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_lease counters are not enabled"),
				 errdetail("Counters live in shared memory, which is set up at server start."),
				 errhint("Add pg_lease to shared_preload_libraries and restart the server.")));
}

/* The counters of this database's leases, and the time they start from. */
PG_FUNCTION_INFO_V1(lease_counters_snapshot);
Datum
lease_counters_snapshot(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS scan;
	LeaseCounterEntry *entry;

	LeaseRequireCounters();
	InitMaterializedSRF(fcinfo, 0);

	LWLockAcquire(lease_counters->lock, LW_SHARED);
	hash_seq_init(&scan, lease_counter_table);
	while ((entry = hash_seq_search(&scan)) != NULL)
	{
		Datum		values[LEASE_COUNTER_KINDS + 2];
		bool		nulls[LEASE_COUNTER_KINDS + 2] = {0};
		int			i;

		if (entry->key.database != MyDatabaseId)
			continue;
		values[0] = CStringGetTextDatum(entry->key.name);
		for (i = 0; i < LEASE_COUNTER_KINDS; i++)
			values[i + 1] = Int64GetDatum((int64) pg_atomic_read_u64(&entry->counts[i]));
		values[LEASE_COUNTER_KINDS + 1] = TimestampTzGetDatum(lease_counters->since);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(lease_counters->lock);
	return (Datum) 0;
}

/* Forget every lease's counters (all databases); administrators only. */
PG_FUNCTION_INFO_V1(lease_counters_reset);
Datum
lease_counters_reset(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS scan;
	LeaseCounterEntry *entry;

	LeaseRequireCounters();
	LWLockAcquire(lease_counters->lock, LW_EXCLUSIVE);
	hash_seq_init(&scan, lease_counter_table);
	while ((entry = hash_seq_search(&scan)) != NULL)
		(void) hash_search(lease_counter_table, &entry->key, HASH_REMOVE, NULL);
	lease_counters->since = GetCurrentTimestamp();
	LWLockRelease(lease_counters->lock);
	PG_RETURN_VOID();
}
