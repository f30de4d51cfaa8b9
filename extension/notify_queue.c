/*-------------------------------------------------------------------------
 *
 * notify_queue.c
 *	  The commit path of NOTIFY pg_lease: at once, or through a queue in
 *	  shared memory when pg_lease is in shared_preload_libraries.  This
 *	  file keeps a transaction's payloads and fills the queue (or sends
 *	  them itself); notify_xact.c calls it at the transaction's events.
 *
 * PostgreSQL serialises the commits of all transactions that NOTIFY, WAL
 * flush included: PreCommit_Notify takes a cluster-wide lock that is held
 * until after commit.  A lease change that notified therefore lost group
 * commit.  Preloaded, a changing transaction instead keeps its payloads in
 * backend memory and copies them into a shared queue just before it
 * commits; the database's worker (notifier.c) sends them in a transaction
 * of its own once the change has committed.
 *
 * Order.  Entries are queued at XACT_EVENT_PRE_COMMIT, while the
 * transaction still holds the row locks of the leases it changed, so the
 * next change of a lease is queued after the previous one.  For the same
 * reason an entry whose change is still in progress comes before nothing
 * else about its leases: senders may pass over it.
 *
 * A full queue, no worker, or a handover.  The transaction then notifies
 * by itself, as without preloading, after taking on the queued, committed,
 * unsent entries of the leases it changed: it holds their row locks, so no
 * newer entries of them exist, and its commit sends the older ones first.
 * If it aborts, they are given back.  So the user's commit never waits for the
 * worker, only (rarely) for a worker transaction that is sending one of
 * these leases at that moment.
 *
 * Without preloading there is no queue: Async_Notify is called at once and
 * the notification is sent at commit, as in pg_lease 1.1.
 *
 *-------------------------------------------------------------------------
 */
#include "notify.h"

#include "access/transam.h"
#include "access/xact.h"
#include "commands/async.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/memutils.h"

typedef struct PendingNotify
{
	struct PendingNotify *next;
	SubTransactionId subid;
	char	   *name;
	char	   *payload;
} PendingNotify;

/* This transaction's payloads, oldest first, in TopTransactionContext. */
int			lease_notify_mode = LEASE_NOTIFY_WORKER;

static PendingNotify *pending = NULL;
static PendingNotify **pending_end = &pending;
static int	pending_count = 0;

/*
 * Send a lease change's notification when the transaction commits: queue
 * it when preloaded, else NOTIFY at once.
 */
void
LeaseNotify(const char *name, const char *payload)
{
	PendingNotify *entry;
	MemoryContext old;

	if (lease_notify == NULL)
	{
		Async_Notify(LEASE_NOTIFY_CHANNEL, payload);
		return;
	}

	old = MemoryContextSwitchTo(TopTransactionContext);
	entry = palloc(sizeof(PendingNotify));
	entry->next = NULL;
	entry->subid = GetCurrentSubTransactionId();
	entry->name = pstrdup(name);
	entry->payload = pstrdup(payload);
	MemoryContextSwitchTo(old);

	*pending_end = entry;
	pending_end = &entry->next;
	pending_count++;
}

static bool
PendingFitsEntries(void)
{
	PendingNotify *p;

	if (pending_count > lease_notify->size)
		return false;
	for (p = pending; p != NULL; p = p->next)
		if (strlen(p->name) + strlen(p->payload) + 2 > LEASE_NOTIFY_DATA_BYTES)
			return false;
	return true;
}

static bool
PendingHasHandover(void)
{
	PendingNotify *p;

	for (p = pending; p != NULL; p = p->next)
		if (LeaseNotifyIsHandover(p->payload))
			return true;
	return false;
}

static bool
PendingHasLease(const char *name)
{
	PendingNotify *p;

	for (p = pending; p != NULL; p = p->next)
		if (strcmp(p->name, name) == 0)
			return true;
	return false;
}

typedef enum EnqueueResult
{
	ENQUEUE_DONE,
	ENQUEUE_FULL,
	ENQUEUE_NO_WORKER
} EnqueueResult;

static bool
DatabaseHasWorker(void)
{
	int			i;

	for (i = 0; i < LEASE_NOTIFIER_MAX_DATABASES; i++)
		if (lease_notify->databases[i].database == MyDatabaseId)
			return true;
	return false;
}

/* Queue this transaction's payloads under xid, if they fit. */
static EnqueueResult
PendingEnqueue(TransactionId xid)
{
	PendingNotify *p;

	LWLockAcquire(lease_notify->lock, LW_EXCLUSIVE);
	if (!DatabaseHasWorker())
	{
		LWLockRelease(lease_notify->lock);
		return ENQUEUE_NO_WORKER;
	}
	LeaseNotifyAdvanceTail();
	if (lease_notify->head - lease_notify->tail + pending_count > lease_notify->size)
	{
		LWLockRelease(lease_notify->lock);
		return ENQUEUE_FULL;
	}
	for (p = pending; p != NULL; p = p->next)
	{
		LeaseNotifyEntry *entry = LeaseNotifyEntryAt(lease_notify->head++);

		entry->database = MyDatabaseId;
		entry->xid = xid;
		entry->sender = InvalidTransactionId;
		entry->done = false;
		entry->name_len = strlen(p->name);
		entry->payload_len = strlen(p->payload);
		memcpy(entry->data, p->name, entry->name_len + 1);
		memcpy(entry->data + entry->name_len + 1, p->payload, entry->payload_len + 1);
	}
	LWLockRelease(lease_notify->lock);
	return ENQUEUE_DONE;
}

