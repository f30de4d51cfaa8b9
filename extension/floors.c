/*-------------------------------------------------------------------------
 *
 * floors.c
 *	  Downstream fences: a database that does not hold a lease keeps the
 *	  highest epoch of it that it has seen (its floor), and refuses writes
 *	  below it.
 *
 * A floor belongs to (lease store, lease name), the store being
 * lease_store_id() of the database that holds the lease.  A fenced write
 * passes when its token is at least the floor; a token above it raises the
 * floor in the write's own transaction.  lease_raise raises it ahead of
 * the work, as the client does at the start of a term (floors_fence.c).
 *
 * The ordering is the local fence's (fence_lock.c), on lock tags of class
 * LEASE_FLOOR_LOCKTAG_CLASS named by a 64-bit hash of (store, name, epoch):
 * a writer share-locks its token's tag, then reads the newest committed
 * floor; a raise from floor F locks F's tag exclusively before it commits,
 * waiting for the writers of F at most pg_lease.takeover_timeout and then
 * ending them.  So once a raise commits, no write with a lower token
 * commits after it.
 *
 * Raises of one floor meet at its row.  A raise writes the row first, then
 * waits for the writers of the old floor, so a second raise sees (with a
 * dirty read) where the first is going: a lower target is ended like any
 * writer of a lower token, an equal or higher one is waited for.  Every
 * raise holds its target's tag shared (a write's check takes it, and so
 * does lease_raise), so a lower raise that stalls in its open transaction
 * holds a higher one up at most pg_lease.takeover_timeout.  Two
 * transactions of the same leader never end each other.
 *
 * Twins: lease_store_id, lease_sql_floor_write, lease_sql_floor_raise,
 * lease_sql_floor_hold and lease_sql_floor_end_lower in
 * sql/sql_edition/70_floors.sql.
 *
 *-------------------------------------------------------------------------
 */
#include "floors.h"
#include "fence.h"
#include "lease.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

/* Columns of lease_floor_rows (1-based, as heap_getattr counts). */
#define FLOOR_ATT_STORE		1
#define FLOOR_ATT_NAME		2
#define FLOOR_ATT_EPOCH		3

/* The newest version of a floor row, as a dirty read finds it. */
typedef struct FloorVersion
{
	bool		found;
	int64		epoch;			/* 0 when not found */
	TransactionId changing;		/* another transaction writing it, or invalid */
} FloorVersion;

static void
FloorLockTag(LOCKTAG *tag, const LeaseFloorKey *key, int64 epoch)
{
	uint64		hash;

	hash = hash_bytes_extended((const unsigned char *) key->store, strlen(key->store),
							   (uint64) epoch);
	hash = hash_bytes_extended((const unsigned char *) key->name, strlen(key->name), hash);
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (hash >> 32), (uint32) hash,
						 LEASE_FLOOR_LOCKTAG_CLASS);
}

/* What an error raised while waiting for a floor's lock says. */
static void
FloorLockErrorContext(void *arg)
{
	const LeaseEnding *ending = (const LeaseEnding *) arg;

	errcontext("raising the floor of lease \"%s\" above epoch " INT64_FORMAT,
			   text_to_cstring(ending->name), ending->epoch);
}

/*
 * End the fenced transactions of token epoch in this database, as a change
 * of holder ends a grant's: wait at most pg_lease.takeover_timeout, then
 * cancel or terminate them (with an evict event).  Held until the
 * transaction ends.
 */
static void
FloorLockExclusive(const LeaseFloorKey *key, int64 epoch)
{
	LeaseEnding ending = {cstring_to_text(key->name), NULL, epoch, GetCurrentTimestamp()};
	ErrorContextCallback callback;
	LeaseTakeover takeover;
	LOCKTAG		tag;

	if (epoch <= 0)
		return;					/* no floor yet: no writer holds a token below */
	FloorLockTag(&tag, key, epoch);
	callback.callback = FloorLockErrorContext;
	callback.arg = &ending;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	LeaseTakeoverBegin(&takeover, &ending);
	LeaseFenceLockTagExclusive(&takeover, &tag);
	LeaseTakeoverEnd(&takeover);
	error_context_stack = callback.previous;
}

/*
 * Read the floor row under snapshot: the highest epoch among its visible
 * versions.  Under a dirty snapshot an uncommitted raise is visible too,
 * and then changing names its transaction.
 */
static void
FloorRead(const LeaseFloorKey *key, Snapshot snapshot, FloorVersion *out)
{
	Relation	rel = table_open(LeaseFloorsRelid(), AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;

	out->found = false;
	out->epoch = 0;
	out->changing = InvalidTransactionId;

	ScanKeyEntryInitialize(&keys[0], 0, FLOOR_ATT_STORE, BTEqualStrategyNumber, InvalidOid,
						   TupleDescAttr(desc, FLOOR_ATT_STORE - 1)->attcollation,
						   F_TEXTEQ, CStringGetTextDatum(key->store));
	ScanKeyEntryInitialize(&keys[1], 0, FLOOR_ATT_NAME, BTEqualStrategyNumber, InvalidOid,
						   TupleDescAttr(desc, FLOOR_ATT_NAME - 1)->attcollation,
						   F_TEXTEQ, CStringGetTextDatum(key->name));
	scan = systable_beginscan(rel, LeasePrimaryKeyIndex(rel), true, snapshot, 2, keys);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		int64		epoch = DatumGetInt64(heap_getattr(tuple, FLOOR_ATT_EPOCH, desc, &isnull));
		TransactionId xmin = HeapTupleHeaderGetXmin(tuple->t_data);

		if (out->found && epoch <= out->epoch)
			continue;
		out->found = true;
		out->epoch = epoch;
		out->changing = InvalidTransactionId;
		if (snapshot->snapshot_type == SNAPSHOT_DIRTY &&
			TransactionIdIsNormal(xmin) &&
			!TransactionIdIsCurrentTransactionId(xmin) &&
			TransactionIdIsInProgress(xmin))
			out->changing = xmin;
	}
	systable_endscan(scan);
	table_close(rel, NoLock);
}

