/*-------------------------------------------------------------------------
 *
 * fence_xact.c
 *	  Per-transaction state: tokens declared with lease_use, and the grants
 *	  whose fence lock the transaction holds.
 *
 * Once a transaction holds the fence lock of a grant (fence_lock.c), no
 * other transaction can end that grant until this one ends, so the lease
 * row's epoch and expiry are read once, after the lock is granted, and
 * kept here (and across transactions while the row does not change:
 * fence_cache.c).  Only the clock is looked at again for each further row.
 * Lease functions called in the same transaction forget the row they
 * change.  Entries remember the subtransaction that made them: a
 * rolled-back subtransaction takes its tokens with it, and its locks too,
 * so its entries go.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

typedef struct LeaseXactEntry
{
	struct LeaseXactEntry *next;
	SubTransactionId subid;
	LeaseRowState state;		/* for tokens only state.epoch is used */
	char		name[FLEXIBLE_ARRAY_MEMBER];
} LeaseXactEntry;

/* Both lists live in TopTransactionContext and die with the transaction. */
static LeaseXactEntry *declared_tokens = NULL;
static LeaseXactEntry *locked_rows = NULL;
/* floors (fence_floors.c) passed: name is the store, a NUL, then the lease name */
static LeaseXactEntry *floor_passes = NULL;

static LeaseXactEntry *
EntryFind(LeaseXactEntry *list, const char *name)
{
	for (; list != NULL; list = list->next)
		if (strcmp(list->name, name) == 0)
			return list;
	return NULL;
}

static LeaseXactEntry *
EntryPush(LeaseXactEntry **list, const char *name)
{
	size_t		len = strlen(name);
	LeaseXactEntry *entry;

	entry = MemoryContextAllocZero(TopTransactionContext,
								   offsetof(LeaseXactEntry, name) + len + 1);
	memcpy(entry->name, name, len + 1);
	entry->subid = GetCurrentSubTransactionId();
	entry->next = *list;
	*list = entry;
	return entry;
}

/* Remove the entries that match name (any name when NULL) or subid. */
static void
EntriesRemove(LeaseXactEntry **list, const char *name, SubTransactionId subid)
{
	while (*list != NULL)
	{
		LeaseXactEntry *entry = *list;

		if ((name != NULL && strcmp(entry->name, name) == 0) ||
			(name == NULL && entry->subid == subid))
		{
			*list = entry->next;
			pfree(entry);
		}
		else
			list = &entry->next;
	}
}

static void
EntriesReparent(LeaseXactEntry *list, SubTransactionId subid, SubTransactionId parent)
{
	for (; list != NULL; list = list->next)
		if (list->subid == subid)
			list->subid = parent;
}

static void
LeaseXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			declared_tokens = NULL;
			locked_rows = NULL;
			floor_passes = NULL;
			break;
		default:
			break;
	}
}

static void
LeaseSubXactCallback(SubXactEvent event, SubTransactionId subid,
					 SubTransactionId parent, void *arg)
{
	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			EntriesRemove(&declared_tokens, NULL, subid);
			EntriesRemove(&locked_rows, NULL, subid);
			EntriesRemove(&floor_passes, NULL, subid);
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			EntriesReparent(declared_tokens, subid, parent);
			EntriesReparent(locked_rows, subid, parent);
			EntriesReparent(floor_passes, subid, parent);
			break;
		default:
			break;
	}
}

void
LeaseXactStateInit(void)
{
	RegisterXactCallback(LeaseXactCallback, NULL);
	RegisterSubXactCallback(LeaseSubXactCallback, NULL);
}

/* lease_use: the newest declaration for a lease wins. */
void
LeaseDeclareToken(const char *name, int64 epoch)
{
	EntryPush(&declared_tokens, name)->state.epoch = epoch;
}

bool
LeaseDeclaredToken(const char *name, int64 *epoch)
{
	LeaseXactEntry *entry = EntryFind(declared_tokens, name);

	if (entry == NULL)
		return false;
	*epoch = entry->state.epoch;
	return true;
}

/*
 * Read the newest committed version of the lease row, whatever the
 * transaction's isolation level; with key_share, key-share-lock it as 1.2
 * did (compat.c).  False if there is none.
 */
static bool
ReadRowLatest(const char *name, bool key_share, LeaseRowState *state)
{
	text	   *key = cstring_to_text(name);
	Relation	rel = table_open(LeaseTableRelid(), key_share ? RowShareLock : AccessShareLock);
	TupleTableSlot *slot = LeaseRowSlot(rel);
	bool		found;

	if (key_share)
		found = LeaseLockRow(key, LockTupleKeyShare, GetLatestSnapshot(), rel, slot);
	else
		found = LeaseFindRow(key, GetLatestSnapshot(), rel, slot);
	if (found)
	{
		slot_getallattrs(slot);
		state->epoch = DatumGetInt64(slot->tts_values[LEASE_COL_EPOCH]);
		state->held = !slot->tts_isnull[LEASE_COL_HOLDER];
		state->expires_at = DatumGetTimestampTz(slot->tts_values[LEASE_COL_EXPIRES_AT]);
	}
	LeaseRowSlotRelease(slot);
	table_close(rel, NoLock);
	pfree(key);
	return found;
}