/*
 * The fallback: take on the queued entries of this transaction's leases,
 * then NOTIFY them and this transaction's own, all sent by its commit.
 * Waits only while a worker transaction is sending one of those entries.
 */
static void
PendingSendHere(TransactionId xid)
{
	List	   *taken = NIL;
	ListCell   *lc;
	PendingNotify *p;

	for (;;)
	{
		TransactionId busy = InvalidTransactionId;
		uint64		n;

		LWLockAcquire(lease_notify->lock, LW_EXCLUSIVE);
		for (n = lease_notify->tail; n < lease_notify->head; n++)
		{
			LeaseNotifyEntry *entry = LeaseNotifyEntryAt(n);

			if (entry->done || entry->database != MyDatabaseId ||
				!PendingHasLease(LeaseNotifyEntryName(entry)))
				continue;
			if (LeaseNotifyResolve(entry) == LEASE_NOTIFY_SENDING)
			{
				busy = entry->sender;
				break;
			}
		}
		if (!TransactionIdIsValid(busy))
		{
			for (n = lease_notify->tail; n < lease_notify->head; n++)
			{
				LeaseNotifyEntry *entry = LeaseNotifyEntryAt(n);

				if (entry->done || entry->database != MyDatabaseId ||
					!PendingHasLease(LeaseNotifyEntryName(entry)))
					continue;
				if (LeaseNotifyResolve(entry) == LEASE_NOTIFY_READY)
				{
					entry->sender = xid;
					taken = lappend(taken, pstrdup(LeaseNotifyEntryPayload(entry)));
				}
			}
		}
		LWLockRelease(lease_notify->lock);

		if (!TransactionIdIsValid(busy))
			break;
		XactLockTableWait(busy, NULL, NULL, XLTW_None);
	}

	foreach(lc, taken)
		Async_Notify(LEASE_NOTIFY_CHANNEL, (char *) lfirst(lc));
	for (p = pending; p != NULL; p = p->next)
		Async_Notify(LEASE_NOTIFY_CHANNEL, p->payload);
	if (taken != NIL)
		ereport(DEBUG1,
				(errmsg("pg_lease: sent %d queued notifications with this transaction's own",
						list_length(taken))));
}

/*
 * Just before the transaction commits: queue its payloads, or send them
 * itself (the fallback).  True when the database's worker should be woken
 * at the transaction's end (it queued, or took on queued entries).
 */
bool
LeaseNotifyPreCommit(void)
{
	TransactionId xid;

	/* first: most transactions changed no lease and have no xid to take */
	if (pending == NULL)
		return false;
	/* every lease change wrote a row, so this assigns nothing new */
	xid = GetTopTransactionId();
	/*
	 * A handover's successor waits for its notification: this commit sends
	 * it, which saves the worker's wake-up and transaction on the path.
	 * Handovers are rare, so serialising their commits costs nothing.
	 */
	if (lease_notify_mode == LEASE_NOTIFY_WORKER && !PendingHasHandover() &&
		PendingFitsEntries())
	{
		EnqueueResult result = PendingEnqueue(xid);

		/* the database's first change since start (or since its worker left) */
		if (result == ENQUEUE_NO_WORKER && LeaseNotifierStart(MyDatabaseId))
			result = PendingEnqueue(xid);
		if (result == ENQUEUE_DONE)
			return true;
	}
	PendingSendHere(xid);
	return true;				/* it may have taken on entries */
}

/* Whether this transaction changed a lease whose notification is pending. */
bool
LeaseNotifyPending(void)
{
	return pending != NULL;
}

/* The transaction ended: forget its payloads. */
void
LeaseNotifyPendingReset(void)
{
	pending = NULL;
	pending_end = &pending;
	pending_count = 0;
}

/* A rolled-back subtransaction takes its changes' notifications with it. */
void
LeaseNotifyPendingSubAbort(SubTransactionId subid)
{
	PendingNotify **link;

	pending_count = 0;
	for (link = &pending; *link != NULL;)
	{
		if ((*link)->subid == subid)
			*link = (*link)->next;
		else
		{
			pending_count++;
			link = &(*link)->next;
		}
	}
	pending_end = link;
}

void
LeaseNotifyPendingSubCommit(SubTransactionId subid, SubTransactionId parent)
{
	PendingNotify **link;

	for (link = &pending; *link != NULL; link = &(*link)->next)
		if ((*link)->subid == subid)
			(*link)->subid = parent;
}
