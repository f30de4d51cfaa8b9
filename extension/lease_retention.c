/*-------------------------------------------------------------------------
 *
 * lease_retention.c
 *	  pg_lease.event_retention: deleting a lease's expired history.
 *
 * A lease's events older than the retention are deleted when the lease
 * gets a new event.  Running that DELETE for every event doubled the cost
 * of a grant or release, so each session deletes a given lease's expired
 * events at most once per tenth of the retention, remembering when it
 * last did in a small table of its own.  Right after an event of a lease,
 * the lease keeps no event older than 1.1 times the retention (before
 * its newest event): either this event's session pruned it now, or it
 * did less than a tenth of the retention ago.  A prune rolled back with
 * its transaction or subtransaction would break that, so a rollback after
 * a prune makes the session forget every lease it pruned.
 *
 * Twin: the prune in lease_sql_record_event (sql/sql_edition/20_history.sql),
 * which deletes a lease's expired events at each of its events.
 *
 *-------------------------------------------------------------------------
 */
#include "lease.h"

#include "access/xact.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

/* How many leases a session remembers; when full, it forgets them all. */
#define LEASE_PRUNED_MAX	256

typedef struct LeasePruned
{
	char		name[LEASE_NAME_MAX_BYTES + 1];
	TimestampTz at;				/* when this session last pruned the lease */
} LeasePruned;

static HTAB *lease_pruned = NULL;
static bool lease_pruned_in_xact = false;	/* pruned since the last commit */
static bool lease_pruned_stale = false; /* a prune may have rolled back */

static void
LeaseRetentionXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (lease_pruned_in_xact)
				lease_pruned_stale = true;
			lease_pruned_in_xact = false;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			lease_pruned_in_xact = false;
			break;
		default:
			break;
	}
}

static void
LeaseRetentionSubXactCallback(SubXactEvent event, SubTransactionId subid,
							  SubTransactionId parent, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && lease_pruned_in_xact)
		lease_pruned_stale = true;
}

void
LeaseRetentionInit(void)
{
	RegisterXactCallback(LeaseRetentionXactCallback, NULL);
	RegisterSubXactCallback(LeaseRetentionSubXactCallback, NULL);
}

static void
LeasePrunedReset(void)
{
	HASHCTL		info;

	if (lease_pruned != NULL)
		hash_destroy(lease_pruned);
	info.keysize = LEASE_NAME_MAX_BYTES + 1;
	info.entrysize = sizeof(LeasePruned);
	lease_pruned = hash_create("pg_lease pruned leases", LEASE_PRUNED_MAX, &info,
							   HASH_ELEM | HASH_STRINGS);
	lease_pruned_stale = false;
}

/*
 * A new event of lease name (name_str as a C string) was recorded: delete
 * its events older than the retention, unless this session did less than a
 * tenth of the retention ago.
 */
void
LeasePruneEvents(text *name, const char *name_str)
{
	TimestampTz now;
	int64		retention_usec = (int64) lease_event_retention_s * USECS_PER_SEC;
	LeasePruned *entry;
	Datum		values[2];

	if (retention_usec <= 0)
		return;
	if (lease_pruned == NULL || lease_pruned_stale)
		LeasePrunedReset();

	now = GetCurrentTimestamp();
	entry = hash_search(lease_pruned, name_str, HASH_FIND, NULL);
	/* a clock that went back prunes at once */
	if (entry != NULL && entry->at <= now && now - entry->at < retention_usec / 10)
		return;
	if (entry == NULL)
	{
		if (hash_get_num_entries(lease_pruned) >= LEASE_PRUNED_MAX)
			LeasePrunedReset();
		entry = hash_search(lease_pruned, name_str, HASH_ENTER, NULL);
	}
	entry->at = 0;				/* not pruned, should the DELETE fail */

	values[0] = PointerGetDatum(name);
	values[1] = TimestampTzGetDatum(now - retention_usec);
	(void) LeaseExecute(LEASE_PLAN_PRUNE_EVENTS, values, NULL, SPI_OK_DELETE);
	entry->at = now;
	lease_pruned_in_xact = true;
}
