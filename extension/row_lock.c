/*-------------------------------------------------------------------------
 *
 * row_lock.c
 *	  Find a lease row through the primary key and lock it, without SPI.
 *
 * Locking the lease row is on every hot path (renew, the fence trigger's
 * first row in a transaction), and through SPI it cost a parse-free but
 * still complete executor run per call.  An index probe and
 * table_tuple_lock do the same work directly, with the semantics of
 * SELECT ... FOR SHARE / FOR NO KEY UPDATE: under READ COMMITTED a row
 * updated meanwhile is followed to its newest version; under REPEATABLE
 * READ and SERIALIZABLE that is a serialization failure.  No privilege is
 * checked and no name is looked up, so neither the caller's role nor its
 * search_path matters.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

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
 * Lock the row of lease name in mode; false when there is none.  On success
 * the row's columns are in slot (created by the caller for the leases
 * table), all attributes deformed.  The catalog cache must be valid.
 */
bool
LeaseLockRow(text *name, LockTupleMode mode, Snapshot snapshot, Relation rel,
			 TupleTableSlot *slot)
{
	Relation	index = index_open(RelationGetPrimaryKeyIndex(rel), AccessShareLock);
	bool		xact_snapshot = IsolationUsesXactSnapshot();
	IndexScanDesc scan;
	ScanKeyData key;
	ItemPointerData tid;
	TM_FailureData tmfd;
	bool		found;

	ScanKeyEntryInitialize(&key, 0, 1, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[0], F_TEXTEQ, PointerGetDatum(name));
	scan = index_beginscan(rel, index, snapshot, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	if (found)
		tid = slot->tts_tid;
	index_endscan(scan);
	index_close(index, NoLock);
	if (!found)
		return false;

	switch (table_tuple_lock(rel, &tid, snapshot, slot, GetCurrentCommandId(true),
							 mode, LockWaitBlock,
							 xact_snapshot ? 0 : TUPLE_LOCK_FLAG_FIND_LAST_VERSION,
							 &tmfd))
	{
		case TM_Ok:
			break;
		case TM_Deleted:
			if (xact_snapshot)
				LeaseSerializationFailure();
			return false;		/* deleted meanwhile: there is no lease */
		case TM_Updated:
			/* READ COMMITTED follows the chain, so only snapshot modes get here */
			LeaseSerializationFailure();
			break;
		default:
			elog(ERROR, "pg_lease: unexpected result locking the row of a lease");
	}
	slot_getallattrs(slot);
	return true;
}
