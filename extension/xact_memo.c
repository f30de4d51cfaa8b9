/*-------------------------------------------------------------------------
 *
 * xact_memo.c
 *	  What a transaction remembers, savepoint by savepoint: lists of entries
 *	  in TopTransactionContext, each marked with the subtransaction that made
 *	  it.
 *
 * A subtransaction rolled back takes its entries with it (the locks and
 * declarations they stand for went with it), one committed hands them to
 * its parent, and the end of the transaction forgets them all.  The owner
 * of a list keeps it in a static variable and calls LeaseXactMemoAtEnd and
 * LeaseXactMemoAtSubEnd from transaction callbacks of its own, so what each
 * list does at a savepoint is written beside the list: the fence's tokens
 * and rows (fence_xact.c), the floors a transaction passed
 * (floors_fence.c).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

#include "utils/memutils.h"

/* A new entry at the head of *memo, with len bytes of key, all zero. */
LeaseXactMemo *
LeaseXactMemoPush(LeaseXactMemo **memo, Size len)
{
	LeaseXactMemo *entry;

	entry = MemoryContextAllocZero(TopTransactionContext,
								   offsetof(LeaseXactMemo, key) + len);
	entry->subid = GetCurrentSubTransactionId();
	entry->next = *memo;
	*memo = entry;
	return entry;
}

/* Unlink the entry *link points at, and free it. */
void
LeaseXactMemoDrop(LeaseXactMemo **link)
{
	LeaseXactMemo *entry = *link;

	*link = entry->next;
	pfree(entry);
}

/* The transaction ended: its memory, and every entry, is gone. */
void
LeaseXactMemoAtEnd(LeaseXactMemo **memo, XactEvent event)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			*memo = NULL;
			break;
		default:
			break;
	}
}

/* Subtransaction subid ended: its entries go, or pass to its parent. */
void
LeaseXactMemoAtSubEnd(LeaseXactMemo **memo, SubXactEvent event,
					  SubTransactionId subid, SubTransactionId parent)
{
	LeaseXactMemo *entry;

	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			while (*memo != NULL)
			{
				if ((*memo)->subid == subid)
					LeaseXactMemoDrop(memo);
				else
					memo = &(*memo)->next;
			}
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			for (entry = *memo; entry != NULL; entry = entry->next)
				if (entry->subid == subid)
					entry->subid = parent;
			break;
		default:
			break;
	}
}
