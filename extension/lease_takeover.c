/*-------------------------------------------------------------------------
 *
 * lease_takeover.c
 *	  The row half of a change of holder: FOR UPDATE on the lease row,
 *	  waiting (bounded) for fenced writers that still lock the row.
 *
 * Through 1.2 the fence trigger key-share-locked the lease row; from 1.3 it
 * locks the grant in the lock manager (fence_lock.c) and leaves the row
 * alone.  But after an upgrade without a restart, backends that loaded the
 * 1.2 library still take the row lock, and until none is left (see
 * fence_compat.c) new ones take it too.  So a change of holder still upgrades
 * its row lock to FOR UPDATE, which conflicts with FOR KEY SHARE: at once when
 * no such writer is there, which is always once no 1.2 backend remains.
 * The wait is bounded as the lock-manager wait is, from the same start and
 * with the same rules (lease_evict.c): after pg_lease.takeover_timeout the
 * writers are ended, and LEASE_EVICT_BOUND_MS later the change fails 55P03.
 *
 * Only transactions that hold this row's key-share lock are ever signalled.
 * The caller holds FOR NO KEY UPDATE on the row, so nobody can renew it or
 * grant it meanwhile, and every key-share lock on it was taken after the
 * latest change of holder (which waited for all older ones): all of them
 * belong to the epoch being ended.  Key-share locks on the leases table are
 * taken by the fence trigger alone; ordinary roles cannot lock its rows.
 * They are found in the row's xmax, as pgrowlocks does.
 *
 * The wait polls with a conditional lock, as VACUUM's truncation does for
 * its relation lock: PostgreSQL has no row-lock wait with a deadline short
 * of raising an error.
 *
 *-------------------------------------------------------------------------
 */
#include "lease.h"

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

/* Polling interval: short at first, as most writers end within a moment. */
#define LEASE_POLL_MIN_MS		1
#define LEASE_POLL_MAX_MS		10

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
	if (!LeaseHeapFetch(rel, SnapshotAny, &tuple, &buffer, true))
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

/*
 * Signal the backends of these transactions, each as its state needs
 * (lease_evict.c).  The signal goes out under ProcArrayLock, after checking
 * that the backend still runs the transaction that holds the lock: a
 * transaction cannot end while we hold that lock.
 */
static void
LeaseSignalLockers(LeaseXids lockers, LeaseTakeover *takeover, double now_ms)
{
	int			x;
	int			i;

	LWLockAcquire(ProcArrayLock, LW_SHARED);
	for (x = 0; x < lockers.count; x++)
	{
		for (i = 0; i < ProcGlobal->allProcCount; i++)
		{
			PGPROC	   *proc = &ProcGlobal->allProcs[i];

			if (LeaseProcXid(proc) == lockers.xids[x])
			{
				LeaseEvictProc(takeover, proc, lockers.xids[x], now_ms);
				break;
			}
		}
	}
	LWLockRelease(ProcArrayLock);
	if (lockers.xids != NULL)
		pfree(lockers.xids);
}

static void
LeaseRowLockTimedOut(Relation rel, ItemPointer tid, const LeaseTakeover *takeover)
{
	LeaseXids	lockers = LeaseKeyShareLockers(rel, tid);
	StringInfoData list;
	int			i;

	initStringInfo(&list);
	for (i = 0; i < lockers.count; i++)
		appendStringInfo(&list, "%s%u", i > 0 ? ", " : "", lockers.xids[i]);
	LeaseTakeoverTimedOut(takeover, list.data);
}

/*
 * Upgrade the caller's FOR NO KEY UPDATE lock on the row version at tid to
 * FOR UPDATE, ending the 1.2-style fenced transactions of the grant being
 * ended if they hold on past pg_lease.takeover_timeout (0: wait for them as
 * long as they take), counted from the start of takeover.  slot receives
 * the row.
 */
void
LeaseLockForHolderChange(Relation rel, ItemPointer tid, TupleTableSlot *slot,
						 LeaseTakeover *takeover)
{
	Snapshot	snapshot = GetTransactionSnapshot();
	long		sleep_ms = LEASE_POLL_MIN_MS;
	TM_Result	result;

	result = LeaseLockTid(rel, tid, LockTupleExclusive, LockWaitSkip, snapshot, slot);
	if (result == TM_WouldBlock && lease_takeover_timeout_ms == 0)
		result = LeaseLockTid(rel, tid, LockTupleExclusive, LockWaitBlock, snapshot, slot);

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

		waited_ms = LeaseTakeoverWaited(takeover);
		if (waited_ms < lease_takeover_timeout_ms)
			continue;
		if (waited_ms >= (double) lease_takeover_timeout_ms + LEASE_EVICT_BOUND_MS)
			LeaseRowLockTimedOut(rel, tid, takeover);

		LeaseSignalLockers(LeaseKeyShareLockers(rel, tid), takeover, waited_ms);
		LeaseRecordEvictions(takeover);
	}
	/* the caller's own FOR NO KEY UPDATE lock keeps the row in place */
	if (result != TM_Ok)
		elog(ERROR, "pg_lease: the row of lease \"%s\" vanished while locked",
			 text_to_cstring(takeover->ending->name));
}
