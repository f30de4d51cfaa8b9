/*-------------------------------------------------------------------------
 *
 * lease_row_write.c
 *	  Write lease rows and lease_events through the table AM, without SPI.
 *
 * An UPDATE or INSERT through SPI runs the whole executor for one row:
 * cached plan revalidation, ExecutorStart, a second index probe for a row
 * the caller has locked already, and ExecConstraints, which parses and
 * plans the table's CHECK constraints again on every execution.  The lease
 * functions hold the row's lock and know its TID, and they validate every
 * value they write, so they change the row with table_tuple_update and,
 * when the update is not HOT, insert the index entries themselves, as
 * CatalogIndexInsert does.  The CHECK constraints stay in the schema for
 * other writers; here a value that would violate one is an internal error.
 *
 * Nothing else the executor would do is skipped silently: a table with
 * triggers, rules, row security, stored generated columns, an index on
 * expressions, with a predicate, deferred or excluding, or with columns
 * other than the ones written here (the 1.0 schema), is written through
 * SPI: these functions return false and the caller falls back.
 *
 * What is looked up (indexes, their IndexInfo, the identity sequence, and
 * slots) is kept per backend by lease_write_target.c, so a call does no
 * catalog lookup.
 *
 *-------------------------------------------------------------------------
 */
#include "lease.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

/*
 * Insert the index entries for the tuple in slot (at slot->tts_tid), as
 * ExecInsertIndexTuples does for plain indexes.  replaced names the columns
 * an update set (NULL for an insert): an index none of whose columns it set
 * gets the hint that its key did not change, for bottom-up deletion.
 * only_summarizing: a HOT update that leaves the other indexes as they are.
 */
static void
LeaseInsertIndexEntries(LeaseTarget *t, Relation rel, TupleTableSlot *slot,
						const bool *replaced, bool only_summarizing)
{
	int			i;

	for (i = 0; i < t->nindexes; i++)
	{
		IndexInfo  *info = t->info[i];
		Relation	index;
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];
		bool		unchanged = replaced != NULL;
		int			k;

		if (!info->ii_ReadyForInserts)
			continue;
		if (only_summarizing && !LeaseIndexIsSummarizing(info))
			continue;
		for (k = 0; k < info->ii_NumIndexAttrs && unchanged; k++)
			unchanged = !replaced[info->ii_IndexAttrNumbers[k] - 1];

		index = index_open(t->indexes[i], RowExclusiveLock);
		FormIndexDatum(info, slot, NULL, values, isnull);
		(void) LeaseIndexInsert(index, values, isnull, &slot->tts_tid, rel,
							info->ii_Unique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO,
							unchanged, info);
		index_close(index, NoLock);
	}
}

/* A text column's value: 1 to 255 bytes, as the tables' CHECKs require. */
static void
LeaseRequireLabel(Datum value, const char *column)
{
	int			bytes = VARSIZE_ANY_EXHDR(DatumGetPointer(value));

	if (bytes < 1 || bytes > LEASE_NAME_MAX_BYTES)
		elog(ERROR, "pg_lease: %s of %d bytes would violate its CHECK constraint",
			 column, bytes);
}

static void
LeaseRequireNotNull(TupleDesc desc, const bool *nulls, const bool *replace)
{
	int			i;

	for (i = 0; i < desc->natts; i++)
		if (nulls[i] && (replace == NULL || replace[i]) && TupleDescAttr(desc, i)->attnotnull)
			elog(ERROR, "pg_lease: null in column \"%s\" would violate its NOT NULL constraint",
				 NameStr(TupleDescAttr(desc, i)->attname));
}

/*
 * The values an update of a lease row sets must pass the leases table's
 * constraints; the lease functions validated them, so a failure here is a
 * bug, reported as one rather than written.
 */
static void
LeaseCheckRowChange(TupleDesc desc, const Datum *values, const bool *nulls,
					const bool *replace)
{
	LeaseRequireNotNull(desc, nulls, replace);
	if (replace[LEASE_COL_NAME])
		elog(ERROR, "pg_lease: a lease row's name never changes");
	if (replace[LEASE_COL_HOLDER] && !nulls[LEASE_COL_HOLDER])
		LeaseRequireLabel(values[LEASE_COL_HOLDER], "holder");
	if (replace[LEASE_COL_EPOCH] && DatumGetInt64(values[LEASE_COL_EPOCH]) <= 0)
		elog(ERROR, "pg_lease: epoch " INT64_FORMAT " would violate its CHECK constraint",
			 DatumGetInt64(values[LEASE_COL_EPOCH]));
	if (replace[LEASE_COL_LOCK_DELAY])
	{
		Interval   *delay = DatumGetIntervalP(values[LEASE_COL_LOCK_DELAY]);

		if (delay->time < 0 || delay->day != 0 || delay->month != 0)
			elog(ERROR, "pg_lease: a negative lock_delay would violate its CHECK constraint");
	}
}

