/*-------------------------------------------------------------------------
 *
 * lease.c
 *	  lease_acquire, lease_renew, lease_release and lease_revoke.
 *
 * Each runs as SECURITY DEFINER (ordinary roles cannot write the leases
 * table) with a pinned search_path.  Grants lock the lease row before they
 * decide anything and draw a new epoch only while holding that lock, so
 * epochs of one lease increase in grant order.  Expiry is judged by the
 * server's clock at the moment the lock is held.  Every function that writes
 * raises synchronous_commit for its transaction, so nothing it grants is
 * acknowledged before it is durable.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "validate.h"

/* A lease row as LeaseReadRow or LeaseLockForWrite found it. */
typedef struct LeaseRow
{
	text	   *holder;			/* NULL when free */
	int64		epoch;
	TimestampTz expires_at;
	NameData	owner_role;
	int64		ttl_usec;
} LeaseRow;

/* How often acquire looks again after losing a race to create the row. */
#define LEASE_ACQUIRE_ATTEMPTS	5

static void
LeaseRequireDurableCommit(void)
{
	if (synchronous_commit < SYNCHRONOUS_COMMIT_REMOTE_WRITE)
		(void) set_config_option("synchronous_commit", "on",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
}

/* Start of every function: durable commit, catalog cache, SPI. */
static void
LeaseBegin(FunctionCallInfo fcinfo)
{
	LeaseRequireDurableCommit();
	LeaseCatalogEnsure(fcinfo->flinfo->fn_oid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_lease: SPI_connect failed");
}

static void
LeaseEnd(text *name)
{
	SPI_finish();
	LeaseForgetRow(text_to_cstring(name));
}

static void
LeaseExecute(LeasePlan plan, Datum *values, const char *nulls, int expected)
{
	int			rc = SPI_execute_plan(LeaseGetPlan(plan), values, nulls, false, 0);

	if (rc != expected)
		elog(ERROR, "pg_lease: statement %d failed: %s", (int) plan,
			 SPI_result_code_string(rc));
}

/* Read the row of lease name without locking it; false when there is none. */
static bool
LeaseReadRow(text *name, LeaseRow *row)
{
	Datum		values[1] = {PointerGetDatum(name)};
	HeapTuple	tuple;
	TupleDesc	desc;
	Datum		holder;
	bool		isnull;

	LeaseExecute(LEASE_PLAN_READ, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;

	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	holder = SPI_getbinval(tuple, desc, 1, &isnull);
	row->holder = isnull ? NULL : DatumGetTextPP(SPI_datumTransfer(holder, false, -1));
	row->epoch = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
	row->expires_at = DatumGetTimestampTz(SPI_getbinval(tuple, desc, 3, &isnull));
	namestrcpy(&row->owner_role, NameStr(*DatumGetName(SPI_getbinval(tuple, desc, 4, &isnull))));
	row->ttl_usec = DatumGetIntervalP(SPI_getbinval(tuple, desc, 5, &isnull))->time;
	return true;
}

/*
 * Lock the row of lease name as an UPDATE would (FOR NO KEY UPDATE, newest
 * version under READ COMMITTED); false when there is none.  Every decision
 * of a lease function is taken on the locked row with the clock read after
 * the lock was granted.  A single conditional UPDATE would not do: when it
 * waits behind a share lock (a fenced write in flight) and the row is not
 * updated meanwhile, PostgreSQL does not re-evaluate its WHERE clause, so
 * it would judge expiry as of before the wait.
 */
static bool
LeaseLockForWrite(text *name, LeaseRow *row)
{
	Relation	rel;
	TupleTableSlot *slot;
	bool		found;

	CommandCounterIncrement();	/* see this call's own earlier changes */
	rel = table_open(LeaseTableRelid(), RowShareLock);
	slot = table_slot_create(rel, NULL);
	found = LeaseLockRow(name, LockTupleNoKeyExclusive, GetTransactionSnapshot(), rel, slot);
	if (found)
	{
		Datum	   *values = slot->tts_values;

		/* the holder outlives SPI_finish: copy it to the caller's context */
		row->holder = slot->tts_isnull[LEASE_COL_HOLDER] ? NULL :
			DatumGetTextPP(SPI_datumTransfer(values[LEASE_COL_HOLDER], false, -1));
		row->epoch = DatumGetInt64(values[LEASE_COL_EPOCH]);
		row->expires_at = DatumGetTimestampTz(values[LEASE_COL_EXPIRES_AT]);
		row->ttl_usec = DatumGetIntervalP(values[LEASE_COL_TTL])->time;
		namestrcpy(&row->owner_role, NameStr(*DatumGetName(values[LEASE_COL_OWNER_ROLE])));
	}
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
	return found;
}

static bool
LeaseTextEqual(text *a, text *b)
{
	return a != NULL && b != NULL &&
		VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

static bool
LeaseValidAt(const LeaseRow *row, TimestampTz now)
{
	return row->holder != NULL && now < row->expires_at;
}

/* Renew and release belong to the role that was granted the lease. */
static void
LeaseCheckRole(text *name, const LeaseRow *row)
{
	if (strcmp(NameStr(row->owner_role), NameStr(*DatumGetName(LeaseCallerRoleName()))) != 0 &&
		!LeaseCallerIsSuperuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("lease \"%s\" was granted to role \"%s\"",
						text_to_cstring(name), NameStr(row->owner_role)),
				 errdetail("Only the role that acquired a lease, or a superuser, may renew or release it.")));
}

/* Extend a held lease from now; the row is locked.  Returns the new expiry. */
static TimestampTz
LeaseExtendLocked(text *name, int64 ttl_usec)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz expires_at = now + ttl_usec;
	Datum		values[4];

	values[0] = PointerGetDatum(name);
	values[1] = TimestampTzGetDatum(now);
	values[2] = TimestampTzGetDatum(expires_at);
	values[3] = IntervalPGetDatum(LeaseTtlInterval(ttl_usec));
	LeaseExecute(LEASE_PLAN_EXTEND, values, NULL, SPI_OK_UPDATE);
	return expires_at;
}

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
	LeaseExecute(LEASE_PLAN_COUNT_ROLE, values, NULL, SPI_OK_SELECT);
	count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
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
 * Lock the row and tell whether (holder, epoch) is its grant of record,
 * expired or not; a grant of record made by another role is refused.
 */
static bool
LeaseLockGrantOfRecord(text *name, text *holder, int64 epoch, LeaseRow *row)
{
	if (!LeaseLockForWrite(name, row) ||
		!LeaseTextEqual(row->holder, holder) || row->epoch != epoch)
		return false;
	LeaseCheckRole(name, row);
	return true;
}

/* Free a held lease whose row is locked, and record why. */
static void
LeaseFreeLocked(text *name, const LeaseRow *row, const char *event)
{
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[2] = {PointerGetDatum(name), TimestampTzGetDatum(now)};

	LeaseExecute(LEASE_PLAN_FREE, values, NULL, SPI_OK_UPDATE);
	LeaseRecordEvent(event, name, row->holder, row->epoch, Min(now, row->expires_at));
}

typedef struct LeaseGrant
{
	bool		acquired;
	int64		epoch;
	text	   *holder;
	TimestampTz expires_at;
} LeaseGrant;

static LeaseGrant
LeaseRefused(const LeaseRow *row)
{
	LeaseGrant	grant = {false, row->epoch, row->holder, row->expires_at};

	return grant;
}

/*
 * The grant itself, with the row (if any) locked.  Returns false when the
 * row vanished between looking and inserting, so the caller looks again.
 */
static bool
LeaseGrantLocked(text *name, text *holder, int64 ttl_usec, LeaseGrant *grant)
{
	LeaseRow	row;
	TimestampTz now;
	TimestampTz expires_at;
	Interval   *ttl = LeaseTtlInterval(ttl_usec);
	int64		epoch;


	if (LeaseLockForWrite(name, &row))
	{
		now = GetCurrentTimestamp();
		expires_at = now + ttl_usec;

		/* 1. The caller holds it already: extend, same epoch. */
		if (LeaseValidAt(&row, now) && LeaseTextEqual(row.holder, holder))
		{
			LeaseCheckRole(name, &row);
			expires_at = LeaseExtendLocked(name, ttl_usec);
			*grant = (LeaseGrant) {true, row.epoch, holder, expires_at};
			return true;
		}

		/* 2. Someone else holds it: no change, say who and until when. */
		if (LeaseValidAt(&row, now))
		{
			*grant = LeaseRefused(&row);
			return true;
		}

		/* 3. Free or expired: a new grant with a new epoch. */
		{
			Datum		values[8];

			epoch = LeaseNextEpoch();
			values[0] = PointerGetDatum(name);
			values[1] = PointerGetDatum(holder);
			values[2] = Int64GetDatum(epoch);
			values[3] = TimestampTzGetDatum(now);
			values[4] = TimestampTzGetDatum(expires_at);
			values[5] = IntervalPGetDatum(ttl);
			values[6] = Int64GetDatum(LeaseTextEqual(row.holder, holder) ? 0 : 1);
			values[7] = LeaseCallerRoleName();
			LeaseExecute(LEASE_PLAN_GRANT, values, NULL, SPI_OK_UPDATE);
			LeaseRecordEvent(row.holder ? "takeover" : "acquired", name, holder,
							 epoch, expires_at);
			*grant = (LeaseGrant) {true, epoch, holder, expires_at};
			return true;
		}
	}

	/* 4. No row: the first grant of this name (or the first after a DELETE). */
	{
		Datum		values[7];

		LeaseCheckQuota();

		epoch = LeaseNextEpoch();
		now = GetCurrentTimestamp();
		expires_at = now + ttl_usec;
		values[0] = PointerGetDatum(name);
		values[1] = PointerGetDatum(holder);
		values[2] = Int64GetDatum(epoch);
		values[3] = TimestampTzGetDatum(now);
		values[4] = TimestampTzGetDatum(expires_at);
		values[5] = IntervalPGetDatum(ttl);
		values[6] = LeaseCallerRoleName();
		LeaseExecute(LEASE_PLAN_INSERT, values, NULL, SPI_OK_INSERT);
		if (SPI_processed == 0)
			return false;		/* a concurrent caller created it first */
		LeaseRecordEvent("acquired", name, holder, epoch, expires_at);
		*grant = (LeaseGrant) {true, epoch, holder, expires_at};
		return true;
	}
}

static LeaseGrant
LeaseAcquire(text *name, text *holder, int64 ttl_usec)
{
	LeaseGrant	grant;
	LeaseRow	row;
	int			attempt;

	/*
	 * A lease held by someone else is refused without locking its row, so
	 * followers that poll do not queue behind the holder's renewals.  Under
	 * REPEATABLE READ or SERIALIZABLE a snapshot read could be out of date,
	 * so there every decision is made on the locked row (which raises a
	 * serialization failure if the row changed after the snapshot).
	 */
	if (!IsolationUsesXactSnapshot() &&
		LeaseReadRow(name, &row) &&
		LeaseValidAt(&row, GetCurrentTimestamp()) &&
		!LeaseTextEqual(row.holder, holder))
		return LeaseRefused(&row);

	for (attempt = 0; attempt < LEASE_ACQUIRE_ATTEMPTS; attempt++)
	{
		if (LeaseGrantLocked(name, holder, ttl_usec, &grant))
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
 * has it already; otherwise report who holds it and until when.
 */
PG_FUNCTION_INFO_V1(lease_acquire);
Datum
lease_acquire(PG_FUNCTION_ARGS)
{
	text	   *name = LeaseLabelArg(fcinfo, 0, "lease name");
	text	   *holder = LeaseLabelArg(fcinfo, 1, "holder");
	int64		ttl_usec = LeaseTtlArg(fcinfo, 2);
	TupleDesc	desc;
	LeaseGrant	grant;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "pg_lease: lease_acquire must return a composite type");
	desc = BlessTupleDesc(desc);

	LeaseBegin(fcinfo);
	grant = LeaseAcquire(name, holder, ttl_usec);
	LeaseEnd(name);

	values[0] = BoolGetDatum(grant.acquired);
	values[1] = Int64GetDatum(grant.epoch);
	values[2] = PointerGetDatum(grant.holder);
	values[3] = TimestampTzGetDatum(grant.expires_at);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

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
	if (LeaseLockGrantOfRecord(name, holder, epoch, &row) &&
		LeaseValidAt(&row, GetCurrentTimestamp()))
	{
		expires_at = LeaseExtendLocked(name, ttl_usec > 0 ? ttl_usec : row.ttl_usec);
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

	LeaseBegin(fcinfo);
	if (LeaseLockGrantOfRecord(name, holder, epoch, &row))
	{
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
	if (LeaseLockForWrite(name, &row) && row.holder != NULL)
	{
		LeaseFreeLocked(name, &row, "revoked");
		revoked = true;
	}
	LeaseEnd(name);
	PG_RETURN_BOOL(revoked);
}
