/*-------------------------------------------------------------------------
 *
 * lease_row.c
 *	  Reading, locking and changing a lease row, for the lease functions.
 *
 * Every lease function finds the row unlocked first, and refuses from it
 * what needs no lock (a lease validly held by someone else, a grant that
 * is not the caller's): nobody holds a lock on a lease it has no claim to.
 * Anything else is decided on the locked row, with the clock read after
 * the lock is granted.  Two strengths are used: FOR NO KEY UPDATE to look
 * and to extend (renew, the holder acquiring again), and FOR UPDATE for any
 * change of holder or epoch, taken at once when nobody is in the way, else
 * after the weaker one.  A change of holder also locks the grant it ends
 * exclusively in the lock manager, which waits for that grant's fenced
 * writers (fence_lock.c; lease_takeover.c for writers that still lock the row,
 * as 1.2 did).  Functions that write raise synchronous_commit for their
 * transaction, so nothing they grant is acknowledged before it is durable
 * (but a release: LeaseBeginRelease).
 *
 * Twins (the same rules, kept equal by tests/contract/cases.json through the
 * functions that call these): lease_sql_grant_of_record, lease_sql_check_role,
 * lease_sql_grant_new_epoch and lease_sql_free in
 * sql/sql_edition/50_grants.sql, lease_sql_durable in 30_epochs.sql;
 * store_state::valid and store_state::grant in client/src/testing/.
 *
 *-------------------------------------------------------------------------
 */
#include "lease.h"
#include "fence.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "common/int.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "validate.h"

