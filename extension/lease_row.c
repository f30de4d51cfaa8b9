/*-------------------------------------------------------------------------
 *
 * lease_row.c
 *	  Reading, locking and changing a lease row, for the lease functions.
 *
 * Every lease function locks the row before it decides anything, and reads
 * the clock after the lock is granted.  Two strengths are used: FOR NO KEY
 * UPDATE to look and to extend (renew, the holder acquiring again), which
 * fenced writers' FOR KEY SHARE does not block, and FOR UPDATE for any
 * change of holder or epoch, which waits for those writers (takeover.c
 * bounds that wait).  Functions that write raise synchronous_commit for
 * their transaction, so nothing they grant is acknowledged before it is
 * durable.
 *
 *-------------------------------------------------------------------------
 */
#include "lease_row.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "validate.h"

static void
LeaseRequireDurableCommit(void)
{
	if (synchronous_commit < SYNCHRONOUS_COMMIT_REMOTE_WRITE)
		(void) set_config_option("synchronous_commit", "on",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
}

/* Start of every function: durable commit, catalog cache, SPI. */
void
LeaseBegin(FunctionCallInfo fcinfo)
{
	LeaseRequireDurableCommit();
	LeaseCatalogEnsure(fcinfo->flinfo->fn_oid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_lease: SPI_connect failed");
}

void
LeaseEnd(text *name)
{
	SPI_finish();
	LeaseForgetRow(text_to_cstring(name));
}

void
LeaseExecute(LeasePlan plan, Datum *values, const char *nulls, int expected)
{
	int			rc = SPI_execute_plan(LeaseGetPlan(plan), values, nulls, false, 0);

	if (rc != expected)
		elog(ERROR, "pg_lease: statement %d failed: %s", (int) plan,
			 SPI_result_code_string(rc));
}

/* Read the row of lease name without locking it; false when there is none. */
bool
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
	row->lock_delay_usec = DatumGetIntervalP(SPI_getbinval(tuple, desc, 6, &isnull))->time;
	ItemPointerSetInvalid(&row->tid);
	return true;
}

static void
LeaseRowFromSlot(TupleTableSlot *slot, LeaseRow *row)
{
	Datum	   *values = slot->tts_values;

	/* the holder outlives SPI_finish: copy it to the caller's context */
	row->holder = slot->tts_isnull[LEASE_COL_HOLDER] ? NULL :
		DatumGetTextPP(SPI_datumTransfer(values[LEASE_COL_HOLDER], false, -1));
	row->epoch = DatumGetInt64(values[LEASE_COL_EPOCH]);
	row->expires_at = DatumGetTimestampTz(values[LEASE_COL_EXPIRES_AT]);
	row->ttl_usec = DatumGetIntervalP(values[LEASE_COL_TTL])->time;
	namestrcpy(&row->owner_role, NameStr(*DatumGetName(values[LEASE_COL_OWNER_ROLE])));
	row->lock_delay_usec = LeaseSchema11() ?
		DatumGetIntervalP(values[LEASE_COL_LOCK_DELAY])->time : 0;
	row->tid = slot->tts_tid;
}

/*
 * Lock the row of lease name FOR NO KEY UPDATE (newest version under READ
 * COMMITTED); false when there is none.  Enough to look and to extend, and
 * never blocked by fenced writers.  A single conditional UPDATE would not
 * do: when it waits behind another lock and the row is not updated
 * meanwhile, PostgreSQL does not re-evaluate its WHERE clause, so it would
 * judge expiry as of before the wait.
 */
bool
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
		LeaseRowFromSlot(slot, row);
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
	return found;
}

/*
 * Upgrade the lock LeaseLockForWrite took to FOR UPDATE, before a change of
 * holder or epoch: waits for the fenced transactions of the grant that
 * ends, within pg_lease.takeover_timeout (takeover.c).
 */
