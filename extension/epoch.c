/*-------------------------------------------------------------------------
 *
 * epoch.c
 *	  Allocation of fencing tokens.
 *
 * One sequence serves every lease, so an epoch names exactly one grant.  A
 * sequence never goes back across a crash for any value whose transaction
 * committed (its WAL precedes the commit record), and the grant functions
 * make sure that commit is flushed.  The high bits, the era, cover what a
 * sequence cannot: a promoted standby that never saw the newest values
 * writes on a newer timeline, and the era is the timeline plus a base.
 *
 * The base (1.5) covers what a timeline cannot: pg_upgrade, a dump and
 * restore onto a new cluster and pg_resetwal start again at timeline 1,
 * and a dump restored in place brings back an older counter.
 * lease_epoch_mark, dumped with the extension's data, records the system
 * that issued epochs and the mark table's own oid (a restore creates the
 * table again), the base, and the highest era used.  When the system or
 * the table is another one, or base + timeline fell below the recorded
 * era, the base moves to that era: every later era is above it, also on a
 * standby of the new system promoted before it saw the move (the timeline
 * still adds).
 * Without a mark (a fresh install, or a schema updated from 1.4) the base
 * is the era of the highest epoch recorded in leases and lease_events.
 *
 * The mark is read once per backend and (system, timeline); it is written
 * only when it changes, in the grant's own transaction.  Callers draw an
 * epoch only while they hold the lease row's lock.
 *
 * Twins: lease_sql_next_epoch and lease_sql_timeline in
 * sql/sql_edition/30_epochs.sql.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/snapmgr.h"

/* The era this backend checked against the mark, for one system and timeline. */
static struct
{
	bool		valid;
	uint64		system;
	TimeLineID	timeline;
	int64		base;
}			era_checked;

/* The recorded mark, as lease_epoch_mark holds it. */
typedef struct EraMark
{
	bool		found;
	uint64		system;
	Oid			table;			/* the mark table's oid when it was recorded */
	int64		base;
	int64		high;
} EraMark;

/* Run a prepared era statement under the newest snapshot (any isolation). */
static void
EraExecute(LeasePlan plan, Datum *values, int expected)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	int			rc;

	rc = SPI_execute_snapshot(LeaseGetPlan(plan), values, NULL, snapshot,
							  InvalidSnapshot, false, expected != SPI_OK_SELECT, 0);
	UnregisterSnapshot(snapshot);
	if (rc != expected)
		elog(ERROR, "pg_lease: epoch mark statement %d failed: %s", (int) plan,
			 SPI_result_code_string(rc));
}

static int64
EraResult(int column)
{
	bool		isnull;
	Datum		value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									  column, &isnull);

	if (isnull)
		return 0;
	if (SPI_gettypeid(SPI_tuptable->tupdesc, column) == OIDOID)
		return (int64) DatumGetObjectId(value);
	return DatumGetInt64(value);
}

static void
EraReadMark(EraMark *mark)
{
	EraExecute(LEASE_PLAN_ERA_READ, NULL, SPI_OK_SELECT);
	mark->found = SPI_processed == 1;
	if (mark->found)
	{
		mark->system = (uint64) EraResult(1);
		mark->base = EraResult(2);
		mark->high = EraResult(3);
		mark->table = (Oid) EraResult(4);
	}
}

/* The era of the highest epoch recorded in leases and lease_events. */
static int64
EraRecorded(void)
{
	EraExecute(LEASE_PLAN_ERA_RECORDED, NULL, SPI_OK_SELECT);
	return EraResult(1) >> LEASE_EPOCH_COUNTER_BITS;
}

/* The base that this system and timeline issue under, given the mark. */
static int64
EraBase(const EraMark *mark, uint64 system, Oid table, TimeLineID timeline)
{
	if (!mark->found)
		return EraRecorded();
	if (mark->system != system)
		return mark->high;		/* a restore, pg_upgrade: another system */
	if (mark->table != table)
		return mark->high;		/* a dump restored on the same system */
	if (mark->base + timeline < mark->high)
		return mark->high;		/* the timeline went back: pg_resetwal */
	return mark->base;
}

/*
 * Check this backend's era against the mark, moving the mark when it must
 * (under a lock of its own, so two first grants agree).  The check is kept
 * only when nothing had to be written: a write may yet roll back.
 */
static int64
EraCheck(uint64 system, TimeLineID timeline)
{
	Oid			table = LeaseEpochMarkRelid();
	EraMark		mark;
	int64		base;
	LOCKTAG		tag;

	if (!OidIsValid(table))
		return 0;				/* a schema before 1.5: timeline bits only */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_lease: SPI_connect failed");
	EraReadMark(&mark);
	base = EraBase(&mark, system, table, timeline);
	if (!mark.found || mark.system != system || mark.table != table ||
		mark.base != base || mark.high < base + timeline)
	{
		Datum		values[4];

		SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, 0, LEASE_ERA_LOCKTAG_CLASS);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
		EraReadMark(&mark);
		base = EraBase(&mark, system, table, timeline);
		values[0] = Int64GetDatum((int64) system);
		values[1] = Int64GetDatum(base);
		values[2] = Int64GetDatum(Max(mark.found ? mark.high : 0, base + timeline));
		values[3] = ObjectIdGetDatum(table);
		EraExecute(LEASE_PLAN_ERA_WRITE, values, SPI_OK_INSERT);
		era_checked.valid = false;
	}
	else
	{
		era_checked.valid = true;
		era_checked.system = system;
		era_checked.timeline = timeline;
		era_checked.base = base;
	}
	SPI_finish();
	return base;
}

int64
LeaseNextEpoch(void)
{
	TimeLineID	timeline = GetWALInsertionTimeLine();
	uint64		system = GetSystemIdentifier();
	int64		era;
	int64		counter;

	if (era_checked.valid && era_checked.system == system &&
		era_checked.timeline == timeline)
		era = era_checked.base + timeline;
	else
		era = EraCheck(system, timeline) + timeline;
	if (era > LEASE_EPOCH_TIMELINE_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("epoch era " INT64_FORMAT " is too large for pg_lease epochs", era),
				 errdetail("Epochs keep the era (WAL timeline %u plus the base recorded in lease_epoch_mark) in 16 bits.",
						   timeline)));

	/* nextval checks privileges itself; we run as the extension owner */
	counter = nextval_internal(LeaseEpochSequence(), false);
	if (counter > LEASE_EPOCH_COUNTER_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("pg_lease epoch counter is exhausted")));

	return (era << LEASE_EPOCH_COUNTER_BITS) | counter;
}
