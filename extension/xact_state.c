/*-------------------------------------------------------------------------
 *
 * xact_state.c
 *	  Per-transaction state: tokens declared with lease_use, and the lease
 *	  rows the fence trigger has share-locked.
 *
 * Once the fence trigger holds a share lock on a lease row, no other
 * transaction can change that row until this one ends, so its epoch and
 * expiry are read once per transaction and kept here.  Only the clock is
 * looked at again for each further row.  Lease functions called in the same
 * transaction forget the row they change.  Entries remember the
 * subtransaction that made them: a rolled-back subtransaction takes its
 * tokens with it, and its row locks too, so its entries go.
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
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			EntriesReparent(declared_tokens, subid, parent);
			EntriesReparent(locked_rows, subid, parent);
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

/* Key-share-lock the newest version of the lease row; false if none. */
static bool
LockRowKeyShare(const char *name, LeaseRowState *state)
{
	text	   *key = cstring_to_text(name);
	Relation	rel = table_open(LeaseTableRelid(), RowShareLock);
	TupleTableSlot *slot = LeaseRowSlot(rel);
	bool		found;

	found = LeaseLockRow(key, LockTupleKeyShare, GetLatestSnapshot(), rel, slot);
	if (found)
	{
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
 * The lease row, key-share-locked until the transaction ends; NULL when
 * there is no such lease.  The lookup goes straight to the table
 * (row_lock.c), so no privilege on leases is needed, and uses the latest
 * snapshot: a fence checks the lease as it is now, whatever the
 * transaction's isolation level.  The caller has validated the catalog
 * cache.
 */
const LeaseRowState *
LeaseLockRowShared(const char *name)
{
	LeaseXactEntry *entry = EntryFind(locked_rows, name);
	LeaseRowState state;

	if (entry != NULL)
		return &entry->state;
	if (!LockRowKeyShare(name, &state))
		return NULL;

	entry = EntryPush(&locked_rows, name);
	entry->state = state;
	return &entry->state;
}

/*
 * The kept row's expiry has passed: read the row again, in case a renewal
 * committed meanwhile.  The lock is held already, so this does not wait.
 */
const LeaseRowState *
LeaseRefreshRow(const char *name)
{
	LeaseXactEntry *entry = EntryFind(locked_rows, name);

	if (entry == NULL)
		return LeaseLockRowShared(name);
	if (!LockRowKeyShare(name, &entry->state))
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
