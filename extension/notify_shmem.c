/*-------------------------------------------------------------------------
 *
 * notify_shmem.c
 *	  The shared queue of lease notifications: its memory (reserved when
 *	  pg_lease is preloaded) and what an entry still needs, as the commit
 *	  log says.  Filled by notify_queue.c, drained by notifier.c.
 *
 *-------------------------------------------------------------------------
 */
#include "notify.h"

#include "access/transam.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/guc.h"

static int	lease_notify_queue_size = 1024;

LeaseNotifyShared *lease_notify = NULL;

static Size
LeaseNotifyShmemSize(void)
{
	return add_size(offsetof(LeaseNotifyShared, entries),
					mul_size(lease_notify_queue_size, sizeof(LeaseNotifyEntry)));
}

static void
LeaseNotifyShmemSetup(void *memory, bool found)
{
	lease_notify = memory;
	if (!found)
	{
		memset(lease_notify, 0, LeaseNotifyShmemSize());
		lease_notify->lock = &(GetNamedLWLockTranche("pg_lease notify"))->lock;
		lease_notify->size = lease_notify_queue_size;
	}
}

static const LeaseShmemPart notify_queue_part = {
	"pg_lease notify queue", LeaseNotifyShmemSize, NULL, "pg_lease notify", LeaseNotifyShmemSetup
};

/*
 * What entry still needs.  Resolves its sender first: one that committed
 * has sent it, one that aborted gives it back.  The caller holds the queue
 * lock exclusively.  In-progress is asked before committed, as heapam
 * does, since the commit log is written before the proc array is.
 */
LeaseNotifyState
LeaseNotifyResolve(LeaseNotifyEntry *entry)
{
	if (entry->done)
		return LEASE_NOTIFY_DONE;
	if (TransactionIdIsValid(entry->sender))
	{
		if (TransactionIdIsInProgress(entry->sender))
			return LEASE_NOTIFY_SENDING;
		if (TransactionIdDidCommit(entry->sender))
		{
			entry->done = true;
			return LEASE_NOTIFY_DONE;
		}
		entry->sender = InvalidTransactionId;
	}
	if (TransactionIdIsInProgress(entry->xid))
		return LEASE_NOTIFY_WAITING;
	if (!TransactionIdDidCommit(entry->xid))
	{
		entry->done = true;		/* rolled back, or lost in a crash */
		return LEASE_NOTIFY_DONE;
	}
	return LEASE_NOTIFY_READY;
}

/* Free the slots of the oldest entries that need nothing more. */
void
LeaseNotifyAdvanceTail(void)
{
	while (lease_notify->tail < lease_notify->head &&
		   LeaseNotifyResolve(LeaseNotifyEntryAt(lease_notify->tail)) == LEASE_NOTIFY_DONE)
		lease_notify->tail++;
}

/* From LeaseNotifyInit, when preloaded: pg_lease.notify_queue_size, hooks. */
void
LeaseNotifyShmemInit(void)
{
	DefineCustomIntVariable("pg_lease.notify_queue_size",
							"Lease notifications the shared queue holds.",
							"Needs pg_lease in shared_preload_libraries; set at server start. "
							"A transaction whose notifications do not fit sends them itself.",
							&lease_notify_queue_size,
							1024, 4, 1000000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);

	LeaseShmemRegister(&notify_queue_part);
}