/* The newest committed floor (or this transaction's own); 0 when none. */
static int64
FloorCommitted(const LeaseFloorKey *key)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	FloorVersion version;

	FloorRead(key, snapshot, &version);
	UnregisterSnapshot(snapshot);
	return version.epoch;
}

/*
 * Move the floor from old (0: no row) to epoch, as the floors table's
 * owner: the writer raising it need not be allowed to write the table.
 * False when another transaction changed the row first, or is changing it
 * (the update skips a locked row rather than wait for its transaction,
 * which the caller may have to end instead).
 */
static bool
FloorWrite(const LeaseFloorKey *key, int64 old, int64 epoch)
{
	Relation	rel = table_open(LeaseFloorsRelid(), AccessShareLock);
	Oid			owner = rel->rd_rel->relowner;
	Datum		values[4];
	Oid			save_userid;
	int			save_sec_context;
	Snapshot	snapshot;
	uint64		processed;
	int			rc;

	table_close(rel, NoLock);
	values[0] = CStringGetTextDatum(key->store);
	values[1] = CStringGetTextDatum(key->name);
	values[2] = Int64GetDatum(epoch);
	values[3] = Int64GetDatum(old);

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	/* as the RI triggers do: not restricted, so triggers on the floors run */
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_lease: SPI_connect failed");
	/* the newest row, also under REPEATABLE READ, as the fence reads it */
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	rc = SPI_execute_snapshot(LeaseGetPlan(old > 0 ? LEASE_PLAN_FLOOR_UPDATE : LEASE_PLAN_FLOOR_INSERT),
							  values, NULL, snapshot, InvalidSnapshot, false, true, 0);
	UnregisterSnapshot(snapshot);
	if (rc != (old > 0 ? SPI_OK_UPDATE : SPI_OK_INSERT))
		elog(ERROR, "pg_lease: writing a floor failed: %s", SPI_result_code_string(rc));
	processed = SPI_processed;
	SPI_finish();
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return processed == 1;
}

/*
 * Raise the floor of key to epoch in this transaction, after the fenced
 * transactions of lower tokens have ended.  Returns the floor afterwards:
 * epoch, or a higher one that was already there (then nothing changed).
 */
int64
LeaseFloorRaise(const LeaseFloorKey *key, int64 epoch)
{
	SnapshotData dirty;

	LeaseRequireDurableCommit();
	InitDirtySnapshot(dirty);
	for (;;)
	{
		FloorVersion newest;

		CHECK_FOR_INTERRUPTS();
		FloorRead(key, &dirty, &newest);
		if (TransactionIdIsValid(newest.changing))
		{
			/* another raise is under way: end it if it goes lower, else wait */
			if (newest.epoch < epoch)
				FloorLockExclusive(key, newest.epoch);
			XactLockTableWait(newest.changing, NULL, NULL, XLTW_None);
			continue;
		}
		if (newest.epoch >= epoch)
			return newest.epoch;
		if (!FloorWrite(key, newest.epoch, epoch))
		{
			/* a raise began since the read: look again where it goes */
			pg_usleep(1000L);
			continue;
		}
		/* the row shows where this raise goes; now end the lower writers */
		FloorLockExclusive(key, newest.epoch);
		return epoch;
	}
}

/*
 * Share-lock the tag of token epoch, until the transaction (or the
 * savepoint) ends, then read the newest committed floor: once the lock is
 * held, no raise from epoch can commit before this transaction ends.
 */
int64
LeaseFloorHold(const LeaseFloorKey *key, int64 epoch)
{
	LOCKTAG		tag;

	FloorLockTag(&tag, key, epoch);
	(void) LockAcquire(&tag, ShareLock, false, false);
	return FloorCommitted(key);
}

/*
 * The floor check of a fenced write whose token is named for the lease:
 * hold the token's tag and read the floor (LeaseFloorHold), raising it
 * when the token is above.  Returns the floor when the token is below it (the
 * caller refuses the write), else 0.
 */
int64
LeaseFloorCheck(const LeaseFloorKey *key, int64 epoch)
{
	int64		floor = LeaseFloorHold(key, epoch);

	if (floor < epoch)
		floor = LeaseFloorRaise(key, epoch);
	return floor > epoch ? floor : 0;
}

/* The newest committed floor of key, without locks; 0 when none. */
int64
LeaseFloorPeek(const LeaseFloorKey *key)
{
	return FloorCommitted(key);
}

/* This database's identity as a lease store. */
char *
LeaseFloorStoreId(void)
{
	if (lease_store_id_setting != NULL && lease_store_id_setting[0] != '\0')
		return pstrdup(lease_store_id_setting);
	return psprintf(UINT64_FORMAT "/%s", GetSystemIdentifier(),
					get_database_name(MyDatabaseId));
}

PG_FUNCTION_INFO_V1(lease_store_id);
Datum
lease_store_id(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(LeaseFloorStoreId()));
}
