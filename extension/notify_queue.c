/*-------------------------------------------------------------------------
 *
 * notify_queue.c
 *	  The commit path of NOTIFY pg_lease: at once, or through a queue in
 *	  shared memory when pg_lease is in shared_preload_libraries.
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
 * A full queue, or no worker.  The transaction then notifies by itself,
 * as without preloading, after taking on the queued, committed, unsent
 * entries of the leases it changed: it holds their row locks, so no newer
 * entries of them exist, and its commit sends the older ones first.  If it
 * aborts, they are given back.  So the user's commit never waits for the
 * worker, only (rarely) for a worker transaction that is sending one of
 * these leases at that moment.
 *
 * Without preloading there is no queue: Async_Notify is called at once and
 * the notification is sent at commit, as in pg_lease 1.1.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"
#include "notifier.h"

#include "access/transam.h"
#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_database.h"
#include "commands/async.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/lmgr.h"
#include "storage/procarray.h"
#include "utils/guc.h"
#include "utils/memutils.h"

int			lease_notify_mode = LEASE_NOTIFY_WORKER;
static const struct config_enum_entry notify_mode_options[] = {
	{"worker", LEASE_NOTIFY_WORKER, false},
	{"commit", LEASE_NOTIFY_COMMIT, false},
	{NULL, 0, false}
};

typedef struct PendingNotify
{
	struct PendingNotify *next;
	SubTransactionId subid;
	char	   *name;
	char	   *payload;
} PendingNotify;

/* This transaction's payloads, oldest first, in TopTransactionContext. */
static PendingNotify *pending = NULL;
static PendingNotify **pending_end = &pending;
static int	pending_count = 0;

/* The transaction queued or took on entries: wake the worker at its end. */
static bool wake_worker = false;

/* DROP DATABASE of this database is under way in this transaction. */
static Oid	dropping_database = InvalidOid;

static object_access_hook_type prev_object_access_hook = NULL;

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

static void
PendingPreCommit(void)
{
	/* every lease change wrote a row, so this assigns nothing new */
	TransactionId xid = GetTopTransactionId();

	if (lease_notify_mode == LEASE_NOTIFY_WORKER && PendingFitsEntries())
	{
		EnqueueResult result = PendingEnqueue(xid);

		/* the database's first change since start (or since its worker left) */
		if (result == ENQUEUE_NO_WORKER && LeaseNotifierStart(MyDatabaseId))
			result = PendingEnqueue(xid);
		if (result == ENQUEUE_DONE)
		{
			wake_worker = true;
			return;
		}
	}
	PendingSendHere(xid);
	wake_worker = true;			/* it may have taken on entries */
}

static void
WakeWorker(void)
{
	int			i;

	LWLockAcquire(lease_notify->lock, LW_SHARED);
	for (i = 0; i < LEASE_NOTIFIER_MAX_DATABASES; i++)
	{
		LeaseNotifierDatabase *db = &lease_notify->databases[i];

		if (db->database == MyDatabaseId)
		{
			if (db->latch != NULL)
				SetLatch(db->latch);
			break;
		}
	}
	LWLockRelease(lease_notify->lock);
}

/* A dropped database's entries can never be sent. */
static void
ForgetDatabase(Oid database)
{
	uint64		n;

	LWLockAcquire(lease_notify->lock, LW_EXCLUSIVE);
	for (n = lease_notify->tail; n < lease_notify->head; n++)
	{
		LeaseNotifyEntry *entry = LeaseNotifyEntryAt(n);

		if (entry->database == database)
			entry->done = true;
	}
	LeaseNotifyAdvanceTail();
	LWLockRelease(lease_notify->lock);
}

static void
PendingReset(void)
{
	pending = NULL;
	pending_end = &pending;
	pending_count = 0;
	wake_worker = false;
	dropping_database = InvalidOid;
}

static void
LeaseNotifyXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (pending != NULL)
				PendingPreCommit();
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (pending != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that has changed a lease"),
						 errdetail("pg_lease notifies followers of a lease change when its transaction commits, "
								   "which a prepared transaction cannot do.")));
			break;
		case XACT_EVENT_COMMIT:
			if (OidIsValid(dropping_database))
				ForgetDatabase(dropping_database);
			if (wake_worker)
				WakeWorker();
			PendingReset();
			break;
		case XACT_EVENT_ABORT:
			/* entries queued or taken on before the abort need resolving */
			if (wake_worker)
				WakeWorker();
			PendingReset();
			break;
		case XACT_EVENT_PREPARE:
			PendingReset();
			break;
		default:
			break;
	}
}

/* A rolled-back subtransaction takes its changes' notifications with it. */
static void
LeaseNotifySubXactCallback(SubXactEvent event, SubTransactionId subid,
						   SubTransactionId parent, void *arg)
{
	PendingNotify **link;

	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
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
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			for (link = &pending; *link != NULL; link = &(*link)->next)
				if ((*link)->subid == subid)
					(*link)->subid = parent;
			break;
		default:
			break;
	}
}

/*
 * DROP DATABASE waits for every session of the database to go, ours too:
 * ask its worker to leave, and drop its entries once the drop commits.
 */
static void
LeaseNotifyObjectAccess(ObjectAccessType access, Oid classId, Oid objectId,
						int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access == OAT_DROP && classId == DatabaseRelationId)
	{
		LeaseNotifierStop(objectId);
		dropping_database = objectId;
	}
}

/* From _PG_init: pg_lease.notify_mode, and the queue when preloaded. */
void
LeaseNotifyInit(void)
{
	DefineCustomEnumVariable("pg_lease.notify_mode",
							 "How NOTIFY pg_lease is sent when pg_lease is in shared_preload_libraries.",
							 "worker: queued at commit and sent by a background worker, off the commit path; "
							 "commit: sent by the changing transaction itself, as without preloading.",
							 &lease_notify_mode,
							 LEASE_NOTIFY_WORKER,
							 notify_mode_options,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;

	LeaseNotifyShmemInit();
	prev_object_access_hook = object_access_hook;
	object_access_hook = LeaseNotifyObjectAccess;
	RegisterXactCallback(LeaseNotifyXactCallback, NULL);
	RegisterSubXactCallback(LeaseNotifySubXactCallback, NULL);
}
