/*-------------------------------------------------------------------------
 *
 * row_write.c
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
 * slots) is kept per backend and dropped by the relcache callback in
 * catalog.c, so a call does no catalog lookup.
 *
 *-------------------------------------------------------------------------
 */
#include "lease_row.h"

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

#define LEASE_TARGET_MAX_INDEXES	8

typedef enum LeaseTargetId
{
	LEASE_TARGET_LEASES,
	LEASE_TARGET_EVENTS,
	LEASE_TARGETS
} LeaseTargetId;

typedef struct LeaseColumn
{
	const char *name;
	Oid			type;
} LeaseColumn;

/* The columns written here, in table order; any other shape falls back. */
static const LeaseColumn lease_columns[LEASE_NATTS] = {
	{"name", TEXTOID}, {"holder", TEXTOID}, {"epoch", INT8OID},
	{"acquired_at", TIMESTAMPTZOID}, {"renewed_at", TIMESTAMPTZOID},
	{"expires_at", TIMESTAMPTZOID}, {"ttl", INTERVALOID},
	{"transitions", INT8OID}, {"owner_role", NAMEOID}, {"lock_delay", INTERVALOID},
};

static const LeaseColumn event_columns[LEASE_EVENT_NATTS] = {
	{"id", INT8OID}, {"time", TIMESTAMPTZOID}, {"event", TEXTOID},
	{"name", TEXTOID}, {"holder", TEXTOID}, {"epoch", INT8OID},
	{"expires_at", TIMESTAMPTZOID}, {"role", NAMEOID}, {"pid", INT4OID},
};

/* Slots: one spare of each kind per table, and whether it is lent out. */
typedef enum LeaseSlotKind
{
	LEASE_SLOT_ROW,				/* the table AM's own kind, to lock rows */
	LEASE_SLOT_WRITE,			/* a heap tuple being written */
	LEASE_SLOT_KINDS
} LeaseSlotKind;

typedef struct LeaseTarget
{
	bool		valid;
	bool		direct;			/* every check in the header passed */
	Oid			relid;
	MemoryContext cxt;			/* IndexInfos; rebuilt with the target */
	int			nindexes;
	Oid			indexes[LEASE_TARGET_MAX_INDEXES];
	IndexInfo  *info[LEASE_TARGET_MAX_INDEXES];
	Oid			identity;		/* lease_events.id's sequence */
	TupleTableSlot *slots[LEASE_SLOT_KINDS];
	bool		lent[LEASE_SLOT_KINDS];
} LeaseTarget;

static LeaseTarget lease_targets[LEASE_TARGETS];

/* Slots and their descriptors live here, each dropped on its own. */
static MemoryContext lease_slot_cxt = NULL;

static void
LeaseSlotDrop(TupleTableSlot *slot)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;

	ExecDropSingleTupleTableSlot(slot);
	FreeTupleDesc(desc);
}

/*
 * A slot kept for the next caller is dropped; one lent out is forgotten
 * here and dropped when it comes back (LeaseSlotRelease).
 */
static void
LeaseTargetForgetSlots(LeaseTarget *t)
{
	int			k;

	for (k = 0; k < LEASE_SLOT_KINDS; k++)
	{
		if (t->slots[k] != NULL && !t->lent[k])
			LeaseSlotDrop(t->slots[k]);
		t->slots[k] = NULL;
		t->lent[k] = false;
	}
}

/* Relcache callback (catalog.c): relid changed, or everything did. */
void
LeaseWriteInvalidate(Oid relid)
{
	int			i;
	int			j;

	for (i = 0; i < LEASE_TARGETS; i++)
	{
		LeaseTarget *t = &lease_targets[i];
		bool		hit = relid == InvalidOid || relid == t->relid;

		for (j = 0; j < t->nindexes && !hit; j++)
			hit = relid == t->indexes[j];
		if (hit)
			t->valid = false;
	}
}

/*
 * A slot lent out when a transaction or subtransaction aborts may hold a
 * buffer pin that the resource owner has already released: forget it
 * (a few hundred bytes stay allocated) rather than clear it later.
 */
