/*-------------------------------------------------------------------------
 *
 * lease_row_lock.c
 *	  Find a lease row through the primary key and lock it, without SPI.
 *
 * Locking the lease row is on every hot path (renew, the fence trigger's
 * first row in a transaction), and through SPI it cost a parse-free but
 * still complete executor run per call.  An index probe and
 * table_tuple_lock do the same work directly, with the semantics of
 * SELECT ... FOR <mode>: under READ COMMITTED a row updated meanwhile is
 * followed to its newest version; under REPEATABLE READ and SERIALIZABLE
 * that is a serialization failure.  No privilege is checked and no name is
 * looked up, so neither the caller's role nor its search_path matters.
 *
 * The four lock strengths divide the work (see the README's safety section):
 * fenced writers take FOR KEY SHARE, renewals FOR NO KEY UPDATE, which does
 * not conflict with it, and every change of holder FOR UPDATE, which does.
 *
 *-------------------------------------------------------------------------
 */
#include "lease.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

static void
LeaseSerializationFailure(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent update of a lease")));
}

/*
 * Lock the row version at tid in mode.  A key-share lock also locks the
 * version that a renewal in progress is writing (as a foreign-key check
 * does), so that it survives the renewal's commit and a later change of
 * holder still waits for it.  Returns TM_Ok, TM_WouldBlock (only with
 * LockWaitSkip) or TM_Deleted; the row is in slot, all attributes deformed,
 * and slot->tts_tid names the version locked.
 */
TM_Result
LeaseLockTid(Relation rel, ItemPointer tid, LockTupleMode mode,
			 LockWaitPolicy wait, Snapshot snapshot, TupleTableSlot *slot)
{
	bool		xact_snapshot = IsolationUsesXactSnapshot();
	int			flags = TUPLE_LOCK_FLAG_LOCK_UPDATE_IN_PROGRESS;
	TM_FailureData tmfd;
	TM_Result	result;

	if (!xact_snapshot)
		flags |= TUPLE_LOCK_FLAG_FIND_LAST_VERSION;
	result = table_tuple_lock(rel, tid, snapshot, slot, GetCurrentCommandId(true),
							  mode, wait, flags, &tmfd);
	switch (result)
	{
		case TM_Ok:
			slot_getallattrs(slot);
			break;
		case TM_WouldBlock:
			break;
		case TM_Deleted:
			if (xact_snapshot)
				LeaseSerializationFailure();
			break;				/* deleted meanwhile: there is no lease */
		case TM_Updated:
			/* READ COMMITTED follows the chain, so only snapshot modes get here */
			LeaseSerializationFailure();
			break;
		default:
			elog(ERROR, "pg_lease: unexpected result %d locking the row of a lease",
				 (int) result);
	}
	return result;
}

/*
 * Find the version of lease name's row that snapshot sees, through the
 * primary key, without locking it; false when there is none.  The row is
 * in slot, and slot->tts_tid names the version.  The catalog cache must be
 * valid.
 */
bool
LeaseFindRow(text *name, Snapshot snapshot, Relation rel, TupleTableSlot *slot)
{
	Relation	index = index_open(LeasePrimaryKeyIndex(rel), AccessShareLock);
	IndexScanDesc scan;
	ScanKeyData key;
	bool		found;

	ScanKeyEntryInitialize(&key, 0, 1, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[0], F_TEXTEQ, PointerGetDatum(name));
	scan = LeaseIndexBeginScan(rel, index, snapshot, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	index_close(index, NoLock);
	return found;
}

/*
 * Lock the row of lease name in mode, waiting as long as it takes; false
 * when there is none.  The catalog cache must be valid.
 */
bool
LeaseLockRow(text *name, LockTupleMode mode, Snapshot snapshot, Relation rel,
			 TupleTableSlot *slot)
{
	ItemPointerData tid;

	if (!LeaseFindRow(name, snapshot, rel, slot))
		return false;
	tid = slot->tts_tid;
	return LeaseLockTid(rel, &tid, mode, LockWaitBlock, snapshot, slot) == TM_Ok;
}
