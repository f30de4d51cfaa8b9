/*-------------------------------------------------------------------------
 *
 * fence_downstream.c
 *	  The fence trigger's downstream half: a table fenced by a lease of
 *	  another database, through the floor this database keeps (floors.c).
 *
 * The token is declared the same ways as for the local fence (lease_use,
 * pg_lease.epoch, the epoch column: fence.c), and must be at least the
 * floor.  Expiry cannot be known here, so there is no LS002: a paused
 * leader is shut out once its successor raised the floor.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

#include "utils/builtins.h"
#include "utils/rel.h"

static void
DownstreamCount(const LeaseFloorKey *key, LeaseCounterKind kind)
{
	LeaseCount(key->name, strlen(key->name), kind);
}

/*
 * Step 1 for a downstream fence, whose lease this database cannot see:
 * from a list in pg_lease.epoch, only the epoch that is the floor is
 * certain to be this lease's (another listed epoch may be another lease's,
 * and would raise this floor past its holder).  A list without it is
 * refused: below the floor as stale, else as carrying no usable token.
 */
bool
LeaseDownstreamToken(const LeaseFloorKey *key, Relation rel, int64 *token)
{
	const LeaseEpochList *list;
	int64		floor;
	int64		highest = 0;
	int			i;

	if (LeaseDeclaredToken(key->name, token))
		return true;
	list = LeaseSettingEpochs();
	if (list->count == 0)
		return false;
	*token = list->epochs[0];
	if (list->count == 1)
		return true;

	floor = LeaseFloorPeek(key);
	for (i = 0; i < list->count; i++)
	{
		if (list->epochs[i] == floor)
		{
			*token = floor;
			return true;
		}
		highest = Max(highest, list->epochs[i]);
	}
	*token = highest;
	if (highest < floor)
		return true;		/* refused as stale by the check */
	DownstreamCount(key, LEASE_COUNT_REJECTED_NO_TOKEN);
	ereport(ERROR,
			(errcode(ERRCODE_LEASE_NO_TOKEN),
			 errmsg("write to fenced table \"%s\" carries no usable fencing token for lease \"%s\"",
					RelationGetRelationName(rel), key->name),
			 errdetail("pg_lease.epoch lists several epochs, and none is the floor (" INT64_FORMAT
					   ") of lease \"%s\" of store \"%s\".", floor, key->name, key->store),
			 errhint("Call lease_use('%s', <epoch>) in the transaction, or raise the floor first with lease_raise().",
					 key->name)));
	return false;			/* keep compiler quiet */
}

/*
 * The downstream check: the token must be at least the floor; above it,
 * it raises the floor in this transaction.  The first write of the
 * transaction pays; further rows find the pass kept.
 */
void
LeaseDownstreamCheck(const LeaseFloorKey *key, Relation rel, int64 token)
{
	int64		floor;

	if (LeaseFloorPassed(key, token))
		return;
	floor = LeaseFloorCheck(key, token);
	if (floor != 0)
	{
		DownstreamCount(key, LEASE_COUNT_REJECTED_STALE);
		ereport(ERROR,
				(errcode(ERRCODE_LEASE_STALE_EPOCH),
				 errmsg("fenced write to \"%s\" rejected: epoch " INT64_FORMAT " of lease \"%s\" is below its floor",
						RelationGetRelationName(rel), token, key->name),
				 errdetail("The floor of lease \"%s\" of store \"%s\" is " INT64_FORMAT
						   "; a newer grant replaced the writer's.",
						   key->name, key->store, floor),
				 errhint("The writer no longer leads: it must stop and acquire the lease again.")));
	}
	LeaseFloorKeep(key, token);
}
