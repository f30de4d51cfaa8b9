/*-------------------------------------------------------------------------
 *
 * floors_fence.c
 *	  The fence trigger's downstream half: a table fenced by a lease of
 *	  another database, through the floor this database keeps (floors.c);
 *	  lease_raise; and the floors a transaction's writes passed.
 *
 * The token is declared the same ways as for the local fence (lease_use,
 * pg_lease.epoch, the epoch column: fence_trigger.c), but only a token
 * declared for the lease by name moves the floor (SPEC "Changes in 1.5").
 * Epochs are unique within a lease store, not within a lease: an unnamed token
 * above the floor may be another lease's of the same store (a `pglease run
 * --lease A` job writing to a table fenced by B), and letting it raise B's
 * floor would shut B's real leader out.  So:
 *   - named (lease_use(name, epoch)): passes at or above the floor, and
 *     raises it when above;
 *   - unnamed (a pg_lease.epoch value or list, the row's epoch column):
 *     passes only when it equals the floor, and never moves it: LS001
 *     below, LS003 above (not known to be this lease's).
 * Expiry cannot be known here, so there is no LS002: a paused leader is
 * shut out once its successor raised the floor.
 *
 * Twins: lease_sql_floor_check and lease_raise in
 * sql/sql_edition/70_floors.sql, and the downstream branch of
 * lease_fence_trigger in 60_fence.sql.
 *
 *-------------------------------------------------------------------------
 */
#include "floors.h"
#include "epoch_list.h"
#include "fence.h"
#include "lease.h"

#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "validate.h"

/*
 * The floors this transaction's writes passed, by (store, name): the key
 * is the store, a NUL, then the lease name; state.epoch the token.  The
 * token's floor lock is held until the transaction ends, so no raise above
 * it can commit first, and further rows need no look.  A savepoint rolled
 * back takes its passes with it, as it takes their locks.
 */
static LeaseXactMemo *floor_passes = NULL;

static void
FloorPassXactCallback(XactEvent event, void *arg)
{
	LeaseXactMemoAtEnd(&floor_passes, event);
}

static void
FloorPassSubXactCallback(SubXactEvent event, SubTransactionId subid,
						 SubTransactionId parent, void *arg)
{
	LeaseXactMemoAtSubEnd(&floor_passes, event, subid, parent);
}

void
LeaseFloorFenceInit(void)
{
	RegisterXactCallback(FloorPassXactCallback, NULL);
	RegisterSubXactCallback(FloorPassSubXactCallback, NULL);
}

static LeaseXactMemo **
FloorPassFind(const LeaseFloorKey *key)
{
	LeaseXactMemo **link;

	for (link = &floor_passes; *link != NULL; link = &(*link)->next)
	{
		const char *store = (*link)->key;

		if (strcmp(store, key->store) == 0 &&
			strcmp(store + strlen(store) + 1, key->name) == 0)
			return link;
	}
	return NULL;
}

/* Whether a write of this transaction passed key's floor with token epoch. */
static bool
FloorPassed(const LeaseFloorKey *key, int64 epoch)
{
	LeaseXactMemo **link = FloorPassFind(key);

	return link != NULL && (*link)->state.epoch == epoch;
}

/* The token a write of this transaction passed key's floor with; 0: none. */
static int64
FloorPassedEpoch(const LeaseFloorKey *key)
{
	LeaseXactMemo **link = FloorPassFind(key);

	return link != NULL ? (*link)->state.epoch : 0;
}

static void
FloorForget(const LeaseFloorKey *key)
{
	LeaseXactMemo **link = FloorPassFind(key);

	if (link != NULL)
		LeaseXactMemoDrop(link);
}

static void
FloorKeep(const LeaseFloorKey *key, int64 epoch)
{
	size_t		store_len = strlen(key->store);
	size_t		name_len = strlen(key->name);
	LeaseXactMemo *entry;

	FloorForget(key);
	entry = LeaseXactMemoPush(&floor_passes, store_len + name_len + 2);
	memcpy(entry->key, key->store, store_len + 1);
	memcpy(entry->key + store_len + 1, key->name, name_len + 1);
	entry->state.epoch = epoch;
}

static void
DownstreamCount(const LeaseFloorKey *key, LeaseCounterKind kind)
{
	LeaseCount(key->name, strlen(key->name), kind);
}

