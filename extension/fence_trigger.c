/*-------------------------------------------------------------------------
 *
 * fence_trigger.c
 *	  The fence trigger: which token a write carries, and whether it passes.
 *
 * BEFORE INSERT OR UPDATE OR DELETE FOR EACH ROW, plus BEFORE TRUNCATE FOR
 * EACH STATEMENT, installed by lease_fence() with the lease name and the
 * epoch column.  A write passes only if its token is the lease's current,
 * held, unexpired epoch.  The check share-locks the token's grant
 * (fence_lock.c) until the transaction ends, then reads the lease row, so
 * no change of holder commits while a write that passed is open; renewals
 * never take that lock.  A third argument, the lease store, fences the
 * table by a floor instead (floors_fence.c); tokens are declared with
 * lease_use (fence_use.c).  Hot path: the arguments are kept for the
 * statement (fn_extra), the row for the transaction (fence_xact.c).
 *
 * Twins (the decisions and SQLSTATEs, kept equal by
 * tests/contract/cases.json): sql/sql_edition/60_fence.sql; the test
 * double's lease_store::fence_check (client/src/testing/lease_store.cpp).
 *
 *-------------------------------------------------------------------------
 */
#include "fence.h"
#include "epoch_list.h"
#include "floors.h"

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "nodes/bitmapset.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "validate.h"

/* What one fence trigger checks, kept for the statement. */
typedef struct FenceConfig
{
	Oid			trigger;
	char	   *lease;
	char	   *column;
	AttrNumber	attnum;			/* epoch column; 0 for TRUNCATE */
	LeaseFloorKey floor;		/* a downstream fence: store set (1.4) */
} FenceConfig;

/* Where a write's token came from (SPEC section 3, "The fence trigger"). */
typedef enum FenceTokenSource
{
	FENCE_TOKEN_NONE,
	FENCE_TOKEN_DECLARED,		/* lease_use() in this transaction */
	FENCE_TOKEN_SETTING,		/* pg_lease.epoch */
	FENCE_TOKEN_ROW				/* the row's own epoch column */
} FenceTokenSource;

static FenceConfig *
FenceConfigFor(FunctionCallInfo fcinfo, TriggerData *trigdata)
{
	FenceConfig *config = (FenceConfig *) fcinfo->flinfo->fn_extra;
	Trigger    *trigger = trigdata->tg_trigger;
	Relation	rel = trigdata->tg_relation;
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;

	if (config != NULL && config->trigger == trigger->tgoid)
		return config;

	if (trigger->tgnargs != 2 && trigger->tgnargs != 3)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("fence trigger \"%s\" on \"%s\" must have two or three arguments",
						trigger->tgname, RelationGetRelationName(rel)),
				 errhint("Install fences with lease_fence().")));

	config = MemoryContextAllocZero(mcxt, sizeof(FenceConfig));
	config->trigger = trigger->tgoid;
	config->lease = MemoryContextStrdup(mcxt, trigger->tgargs[0]);
	config->column = MemoryContextStrdup(mcxt, trigger->tgargs[1]);
	LeaseCheckLabel("lease name", strlen(config->lease));
	if (trigger->tgnargs == 3)
	{
		config->floor.store = MemoryContextStrdup(mcxt, trigger->tgargs[2]);
		config->floor.name = config->lease;
		LeaseCheckLabel("lease store", strlen(config->floor.store));
	}

	if (TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
	{
		TupleDesc	desc = RelationGetDescr(rel);
		int			attnum = SPI_fnumber(desc, config->column);

		if (attnum <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("epoch column \"%s\" of fenced table \"%s\" does not exist",
							config->column, RelationGetRelationName(rel))));
		if (TupleDescAttr(desc, attnum - 1)->atttypid != INT8OID)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("epoch column \"%s\" of fenced table \"%s\" must be bigint",
							config->column, RelationGetRelationName(rel))));
		config->attnum = (AttrNumber) attnum;
	}
	fcinfo->flinfo->fn_extra = config;
	return config;
}

