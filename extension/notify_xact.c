/*-------------------------------------------------------------------------
 *
 * notify_xact.c
 *	  NOTIFY pg_lease at a transaction's events, when preloaded: queue (or
 *	  send) its payloads just before it commits (notify_queue.c), wake the
 *	  database's worker after it ended, refuse PREPARE, take rolled-back
 *	  subtransactions' payloads away, and forget a dropped database's
 *	  entries.  Also pg_lease.notify_mode.
 *
 *-------------------------------------------------------------------------
 */
#include "notify.h"

#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/guc.h"

static const struct config_enum_entry notify_mode_options[] = {
	{"worker", LEASE_NOTIFY_WORKER, false},
	{"commit", LEASE_NOTIFY_COMMIT, false},
	{NULL, 0, false}
};

/* The transaction queued or took on entries: wake the worker at its end. */
static bool wake_worker = false;

/* DROP DATABASE of this database is under way in this transaction. */
static Oid	dropping_database = InvalidOid;

static object_access_hook_type prev_object_access_hook = NULL;

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
TransactionReset(void)
{
	LeaseNotifyPendingReset();
	wake_worker = false;
	dropping_database = InvalidOid;
}

static void
LeaseNotifyXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (LeaseNotifyPreCommit())
				wake_worker = true;
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (LeaseNotifyPending())
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
			TransactionReset();
			break;
		case XACT_EVENT_ABORT:
			/* entries queued or taken on before the abort need resolving */
			if (wake_worker)
				WakeWorker();
			TransactionReset();
			break;
		case XACT_EVENT_PREPARE:
			TransactionReset();
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
	switch (event)
	{
		case SUBXACT_EVENT_ABORT_SUB:
			LeaseNotifyPendingSubAbort(subid);
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			LeaseNotifyPendingSubCommit(subid, parent);
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
