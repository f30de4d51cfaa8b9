/*-------------------------------------------------------------------------
 *
 * lease_acquire.c
 *	  lease_acquire: grant a free or expired lease, or say who holds it.
 *
 * Runs as SECURITY DEFINER (ordinary roles cannot write the leases table)
 * with a pinned search_path.  A lease that someone else validly holds is
 * refused from the unlocked row, at once.  Otherwise the decision is taken
 * on the locked row: FOR NO KEY UPDATE, which fenced writers never block,
 * to extend; FOR UPDATE for a grant (a change of holder), which waits,
 * within pg_lease.takeover_timeout, for the fenced transactions of the
 * grant it ends.  New epochs are drawn only under that lock, so epochs of
 * one lease increase in grant order.
 *
 * Twins (the same rules, kept equal by tests/contract/cases.json):
 * lease_acquire and lease_sql_refusal in sql/sql_edition/50_grants.sql;
 * lease_store::acquire and available_at in client/src/testing/.
 *
 *-------------------------------------------------------------------------
 */
#include "lease.h"
#include "fence.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "validate.h"

/* How often acquire looks again after losing a race to create the row. */
#define LEASE_ACQUIRE_ATTEMPTS	5

/*
 * A role may not create lease names without bound: each name is a row, and
 * each grant an event.  Only new names count, so the check costs nothing on
 * the usual paths.  Concurrent first grants by one role may overshoot the
 * limit by the number of callers.
 */
static void
LeaseCheckQuota(void)
{
	Datum		values[1];
	bool		isnull;
	int64		count;

	if (lease_max_leases_per_role == 0 || LeaseCallerIsSuperuser())
		return;

	values[0] = LeaseCallerRoleName();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_lease: SPI_connect failed");
	if (SPI_execute_plan(LeaseGetPlan(LEASE_PLAN_COUNT_ROLE), values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "pg_lease: counting the leases of a role failed");
	count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	if (count >= lease_max_leases_per_role)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("role \"%s\" may not create more than %d leases",
						NameStr(*DatumGetName(values[0])), lease_max_leases_per_role),
				 errdetail("The latest grant of " INT64_FORMAT " leases was made by this role.", count),
				 errhint("Reuse lease names, ask an administrator to run lease_prune(), "
						 "or raise pg_lease.max_leases_per_role.")));
}

/*
 * When holder may be granted a lease that nobody validly holds.  A grant
 * lost without release (expired, revoked, its writers evicted) that carried
 * a lock delay keeps every other holder out until the delay has passed
 * since it was lost; release sets the delay to 0.
 */
static TimestampTz
LeaseAvailableAt(const LeaseRow *row, text *holder)
{
	if (row->lock_delay_usec == 0 || LeaseTextEqual(row->holder, holder))
		return row->expires_at;
	return row->expires_at + row->lock_delay_usec;
}

/* Not granted: say who holds it (or held it) and until when. */
static LeaseGrant
LeaseRefused(const LeaseRow *row, TimestampTz until)
{
	LeaseGrant	grant = {false, row->epoch, row->holder, until};

	return grant;
}

/*
 * The decision on a row that exists, without waiting for anyone's fenced
 * writes: true when it is taken (grant filled in), false when the lease is
 * free for holder to be granted.
 */
static bool
LeaseDecideWithoutGrant(const LeaseRow *row, text *holder, TimestampTz now,
						LeaseGrant *grant)
{
	TimestampTz available_at;

	if (LeaseValidAt(row, now))
	{
		*grant = LeaseRefused(row, row->expires_at);
		return true;
	}
	available_at = LeaseAvailableAt(row, holder);
	if (now < available_at)
	{
		*grant = LeaseRefused(row, available_at);
		return true;
	}
	return false;
}

/*
 * The grant itself, with the row (if any) locked.  Returns false when the
 * row vanished between looking and inserting, so the caller looks again.
 */