static void
LeaseForgetLentSlots(void)
{
	int			i;
	int			k;

	for (i = 0; i < LEASE_TARGETS; i++)
		for (k = 0; k < LEASE_SLOT_KINDS; k++)
			if (lease_targets[i].lent[k])
			{
				lease_targets[i].slots[k] = NULL;
				lease_targets[i].lent[k] = false;
			}
}

static void
LeaseWriteXactCallback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		LeaseForgetLentSlots();
}

static void
LeaseWriteSubXactCallback(SubXactEvent event, SubTransactionId subid,
						  SubTransactionId parent, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		LeaseForgetLentSlots();
}

void
LeaseWriteInit(void)
{
	RegisterXactCallback(LeaseWriteXactCallback, NULL);
	RegisterSubXactCallback(LeaseWriteSubXactCallback, NULL);
}

static bool
LeaseColumnsAre(TupleDesc desc, const LeaseColumn *columns, int n)
{
	int			i;

	if (desc->natts != n ||
		(desc->constr != NULL && desc->constr->has_generated_stored))
		return false;
	for (i = 0; i < n; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->atttypid != columns[i].type ||
			strcmp(NameStr(att->attname), columns[i].name) != 0)
			return false;
	}
	return true;
}

/* An index that index_insert alone maintains as the executor would. */
static bool
LeaseIndexIsPlain(Relation index, IndexInfo *info)
{
	return info->ii_Expressions == NIL && info->ii_Predicate == NIL &&
		info->ii_ExclusionOps == NULL &&
		(!info->ii_Unique || index->rd_index->indimmediate);
}

/* Look up what writing rel directly needs; rel is open and locked. */
static void
LeaseTargetBuild(LeaseTarget *t, LeaseTargetId id, Relation rel)
{
	List	   *indexes;
	ListCell   *lc;
	MemoryContext old;

	LeaseTargetForgetSlots(t);
	if (t->cxt == NULL)
		t->cxt = AllocSetContextCreate(CacheMemoryContext, "pg_lease direct writes",
									   ALLOCSET_SMALL_SIZES);
	else
		MemoryContextReset(t->cxt);
	t->relid = RelationGetRelid(rel);
	t->nindexes = 0;
	t->identity = InvalidOid;
	/* valid from here on: an invalidation while building marks it again */
	t->valid = true;

	if (id == LEASE_TARGET_LEASES)
		t->direct = LeaseSchema11() &&
			LeaseColumnsAre(RelationGetDescr(rel), lease_columns, LEASE_NATTS);
	else
	{
		t->direct = LeaseColumnsAre(RelationGetDescr(rel), event_columns, LEASE_EVENT_NATTS);
		if (t->direct)
			t->identity = getIdentitySequence(t->relid, LEASE_EVENT_COL_ID + 1, true);
		t->direct = t->direct && OidIsValid(t->identity);
	}
	t->direct = t->direct && rel->rd_rel->relkind == RELKIND_RELATION;

	indexes = RelationGetIndexList(rel);
	if (list_length(indexes) > LEASE_TARGET_MAX_INDEXES)
		t->direct = false;
	old = MemoryContextSwitchTo(t->cxt);
	foreach(lc, indexes)
	{
		Relation	index;

		if (!t->direct)
			break;
		index = index_open(lfirst_oid(lc), AccessShareLock);
		t->indexes[t->nindexes] = lfirst_oid(lc);
		t->info[t->nindexes] = BuildIndexInfo(index);
		t->direct = LeaseIndexIsPlain(index, t->info[t->nindexes]);
		t->nindexes++;
		index_close(index, NoLock);
	}
	MemoryContextSwitchTo(old);
	list_free(indexes);
}

/*
 * Open the table for a direct write, with the lock the executor takes;
 * NULL when the executor must write it (the lock is kept either way).
 */
static LeaseTarget *
LeaseTargetOpen(LeaseTargetId id, Relation *relp)
{
	LeaseTarget *t = &lease_targets[id];
	Oid			relid = id == LEASE_TARGET_LEASES ? LeaseTableRelid() : LeaseEventsRelid();
	Relation	rel = table_open(relid, RowExclusiveLock);

	if (!t->valid || t->relid != relid)
		LeaseTargetBuild(t, id, rel);
	/* the relcache entry says whether any were added since the build */
	if (!t->direct || rel->trigdesc != NULL || rel->rd_rules != NULL ||
		rel->rd_rel->relrowsecurity)
	{
		table_close(rel, NoLock);
		return NULL;
	}
	*relp = rel;
	return t;
}

