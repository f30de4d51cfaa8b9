/*-------------------------------------------------------------------------
 *
 * lease_events.c
 *	  The lease_events history and NOTIFY pg_lease.
 *
 * Both belong to the transaction that changes the lease, so an event is
 * recorded, and a notification delivered, exactly when the change commits
 * (notify_queue.c decides who sends it).
 *
 * Twins: lease_sql_record_event in sql/sql_edition/20_history.sql (the
 * same rows and payload, NOTIFY sent by the changing transaction); the test
 * double's store_state::notify in client/src/testing/lease_store.cpp.
 *
 *-------------------------------------------------------------------------
 */
#include "lease.h"
#include "notify.h"

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

/* Append the event to lease_events, directly or through SPI. */
static void
LeaseInsertEvent(const char *event, text *name, text *holder,
				 int64 epoch, TimestampTz expires_at, int pid)
{
	Datum		row[LEASE_EVENT_NATTS];
	bool		row_nulls[LEASE_EVENT_NATTS] = {0};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};

	row[LEASE_EVENT_COL_EVENT] = CStringGetTextDatum(event);
	row[LEASE_EVENT_COL_NAME] = PointerGetDatum(name);
	row[LEASE_EVENT_COL_HOLDER] = PointerGetDatum(holder);
	row_nulls[LEASE_EVENT_COL_HOLDER] = holder == NULL;
	row[LEASE_EVENT_COL_EPOCH] = Int64GetDatum(epoch);
	row[LEASE_EVENT_COL_EXPIRES_AT] = TimestampTzGetDatum(expires_at);
	row[LEASE_EVENT_COL_ROLE] = LeaseCallerRoleName();
	row[LEASE_EVENT_COL_PID] = Int32GetDatum(pid);
	row_nulls[LEASE_EVENT_COL_PID] = pid == 0;
	if (LeaseInsertEventDirect(row, row_nulls))
		return;

	values[0] = row[LEASE_EVENT_COL_EVENT];
	values[1] = PointerGetDatum(name);
	values[2] = PointerGetDatum(holder);
	if (holder == NULL)
		nulls[2] = 'n';
	values[3] = Int64GetDatum(epoch);
	values[4] = TimestampTzGetDatum(expires_at);
	values[5] = row[LEASE_EVENT_COL_ROLE];
	values[6] = Int32GetDatum(pid);
	if (pid == 0)
		nulls[6] = 'n';
	(void) LeaseExecute(LEASE_PLAN_EVENT, values, nulls, SPI_OK_INSERT);
}

/*
 * Record one grant, release, revoke, handover or eviction.  holder may be
 * NULL; pid is the evicted backend's, else 0.  The caller has made sure
 * the catalog cache is valid.  A 1.0 schema, before ALTER EXTENSION
 * pg_lease UPDATE, has no place for the 1.1 events: they are only notified
 * (and evictions logged).
 */
void
LeaseRecordEvent(const char *event, text *name, text *holder,
				 int64 epoch, TimestampTz expires_at, int pid)
{
	StringInfoData payload;
	char		timestamp[MAXDATELEN + 1];
	char	   *name_str = text_to_cstring(name);
	char	   *holder_str = holder ? text_to_cstring(holder) : NULL;

	LeaseCountText(name, LeaseEventCounter(event));

	if (LeaseSchema11() || pid == 0)
		LeaseInsertEvent(event, name, holder, epoch, expires_at, pid);
	LeasePruneEvents(name, name_str);

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
