/*-------------------------------------------------------------------------
 *
 * epoch.c
 *	  Allocation of fencing tokens.
 *
 * One sequence serves every lease, so an epoch names exactly one grant.  A
 * sequence never goes back across a crash for any value whose transaction
 * committed (its WAL precedes the commit record), and the grant functions
 * make sure that commit is flushed.  The timeline in the high bits covers
 * what a sequence cannot: a promoted standby that never saw the newest
 * values.  Callers draw an epoch only while they hold the lease row's lock.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

#include "access/xlog.h"
#include "commands/sequence.h"

int64
LeaseNextEpoch(void)
{
	TimeLineID	timeline = GetWALInsertionTimeLine();
	int64		counter;

	if (timeline > LEASE_EPOCH_TIMELINE_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("WAL timeline %u is too large for pg_lease epochs", timeline),
				 errdetail("Epochs keep the timeline in 16 bits.")));

	/* nextval checks privileges itself; we run as the extension owner */
	counter = nextval_internal(LeaseEpochSequence(), false);
	if (counter > LEASE_EPOCH_COUNTER_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("pg_lease epoch counter is exhausted")));

	return ((int64) timeline << LEASE_EPOCH_COUNTER_BITS) | counter;
}
