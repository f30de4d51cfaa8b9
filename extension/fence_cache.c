/*-------------------------------------------------------------------------
 *
 * fence_cache.c
 *	  Lease rows kept across transactions, so that a fenced transaction whose
 *	  lease row has not changed does not read it again.
 *
 * Every committed change of a lease row (grant, renewal, release, revoke,
 * handover, prune) bumps one of LEASE_GRANT_SLOTS shared counters, chosen
 * by database and lease name, after the change is visible and before the
 * changing transaction's locks are released (the commit callback runs
 * between the two).  A backend keeps the row it read together with the
 * counter's value read before reading it.  A later transaction uses the
 * kept row only once it holds the grant's fence lock and the counter still
 * has that value:
 *   - a change of holder of that grant commits holding the lock
 *	   exclusively, so it either bumped the counter before the share lock
 *	   was granted, or cannot commit until this transaction ends;
 *   - any other change that committed before the counter was read bumped
 *	   it, so the kept row is the newest committed one.
 * A counter shared by several leases only makes rows be read more often.
 * A transaction that changed a lease row itself neither uses nor keeps
 * rows: it sees its own changes, which are not committed yet.  Nor does a
 * standby: replayed changes bump nothing, and a session may outlive the
 * promotion.
 *
 * A prepared transaction that changed a lease row is committed by another
 * backend, which does not run this callback; it queues a relcache
 * invalidation of the leases table instead, which PostgreSQL sends at
 * COMMIT PREPARED before releasing the locks, and which makes every backend
 * forget its kept rows when it next takes a fence lock.
 *
 * The counters live in shared memory, which exists only when pg_lease is
 * preloaded; otherwise nothing is kept and every transaction reads its row.
 *
 *-------------------------------------------------------------------------
 */
#include "fence.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "port/pg_bitutils.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"

#define LEASE_GRANT_SLOTS		1024	/* a power of two */
#define LEASE_GRANT_CACHE_MAX	1024	/* rows kept per backend */

typedef struct LeaseGrantCounters
{
	pg_atomic_uint64 changes[LEASE_GRANT_SLOTS];
} LeaseGrantCounters;

typedef struct LeaseKeptRow
{
	char		name[LEASE_NAME_MAX_BYTES + 1];	/* hash key */
	uint64		changes;		/* the slot's counter before the row was read */
	LeaseRowState state;
} LeaseKeptRow;

static LeaseGrantCounters *grant_counters = NULL;
static HTAB *kept_rows = NULL;
static Oid	kept_rows_table = InvalidOid;	/* the leases table they came from */
static bool kept_rows_stale = false;	/* a relcache invalidation came */

/* Slots whose counter this transaction bumps when it commits. */
static bool pending_any = false;
static uint64 pending[LEASE_GRANT_SLOTS / 64];

static Size
LeaseGrantCountersSize(void)
{
	return sizeof(LeaseGrantCounters);
}

static void
LeaseGrantCountersInit(void *memory, bool found)
{
	int			i;

	grant_counters = memory;
	if (!found)
		for (i = 0; i < LEASE_GRANT_SLOTS; i++)
			pg_atomic_init_u64(&grant_counters->changes[i], 0);
}

static const LeaseShmemPart grant_counters_part = {
	"pg_lease grant changes", LeaseGrantCountersSize, NULL, NULL, LeaseGrantCountersInit
};

/*
 * A lease name's hash: hash_bytes of the name, which is also what the kept
 * rows' table (HASH_STRINGS) computes for it, so one hash serves both.
 */
static uint32
LeaseGrantHash(const char *name, size_t len)
{
	return hash_bytes((const unsigned char *) name, (int) len);
}

static uint32
LeaseGrantSlotOf(uint32 hash)
{
	return hash_combine(hash, MyDatabaseId) & (LEASE_GRANT_SLOTS - 1);
}

static uint32
LeaseGrantSlot(const char *name, size_t len)
{
	return LeaseGrantSlotOf(LeaseGrantHash(name, len));
}