static void
LeaseWriteFailed(TM_Result result, const char *what)
{
	/* the row is locked, so only a snapshot-mode anomaly could get here */
	if ((result == TM_Updated || result == TM_Deleted) && IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent update of a lease")));
	elog(ERROR, "pg_lease: unexpected result %d %s", (int) result, what);
}

/*
 * Update the lease row locked at row->tid (row->tuple is that version):
 * the columns replace[] names get values[] and nulls[].  false when the
 * executor must do it; the caller then runs the prepared UPDATE.
 */
bool
LeaseUpdateDirect(const LeaseRow *row, const Datum *values, const bool *nulls,
				  const bool *replace)
{
	LeaseTarget *t;
	Relation	rel;
	TupleTableSlot *slot;
	HeapTuple	tuple;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	LeaseUpdateIndexes update_indexes;
	TM_Result	result;

	Assert(row->tuple != NULL && ItemPointerIsValid(&row->tid));
	t = LeaseTargetOpen(LEASE_TARGET_LEASES, &rel);
	if (t == NULL)
		return false;
	CheckCmdReplicaIdentity(rel, CMD_UPDATE);
	LeaseCheckRowChange(RelationGetDescr(rel), values, nulls, replace);

	tuple = heap_modify_tuple(row->tuple, RelationGetDescr(rel),
							  (Datum *) values, (bool *) nulls, (bool *) replace);
	slot = LeaseSlotFor(t, rel, LEASE_SLOT_WRITE);
	ExecStoreHeapTuple(tuple, slot, true);
	result = table_tuple_update(rel, (ItemPointer) &row->tid, slot,
								GetCurrentCommandId(true),
								ActiveSnapshotSet() ? GetActiveSnapshot() : InvalidSnapshot,
								InvalidSnapshot, true, &tmfd, &lockmode,
								&update_indexes);
	if (result != TM_Ok)
		LeaseWriteFailed(result, "updating the row of a lease");
	if (!LeaseUpdateIndexesNone(update_indexes))
		LeaseInsertIndexEntries(t, rel, slot, replace,
								LeaseUpdateIndexesOnlySummarizing(update_indexes));
	LeaseSlotGiveBack(t, slot, LEASE_SLOT_WRITE);
	table_close(rel, NoLock);
	/* as SPI after a statement: later commands of the call see the row */
	CommandCounterIncrement();
	return true;
}

static bool
LeaseEventIsKnown(Datum event)
{
	static const char *const known[] = {
		"acquired", "takeover", "released", "revoked", "handover", "evict"
	};
	text	   *value = DatumGetTextPP(event);
	int			len = VARSIZE_ANY_EXHDR(value);
	int			i;

	for (i = 0; i < lengthof(known); i++)
		if (strlen(known[i]) == len && memcmp(known[i], VARDATA_ANY(value), len) == 0)
			return true;
	return false;
}

/*
 * Append a row to lease_events: values[] and nulls[] for every column but
 * id and time, which are filled in here as their defaults would be.  false
 * when the executor must do it.
 */
bool
LeaseInsertEventDirect(Datum *values, bool *nulls)
{
	LeaseTarget *t;
	Relation	rel;
	TupleTableSlot *slot;

	t = LeaseTargetOpen(LEASE_TARGET_EVENTS, &rel);
	if (t == NULL)
		return false;

	if (!LeaseEventIsKnown(values[LEASE_EVENT_COL_EVENT]))
		elog(ERROR, "pg_lease: event \"%s\" would violate lease_events_event_check",
			 TextDatumGetCString(values[LEASE_EVENT_COL_EVENT]));
	LeaseRequireLabel(values[LEASE_EVENT_COL_NAME], "name");
	values[LEASE_EVENT_COL_ID] = Int64GetDatum(nextval_internal(t->identity, false));
	nulls[LEASE_EVENT_COL_ID] = false;
	values[LEASE_EVENT_COL_TIME] = TimestampTzGetDatum(GetCurrentTimestamp());
	nulls[LEASE_EVENT_COL_TIME] = false;
	LeaseRequireNotNull(RelationGetDescr(rel), nulls, NULL);

	slot = LeaseSlotFor(t, rel, LEASE_SLOT_WRITE);
	ExecStoreHeapTuple(heap_form_tuple(RelationGetDescr(rel), values, nulls), slot, true);
	table_tuple_insert(rel, slot, GetCurrentCommandId(true), 0, NULL);
	LeaseInsertIndexEntries(t, rel, slot, NULL, false);
	LeaseSlotGiveBack(t, slot, LEASE_SLOT_WRITE);
	table_close(rel, NoLock);
	CommandCounterIncrement();
	return true;
}
