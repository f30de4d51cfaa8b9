/*-------------------------------------------------------------------------
 *
 * lease_row.h
 *	  A lease row as the lease functions read, lock and change it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_LEASE_ROW_H
#define PG_LEASE_LEASE_ROW_H

#include "pg_lease.h"

#include "access/htup.h"
#include "fmgr.h"
#include "storage/itemptr.h"

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

/* What a lease function means to do with the row it locks (lease_row.c). */
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

/* row_write.c */
extern bool LeaseUpdateDirect(const LeaseRow *row, const Datum *values,
							  const bool *nulls, const bool *replace);

#endif							/* PG_LEASE_LEASE_ROW_H */