/*
 * Step 1: a token the transaction declared, with lease_use() or with
 * pg_lease.epoch.  From a list in the setting, the epoch that is the
 * lease's current one is used, or else the largest listed (it is refused,
 * but named).
 */
static FenceTokenSource
FenceDeclaredToken(const FenceConfig *config, int64 *token)
{
	const LeaseEpochList *list;
	const LeaseRowState *kept;
	LeaseRowState current;
	bool		found;

	if (LeaseFenceDeclaredToken(config->lease, token))
		return FENCE_TOKEN_DECLARED;

	list = LeaseSettingEpochs();
	if (list->count == 0)
		return FENCE_TOKEN_NONE;
	*token = list->epochs[0];
	if (list->count == 1)
		return FENCE_TOKEN_SETTING;

	kept = LeaseFenceLockedGrant(config->lease);
	found = kept != NULL || LeaseFencePeekRow(config->lease, &current);
	if (kept != NULL)
		current = *kept;
	*token = found && LeaseEpochListed(list->epochs, list->count, current.epoch) ?
		current.epoch : LeaseEpochListHighest(list->epochs, list->count);
	return FENCE_TOKEN_SETTING;
}

/*
 * The lease row once the fence lock of the token's grant is held.  With a
 * list of epochs in pg_lease.epoch, the grant may change between choosing
 * the token and taking its lock: if the new grant is listed too, lock that
 * one instead (epochs only grow, so this ends).
 */
static const LeaseRowState *
FenceLockRow(const FenceConfig *config, FenceTokenSource source, int64 *token)
{
	const LeaseRowState *row = LeaseFenceLockGrantShared(config->lease, *token);
	const LeaseEpochList *list = LeaseSettingEpochs();

	while (source == FENCE_TOKEN_SETTING && row != NULL && row->epoch > *token)
	{
		if (!LeaseEpochListed(list->epochs, list->count, row->epoch))
			break;
		*token = row->epoch;
		row = LeaseFenceLockGrantShared(config->lease, *token);
	}
	return row;
}

/*
 * Steps 2 and 3: the row's epoch column, for INSERT, and for UPDATE only
 * when the statement itself sets that column; a stale writer that leaves it
 * alone must not pass on the epoch the current leader wrote earlier.
 */
static FenceTokenSource
FenceRowToken(const FenceConfig *config, TriggerData *trigdata, int64 *token)
{
	TupleDesc	desc = RelationGetDescr(trigdata->tg_relation);
	TriggerEvent event = trigdata->tg_event;
	HeapTuple	tuple;
	Datum		value;
	bool		isnull;

	if (TRIGGER_FIRED_BY_INSERT(event))
		tuple = trigdata->tg_trigtuple;
	else if (TRIGGER_FIRED_BY_UPDATE(event) &&
			 bms_is_member(config->attnum - FirstLowInvalidHeapAttributeNumber,
						   trigdata->tg_updatedcols))
		tuple = trigdata->tg_newtuple;
	else
		return FENCE_TOKEN_NONE;

	value = heap_getattr(tuple, config->attnum, desc, &isnull);
	if (isnull)
		return FENCE_TOKEN_NONE;
	*token = DatumGetInt64(value);
	return FENCE_TOKEN_ROW;
}

static void
FenceCountRejection(const FenceConfig *config, LeaseCounterKind kind)
{
	LeaseCount(config->lease, strlen(config->lease), kind);
}

static void
FenceRejectNoToken(const FenceConfig *config, Relation rel)
{
	FenceCountRejection(config, LEASE_COUNT_REJECTED_NO_TOKEN);
	ereport(ERROR,
			(errcode(ERRCODE_LEASE_NO_TOKEN),
			 errmsg("write to fenced table \"%s\" carries no fencing token for lease \"%s\"",
					RelationGetRelationName(rel), config->lease),
			 errdetail("The table is fenced by lease \"%s\".", config->lease),
			 LeaseFenceHint(errhint("Call lease_use('%s', <epoch>) in the transaction, set pg_lease.epoch, "
									"or write the epoch into column \"%s\".",
									config->lease, config->column))));
}

