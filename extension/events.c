/*-------------------------------------------------------------------------
 *
 * events.c
 *	  The lease_events history and NOTIFY pg_lease.
 *
 * Both belong to the transaction that changes the lease, so an event is
 * recorded, and a notification delivered, exactly when the change commits
 * (notify_queue.c decides who sends it).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"
#include "notifier.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/json.h"
#include "utils/timestamp.h"

/* Which counter an event moves (counters.c). */
static LeaseCounterKind
LeaseEventCounter(const char *event)
{
	if (strcmp(event, "released") == 0)
		return LEASE_COUNT_RELEASE;
	if (strcmp(event, "revoked") == 0)
		return LEASE_COUNT_REVOKE;
	if (strcmp(event, "handover") == 0)
		return LEASE_COUNT_HANDOVER;
	if (strcmp(event, "evict") == 0)
		return LEASE_COUNT_EVICTION;
	return LEASE_COUNT_GRANT;	/* acquired, takeover */
}

static void
AppendJsonField(StringInfo buf, const char *key, const char *value)
{
	appendStringInfo(buf, ",\"%s\":", key);
	if (value == NULL)
		appendStringInfoString(buf, "null");
	else
		escape_json(buf, value);
}

/*
 * Record one grant, release, revoke, handover or eviction.  holder may be
 * NULL; pid is the evicted backend's, else 0.  The caller is connected to
 * SPI and has made sure the catalog cache is valid.  A 1.0 schema, before
 * ALTER EXTENSION pg_lease UPDATE, has no place for the 1.1 events: they
 * are only notified (and evictions logged).
 */
void
LeaseRecordEvent(const char *event, text *name, text *holder,
				 int64 epoch, TimestampTz expires_at, int pid)
{
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};
	StringInfoData payload;
	char		timestamp[MAXDATELEN + 1];
	char	   *name_str = text_to_cstring(name);
	char	   *holder_str = holder ? text_to_cstring(holder) : NULL;
	int			rc;

	LeaseCountText(name, LeaseEventCounter(event));

	values[0] = CStringGetTextDatum(event);
	values[1] = PointerGetDatum(name);
	values[2] = PointerGetDatum(holder);
	if (holder == NULL)
		nulls[2] = 'n';
	values[3] = Int64GetDatum(epoch);
	values[4] = TimestampTzGetDatum(expires_at);
	values[5] = LeaseCallerRoleName();
	values[6] = Int32GetDatum(pid);
	if (pid == 0)
		nulls[6] = 'n';

	if (LeaseSchema11() || pid == 0)
	{
		rc = SPI_execute_plan(LeaseGetPlan(LEASE_PLAN_EVENT), values, nulls, false, 0);
		if (rc != SPI_OK_INSERT)
			elog(ERROR, "pg_lease: recording the %s event failed: %s",
				 event, SPI_result_code_string(rc));
	}

	/* Retention: each new event of a lease removes its expired history. */
	if (lease_event_retention_s > 0)
	{
		Datum		prune[2];

		prune[0] = PointerGetDatum(name);
		prune[1] = TimestampTzGetDatum(GetCurrentTimestamp() -
									   (int64) lease_event_retention_s * USECS_PER_SEC);
		rc = SPI_execute_plan(LeaseGetPlan(LEASE_PLAN_PRUNE_EVENTS), prune, NULL, false, 0);
		if (rc != SPI_OK_DELETE)
			elog(ERROR, "pg_lease: pruning events failed: %s", SPI_result_code_string(rc));
	}

	initStringInfo(&payload);
	appendStringInfo(&payload, "{\"event\":\"%s\"", event);
	AppendJsonField(&payload, "name", name_str);
	AppendJsonField(&payload, "holder", holder_str);
	appendStringInfo(&payload, ",\"epoch\":" INT64_FORMAT, epoch);
	JsonEncodeDateTime(timestamp, TimestampTzGetDatum(expires_at), TIMESTAMPTZOID, NULL);
	AppendJsonField(&payload, "expires_at", timestamp);
	if (pid != 0)
		appendStringInfo(&payload, ",\"pid\":%d", pid);
	appendStringInfoChar(&payload, '}');

	LeaseNotify(name_str, payload.data);
	pfree(payload.data);
}
