/*-------------------------------------------------------------------------
 *
 * notifier.c
 *	  The per-database background worker that sends the queued NOTIFY
 *	  pg_lease payloads (notify_queue.c fills the queue).
 *
 * The first transaction of a database that queues a notification starts
 * the worker; it stays connected to that database.  Each pass takes, in
 * queue order, the entries of its database whose change has committed and
 * sends them in one transaction of its own with synchronous_commit off:
 * nobody waits for that commit to reach disk, and notifications do not
 * outlive a crash anyway.  An entry whose change is still in progress is
 * passed over (no later entry can be about its leases); one whose change
 * rolled back is dropped.  The worker marks the entries it takes with its
 * own transaction id, so a pass that fails gives them back.
 *
 * A committing transaction sets the worker's latch after its commit, so
 * the worker sleeps until there is work.  If it exits on an error the
 * postmaster starts it again a second later; DROP DATABASE asks it to go.
 *
 *-------------------------------------------------------------------------
 */
#include "notify.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/async.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/* Most entries one worker transaction sends. */
#define NOTIFIER_BATCH		256

/* How long the worker sleeps when nobody wakes it (ms): a safety net. */
#define NOTIFIER_NAP_MS		1000

/* Seconds before the postmaster starts a worker that failed again. */
#define NOTIFIER_RESTART_S	1

/*
 * Under load, one worker transaction per user commit would double the
 * commits: when the previous send is under NOTIFIER_BUSY_MS old, wait
 * NOTIFIER_LINGER_US so that more gather in one transaction.  A lone
 * change is sent at once.  (A handover never comes here: its own
 * transaction sends it, notify_queue.c.)
 */
#define NOTIFIER_BUSY_MS	10
#define NOTIFIER_LINGER_US	1000

/*
 * A worker's session would make CREATE DATABASE ... TEMPLATE of its
 * database fail: templates notify by themselves.
 */
static bool
DatabaseIsTemplate(Oid database)
{
	HeapTuple	tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(database));
	bool		is_template = true;

	if (HeapTupleIsValid(tuple))
	{
		is_template = ((Form_pg_database) GETSTRUCT(tuple))->datistemplate;
		ReleaseSysCache(tuple);
	}
	return is_template;
}

/*
 * Make sure database has a worker, or one on its way.  False when none can
 * be had (a template database, all slots taken, or no background worker
 * slot free): the caller then notifies by itself.  Called in a transaction.
 */
bool
LeaseNotifierStart(Oid database)
{
	static bool warned = false;
	BackgroundWorker worker;
	int			free_slot = -1;
	int			i;

	if (DatabaseIsTemplate(database))
		return false;

	LWLockAcquire(lease_notify->lock, LW_EXCLUSIVE);
	for (i = 0; i < LEASE_NOTIFIER_MAX_DATABASES; i++)
	{
		if (lease_notify->databases[i].database == database)
		{
			LWLockRelease(lease_notify->lock);
			return true;
		}
		if (free_slot < 0 && !OidIsValid(lease_notify->databases[i].database))
			free_slot = i;
	}
	if (free_slot < 0)
	{
		LWLockRelease(lease_notify->lock);
		return false;
	}
	lease_notify->databases[free_slot].database = database;
	lease_notify->databases[free_slot].pid = 0;
	lease_notify->databases[free_slot].latch = NULL;
	LWLockRelease(lease_notify->lock);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = NOTIFIER_RESTART_S;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_lease");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "lease_notifier_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pg_lease notifier for database %u", database);
	snprintf(worker.bgw_type, BGW_MAXLEN, "pg_lease notifier");
	worker.bgw_main_arg = ObjectIdGetDatum(database);
	worker.bgw_notify_pid = 0;
	if (RegisterDynamicBackgroundWorker(&worker, NULL))
		return true;

	LWLockAcquire(lease_notify->lock, LW_EXCLUSIVE);
	if (lease_notify->databases[free_slot].database == database &&
		lease_notify->databases[free_slot].pid == 0)
		lease_notify->databases[free_slot].database = InvalidOid;
	LWLockRelease(lease_notify->lock);
	if (!warned)
		ereport(WARNING,
				(errmsg("pg_lease could not start its notifier for database %u", database),
				 errdetail("Lease changes notify from their own transactions, which serialises their commits."),
				 errhint("Raise max_worker_processes.")));
	warned = true;
	return false;
}

/* DROP DATABASE: the worker must leave, or the drop waits for it. */
void
LeaseNotifierStop(Oid database)
{
	Latch	   *latch = NULL;
	int			i;

	if (lease_notify == NULL)
		return;
	LWLockAcquire(lease_notify->lock, LW_EXCLUSIVE);
	for (i = 0; i < LEASE_NOTIFIER_MAX_DATABASES; i++)
	{
		LeaseNotifierDatabase *db = &lease_notify->databases[i];

		if (db->database == database)
		{
			latch = db->latch;
			db->database = InvalidOid;
			db->pid = 0;
			db->latch = NULL;
			break;
		}
	}
	if (latch != NULL)
		SetLatch(latch);
	LWLockRelease(lease_notify->lock);
}

