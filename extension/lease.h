/*-------------------------------------------------------------------------
 *
 * lease.h
 *	  The lease functions (acquire, renew, release, revoke, hand over) and
 *	  what they stand on: the lease row, read, locked and written without
 *	  the executor; the change of holder, bounded; the history.
 *
 * The family: lease_acquire.c (lease_acquire), lease_change.c (renew,
 * release, revoke, handover), lease_row.c (a row as the lease functions
 * read, lock and change it), lease_takeover.c and lease_evict.c (a change
 * of holder, bounded: the row, then the writers it waits for and ends),
 * lease_row_lock.c (find and lock a row), lease_row_write.c with
 * lease_write_target.c (write rows and history through the table AM),
 * lease_events.c (the history and NOTIFY), lease_retention.c (pruning
 * the history).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_LEASE_H
#define PG_LEASE_LEASE_H

#include "pg_lease.h"

#include "access/htup.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "nodes/lockoptions.h"
#include "portability/instr_time.h"
#include "storage/itemptr.h"
#include "storage/proc.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/* lease_row.c: a lease row as the lease functions read, lock and change it */
typedef struct LeaseRow
{
	text	   *holder;			/* NULL when free */
	int64		epoch;
	TimestampTz expires_at;
	NameData	owner_role;
	int64		ttl_usec;
	int64		lock_delay_usec;
	int64		transitions;
	ItemPointerData tid;		/* version found, then version locked */
	HeapTuple	tuple;			/* a copy of the version locked, or NULL */
	bool		for_update;		/* locked FOR UPDATE (else FOR NO KEY UPDATE) */
} LeaseRow;

/* What a lease function means to do with the row it locks. */
typedef enum LeaseLockIntent
{
	LEASE_LOCK_LOOK,			/* look, perhaps extend */
	LEASE_LOCK_CHANGE			/* change the holder or the epoch, most likely */
} LeaseLockIntent;

/* What lease_acquire and lease_handover return or record about a grant. */
typedef struct LeaseGrant
{
	bool		acquired;
	int64		epoch;
	text	   *holder;
	TimestampTz expires_at;
} LeaseGrant;

extern void LeaseRequireDurableCommit(void);
extern void LeaseBegin(FunctionCallInfo fcinfo);
extern void LeaseBeginRelease(FunctionCallInfo fcinfo);
extern void LeaseEnd(text *name);
extern bool LeaseFindForLock(text *name, LeaseRow *row);
extern bool LeaseLockFound(LeaseRow *row, LeaseLockIntent intent);
extern void LeaseLockForChange(text *name, LeaseRow *row);
extern bool LeaseLockGrantOfRecord(text *name, text *holder, int64 epoch,
								   LeaseLockIntent intent, LeaseRow *row);
extern bool LeaseTextEqual(text *a, text *b);
extern bool LeaseValidAt(const LeaseRow *row, TimestampTz now);
extern void LeaseCheckRole(text *name, const LeaseRow *row);
extern TimestampTz LeaseExtendLocked(text *name, const LeaseRow *row, int64 ttl_usec);
extern void LeaseFreeLocked(text *name, const LeaseRow *row, const char *event);
extern int64 LeaseGrantNewEpoch(text *name, const LeaseRow *row, text *holder,
								int64 ttl_usec, int64 lock_delay_usec,
								const char *event, TimestampTz *expires_at);

/* lease_row_lock.c: find a lease row by its key and lock it, without SPI */
extern TM_Result LeaseLockTid(Relation rel, ItemPointer tid, LockTupleMode mode,
							  LockWaitPolicy wait, Snapshot snapshot,
							  TupleTableSlot *slot);
extern bool LeaseFindRow(text *name, Snapshot snapshot, Relation rel,
						 TupleTableSlot *slot);
extern bool LeaseLockRow(text *name, LockTupleMode mode, Snapshot snapshot,
						 Relation rel, TupleTableSlot *slot);

/* lease_row_write.c: direct writes to leases and lease_events, without SPI */
extern bool LeaseUpdateDirect(const LeaseRow *row, const Datum *values,
							  const bool *nulls, const bool *replace);
extern bool LeaseInsertEventDirect(Datum *values, bool *nulls);

/* lease_write_target.c: what a direct write needs, kept per backend */
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

extern void LeaseWriteInit(void);
extern LeaseTarget *LeaseTargetOpen(LeaseTargetId id, Relation *relp);
extern TupleTableSlot *LeaseSlotFor(LeaseTarget *t, Relation rel, LeaseSlotKind kind);
extern void LeaseSlotGiveBack(LeaseTarget *t, TupleTableSlot *slot, LeaseSlotKind kind);
extern TupleTableSlot *LeaseRowSlot(Relation rel);
extern void LeaseRowSlotRelease(TupleTableSlot *slot);

/*
 * lease_evict.c: one change of holder's bounded wait for the fenced
 * transactions of the grant it ends, and the backends it ended.
 */

/* A grant that a change of holder ends. */
typedef struct LeaseEnding
{
	text	   *name;
	text	   *holder;			/* holder of the grant being ended, or NULL */
	int64		epoch;			/* its epoch */
	TimestampTz expires_at;		/* its expiry */
} LeaseEnding;

/* How long ended backends may take to let go before the takeover fails. */
#define LEASE_EVICT_BOUND_MS	5000

/* A backend this takeover has signalled. */
typedef struct LeaseEvictee
{
	int			pid;
	uint32		xact;			/* the transaction in the way (xid or lxid) */
	double		cancelled_ms;	/* when cancelled, ms into the wait; < 0: not */
	bool		terminated;
	bool		recorded;		/* event and log written */
} LeaseEvictee;

typedef struct LeaseTakeover
{
	const LeaseEnding *ending;
	instr_time	start;			/* the bound counts from here */
	LeaseEvictee *items;
	int			count;
	int			size;
} LeaseTakeover;

extern void LeaseTakeoverBegin(LeaseTakeover *takeover, const LeaseEnding *ending);
extern void LeaseTakeoverEnd(LeaseTakeover *takeover);
extern double LeaseTakeoverWaited(const LeaseTakeover *takeover);
extern void LeaseEvictProc(LeaseTakeover *takeover, PGPROC *proc, uint32 xact,
						   double now_ms);
extern void LeaseRecordEvictions(LeaseTakeover *takeover);
pg_noreturn extern void LeaseTakeoverTimedOut(const LeaseTakeover *takeover, const char *who);

/* lease_takeover.c: the 1.2 row lock, upgraded to FOR UPDATE */
extern void LeaseLockForHolderChange(Relation rel, ItemPointer tid,
									 TupleTableSlot *slot, LeaseTakeover *takeover);

/* lease_events.c: lease_events and NOTIFY pg_lease */
extern void LeaseRecordEvent(const char *event, text *name, text *holder,
							 int64 epoch, TimestampTz expires_at, int pid);

/* lease_retention.c: pg_lease.event_retention */
extern void LeaseRetentionInit(void);
extern void LeasePruneEvents(text *name, const char *name_str);

#endif							/* PG_LEASE_LEASE_H */
