/*-------------------------------------------------------------------------
 *
 * lease_change.c
 *	  lease_renew, lease_release, lease_revoke and lease_handover.
 *
 * Each runs as SECURITY DEFINER (ordinary roles cannot write the leases
 * table) with a pinned search_path.  Renew keeps the epoch and holder, so
 * it needs only FOR NO KEY UPDATE, which no fenced writer blocks: a leader
 * keeps its lease through fenced transactions of any length.  Release,
 * revoke and handover end a grant, so they take FOR UPDATE, which waits
 * (within pg_lease.takeover_timeout) for the fenced transactions of the
 * epoch they end.
 *
 * Twins (the same rules, kept equal by tests/contract/cases.json):
 * sql/sql_edition/50_grants.sql; lease_store::renew, release, revoke and
 * handover in client/src/testing/lease_store.cpp.
 *
 *-------------------------------------------------------------------------
 */
#include "lease.h"
#include "fence.h"

#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "validate.h"

/*
 * Extend the lease if holder still has this epoch and it has not expired;
 * return the new expiry, or NULL when the lease is lost.
 */
PG_FUNCTION_INFO_V1(lease_renew);
Datum
lease_renew(PG_FUNCTION_ARGS)
{
	text	   *name = LeaseLabelArg(fcinfo, 0, "lease name");
	text	   *holder = LeaseLabelArg(fcinfo, 1, "holder");
	int64		epoch = LeaseEpochArg(fcinfo, 2);
	int64		ttl_usec = PG_ARGISNULL(3) ? 0 : LeaseTtlArg(fcinfo, 3);
	LeaseRow	row;
	bool		renewed = false;
	TimestampTz expires_at = 0;

	LeaseBegin(fcinfo);
	/* expiry as of now, with the row locked: never revive a lease */
	if (LeaseLockGrantOfRecord(name, holder, epoch, LEASE_LOCK_LOOK, &row) &&
		LeaseValidAt(&row, GetCurrentTimestamp()))
	{
		expires_at = LeaseExtendLocked(name, &row, ttl_usec > 0 ? ttl_usec : row.ttl_usec);
		renewed = true;
	}
	LeaseEnd(name);

	if (!renewed)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(expires_at);
}

/* Free the lease at once, if (holder, epoch) is its grant of record. */
PG_FUNCTION_INFO_V1(lease_release);
Datum
lease_release(PG_FUNCTION_ARGS)
{
	text	   *name = LeaseLabelArg(fcinfo, 0, "lease name");
	text	   *holder = LeaseLabelArg(fcinfo, 1, "holder");
	int64		epoch = LeaseEpochArg(fcinfo, 2);
	LeaseRow	row;
	bool		released = false;

	LeaseBeginRelease(fcinfo);
	if (LeaseLockGrantOfRecord(name, holder, epoch, LEASE_LOCK_CHANGE, &row))
	{
		LeaseLockForChange(name, &row);
		LeaseFreeLocked(name, &row, "released");
		released = true;
	}
	LeaseEnd(name);
	PG_RETURN_BOOL(released);
}

/* Free the lease at once, whoever holds it (administrators only). */
PG_FUNCTION_INFO_V1(lease_revoke);
Datum
lease_revoke(PG_FUNCTION_ARGS)
{
	text	   *name = LeaseLabelArg(fcinfo, 0, "lease name");
	LeaseRow	row;
	bool		revoked = false;

	LeaseBegin(fcinfo);
	if (LeaseFindForLock(name, &row) && row.holder != NULL &&
		LeaseLockFound(&row, LEASE_LOCK_CHANGE) && row.holder != NULL)
	{
		LeaseLockForChange(name, &row);
		LeaseFreeLocked(name, &row, "revoked");
		revoked = true;
	}
	LeaseEnd(name);
	PG_RETURN_BOOL(revoked);
}

/*
 * Hand the lease to successor with a new epoch, if (holder, epoch) is its
 * unexpired grant of record; the new epoch, or NULL.  The old epoch's
 * writes are refused from this transaction's commit on.
 */
PG_FUNCTION_INFO_V1(lease_handover);
Datum
lease_handover(PG_FUNCTION_ARGS)
{
	text	   *name = LeaseLabelArg(fcinfo, 0, "lease name");
	text	   *holder = LeaseLabelArg(fcinfo, 1, "holder");
	int64		epoch = LeaseEpochArg(fcinfo, 2);
	text	   *successor = LeaseLabelArg(fcinfo, 3, "successor");
	LeaseRow	row;
	int64		new_epoch = 0;
	TimestampTz expires_at;

	LeaseBegin(fcinfo);
	if (LeaseLockGrantOfRecord(name, holder, epoch, LEASE_LOCK_CHANGE, &row) &&
		LeaseValidAt(&row, GetCurrentTimestamp()))
	{
		LeaseLockForChange(name, &row);
		new_epoch = LeaseGrantNewEpoch(name, &row, successor, row.ttl_usec,
									   row.lock_delay_usec, "handover", &expires_at);
	}
	LeaseEnd(name);

	if (new_epoch == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(new_epoch);
}

/*
 * For lease_prune, before it deletes the row of a long-expired lease: wait
 * for the fenced transactions of its grant, then end them, as a change of
 * holder does, so that none of them commits after the row is gone.  The
 * caller has locked the row.
 */
PG_FUNCTION_INFO_V1(lease_end_grant_writers);
Datum
lease_end_grant_writers(PG_FUNCTION_ARGS)
{
	text	   *name = LeaseLabelArg(fcinfo, 0, "lease name");
	text	   *holder = PG_ARGISNULL(1) ? NULL : PG_GETARG_TEXT_PP(1);
	int64		epoch = LeaseEpochArg(fcinfo, 2);
	LeaseEnding ending = {name, holder, epoch, 0};
	LeaseTakeover takeover;

	LeaseRequireArg(fcinfo, 3, "expires_at");
	ending.expires_at = PG_GETARG_TIMESTAMPTZ(3);
	LeaseBegin(fcinfo);
	LeaseTakeoverBegin(&takeover, &ending);
	LeaseFenceLockExclusive(&takeover);
	LeaseTakeoverEnd(&takeover);
	LeaseFenceGrantChanged(name);	/* the caller deletes the row */
	PG_RETURN_VOID();
}