static bool
FencePasses(int64 token, const LeaseRowState *row, TimestampTz now)
{
	return row != NULL && row->epoch == token && row->held && now < row->expires_at;
}

/*
 * Refuse the write, saying why.  The rejection is counted first, as its
 * transaction is about to abort.
 */
static void
FenceReject(const FenceConfig *config, Relation rel, int64 token, const LeaseRowState *row)
{
	if (row == NULL)
	{
		FenceCountRejection(config, LEASE_COUNT_REJECTED_NOT_HELD);
		ereport(ERROR,
				(errcode(ERRCODE_LEASE_NOT_HELD),
				 errmsg("fenced write to \"%s\" rejected: lease \"%s\" does not exist",
						RelationGetRelationName(rel), config->lease),
				 errdetail("The write carries epoch " INT64_FORMAT ".", token),
				 LeaseFenceHint(0)));
	}
	if (token != row->epoch)
		FenceCountRejection(config, LEASE_COUNT_REJECTED_STALE);
	if (token < row->epoch)
		ereport(ERROR,
				(errcode(ERRCODE_LEASE_STALE_EPOCH),
				 errmsg("fenced write to \"%s\" rejected: epoch " INT64_FORMAT " of lease \"%s\" is stale",
						RelationGetRelationName(rel), token, config->lease),
				 errdetail("The current epoch is " INT64_FORMAT "; a newer grant replaced the writer's.",
						   row->epoch),
				 LeaseFenceHint(errhint("The writer no longer leads: it must stop and acquire the lease again."))));
	if (token != row->epoch)
		ereport(ERROR,
				(errcode(ERRCODE_LEASE_STALE_EPOCH),
				 errmsg("fenced write to \"%s\" rejected: epoch " INT64_FORMAT " was never granted for lease \"%s\"",
						RelationGetRelationName(rel), token, config->lease),
				 errdetail("The current epoch is " INT64_FORMAT ".", row->epoch),
				 LeaseFenceHint(0)));

	FenceCountRejection(config, LEASE_COUNT_REJECTED_NOT_HELD);
	if (!row->held)
		ereport(ERROR,
				(errcode(ERRCODE_LEASE_NOT_HELD),
				 errmsg("fenced write to \"%s\" rejected: lease \"%s\" is not held",
						RelationGetRelationName(rel), config->lease),
				 errdetail("Epoch " INT64_FORMAT " is the latest grant, but it was released or revoked.",
						   token),
				 LeaseFenceHint(0)));
	ereport(ERROR,
			(errcode(ERRCODE_LEASE_NOT_HELD),
			 errmsg("fenced write to \"%s\" rejected: lease \"%s\" expired",
					RelationGetRelationName(rel), config->lease),
			 errdetail("Epoch " INT64_FORMAT " is the latest grant, but it expired at %s.",
					   token, timestamptz_to_str(row->expires_at)),
			 LeaseFenceHint(0)));
}

/*
 * The token must be the current epoch of a held, unexpired lease.  A write
 * that passes costs one clock read.  When the expiry kept for the
 * transaction has passed, the row is read again first: the holder may have
 * renewed meanwhile (renewals do not wait for fenced transactions).
 */
static void
FenceCheck(const FenceConfig *config, Relation rel, int64 token, const LeaseRowState *row)
{
	if (FencePasses(token, row, GetCurrentTimestamp()))
		return;
	if (row != NULL && row->epoch == token && row->held &&
		LeaseFenceLockedGrant(config->lease) == row)
	{
		row = LeaseFenceRefreshRow(config->lease);
		if (FencePasses(token, row, GetCurrentTimestamp()))
			return;
	}
	FenceReject(config, rel, token, row);
}

/*
 * Step 1 for a downstream fence: the lease is another database's, so a
 * token declared by name and pg_lease.epoch's unnamed list are told apart
 * (floors_fence.c); either way the list is judged as a whole.
 */