/* Take slot for this process; false if it is not the database's, or taken. */
static bool
NotifierAttach(int *slot, Oid database)
{
	int			i;

	LWLockAcquire(lease_notify->lock, LW_EXCLUSIVE);
	for (i = 0; i < LEASE_NOTIFIER_MAX_DATABASES; i++)
	{
		LeaseNotifierDatabase *db = &lease_notify->databases[i];

		if (db->database == database && db->pid == 0)
		{
			db->pid = MyProcPid;
			db->latch = MyLatch;
			*slot = i;
			LWLockRelease(lease_notify->lock);
			return true;
		}
	}
	LWLockRelease(lease_notify->lock);
	return false;
}

static void
NotifierDetach(int code, Datum arg)
{
	LeaseNotifierDatabase *db = &lease_notify->databases[DatumGetInt32(arg)];

	/* an error may have left the queue lock held; it is released on exit anyway */
	LWLockReleaseAll();
	LWLockAcquire(lease_notify->lock, LW_EXCLUSIVE);
	if (db->pid == MyProcPid)
	{
		db->pid = 0;
		db->latch = NULL;
	}
	LWLockRelease(lease_notify->lock);
}

static bool
NotifierStillOwns(int slot, Oid database)
{
	bool		owns;

	LWLockAcquire(lease_notify->lock, LW_SHARED);
	owns = lease_notify->databases[slot].database == database &&
		lease_notify->databases[slot].pid == MyProcPid;
	LWLockRelease(lease_notify->lock);
	return owns;
}

/* Whether any entry of database is ready to send. */
static bool
NotifierAnyReady(Oid database)
{
	bool		ready = false;
	uint64		n;

	LWLockAcquire(lease_notify->lock, LW_EXCLUSIVE);
	LeaseNotifyAdvanceTail();
	for (n = lease_notify->tail; n < lease_notify->head && !ready; n++)
	{
		LeaseNotifyEntry *entry = LeaseNotifyEntryAt(n);

		if (entry->database == database && !entry->done &&
			LeaseNotifyResolve(entry) == LEASE_NOTIFY_READY)
			ready = true;
	}
	LWLockRelease(lease_notify->lock);
	return ready;
}

/*
 * One pass: send up to a batch of ready entries in one transaction.
 * Returns true if the batch was full, so more may be ready.
 */
static bool
NotifierPass(Oid database)
{
	static TimestampTz last_send = 0;
	char	   *payloads[NOTIFIER_BATCH];
	uint64		taken[NOTIFIER_BATCH];
	int			count = 0;
	TransactionId sender;
	uint64		n;
	int			i;

	/* look before starting a transaction: an idle pass costs no xid */
	if (!NotifierAnyReady(database))
		return false;
	if (!TimestampDifferenceExceeds(last_send, GetCurrentTimestamp(), NOTIFIER_BUSY_MS))
		pg_usleep(NOTIFIER_LINGER_US);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	sender = GetTopTransactionId();

	LWLockAcquire(lease_notify->lock, LW_EXCLUSIVE);
	for (n = lease_notify->tail; n < lease_notify->head && count < NOTIFIER_BATCH; n++)
	{
		LeaseNotifyEntry *entry = LeaseNotifyEntryAt(n);
		const char *payload;
		bool		repeated = false;

		if (entry->database != database || entry->done ||
			LeaseNotifyResolve(entry) != LEASE_NOTIFY_READY)
			continue;

		/* NOTIFY folds equal payloads of one transaction: leave it to the next */
		payload = LeaseNotifyEntryPayload(entry);
		for (i = 0; i < count && !repeated; i++)
			repeated = strcmp(payloads[i], payload) == 0;
		if (repeated)
			break;

		entry->sender = sender;
		taken[count] = n;
		payloads[count++] = pstrdup(payload);
	}
	LWLockRelease(lease_notify->lock);

	for (i = 0; i < count; i++)
		Async_Notify(LEASE_NOTIFY_CHANNEL, payloads[i]);
	CommitTransactionCommand();

	/* sent: free their slots now rather than at the next look */
	LWLockAcquire(lease_notify->lock, LW_EXCLUSIVE);
	for (i = 0; i < count; i++)
	{
		LeaseNotifyEntry *entry = LeaseNotifyEntryAt(taken[i]);

		if (entry->sender == sender)
			entry->done = true;
	}
	LeaseNotifyAdvanceTail();
	LWLockRelease(lease_notify->lock);

	last_send = GetCurrentTimestamp();
	pgstat_report_stat(false);
	return count == NOTIFIER_BATCH;
}

/* The worker's entry point; main_arg is the database's OID. */
void
lease_notifier_main(Datum main_arg)
{
	Oid			database = DatumGetObjectId(main_arg);
	int			slot;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	/* a worker of a dropped database, or a second one, has nothing to do */
	if (lease_notify == NULL || !NotifierAttach(&slot, database))
		proc_exit(0);
	before_shmem_exit(NotifierDetach, Int32GetDatum(slot));

	/* a database closed to connections since must not make it fail forever */
	BackgroundWorkerInitializeConnectionByOid(database, InvalidOid, BGWORKER_BYPASS_ALLOWCONN);
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	pgstat_report_appname("pg_lease notifier");

	for (;;)
	{
		bool		more;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (!NotifierStillOwns(slot, database))
			proc_exit(0);

		more = NotifierPass(database);
		if (!more)
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 NOTIFIER_NAP_MS, PG_WAIT_EXTENSION);
	}
}