static void
FenceCacheXactCallback(XactEvent event, void *arg)
{
	int			word;

	if (!pending_any)
		return;
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			for (word = 0; word < lengthof(pending); word++)
				while (pending[word] != 0)
				{
					int			bit = pg_rightmost_one_pos64(pending[word]);

					pending[word] &= pending[word] - 1;
					(void) pg_atomic_fetch_add_u64(&grant_counters->changes[word * 64 + bit], 1);
				}
			break;
		case XACT_EVENT_PRE_PREPARE:
			/* sent at COMMIT PREPARED, before the locks are released */
			CacheInvalidateRelcacheByRelid(LeaseTableRelid());
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
			break;
		default:
			return;
	}
	memset(pending, 0, sizeof(pending));
	pending_any = false;
}

static void
FenceCacheRelcacheCallback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == kept_rows_table)
		kept_rows_stale = true;
}

/* From _PG_init. */
void
LeaseFenceCacheInit(void)
{
	RegisterXactCallback(FenceCacheXactCallback, NULL);
	CacheRegisterRelcacheCallback(FenceCacheRelcacheCallback, (Datum) 0);
	if (!process_shared_preload_libraries_in_progress)
		return;
	LeaseShmemRegister(&grant_counters_part);
}

/*
 * This transaction changes the row of lease name (text, as the lease
 * functions have it): bump its counter when it commits.
 */
void
LeaseFenceGrantChanged(text *name)
{
	uint32		slot;

	if (grant_counters == NULL)
		return;
	slot = LeaseGrantSlot(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name));
	pending[slot / 64] |= UINT64CONST(1) << (slot % 64);
	pending_any = true;
}

/* The kept rows, emptied when they may belong to another leases table. */
static HTAB *
LeaseKeptRows(void)
{
	HASHCTL		info;

	if (kept_rows != NULL &&
		(kept_rows_stale || kept_rows_table != LeaseTableRelid() ||
		 hash_get_num_entries(kept_rows) >= LEASE_GRANT_CACHE_MAX))
	{
		hash_destroy(kept_rows);
		kept_rows = NULL;
	}
	if (kept_rows == NULL)
	{
		info.keysize = LEASE_NAME_MAX_BYTES + 1;
		info.entrysize = sizeof(LeaseKeptRow);
		info.hcxt = TopMemoryContext;
		kept_rows = hash_create("pg_lease kept lease rows", 64, &info,
								HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
		kept_rows_table = LeaseTableRelid();
		kept_rows_stale = false;
	}
	return kept_rows;
}

/*
 * The counter that a row of lease name read from now on is kept with, for
 * LeaseFenceCacheStore; read before the row is.
 */
uint64
LeaseFenceCacheStamp(const char *name)
{
	if (grant_counters == NULL)
		return 0;
	pg_memory_barrier();
	return pg_atomic_read_u64(&grant_counters->changes[LeaseGrantSlot(name, strlen(name))]);
}

/*
 * The kept row of lease name if it is still the newest committed one; the
 * caller holds the fence lock of the grant of epoch.  Invalidations are
 * taken in first (a COMMIT PREPARED's, see above).
 */
bool
LeaseFenceCacheLookup(const char *name, int64 epoch, LeaseRowState *state)
{
	LeaseKeptRow *kept;
	uint32		hash;

	if (grant_counters == NULL || pending_any || RecoveryInProgress())
		return false;
	AcceptInvalidationMessages();
	hash = LeaseGrantHash(name, strlen(name));
	kept = hash_search_with_hash_value(LeaseKeptRows(), name, hash, HASH_FIND, NULL);
	if (kept == NULL || kept->state.epoch != epoch)
		return false;
	pg_memory_barrier();
	if (pg_atomic_read_u64(&grant_counters->changes[LeaseGrantSlotOf(hash)]) != kept->changes)
		return false;
	*state = kept->state;
	return true;
}

/* Keep the row of lease name, read after stamp was taken. */
void
LeaseFenceCacheStore(const char *name, const LeaseRowState *state, uint64 stamp)
{
	LeaseKeptRow *kept;

	if (grant_counters == NULL || pending_any || RecoveryInProgress())
		return;
	kept = hash_search(LeaseKeptRows(), name, HASH_ENTER, NULL);
	kept->changes = stamp;
	kept->state = *state;
}
