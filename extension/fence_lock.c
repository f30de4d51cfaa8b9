/*-------------------------------------------------------------------------
 *
 * fence_lock.c
 *	  The fence lock: a lock on one grant of a lease, in PostgreSQL's lock
 *	  manager.
 *
 * A fenced transaction share-locks the grant whose epoch its token names,
 * then reads the newest committed lease row; a change of holder locks the
 * grant it ends exclusively before it commits.  So a write that passed the
 * check is ordered before any later grant, and a write that comes after a
 * grant's end reads the new row.  The lock lives in the lock manager, not
 * on the lease row: a fenced transaction creates no MultiXact and writes no
 * WAL for it, and renewals, which never take it, never wait for writers.
 *
 * The tag is an advisory lock tag that no SQL function can make: database,
 * the epoch's high and low 32 bits, and LEASE_LOCKTAG_CLASS as the fourth
 * field (pg_advisory_lock uses 1 and 2).  Epochs are unique across leases,
 * so the writers of one grant are exactly the holders of its lock, and a
 * takeover never waits for, or ends, another lease's writers.
 *
 * A change of holder waits in the lock's queue, so new writers queue
 * behind it and cannot starve it, and PostgreSQL's deadlock detector sees
 * the wait.  The wait is bounded by pg_lease.takeover_timeout; then the
 * holders the lock manager names are ended (lease_evict.c), and if they still
 * hold on LEASE_EVICT_BOUND_MS later, the change of holder fails (55P03).
 *
 * Twins: lease_sql_lock_exclusive and lease_sql_lock_for_change in
 * sql/sql_edition/40_fence_lock.sql (the exclusive side); the shared side in
 * lease_use and lease_fence_trigger of 60_fence.sql, on the key of
 * lease_sql_fence_key (10_base.sql).
 *
 *-------------------------------------------------------------------------
 */
#include "fence.h"
#include "lease.h"

#include "access/xact.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/sinvaladt.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

/* Once the timeout has passed, how long each wait lasts between signals. */
#define LEASE_EVICT_SLICE_MS	50

/* What an error raised while waiting for the lock says it was doing. */
typedef struct FenceLockContext
{
	const char *name;
	int64		epoch;
	bool		exclusive;
} FenceLockContext;

static void
FenceLockErrorContext(void *arg)
{
	FenceLockContext *context = (FenceLockContext *) arg;

	if (context->exclusive)
		errcontext("ending the grant of lease \"%s\" epoch " INT64_FORMAT
				   " (exclusive fence lock)", context->name, context->epoch);
	else
		errcontext("taking the fence lock of lease \"%s\" epoch " INT64_FORMAT,
				   context->name, context->epoch);
}

void
LeaseFenceLockTag(LOCKTAG *tag, int64 epoch)
{
	uint64		bits = (uint64) epoch;

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (bits >> 32), (uint32) bits,
						 LEASE_LOCKTAG_CLASS);
}

/*
 * Share-lock the grant of epoch until the transaction (or the savepoint
 * that takes it) ends.  Waits only for a change of holder of that grant,
 * which is itself bounded.
 */
void
LeaseFenceLockShare(const char *name, int64 epoch)
{
	FenceLockContext context = {name, epoch, false};
	ErrorContextCallback callback;
	LOCKTAG		tag;

	LeaseFenceLockTag(&tag, epoch);
	callback.callback = FenceLockErrorContext;
	callback.arg = &context;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	(void) LockAcquire(&tag, ShareLock, false, false);
	error_context_stack = callback.previous;
}

/*
 * Wait in the queue for the exclusive lock, at most timeout_ms; true when
 * granted.  The wait is the lock manager's own, bounded by lock_timeout for
 * its duration, inside a subtransaction so that a timeout leaves nothing
 * behind (as a PL/pgSQL exception block does).  A user's shorter
 * lock_timeout, a cancel or a deadlock is raised as usual.
 */
