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
 * change.  Entries remember the subtransaction that made them
 * (xact_memo.c): a rolled-back subtransaction takes its tokens with it, and
 * its locks too, so its entries go.
 *
 * Twin: the tokens of sql/sql_edition/60_fence.sql, kept in a
 * transaction-local setting (lease_use, lease_sql_fence_check).
 *
 *-------------------------------------------------------------------------
 */
#include "fence.h"
#include "lease.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

/* Both lists live in TopTransactionContext and die with the transaction. */
static LeaseXactMemo *declared_tokens = NULL;
static LeaseXactMemo *locked_rows = NULL;

static LeaseXactMemo *
EntryFind(LeaseXactMemo *list, const char *name)
{
	for (; list != NULL; list = list->next)
		if (strcmp(list->key, name) == 0)
			return list;
	return NULL;
}

static LeaseXactMemo *
EntryPush(LeaseXactMemo **list, const char *name)
{
	size_t		len = strlen(name);
	LeaseXactMemo *entry = LeaseXactMemoPush(list, len + 1);

	memcpy(entry->key, name, len + 1);
	return entry;
}

/* Remove the entries of name. */
static void
EntriesRemove(LeaseXactMemo **list, const char *name)
{
	while (*list != NULL)
	{
		if (strcmp((*list)->key, name) == 0)
			LeaseXactMemoDrop(list);
		else
			list = &(*list)->next;
	}
}

static void
LeaseXactCallback(XactEvent event, void *arg)
{
	LeaseXactMemoAtEnd(&declared_tokens, event);
	LeaseXactMemoAtEnd(&locked_rows, event);
}

static void
LeaseSubXactCallback(SubXactEvent event, SubTransactionId subid,
					 SubTransactionId parent, void *arg)
{
	LeaseXactMemoAtSubEnd(&declared_tokens, event, subid, parent);
	LeaseXactMemoAtSubEnd(&locked_rows, event, subid, parent);
}

void
LeaseFenceXactInit(void)
{
	RegisterXactCallback(LeaseXactCallback, NULL);
	RegisterSubXactCallback(LeaseSubXactCallback, NULL);
}

/* lease_use: the newest declaration for a lease wins. */
void
LeaseFenceDeclareToken(const char *name, int64 epoch)
{
	EntryPush(&declared_tokens, name)->state.epoch = epoch;
}

bool
LeaseFenceDeclaredToken(const char *name, int64 *epoch)
{
	LeaseXactMemo *entry = EntryFind(declared_tokens, name);

	if (entry == NULL)
		return false;
	*epoch = entry->state.epoch;
	return true;
}

/*
 * Read the newest committed version of the lease row, whatever the
 * transaction's isolation level; with key_share, key-share-lock it as 1.2
 * did (fence_compat.c).  False if there is none.
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
 * the table (lease_row_lock.c), so no privilege on leases is needed.  The
 * caller has validated the catalog cache.
 */
const LeaseRowState *
LeaseFenceLockGrantShared(const char *name, int64 epoch)
{
	static LeaseRowState other_grant;
	LeaseXactMemo *entry = EntryFind(locked_rows, name);
	LeaseRowState state;
	bool		row_lock = LeaseFenceRowLockNeeded();

	if (entry != NULL)
		return &entry->state;
	/* 1.2 backends may run: the row lock too, and first (fence_compat.c) */
	if (row_lock && !ReadRowLatest(name, true, &state))
		return NULL;
	LeaseFenceLockShare(name, epoch);
	if (!row_lock && !LeaseFenceCacheLookup(name, epoch, &state))
	{
		uint64		stamp = LeaseFenceCacheStamp(name);

		if (!ReadRowLatest(name, false, &state))
			return NULL;
		if (state.epoch == epoch)
			LeaseFenceCacheStore(name, &state, stamp);
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
LeaseFencePeekRow(const char *name, LeaseRowState *state)
{
	return ReadRowLatest(name, false, state);
}

/* The row kept for the transaction, if any: its fence lock is held. */
const LeaseRowState *
LeaseFenceLockedGrant(const char *name)
{
	LeaseXactMemo *entry = EntryFind(locked_rows, name);

	return entry != NULL ? &entry->state : NULL;
}

/*
 * The kept row's expiry has passed: read the row again, in case a renewal
 * committed meanwhile.  The fence lock is held already, so this does not
 * wait, and the grant cannot have changed but by this transaction's own
 * lease functions, which forget the row.
 */
const LeaseRowState *
LeaseFenceRefreshRow(const char *name)
{
	LeaseXactMemo *entry = EntryFind(locked_rows, name);

	if (entry == NULL)
		return NULL;
	if (!ReadRowLatest(name, LeaseFenceRowLockNeeded(), &entry->state))
	{
		LeaseFenceForgetRow(name);
		return NULL;
	}
	return &entry->state;
}

/* A lease function changed this row: look it up again next time. */
void
LeaseFenceForgetRow(const char *name)
{
	EntriesRemove(&locked_rows, name);
}

/* LeaseFenceForgetRow of a text name; nothing to do when no row is kept. */
void
LeaseFenceForgetRowText(text *name)
{
	char	   *str;

	if (locked_rows == NULL)
		return;
	str = text_to_cstring(name);
	LeaseFenceForgetRow(str);
	pfree(str);
}