static bool
LeaseGrantLocked(text *name, text *holder, int64 ttl_usec, int64 lock_delay_usec,
				 LeaseGrant *grant)
{
	LeaseRow	row;
	TimestampTz now;
	TimestampTz expires_at;
	int64		epoch;

	if (LeaseFindForLock(name, &row))
	{
		bool		held_by_caller;

		/*
		 * Someone else validly holds it, or its lock delay runs: refused
		 * from the unlocked row, so followers that poll do not queue behind
		 * the holder's renewals, and hold no lock on it.  Under REPEATABLE
		 * READ or SERIALIZABLE that row is the transaction's snapshot, which
		 * a refusal may report (it changes nothing).
		 */
		now = GetCurrentTimestamp();
		held_by_caller = LeaseValidAt(&row, now) && LeaseTextEqual(row.holder, holder);
		if (!held_by_caller && LeaseDecideWithoutGrant(&row, holder, now, grant))
			return true;
		if (held_by_caller)
			LeaseCheckRole(name, &row);
		if (!LeaseLockFound(&row, held_by_caller ? LEASE_LOCK_LOOK : LEASE_LOCK_CHANGE))
			return false;		/* deleted meanwhile: look again */
		now = GetCurrentTimestamp();

		/* 1. The caller holds it already: extend, same epoch. */
		if (LeaseValidAt(&row, now) && LeaseTextEqual(row.holder, holder))
		{
			LeaseCheckRole(name, &row);
			expires_at = LeaseExtendLocked(name, &row, ttl_usec);
			*grant = (LeaseGrant) {true, row.epoch, holder, expires_at};
			return true;
		}

		/* 2. Someone else holds it, or its lock delay runs: no change. */
		if (LeaseDecideWithoutGrant(&row, holder, now, grant))
			return true;

		/*
		 * 3. Free or expired: wait (bounded) for the fenced transactions of
		 * the old grant, then a new grant with a new epoch.
		 */
		LeaseLockForChange(name, &row);
		epoch = LeaseGrantNewEpoch(name, &row, holder, ttl_usec, lock_delay_usec,
								   row.holder ? "takeover" : "acquired", &expires_at);
		*grant = (LeaseGrant) {true, epoch, holder, expires_at};
		return true;
	}

	/* 4. No row: the first grant of this name (or the first after a DELETE). */
	{
		Datum		values[8];

		LeaseCheckQuota();
		LeaseFenceGrantChanged(name);	/* a row deleted by hand may be kept */

		epoch = LeaseNextEpoch();
		now = GetCurrentTimestamp();
		expires_at = now + ttl_usec;
		values[0] = PointerGetDatum(name);
		values[1] = PointerGetDatum(holder);
		values[2] = Int64GetDatum(epoch);
		values[3] = TimestampTzGetDatum(now);
		values[4] = TimestampTzGetDatum(expires_at);
		values[5] = IntervalPGetDatum(LeaseTtlInterval(ttl_usec));
		values[6] = LeaseCallerRoleName();
		values[7] = IntervalPGetDatum(LeaseTtlInterval(lock_delay_usec));
		if (LeaseExecute(LEASE_PLAN_INSERT, values, NULL, SPI_OK_INSERT) == 0)
			return false;		/* a concurrent caller created it first */
		LeaseRecordEvent("acquired", name, holder, epoch, expires_at, 0);
		*grant = (LeaseGrant) {true, epoch, holder, expires_at};
		return true;
	}
}

static LeaseGrant
LeaseAcquire(text *name, text *holder, int64 ttl_usec, int64 lock_delay_usec)
{
	LeaseGrant	grant;
	int			attempt;

	for (attempt = 0; attempt < LEASE_ACQUIRE_ATTEMPTS; attempt++)
	{
		if (LeaseGrantLocked(name, holder, ttl_usec, lock_delay_usec, &grant))
			return grant;
	}
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not acquire lease \"%s\" because of concurrent changes",
					text_to_cstring(name)),
			 errhint("Try again.")));
	pg_unreachable();
}

/*
 * Grant the lease to holder if it is free or expired; extend it if holder
 * has it already; otherwise report who holds it and until when.  The
 * four-argument form records a lock delay with a new grant.
 */
PG_FUNCTION_INFO_V1(lease_acquire);
Datum
lease_acquire(PG_FUNCTION_ARGS)
{
	text	   *name = LeaseLabelArg(fcinfo, 0, "lease name");
	text	   *holder = LeaseLabelArg(fcinfo, 1, "holder");
	int64		ttl_usec = LeaseTtlArg(fcinfo, 2);
	int64		lock_delay_usec = PG_NARGS() > 3 ? LeaseLockDelayArg(fcinfo, 3) : 0;
	TupleDesc	desc;
	LeaseGrant	grant;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "pg_lease: lease_acquire must return a composite type");
	desc = BlessTupleDesc(desc);

	LeaseBegin(fcinfo);
	grant = LeaseAcquire(name, holder, ttl_usec, lock_delay_usec);
	LeaseEnd(name);

	values[0] = BoolGetDatum(grant.acquired);
	values[1] = Int64GetDatum(grant.epoch);
	values[2] = PointerGetDatum(grant.holder);
	nulls[2] = grant.holder == NULL;
	values[3] = TimestampTzGetDatum(grant.expires_at);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
