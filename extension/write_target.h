/*-------------------------------------------------------------------------
 *
 * write_target.h
 *	  What a direct write to leases or lease_events needs (write_target.c),
 *	  shared with the writes themselves (row_write.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_WRITE_TARGET_H
#define PG_LEASE_WRITE_TARGET_H

#include "lease_row.h"

#include "nodes/execnodes.h"

#define LEASE_TARGET_MAX_INDEXES	8

typedef enum LeaseTargetId
{
	LEASE_TARGET_LEASES,
	LEASE_TARGET_EVENTS,
	LEASE_TARGETS
} LeaseTargetId;

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

extern LeaseTarget *LeaseTargetOpen(LeaseTargetId id, Relation *relp);
extern TupleTableSlot *LeaseSlotFor(LeaseTarget *t, Relation rel, LeaseSlotKind kind);
extern void LeaseSlotGiveBack(LeaseTarget *t, TupleTableSlot *slot, LeaseSlotKind kind);

#endif							/* PG_LEASE_WRITE_TARGET_H */