void
LeaseLockForChange(text *name, LeaseRow *row)
{
	Relation	rel = table_open(LeaseTableRelid(), RowShareLock);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	LeaseEnding ending = {name, row->holder, row->epoch, row->expires_at};

	LeaseLockForHolderChange(rel, &row->tid, slot, &ending);
	LeaseRowFromSlot(slot, row);
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
}

bool
LeaseTextEqual(text *a, text *b)
{
	return a != NULL && b != NULL &&
		VARSIZE_ANY_EXHDR(a) == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), VARSIZE_ANY_EXHDR(a)) == 0;
}

bool
LeaseValidAt(const LeaseRow *row, TimestampTz now)
{
	return row->holder != NULL && now < row->expires_at;
}

/* Renew, release and handover belong to the role that was granted the lease. */
void
LeaseCheckRole(text *name, const LeaseRow *row)
{
	if (strcmp(NameStr(row->owner_role), NameStr(*DatumGetName(LeaseCallerRoleName()))) != 0 &&
		!LeaseCallerIsSuperuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("lease \"%s\" was granted to role \"%s\"",
						text_to_cstring(name), NameStr(row->owner_role)),
				 errdetail("Only the role that acquired a lease, or a superuser, may renew, release or hand it over.")));
}

/*
 * Lock the row and tell whether (holder, epoch) is its grant of record,
 * expired or not; a grant of record made by another role is refused.
 */
bool
LeaseLockGrantOfRecord(text *name, text *holder, int64 epoch, LeaseRow *row)
{
	if (!LeaseLockForWrite(name, row) ||
		!LeaseTextEqual(row->holder, holder) || row->epoch != epoch)
		return false;
	LeaseCheckRole(name, row);
	return true;
}

/* Extend a held lease from now; the row is locked.  Returns the new expiry. */
TimestampTz
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
	LeaseCountText(name, LEASE_COUNT_RENEWAL);
	return expires_at;
}

/*
 * Free a held lease whose row is locked FOR UPDATE, and record why.  A
 * release skips the lock delay; a revoke keeps it.
 */
void
LeaseFreeLocked(text *name, const LeaseRow *row, const char *event)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		released = strcmp(event, "released") == 0;
	Datum		values[3];

	values[0] = PointerGetDatum(name);
	values[1] = TimestampTzGetDatum(now);
	values[2] = IntervalPGetDatum(LeaseTtlInterval(released ? 0 : row->lock_delay_usec));
	LeaseExecute(LEASE_PLAN_FREE, values, NULL, SPI_OK_UPDATE);
	LeaseRecordEvent(event, name, row->holder, row->epoch, Min(now, row->expires_at), 0);
}

/*
 * Grant the lease, whose row is locked FOR UPDATE, to holder with a new
 * epoch from now; record event.  Returns the epoch and sets *expires_at.
 */
int64
LeaseGrantNewEpoch(text *name, const LeaseRow *row, text *holder, int64 ttl_usec,
				   int64 lock_delay_usec, const char *event, TimestampTz *expires_at)
{
	int64		epoch = LeaseNextEpoch();
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[9];

	*expires_at = now + ttl_usec;
	values[0] = PointerGetDatum(name);
	values[1] = PointerGetDatum(holder);
	values[2] = Int64GetDatum(epoch);
	values[3] = TimestampTzGetDatum(now);
	values[4] = TimestampTzGetDatum(*expires_at);
	values[5] = IntervalPGetDatum(LeaseTtlInterval(ttl_usec));
	values[6] = Int64GetDatum(LeaseTextEqual(row->holder, holder) ? 0 : 1);
	values[7] = LeaseCallerRoleName();
	values[8] = IntervalPGetDatum(LeaseTtlInterval(lock_delay_usec));
	LeaseExecute(LEASE_PLAN_GRANT, values, NULL, SPI_OK_UPDATE);
	LeaseRecordEvent(event, name, holder, epoch, *expires_at, 0);
	return epoch;
}
