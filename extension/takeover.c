/*-------------------------------------------------------------------------
 *
 * takeover.c
 *	  Lock a lease row for a change of holder, ending stalled fenced writers.
 *
 * Fenced writers hold FOR KEY SHARE on the lease row until their transaction
 * ends.  A change of holder (a grant of a free or expired lease, release,
 * revoke, handover) needs FOR UPDATE, which conflicts with it, so fenced
 * writes and grants stay totally ordered.  But a writer that stalls inside
 * its transaction (its client paused, or a statement that runs on) would
 * hold that lock, and with it the election, for as long as it stalls.  So a
 * change of holder waits at most pg_lease.takeover_timeout for those
 * transactions, then ends them: a backend idle in transaction is
 * terminated; one running a statement is cancelled, and terminated if it
 * still holds the lock LEASE_CANCEL_GRACE_MS later.  If they are still there
 * LEASE_EVICT_BOUND_MS after that (a prepared transaction, a backend that
 * does not answer signals), the change of holder fails with 55P03 instead
 * of waiting on.
 *
 * Only transactions that hold this row's key-share lock are ever signalled.
 * The caller holds FOR NO KEY UPDATE on the row, so nobody can renew it or
 * grant it meanwhile, and every key-share lock on it was taken after the
 * latest change of holder (which waited for all older ones): all of them
 * belong to the epoch being ended.  Key-share locks on the leases table are
 * taken by the fence trigger alone; ordinary roles cannot lock its rows.
 *
 * The wait polls with a conditional lock, as VACUUM's truncation does for
 * its relation lock: PostgreSQL has no row-lock wait with a deadline short
 * of raising an error.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

#include <signal.h>

#include "access/heapam.h"
#include "access/multixact.h"
#include "access/subtrans.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

/* Polling interval: short at first, as most writers end within a moment. */
#define LEASE_POLL_MIN_MS		1
#define LEASE_POLL_MAX_MS		10

/* How long a cancelled statement's transaction may take to let go. */
#define LEASE_CANCEL_GRACE_MS	250

/* How long ended backends may take to let go before the takeover fails. */
#define LEASE_EVICT_BOUND_MS	5000

/* A backend this takeover has signalled. */
typedef struct LeaseEvictee
{
	int			pid;
	TransactionId xid;			/* its top-level transaction */
	double		cancelled_ms;	/* when cancelled, ms into the wait; < 0: not */
	bool		terminated;
	bool		recorded;		/* event and log written */
} LeaseEvictee;

typedef struct LeaseEvictees
{
	LeaseEvictee *items;
	int			count;
	int			size;
} LeaseEvictees;

/* Milliseconds since start on the monotonic clock: a step of the wall clock
 * neither shortens nor stretches the bound. */
