/*-------------------------------------------------------------------------
 *
 * lease_write_target.c
 *	  The tables lease_row_write.c writes directly: whether it may, what it
 *	  needs (indexes and their IndexInfo, the identity sequence), and the slots
 *	  it reuses.
 *
 * All of it is kept per backend and dropped by the relcache callback in
 * catalog.c, so a call does no catalog lookup.  A table with triggers,
 * rules, row security, stored generated columns, an index on expressions,
 * with a predicate, deferred or excluding, or with columns other than the
 * ones written (the 1.0 schema) is not a direct target: the caller falls
 * back to SPI.
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
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

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

/* Relcache callback: relid changed, or everything did. */
static void
LeaseWriteRelcacheCallback(Datum arg, Oid relid)
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
	CacheRegisterRelcacheCallback(LeaseWriteRelcacheCallback, (Datum) 0);
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
			t->identity = LeaseIdentitySequence(rel, LEASE_EVENT_COL_ID + 1, true);
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
LeaseTarget *
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
TupleTableSlot *
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
void
LeaseSlotGiveBack(LeaseTarget *t, TupleTableSlot *slot, LeaseSlotKind kind)
{
	ExecClearTuple(slot);
	if (slot == t->slots[kind] && t->lent[kind])
		t->lent[kind] = false;
	else
		LeaseSlotDrop(slot);
}

/*
 * A slot to lock lease rows into (lease_row_lock.c), for rel (leases, open).
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
