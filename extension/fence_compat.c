/*-------------------------------------------------------------------------
 *
 * fence_compat.c
 *	  Whether fenced writers must also key-share-lock the lease row, as 1.2
 *	  did, because backends running the 1.2 library may still be there.
 *
 * A change of holder made by a 1.2 backend waits only for row locks, not
 * for 1.3's fence lock in the lock manager.  After an update without a
 * server restart, such backends may run beside new ones, so until none can
 * be left, new fenced writers take the row lock as well (first, then the
 * fence lock; see fence_xact.c), and every change of holder waits for both
 * kinds (lease_row.c).  None can be left when
 *   - the library was preloaded: every backend runs the code the
 *     postmaster loaded, the same as this one; or
 *   - the schema is 1.3 or later, and no other backend of this database
 *     started before the update to 1.3 (lease_upgrades) is still running;
 *     one that started before it may have loaded the old library.
 * The answer is looked up at most once a second while it is "yes", and
 * never again once it is "no": that is the fast path, one branch.
 *
 *-------------------------------------------------------------------------
 */
#include "fence.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#define LEASE_COMPAT_CHECK_INTERVAL_USEC	USECS_PER_SEC

/* Set by _PG_init in the postmaster, inherited by every backend. */
bool		lease_preloaded = false;

static bool compat_ended = false;
static TimestampTz compat_next_check = 0;

/* When this database's pg_lease was updated to 1.3, or 0 if it was not. */
static TimestampTz
LeaseUpdatedTo13At(Oid upgrades)
{
	char	   *sql;
	bool		isnull;
	Datum		value;
	TimestampTz at = 0;

	sql = psprintf("SELECT pg_catalog.max(upgraded_at) FROM %s.%s"
				   " WHERE version OPERATOR(pg_catalog.=) '1.3'",
				   quote_identifier(get_namespace_name(get_rel_namespace(upgrades))),
				   quote_identifier(get_rel_name(upgrades)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "pg_lease: SPI_connect failed");
	if (SPI_execute(sql, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "pg_lease: reading lease_upgrades failed");
	value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		at = DatumGetTimestampTz(value);
	SPI_finish();
	pfree(sql);
	return at;
}

/* Whether another backend of this database started before since. */
static bool
LeaseBackendsStartedBefore(TimestampTz since)
{
	int			count = pgstat_fetch_stat_numbackends();
	int			i;

	for (i = 1; i <= count; i++)
	{
		LocalPgBackendStatus *local = LeaseLocalBackendStatus(i);
		PgBackendStatus *status;

		if (local == NULL)
			continue;
		status = &local->backendStatus;
		if (status->st_procpid != MyProcPid &&
			status->st_backendType == B_BACKEND &&
			status->st_databaseid == MyDatabaseId &&
			status->st_proc_start_timestamp < since)
			return true;
	}
	return false;
}

static bool
LeaseCompatNeeded(void)
{
	Oid			upgrades = LeaseUpgradesRelid();
	TimestampTz updated_at;

	if (lease_preloaded)
		return false;
	/* a 1.2 schema: a 1.2 library may be loaded anywhere */
	if (!OidIsValid(upgrades))
		return true;
	updated_at = LeaseUpdatedTo13At(upgrades);
	return updated_at != 0 && LeaseBackendsStartedBefore(updated_at);
}

bool
LeaseFenceRowLockNeeded(void)
{
	TimestampTz now;

	if (likely(compat_ended))
		return false;
	now = GetCurrentTimestamp();
	if (now < compat_next_check)
		return true;
	compat_next_check = now + LEASE_COMPAT_CHECK_INTERVAL_USEC;
	if (LeaseCompatNeeded())
		return true;
	compat_ended = true;
	return false;
}