static double
LeaseMsSince(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/* A set of top-level transaction ids. */
typedef struct LeaseXids
{
	TransactionId *xids;
	int			count;
} LeaseXids;

static void
LeaseXidsAdd(LeaseXids *set, TransactionId xid)
{
	int			i;

	/* lockers may be subtransactions: a backend runs under its top xid */
	if (TransactionIdIsCurrentTransactionId(xid) || !TransactionIdIsInProgress(xid))
		return;
	xid = SubTransGetTopmostTransaction(xid);
	for (i = 0; i < set->count; i++)
		if (set->xids[i] == xid)
			return;
	set->xids[set->count++] = xid;
}

/*
 * Top-level xids of the other transactions that hold a key-share lock on the
 * row version at tid, read from its xmax as pgrowlocks does.
 */
static LeaseXids
LeaseKeyShareLockers(Relation rel, ItemPointer tid)
{
	LeaseXids	set = {NULL, 0};
	HeapTupleData tuple;
	Buffer		buffer;
	uint16		infomask;
	TransactionId xmax;

	tuple.t_self = *tid;
	if (!heap_fetch(rel, SnapshotAny, &tuple, &buffer, true))
	{
		if (BufferIsValid(buffer))
			ReleaseBuffer(buffer);
		return set;
	}
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	infomask = tuple.t_data->t_infomask;
	xmax = HeapTupleHeaderGetRawXmax(tuple.t_data);
	LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
	ReleaseBuffer(buffer);

	if (infomask & HEAP_XMAX_INVALID)
		return set;
	if (infomask & HEAP_XMAX_IS_MULTI)
	{
		MultiXactMember *members;
		int			n = GetMultiXactIdMembers(xmax, &members, false,
											  HEAP_XMAX_IS_LOCKED_ONLY(infomask));
		int			i;

		if (n <= 0)
			return set;
		set.xids = palloc(sizeof(TransactionId) * n);
		for (i = 0; i < n; i++)
			if (members[i].status == MultiXactStatusForKeyShare)
				LeaseXidsAdd(&set, members[i].xid);
		pfree(members);
	}
	else if (HEAP_XMAX_IS_LOCKED_ONLY(infomask) && HEAP_XMAX_IS_KEYSHR_LOCKED(infomask))
	{
		set.xids = palloc(sizeof(TransactionId));
		LeaseXidsAdd(&set, xmax);
	}
	return set;
}

static LeaseEvictee *
LeaseEvicteeFor(LeaseEvictees *evictees, int pid, TransactionId xid)
{
	LeaseEvictee *e;
	int			i;

	for (i = 0; i < evictees->count; i++)
	{
		e = &evictees->items[i];
		if (e->pid == pid && e->xid == xid)
			return e;
	}
	if (evictees->count == evictees->size)
	{
		evictees->size = Max(8, evictees->size * 2);
		evictees->items = evictees->items == NULL ?
			palloc(sizeof(LeaseEvictee) * evictees->size) :
			repalloc(evictees->items, sizeof(LeaseEvictee) * evictees->size);
	}
	e = &evictees->items[evictees->count++];
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->xid = xid;
	e->cancelled_ms = -1;
	return e;
}

static void
LeaseSignal(int pid, int sig)
{
	/* as pg_signal_backend: the backend leads its own process group */
#ifdef HAVE_SETSID
	if (kill(-pid, sig) != 0)
#else
	if (kill(pid, sig) != 0)
#endif
		ereport(WARNING,
				(errmsg("pg_lease: could not send signal to process %d: %m", pid)));
}

/*
 * Signal the backends of these transactions, each as its state needs.  The
 * signal goes out under ProcArrayLock, after checking that the backend still
 * runs the transaction that holds the lock: a transaction cannot end while
 * we hold that lock.
 */
static void
LeaseSignalLockers(LeaseXids lockers, LeaseEvictees *evictees, double now_ms)
{
	int			x;
	int			i;

	LWLockAcquire(ProcArrayLock, LW_SHARED);
	for (x = 0; x < lockers.count; x++)
	{
		TransactionId xid = lockers.xids[x];

		for (i = 0; i < ProcGlobal->allProcCount; i++)
		{
			PGPROC	   *proc = &ProcGlobal->allProcs[i];
			LeaseEvictee *e;
			bool		idle;

			/* a prepared transaction has no process (pid 0): it waits */
			if (proc->pid == 0 || proc == MyProc || proc->xid != xid ||
				proc->databaseId != MyDatabaseId)
				continue;

			e = LeaseEvicteeFor(evictees, proc->pid, xid);
			if (e->terminated)
				break;
			/* idle in transaction (or paused mid-COPY): waiting on its client */
			idle = proc->wait_event_info == WAIT_EVENT_CLIENT_READ;
			if (idle || (e->cancelled_ms >= 0 &&
						 now_ms - e->cancelled_ms >= LEASE_CANCEL_GRACE_MS))
			{
				LeaseSignal(proc->pid, SIGTERM);
				e->terminated = true;
			}
			else if (e->cancelled_ms < 0)
			{
				LeaseSignal(proc->pid, SIGINT);
				e->cancelled_ms = now_ms;
			}
			break;
		}
	}
	LWLockRelease(ProcArrayLock);
	if (lockers.xids != NULL)
		pfree(lockers.xids);
}

/* Record each backend once: a log line, and an evict event. */
static void
LeaseRecordEvictions(LeaseEvictees *evictees, const LeaseEnding *ending)
{
	int			i;

	for (i = 0; i < evictees->count; i++)
	{
		LeaseEvictee *e = &evictees->items[i];

		if (e->recorded || (e->cancelled_ms < 0 && !e->terminated))
			continue;
		ereport(LOG,
				(errmsg("pg_lease: %s backend %d, whose transaction holds the fence lock of lease \"%s\" epoch " INT64_FORMAT,
						e->terminated ? "terminating" : "cancelling the statement of",
						e->pid, text_to_cstring(ending->name), ending->epoch),
				 errdetail("The grant of epoch " INT64_FORMAT " is ending, and the transaction was still open pg_lease.takeover_timeout (%d ms) later.",
						   ending->epoch, lease_takeover_timeout_ms)));
		LeaseRecordEvent("evict", ending->name, ending->holder, ending->epoch,
						 ending->expires_at, e->pid);
		e->recorded = true;
	}
}

static void
LeaseTakeoverTimedOut(Relation rel, ItemPointer tid, const LeaseEnding *ending)
{
	LeaseXids	lockers = LeaseKeyShareLockers(rel, tid);
	StringInfoData list;
	int			i;

	initStringInfo(&list);
	for (i = 0; i < lockers.count; i++)
		appendStringInfo(&list, "%s%u", i > 0 ? ", " : "", lockers.xids[i]);
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not end the grant of lease \"%s\" epoch " INT64_FORMAT ": fenced transactions still hold it",
					text_to_cstring(ending->name), ending->epoch),
			 errdetail("Transactions %s did not end within %d ms of being signalled.",
					   list.len > 0 ? list.data : "(none)", LEASE_EVICT_BOUND_MS),
			 errhint("A prepared transaction must be finished with COMMIT PREPARED or ROLLBACK PREPARED.")));
}

