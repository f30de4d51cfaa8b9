/*-------------------------------------------------------------------------
 *
 * epoch_list.c
 *	  Parser of the pg_lease.epoch setting.
 *
 * Deliberately plain C with no server headers: the server calls it from
 * the setting's check hook, and the fuzzer links it alone.
 *
 * Twin: lease_sql_setting_epochs in sql/sql_edition/60_fence.sql.
 *
 *-------------------------------------------------------------------------
 */
#include "epoch_list.h"

#include <errno.h>
#include <stdlib.h>

static const char *
SkipBlanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

bool
LeaseParseEpochList(const char *text, int64_t *epochs, int max,
					int *count, const char **error)
{
	const char *p = SkipBlanks(text ? text : "");

	*count = 0;
	if (*p == '\0')
		return true;			/* empty: no tokens */

	for (;;)
	{
		char	   *end;
		long long	value;

		/* strtoll would accept a sign and leading blanks of its own */
		if (*p < '0' || *p > '9')
			break;
		errno = 0;
		value = strtoll(p, &end, 10);
		if (errno == ERANGE || value <= 0)
			break;
		if (*count == max)
		{
			*error = "pg_lease.epoch lists too many epochs.";
			return false;
		}
		epochs[(*count)++] = (int64_t) value;

		p = SkipBlanks(end);
		if (*p == '\0')
			return true;
		if (*p != ',')
			break;
		p = SkipBlanks(p + 1);
	}
	*error = "pg_lease.epoch must be a comma-separated list of positive epochs.";
	return false;
}

/*
 * The token a list stands for, for both fences (fence_trigger.c,
 * floors_fence.c): the listed epoch that is the lease's current one (its
 * grant, or its floor downstream), else the largest listed, which is then
 * refused but named in the message.
 */
bool
LeaseEpochListed(const int64_t *epochs, int count, int64_t epoch)
{
	int			i;

	for (i = 0; i < count; i++)
		if (epochs[i] == epoch)
			return true;
	return false;
}

int64_t
LeaseEpochListHighest(const int64_t *epochs, int count)
{
	int64_t		highest = 0;
	int			i;

	for (i = 0; i < count; i++)
		if (epochs[i] > highest)
			highest = epochs[i];
	return highest;
}