static FenceTokenSource
FenceDownstreamSource(const FenceConfig *config)
{
	int64		declared;

	if (LeaseFenceDeclaredToken(config->lease, &declared))
		return FENCE_TOKEN_DECLARED;
	return LeaseSettingEpochs()->count > 0 ? FENCE_TOKEN_SETTING : FENCE_TOKEN_NONE;
}

/* The downstream check; returns the token that passed. */
static int64
FenceDownstreamCheck(const FenceConfig *config, Relation rel, FenceTokenSource source, int64 token)
{
	const LeaseEpochList *list;

	switch (source)
	{
		case FENCE_TOKEN_DECLARED:
			(void) LeaseFenceDeclaredToken(config->lease, &token);
			LeaseFloorFenceNamed(&config->floor, rel, token);
			return token;
		case FENCE_TOKEN_SETTING:
			list = LeaseSettingEpochs();
			return LeaseFloorFenceUnnamed(&config->floor, rel, list->epochs, list->count);
		default:
			return LeaseFloorFenceUnnamed(&config->floor, rel, &token, 1);
	}
}

/* Put a declared token into the row, so the table records who wrote it. */
static HeapTuple
FenceStamp(const FenceConfig *config, Relation rel, HeapTuple tuple, int64 token)
{
	TupleDesc	desc = RelationGetDescr(rel);
	bool		isnull;
	Datum		value = heap_getattr(tuple, config->attnum, desc, &isnull);
	int			column = config->attnum;
	bool		replace_null = false;

	if (!isnull && DatumGetInt64(value) == token)
		return tuple;
	value = Int64GetDatum(token);
	return heap_modify_tuple_by_cols(tuple, desc, 1, &column, &value, &replace_null);
}

/* Trigger function that lets writes through only under the current epoch. */
PG_FUNCTION_INFO_V1(lease_fence_trigger);
Datum
lease_fence_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	const LeaseRowState *row;
	const FenceConfig *config;
	FenceTokenSource source;
	TriggerEvent event;
	Relation	rel;
	int64		token = 0;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("lease_fence_trigger() must be called as a trigger")));
	event = trigdata->tg_event;
	rel = trigdata->tg_relation;
	if (!TRIGGER_FIRED_BEFORE(event) ||
		(!TRIGGER_FIRED_FOR_ROW(event) && !TRIGGER_FIRED_BY_TRUNCATE(event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("lease_fence_trigger() must fire BEFORE, for each row or on TRUNCATE"),
				 errhint("Install fences with lease_fence().")));

	LeaseCatalogEnsure(fcinfo->flinfo->fn_oid);
	config = FenceConfigFor(fcinfo, trigdata);

	if (config->floor.store == NULL)
		source = FenceDeclaredToken(config, &token);
	else
		source = FenceDownstreamSource(config);
	if (source == FENCE_TOKEN_NONE && !TRIGGER_FIRED_BY_TRUNCATE(event))
		source = FenceRowToken(config, trigdata, &token);
	if (source == FENCE_TOKEN_NONE)
		FenceRejectNoToken(config, rel);

	if (config->floor.store != NULL)
		token = FenceDownstreamCheck(config, rel, source, token);
	else
	{
		row = FenceLockRow(config, source, &token);
		FenceCheck(config, rel, token, row);
	}

	if (TRIGGER_FIRED_BY_TRUNCATE(event))
		return PointerGetDatum(NULL);
	if (TRIGGER_FIRED_BY_DELETE(event))
		return PointerGetDatum(trigdata->tg_trigtuple);
	if (TRIGGER_FIRED_BY_INSERT(event))
		return PointerGetDatum(source == FENCE_TOKEN_ROW ? trigdata->tg_trigtuple :
							   FenceStamp(config, rel, trigdata->tg_trigtuple, token));
	return PointerGetDatum(source == FENCE_TOKEN_ROW ? trigdata->tg_newtuple :
						   FenceStamp(config, rel, trigdata->tg_newtuple, token));
}