/*
 * The lease row as it is once this transaction holds the fence lock of the
 * grant of epoch, held until the transaction ends; NULL when there is no
 * such lease.  The lock is taken first and the row read after it, with the
 * latest snapshot: a change of holder that committed before the lock was
 * granted is seen, under every isolation level.  The row is kept for the
 * rest of the transaction only when epoch is its grant (then nobody else
 * can change its holder or epoch); a row of another grant is returned but
 * not kept, as the caller refuses the write.  The lookup goes straight to
 * the table (row_lock.c), so no privilege on leases is needed.  The caller
 * has validated the catalog cache.
 */
const LeaseRowState *
LeaseLockGrantShared(const char *name, int64 epoch)
{
	static LeaseRowState other_grant;
	LeaseXactEntry *entry = EntryFind(locked_rows, name);
	LeaseRowState state;
	bool		row_lock = LeaseFenceRowLockNeeded();

	if (entry != NULL)
		return &entry->state;
	/* 1.2 backends may be running: the row lock too, and first (compat.c) */
	if (row_lock && !ReadRowLatest(name, true, &state))
		return NULL;
	LeaseFenceLockShare(name, epoch);
	if (!row_lock && !LeaseGrantCacheLookup(name, epoch, &state))
	{
		uint64		stamp = LeaseGrantCacheStamp(name);

		if (!ReadRowLatest(name, false, &state))
			return NULL;
		if (state.epoch == epoch)
			LeaseGrantCacheStore(name, &state, stamp);
	}
	if (state.epoch != epoch)
	{
		other_grant = state;
		return &other_grant;
	}
	entry = EntryPush(&locked_rows, name);
	entry->state = state;
	return &entry->state;
}

/* The newest committed lease row, unlocked; false if there is none. */
bool
LeasePeekRow(const char *name, LeaseRowState *state)
{
	return ReadRowLatest(name, false, state);
}

/* The row kept for the transaction, if any: its fence lock is held. */
const LeaseRowState *
LeaseLockedGrant(const char *name)
{
	LeaseXactEntry *entry = EntryFind(locked_rows, name);

	return entry != NULL ? &entry->state : NULL;
}

/*
 * The kept row's expiry has passed: read the row again, in case a renewal
 * committed meanwhile.  The fence lock is held already, so this does not
 * wait, and the grant cannot have changed but by this transaction's own
 * lease functions, which forget the row.
 */
const LeaseRowState *
LeaseRefreshRow(const char *name)
{
	LeaseXactEntry *entry = EntryFind(locked_rows, name);

	if (entry == NULL)
		return NULL;
	if (!ReadRowLatest(name, LeaseFenceRowLockNeeded(), &entry->state))
	{
		LeaseForgetRow(name);
		return NULL;
	}
	return &entry->state;
}

/* A lease function changed this row: look it up again next time. */
void
LeaseForgetRow(const char *name)
{
	EntriesRemove(&locked_rows, name, InvalidSubTransactionId);
}

/* LeaseForgetRow for a name as text; nothing to do when no row is kept. */
void
LeaseForgetRowText(text *name)
{
	char	   *str;

	if (locked_rows == NULL)
		return;
	str = text_to_cstring(name);
	LeaseForgetRow(str);
	pfree(str);
}

static LeaseXactEntry **
FloorPassFind(const LeaseFloorKey *key)
{
	LeaseXactEntry **link;

	for (link = &floor_passes; *link != NULL; link = &(*link)->next)
	{
		const char *store = (*link)->name;

		if (strcmp(store, key->store) == 0 &&
			strcmp(store + strlen(store) + 1, key->name) == 0)
			return link;
	}
	return NULL;
}

/*
 * Whether a write of this transaction passed the floor of key with token
 * epoch: it holds the token's floor lock, so no raise above it can commit
 * before this transaction ends, and further rows need no look.
 */
bool
LeaseFloorPassed(const LeaseFloorKey *key, int64 epoch)
{
	LeaseXactEntry **link = FloorPassFind(key);

	return link != NULL && (*link)->state.epoch == epoch;
}

/* The token a write of this transaction passed the floor of key with; 0 if none. */
int64
LeaseFloorPassedEpoch(const LeaseFloorKey *key)
{
	LeaseXactEntry **link = FloorPassFind(key);

	return link != NULL ? (*link)->state.epoch : 0;
}

void
LeaseFloorKeep(const LeaseFloorKey *key, int64 epoch)
{
	size_t		store_len = strlen(key->store);
	size_t		name_len = strlen(key->name);
	LeaseXactEntry *entry;

	LeaseFloorForget(key);
	entry = MemoryContextAllocZero(TopTransactionContext,
								   offsetof(LeaseXactEntry, name) + store_len + name_len + 2);
	memcpy(entry->name, key->store, store_len + 1);
	memcpy(entry->name + store_len + 1, key->name, name_len + 1);
	entry->subid = GetCurrentSubTransactionId();
	entry->state.epoch = epoch;
	entry->next = floor_passes;
	floor_passes = entry;
}

void
LeaseFloorForget(const LeaseFloorKey *key)
{
	LeaseXactEntry **link = FloorPassFind(key);

	if (link != NULL)
	{
		LeaseXactEntry *entry = *link;

		*link = entry->next;
		pfree(entry);
	}
}