void
LeaseRequireDurableCommit(void)
{
	if (synchronous_commit < SYNCHRONOUS_COMMIT_REMOTE_WRITE)
		(void) set_config_option("synchronous_commit", "on",
								 PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
}

/*
 * Start of every function: durable commit, catalog cache.  SPI is
 * connected only around the statements that still go through it
 * (LeaseExecute), so a call that writes directly never pays for it.
 */
void
LeaseBegin(FunctionCallInfo fcinfo)
{
	LeaseRequireDurableCommit();
	LeaseCatalogEnsure(fcinfo->flinfo->fn_oid);
}

/*
 * As LeaseBegin, for a release: its commit is as durable as the caller's
 * synchronous_commit.  A lost release only keeps the lease until its ttl
 * (never two holders), and the next grant, a durable commit, makes it
 * durable first (WAL is flushed in order), so a client may release with
 * synchronous_commit off: one durable commit on a handover's path.
 */
void
LeaseBeginRelease(FunctionCallInfo fcinfo)
{
	LeaseCatalogEnsure(fcinfo->flinfo->fn_oid);
}

void
LeaseEnd(text *name)
{
	LeaseFenceForgetRowText(name);
}

/*
 * Copy what the lease functions look at out of a lease row in slot, into
 * the current memory context; with_tuple, also the version itself, for
 * LeaseUpdateDirect.
 */
static void
LeaseRowFromSlot(TupleTableSlot *slot, LeaseRow *row, bool with_tuple)
{
	Datum	   *values = slot->tts_values;

	slot_getallattrs(slot);
	row->holder = slot->tts_isnull[LEASE_COL_HOLDER] ? NULL :
		DatumGetTextPP(datumCopy(values[LEASE_COL_HOLDER], false, -1));
	row->epoch = DatumGetInt64(values[LEASE_COL_EPOCH]);
	row->expires_at = DatumGetTimestampTz(values[LEASE_COL_EXPIRES_AT]);
	row->ttl_usec = DatumGetIntervalP(values[LEASE_COL_TTL])->time;
	row->transitions = DatumGetInt64(values[LEASE_COL_TRANSITIONS]);
	namestrcpy(&row->owner_role, NameStr(*DatumGetName(values[LEASE_COL_OWNER_ROLE])));
	row->lock_delay_usec = LeaseSchema11() ?
		DatumGetIntervalP(values[LEASE_COL_LOCK_DELAY])->time : 0;
	row->tid = slot->tts_tid;
	row->tuple = with_tuple ? ExecCopySlotHeapTuple(slot) : NULL;
}

/*
 * Find the version of lease name's row that a new snapshot sees, without
 * locking it; false when there is none.  row->tid names that version, for
 * LeaseLockFound.  Callers refuse from this version whatever needs no
 * lock (a lease someone else validly holds, a grant that is not the
 * caller's), so a role cannot hold a lock on a lease it has no claim to.
 */
bool
LeaseFindForLock(text *name, LeaseRow *row)
{
	Relation	rel;
	TupleTableSlot *slot;
	bool		found;

	CommandCounterIncrement();	/* see this call's own earlier changes */
	rel = table_open(LeaseTableRelid(), RowShareLock);
	slot = LeaseRowSlot(rel);
	found = LeaseFindRow(name, GetTransactionSnapshot(), rel, slot);
	if (found)
		LeaseRowFromSlot(slot, row, false);
	LeaseRowSlotRelease(slot);
	table_close(rel, NoLock);
	row->for_update = false;
	return found;
}

/*
 * Lock the row LeaseFindForLock found (its newest version under READ
 * COMMITTED) and read it again; false when it was deleted meanwhile.
 *
 * LEASE_LOCK_LOOK takes FOR NO KEY UPDATE: enough to look and to extend,
 * and never blocked by fenced writers.  LEASE_LOCK_CHANGE, for a change of
 * holder, takes FOR UPDATE at once when nobody is in the way (no fenced
 * writer, no renewal in progress): one lock, and one WAL record, where the
 * upgrade costs two.  Otherwise it takes FOR NO KEY UPDATE, and
 * LeaseLockForChange upgrades, waiting for the fenced writers within
 * pg_lease.takeover_timeout (lease_takeover.c needs the weaker lock held
 * first).
 *
 * A single conditional UPDATE would not do: when it waits behind another
 * lock and the row is not updated meanwhile, PostgreSQL does not
 * re-evaluate its WHERE clause, so it would judge expiry as of before the
 * wait.
 */
bool
LeaseLockFound(LeaseRow *row, LeaseLockIntent intent)
{
	Snapshot	snapshot = GetTransactionSnapshot();
	Relation	rel = table_open(LeaseTableRelid(), RowShareLock);
	TupleTableSlot *slot = LeaseRowSlot(rel);
	ItemPointerData tid = row->tid;
	TM_Result	result = TM_WouldBlock;

	row->for_update = false;
	if (intent == LEASE_LOCK_CHANGE)
	{
		result = LeaseLockTid(rel, &tid, LockTupleExclusive, LockWaitSkip, snapshot, slot);
		row->for_update = (result == TM_Ok);
	}
	if (result == TM_WouldBlock)
		result = LeaseLockTid(rel, &tid, LockTupleNoKeyExclusive, LockWaitBlock, snapshot, slot);
	if (result == TM_Ok)
		LeaseRowFromSlot(slot, row, true);
	LeaseRowSlotRelease(slot);
	table_close(rel, NoLock);
	return result == TM_Ok;
}

/*
 * Before a change of holder or epoch: lock the grant that ends exclusively
 * in the lock manager (fence_lock.c), and make sure the row is locked FOR
 * UPDATE (upgrading the FOR NO KEY UPDATE lock LeaseLockFound took, for
 * fenced writers of 1.2's kind: lease_takeover.c).  Both wait for the fenced
 * transactions of the grant that ends, within one pg_lease.takeover_timeout
 * counted from here.
 */
void
LeaseLockForChange(text *name, LeaseRow *row)
{
	LeaseEnding ending = {name, row->holder, row->epoch, row->expires_at};
	LeaseTakeover takeover;

	LeaseTakeoverBegin(&takeover, &ending);
	LeaseFenceLockExclusive(&takeover);
	if (!row->for_update)
	{
		Relation	rel = table_open(LeaseTableRelid(), RowShareLock);
		TupleTableSlot *slot = LeaseRowSlot(rel);

		LeaseLockForHolderChange(rel, &row->tid, slot, &takeover);
		LeaseRowFromSlot(slot, row, true);
		LeaseRowSlotRelease(slot);
		table_close(rel, NoLock);
		row->for_update = true;
	}
	LeaseTakeoverEnd(&takeover);
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

static bool
LeaseIsGrantOfRecord(const LeaseRow *row, text *holder, int64 epoch)
{
	return LeaseTextEqual(row->holder, holder) && row->epoch == epoch;
}

/*
 * Lock the row (as intent says) and tell whether (holder, epoch) is its
 * grant of record, expired or not.  Another grant is refused, and another
 * role's grant of record raises 42501, before any lock is taken: a caller
 * with the wrong epoch cannot stall the holder's renewals by keeping its
 * transaction open.
 */
bool
LeaseLockGrantOfRecord(text *name, text *holder, int64 epoch, LeaseLockIntent intent,
					   LeaseRow *row)
{
	if (!LeaseFindForLock(name, row) || !LeaseIsGrantOfRecord(row, holder, epoch))
		return false;
	LeaseCheckRole(name, row);
	return LeaseLockFound(row, intent) && LeaseIsGrantOfRecord(row, holder, epoch);
}

/* Start a change of the columns of a lease row: nothing replaced yet. */
static void
LeaseChangeInit(Datum *values, bool *nulls, bool *replace)
{
	memset(values, 0, sizeof(Datum) * LEASE_NATTS);
	memset(nulls, 0, sizeof(bool) * LEASE_NATTS);
	memset(replace, 0, sizeof(bool) * LEASE_NATTS);
}

static void
LeaseChangeSet(Datum *values, bool *nulls, bool *replace, int column, Datum value, bool isnull)
{
	values[column] = value;
	nulls[column] = isnull;
	replace[column] = true;
}

/*
 * Extend a held lease from now; the row is locked (LeaseLockFound).
 * Returns the new expiry.
 */
TimestampTz
LeaseExtendLocked(text *name, const LeaseRow *row, int64 ttl_usec)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz expires_at = now + ttl_usec;
	Datum		ttl = IntervalPGetDatum(LeaseTtlInterval(ttl_usec));
	Datum		values[LEASE_NATTS];
	bool		nulls[LEASE_NATTS];
	bool		replace[LEASE_NATTS];

	LeaseFenceGrantChanged(name);
	LeaseChangeInit(values, nulls, replace);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_RENEWED_AT, TimestampTzGetDatum(now), false);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_EXPIRES_AT,
				   TimestampTzGetDatum(expires_at), false);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_TTL, ttl, false);
	if (!LeaseUpdateDirect(row, values, nulls, replace))
	{
		Datum		args[4];

		args[0] = PointerGetDatum(name);
		args[1] = TimestampTzGetDatum(now);
		args[2] = TimestampTzGetDatum(expires_at);
		args[3] = ttl;
		(void) LeaseExecute(LEASE_PLAN_EXTEND, args, NULL, SPI_OK_UPDATE);
	}
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
	Datum		delay = IntervalPGetDatum(LeaseTtlInterval(released ? 0 : row->lock_delay_usec));
	Datum		values[LEASE_NATTS];
	bool		nulls[LEASE_NATTS];
	bool		replace[LEASE_NATTS];

	LeaseFenceGrantChanged(name);
	LeaseChangeInit(values, nulls, replace);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_HOLDER, (Datum) 0, true);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_EXPIRES_AT,
				   TimestampTzGetDatum(Min(row->expires_at, now)), false);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_LOCK_DELAY, delay, false);
	if (!LeaseUpdateDirect(row, values, nulls, replace))
	{
		Datum		args[3];

		args[0] = PointerGetDatum(name);
		args[1] = TimestampTzGetDatum(now);
		args[2] = delay;
		(void) LeaseExecute(LEASE_PLAN_FREE, args, NULL, SPI_OK_UPDATE);
	}
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
	int64		transition = LeaseTextEqual(row->holder, holder) ? 0 : 1;
	Datum		ttl = IntervalPGetDatum(LeaseTtlInterval(ttl_usec));
	Datum		delay = IntervalPGetDatum(LeaseTtlInterval(lock_delay_usec));
	Datum		values[LEASE_NATTS];
	bool		nulls[LEASE_NATTS];
	bool		replace[LEASE_NATTS];
	int64		transitions;

	*expires_at = now + ttl_usec;
	LeaseFenceGrantChanged(name);
	LeaseChangeInit(values, nulls, replace);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_HOLDER, PointerGetDatum(holder), false);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_EPOCH, Int64GetDatum(epoch), false);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_ACQUIRED_AT, TimestampTzGetDatum(now), false);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_RENEWED_AT, TimestampTzGetDatum(now), false);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_EXPIRES_AT,
				   TimestampTzGetDatum(*expires_at), false);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_TTL, ttl, false);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_OWNER_ROLE, LeaseCallerRoleName(), false);
	LeaseChangeSet(values, nulls, replace, LEASE_COL_LOCK_DELAY, delay, false);
	if (pg_add_s64_overflow(row->transitions, transition, &transitions))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
	LeaseChangeSet(values, nulls, replace, LEASE_COL_TRANSITIONS, Int64GetDatum(transitions), false);
	if (!LeaseUpdateDirect(row, values, nulls, replace))
	{
		Datum		args[9];

		args[0] = PointerGetDatum(name);
		args[1] = PointerGetDatum(holder);
		args[2] = Int64GetDatum(epoch);
		args[3] = TimestampTzGetDatum(now);
		args[4] = TimestampTzGetDatum(*expires_at);
		args[5] = ttl;
		args[6] = Int64GetDatum(transition);
		args[7] = LeaseCallerRoleName();
		args[8] = delay;
		(void) LeaseExecute(LEASE_PLAN_GRANT, args, NULL, SPI_OK_UPDATE);
	}
	LeaseRecordEvent(event, name, holder, epoch, *expires_at, 0);
	return epoch;
}