static void
DownstreamRejectStale(const LeaseFloorKey *key, Relation rel, int64 token, int64 floor)
{
	DownstreamCount(key, LEASE_COUNT_REJECTED_STALE);
	ereport(ERROR,
			(errcode(ERRCODE_LEASE_STALE_EPOCH),
			 errmsg("fenced write to \"%s\" rejected: epoch " INT64_FORMAT " of lease \"%s\" is below its floor",
					RelationGetRelationName(rel), token, key->name),
			 errdetail("The floor of lease \"%s\" of store \"%s\" is " INT64_FORMAT
					   "; a newer grant replaced the writer's.",
					   key->name, key->store, floor),
			 LeaseFenceHint(errhint("The writer no longer leads: it must stop and acquire the lease again."))));
}

static void
DownstreamRejectUnnamed(const LeaseFloorKey *key, Relation rel, int64 token, int64 floor)
{
	DownstreamCount(key, LEASE_COUNT_REJECTED_NO_TOKEN);
	ereport(ERROR,
			(errcode(ERRCODE_LEASE_NO_TOKEN),
			 errmsg("write to fenced table \"%s\" carries no token known to be of lease \"%s\"",
					RelationGetRelationName(rel), key->name),
			 errdetail("Epoch " INT64_FORMAT " is not the floor (" INT64_FORMAT ") of lease \"%s\" of store \"%s\", "
					   "and a token not named for the lease never moves its floor: it may be another lease's.",
					   token, floor, key->name, key->store),
			 LeaseFenceHint(errhint("Raise the floor first with lease_raise(), or call lease_use('%s', <epoch>) in the transaction.",
									key->name))));
}

/*
 * A token declared for the lease by name: it must be at least the floor,
 * and above it raises the floor in this transaction.  The first write of
 * the transaction pays; further rows find the pass kept.
 */
void
LeaseFloorFenceNamed(const LeaseFloorKey *key, Relation rel, int64 token)
{
	int64		floor;

	if (FloorPassed(key, token))
		return;
	floor = LeaseFloorCheck(key, token);
	if (floor != 0)
		DownstreamRejectStale(key, rel, token, floor);
	FloorKeep(key, token);
}

/*
 * Unnamed tokens (one from the row, or pg_lease.epoch's list): the one that
 * equals the floor passes, holding the floor's lock; returns it.  A single
 * token is locked and checked at once (one read); from a list the floor is
 * looked up first, to know which to lock.  A raise may commit between the
 * look and the lock: then the new floor is looked for in the list (floors
 * only grow, so this ends).
 */
int64
LeaseFloorFenceUnnamed(const LeaseFloorKey *key, Relation rel, const int64 *epochs, int count)
{
	int64		candidate;
	int64		floor;
	int64		highest;

	candidate = FloorPassedEpoch(key);
	if (candidate > 0 && LeaseEpochListed(epochs, count, candidate))
		return candidate;
	floor = -1;					/* not read yet */
	candidate = count == 1 ? epochs[0] : (floor = LeaseFloorPeek(key));
	while (candidate > 0 && LeaseEpochListed(epochs, count, candidate))
	{
		floor = LeaseFloorHold(key, candidate);
		if (floor == candidate)
		{
			FloorKeep(key, candidate);
			return candidate;
		}
		candidate = floor;
	}
	if (floor < 0)
		floor = LeaseFloorPeek(key);
	highest = LeaseEpochListHighest(epochs, count);
	if (highest < floor)
		DownstreamRejectStale(key, rel, highest, floor);
	DownstreamRejectUnnamed(key, rel, highest, floor);
	return 0;					/* keep compiler quiet */
}

/*
 * Raise the floor of (store, name) to epoch: true when the floor is now
 * epoch, false when it was already higher.
 */
PG_FUNCTION_INFO_V1(lease_raise);
Datum
lease_raise(PG_FUNCTION_ARGS)
{
	text	   *store = LeaseLabelArg(fcinfo, 0, "lease store");
	text	   *name = LeaseLabelArg(fcinfo, 1, "lease name");
	int64		epoch = LeaseEpochArg(fcinfo, 2);
	LeaseFloorKey key;

	if (epoch <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("epoch must be positive")));
	LeaseBegin(fcinfo);
	key.store = text_to_cstring(store);
	key.name = text_to_cstring(name);
	if (strcmp(key.store, LeaseFloorStoreId()) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lease store \"%s\" is this database", key.store),
				 errdetail("Floors fence the leases of other databases; this database's own leases are fenced by their current epoch.")));
	FloorForget(&key);
	/*
	 * Hold the floor lock of epoch as its writers do, until the transaction
	 * ends: a higher raise then ends this one as it ends them, after
	 * pg_lease.takeover_timeout, however long this transaction stays open.
	 */
	(void) LeaseFloorHold(&key, epoch);
	PG_RETURN_BOOL(LeaseFloorRaise(&key, epoch) == epoch);
}