static bool
FenceLockWaitExclusive(const LOCKTAG *tag, int timeout_ms)
{
	MemoryContext mcxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	int			saved_lock_timeout = LockTimeout;
	volatile bool granted = false;

	if (LockTimeout > 0 && LockTimeout <= timeout_ms)
	{
		(void) LockAcquire(tag, ExclusiveLock, false, false);
		return true;
	}

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(mcxt);
	PG_TRY();
	{
		LockTimeout = Max(timeout_ms, 1);
		(void) LockAcquire(tag, ExclusiveLock, false, false);
		LockTimeout = saved_lock_timeout;
		ReleaseCurrentSubTransaction();	/* the lock passes to the parent */
		granted = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		LockTimeout = saved_lock_timeout;
		MemoryContextSwitchTo(mcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(mcxt);
		CurrentResourceOwner = owner;
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(edata);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(mcxt);
	CurrentResourceOwner = owner;
	return granted;
}

/*
 * End the transactions that the lock manager says hold the grant's lock;
 * into who, a list of them for an error message.
 */
static void
FenceLockEvictHolders(LeaseTakeover *takeover, const LOCKTAG *tag, double now_ms,
					  StringInfo who)
{
	VirtualTransactionId *holders = GetLockConflicts(tag, ExclusiveLock, NULL);
	int			i;

	resetStringInfo(who);
	for (i = 0; VirtualTransactionIdIsValid(holders[i]); i++)
	{
		VirtualTransactionId vxid = holders[i];
		PGPROC	   *proc;

		int			number = LeaseVxidProcNumber(vxid);

		appendStringInfo(who, "%s%d/%u%s", i > 0 ? ", " : "", number,
						 vxid.localTransactionId,
						 number == LEASE_INVALID_PROC_NUMBER ? " (prepared)" : "");
		if (number == LEASE_INVALID_PROC_NUMBER)
			continue;			/* a prepared transaction: it waits */
		proc = LeaseProcByNumber(number);
		if (proc == NULL)
			continue;
		LWLockAcquire(ProcArrayLock, LW_SHARED);
		if (LeaseProcNumberOf(proc) == number && LeaseProcLxid(proc) == vxid.localTransactionId)
			LeaseEvictProc(takeover, proc, vxid.localTransactionId, now_ms);
		LWLockRelease(ProcArrayLock);
	}
	pfree(holders);
}

/*
 * Lock tag exclusively for takeover, until the transaction ends: at once
 * when nobody holds it; else wait for the holders up to
 * pg_lease.takeover_timeout (0: as long as they take), then end them.  The
 * caller says in an error context what the lock is for.
 */
void
LeaseFenceLockTagExclusive(LeaseTakeover *takeover, const LOCKTAG *tag)
{
	StringInfoData who;
	double		waited_ms;

	if (LockAcquire(tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL)
		return;

	if (lease_takeover_timeout_ms == 0)
	{
		(void) LockAcquire(tag, ExclusiveLock, false, false);
		return;
	}
	waited_ms = LeaseTakeoverWaited(takeover);
	if (waited_ms < lease_takeover_timeout_ms &&
		FenceLockWaitExclusive(tag, (int) (lease_takeover_timeout_ms - waited_ms)))
		return;

	initStringInfo(&who);
	for (;;)
	{
		double		bound_ms = (double) lease_takeover_timeout_ms + LEASE_EVICT_BOUND_MS;

		waited_ms = LeaseTakeoverWaited(takeover);
		FenceLockEvictHolders(takeover, tag, waited_ms, &who);
		LeaseRecordEvictions(takeover);
		if (waited_ms >= bound_ms)
			LeaseTakeoverTimedOut(takeover, who.data);
		if (FenceLockWaitExclusive(tag, (int) Min(LEASE_EVICT_SLICE_MS,
												  bound_ms - waited_ms + 1)))
			break;
	}
	pfree(who.data);
}

/* Lock the grant that takeover ends exclusively, until the transaction ends. */
void
LeaseFenceLockExclusive(LeaseTakeover *takeover)
{
	const LeaseEnding *ending = takeover->ending;
	FenceLockContext context = {text_to_cstring(ending->name), ending->epoch, true};
	ErrorContextCallback callback;
	LOCKTAG		tag;

	LeaseFenceLockTag(&tag, ending->epoch);
	callback.callback = FenceLockErrorContext;
	callback.arg = &context;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	LeaseFenceLockTagExclusive(takeover, &tag);
	error_context_stack = callback.previous;
}
