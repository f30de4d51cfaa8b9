/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The pg_lease.* configuration parameters.
 *
 * pg_lease.epoch is parsed once, when it is set, into a list of epochs that
 * the fence trigger reads without any further parsing.
 *
 * Twins: lease_sql_settings, lease_sql_setting and lease_sql_setting_ms in
 * sql/sql_edition/10_base.sql.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

#include <limits.h>

#include "epoch_list.h"
#include "utils/guc.h"

/* Largest ttl a grant or renew may ask for (ms); default one day. */
int			lease_max_ttl_ms = 24 * 60 * 60 * 1000;

/* Lease names one role may create (superusers excepted); 0: no limit. */
int			lease_max_leases_per_role = 10000;

/* How long a lease's events are kept (s); 0: forever (lease_retention.c). */
int			lease_event_retention_s = 30 * 24 * 60 * 60;

/*
 * How long a change of holder waits for the open fenced transactions of the
 * grant it ends before it ends them (ms); 0: as long as they take.
 */
int			lease_takeover_timeout_ms = 1000;

/* This database's identity as a lease store; empty: the default (floors.c). */
char	   *lease_store_id_setting = NULL;

static char *lease_epoch_setting = NULL;
static const LeaseEpochList *lease_setting_epochs = NULL;

static bool
check_epoch_list(char **newval, void **extra, GucSource source)
{
	LeaseEpochList *list;
	const char *error = NULL;

	list = guc_malloc(LOG, offsetof(LeaseEpochList, epochs) + sizeof(int64) * LEASE_EPOCH_LIST_MAX);
	if (list == NULL)
		return false;
	if (!LeaseParseEpochList(*newval, list->epochs, LEASE_EPOCH_LIST_MAX,
							 &list->count, &error))
	{
		GUC_check_errdetail("%s", error);
		guc_free(list);
		return false;
	}
	*extra = list;
	return true;
}

static void
assign_epoch_list(const char *newval, void *extra)
{
	lease_setting_epochs = (const LeaseEpochList *) extra;
}

/* The epochs listed in pg_lease.epoch; count is 0 when it is empty. */
const LeaseEpochList *
LeaseSettingEpochs(void)
{
	static const LeaseEpochList empty = {0};

	return lease_setting_epochs ? lease_setting_epochs : &empty;
}

void
LeaseDefineSettings(void)
{
	DefineCustomIntVariable("pg_lease.max_ttl",
							"Largest ttl that lease_acquire and lease_renew accept.",
							NULL,
							&lease_max_ttl_ms,
							24 * 60 * 60 * 1000,
							1,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_lease.max_leases_per_role",
							"Lease names a role other than a superuser may create.",
							"Counts the leases whose latest grant the role made; 0 means no limit.",
							&lease_max_leases_per_role,
							10000,
							0,
							INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_lease.event_retention",
							"How long lease_events keeps the events of a lease.",
							"Older events of a lease are deleted when it gets a new event, by each session "
							"at most once per tenth of the retention; 0 keeps them forever.",
							&lease_event_retention_s,
							30 * 24 * 60 * 60,
							0,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_lease.takeover_timeout",
							"How long a change of holder waits for the fenced transactions of the grant it ends.",
							"A grant of a free or expired lease, a release, a revoke or a handover waits this long "
							"for open fenced transactions of the old epoch, then cancels or terminates them. "
							"0 waits as long as they take.",
							&lease_takeover_timeout_ms,
							1000,
							0,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomStringVariable("pg_lease.store_id",
							   "This database's identity as a lease store, as lease_store_id() returns it.",
							   "Empty: the cluster's system identifier and the database name. Set it (for "
							   "the database, with ALTER DATABASE) to keep the identity across pg_upgrade "
							   "or a dump and restore, which change the system identifier.",
							   &lease_store_id_setting,
							   "",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("pg_lease.epoch",
							   "Fencing tokens that this session's writes to fenced tables carry.",
							   "A comma-separated list of epochs; the fence trigger uses the one "
							   "that is the current epoch of the table's lease.",
							   &lease_epoch_setting,
							   "",
							   PGC_USERSET,
							   0,
							   check_epoch_list, assign_epoch_list, NULL);
}