/*
 * A slot for rows of rel, kept from one call to the next.  Its descriptor
 * is a copy with the constraints, so columns added later with a default
 * (lock_delay) are read from rows written before.
 */
static TupleTableSlot *
LeaseSlotFor(LeaseTarget *t, Relation rel, LeaseSlotKind kind)
{
	const TupleTableSlotOps *ops;
	TupleDesc	desc;
	TupleTableSlot *slot;
	MemoryContext old;

	if (t->slots[kind] != NULL && !t->lent[kind])
	{
		t->lent[kind] = true;
		return t->slots[kind];
	}

	if (lease_slot_cxt == NULL)
		lease_slot_cxt = AllocSetContextCreate(CacheMemoryContext, "pg_lease slots",
											   ALLOCSET_SMALL_SIZES);
	ops = kind == LEASE_SLOT_ROW ? table_slot_callbacks(rel) : &TTSOpsHeapTuple;
	old = MemoryContextSwitchTo(lease_slot_cxt);
	desc = CreateTupleDescCopyConstr(RelationGetDescr(rel));
	slot = MakeSingleTupleTableSlot(desc, ops);
	MemoryContextSwitchTo(old);

	/* a nested caller gets one of its own, dropped when it comes back */
	if (t->slots[kind] == NULL)
	{
		t->slots[kind] = slot;
		t->lent[kind] = true;
	}
	return slot;
}

/* Give back a slot from LeaseSlotFor, empty. */
static void
LeaseSlotGiveBack(LeaseTarget *t, TupleTableSlot *slot, LeaseSlotKind kind)
{
	ExecClearTuple(slot);
	if (slot == t->slots[kind] && t->lent[kind])
		t->lent[kind] = false;
	else
		LeaseSlotDrop(slot);
}

/*
 * A slot to lock lease rows into (row_lock.c), for rel (leases, open).
 * Give it back with LeaseRowSlotRelease before the call returns.
 */
TupleTableSlot *
LeaseRowSlot(Relation rel)
{
	LeaseTarget *t = &lease_targets[LEASE_TARGET_LEASES];

	/* slots follow the relation's shape: rebuild after an invalidation */
	if (!t->valid || t->relid != RelationGetRelid(rel))
		LeaseTargetBuild(t, LEASE_TARGET_LEASES, rel);
	return LeaseSlotFor(t, rel, LEASE_SLOT_ROW);
}

void
LeaseRowSlotRelease(TupleTableSlot *slot)
{
	LeaseSlotGiveBack(&lease_targets[LEASE_TARGET_LEASES], slot, LEASE_SLOT_ROW);
}

/*
 * Insert the index entries for the tuple in slot (at slot->tts_tid), as
 * ExecInsertIndexTuples does for plain indexes.  replaced names the columns
 * an update set (NULL for an insert): an index none of whose columns it set
 * gets the hint that its key did not change, for bottom-up deletion.
 */
static void
LeaseInsertIndexEntries(LeaseTarget *t, Relation rel, TupleTableSlot *slot,
						const bool *replaced)
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
		for (k = 0; k < info->ii_NumIndexAttrs && unchanged; k++)
			unchanged = !replaced[info->ii_IndexAttrNumbers[k] - 1];

		index = index_open(t->indexes[i], RowExclusiveLock);
		FormIndexDatum(info, slot, NULL, values, isnull);
		(void) index_insert(index, values, isnull, &slot->tts_tid, rel,
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
	bool		update_indexes;
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
	if (update_indexes)
		LeaseInsertIndexEntries(t, rel, slot, replace);
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
	LeaseInsertIndexEntries(t, rel, slot, NULL);
	LeaseSlotGiveBack(t, slot, LEASE_SLOT_WRITE);
	table_close(rel, NoLock);
	CommandCounterIncrement();
	return true;
}
