/*-------------------------------------------------------------------------
 *
 * evict.h
 *	  One change of holder's bounded wait for the fenced transactions of the
 *	  grant it ends, and the backends it ended (evict.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_EVICT_H
#define PG_LEASE_EVICT_H

#include "pg_lease.h"

#include "portability/instr_time.h"
#include "storage/proc.h"

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

/* takeover.c: the 1.2 row lock, upgraded to FOR UPDATE */
extern void LeaseLockForHolderChange(Relation rel, ItemPointer tid,
									 TupleTableSlot *slot, LeaseTakeover *takeover);

#endif							/* PG_LEASE_EVICT_H */