/*
 * Upgrade the caller's FOR NO KEY UPDATE lock on the row version at tid to
 * FOR UPDATE, ending the fenced transactions of the grant being ended if
 * they hold on for longer than pg_lease.takeover_timeout (0: wait for them
 * as long as they take).  slot receives the row.
 */
void
LeaseLockForHolderChange(Relation rel, ItemPointer tid, TupleTableSlot *slot,
						 const LeaseEnding *ending)
{
	Snapshot	snapshot = GetTransactionSnapshot();
	instr_time	start;
	LeaseEvictees evictees = {NULL, 0, 0};
	long		sleep_ms = LEASE_POLL_MIN_MS;
	TM_Result	result;

	result = LeaseLockTid(rel, tid, LockTupleExclusive, LockWaitSkip, snapshot, slot);
	if (result == TM_WouldBlock && lease_takeover_timeout_ms == 0)
		result = LeaseLockTid(rel, tid, LockTupleExclusive, LockWaitBlock, snapshot, slot);

	INSTR_TIME_SET_CURRENT(start);
	while (result == TM_WouldBlock)
	{
		double		waited_ms;

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		sleep_ms = Min(sleep_ms * 2, LEASE_POLL_MAX_MS);

		result = LeaseLockTid(rel, tid, LockTupleExclusive, LockWaitSkip, snapshot, slot);
		if (result != TM_WouldBlock)
			break;

		waited_ms = LeaseMsSince(start);
		if (waited_ms < lease_takeover_timeout_ms)
			continue;
		if (waited_ms >= (double) lease_takeover_timeout_ms + LEASE_EVICT_BOUND_MS)
			LeaseTakeoverTimedOut(rel, tid, ending);

		LeaseSignalLockers(LeaseKeyShareLockers(rel, tid), &evictees, waited_ms);
		LeaseRecordEvictions(&evictees, ending);
	}
	/* the caller's own FOR NO KEY UPDATE lock keeps the row in place */
	if (result != TM_Ok)
		elog(ERROR, "pg_lease: the row of lease \"%s\" vanished while locked",
			 text_to_cstring(ending->name));
	if (evictees.items != NULL)
		pfree(evictees.items);
}
