/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The pg_lease.* configuration parameters.
 *
 * pg_lease.epoch is parsed once, when it is set, into a list of epochs that
 * the fence trigger reads without any further parsing.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

#include <limits.h>

#include "utils/guc.h"

/* Largest ttl a grant or renew may ask for (ms); default one day. */
int			lease_max_ttl_ms = 24 * 60 * 60 * 1000;

static char *lease_epoch_setting = NULL;
static const LeaseEpochList *lease_setting_epochs = NULL;

/* Enough for a process that holds many leases, small enough to scan. */
#define LEASE_EPOCH_LIST_MAX	64

static bool
check_epoch_list(char **newval, void **extra, GucSource source)
{
	const char *p = *newval ? *newval : "";
	LeaseEpochList *list;

	list = malloc(offsetof(LeaseEpochList, epochs) + sizeof(int64) * LEASE_EPOCH_LIST_MAX);
	if (list == NULL)
		return false;
	list->count = 0;

	for (;;)
	{
		char	   *end;
		long long	value;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0' && list->count == 0)
			break;				/* empty setting: no tokens */

		errno = 0;
		value = strtoll(p, &end, 10);
		if (end == p || errno == ERANGE || value <= 0)
		{
			GUC_check_errdetail("pg_lease.epoch must be a comma-separated list of positive epochs.");
			free(list);
			return false;
		}
		if (list->count == LEASE_EPOCH_LIST_MAX)
		{
			GUC_check_errdetail("pg_lease.epoch lists at most %d epochs.", LEASE_EPOCH_LIST_MAX);
			free(list);
			return false;
		}
		list->epochs[list->count++] = (int64) value;

		p = end;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			break;
		if (*p != ',')
		{
			GUC_check_errdetail("pg_lease.epoch must be a comma-separated list of positive epochs.");
			free(list);
			return false;
		}
		p++;
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

	DefineCustomStringVariable("pg_lease.epoch",
							   "Fencing tokens that this session's writes to fenced tables carry.",
							   "A comma-separated list of epochs; the fence trigger uses the one "
							   "that is the current epoch of the table's lease.",
							   &lease_epoch_setting,
							   "",
							   PGC_USERSET,
							   0,
							   check_epoch_list, assign_epoch_list, NULL);

	MarkGUCPrefixReserved("pg_lease");
}
