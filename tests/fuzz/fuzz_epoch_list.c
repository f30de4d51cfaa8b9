/*
 * libFuzzer target: the pg_lease.epoch parser (extension/epoch_list.c).
 * Invariants: it never reads past the input or writes past the array; on
 * success every epoch is positive, and printing the list and parsing it
 * again gives the same list.
 */
#include "epoch_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text = malloc(size + 1);
	int64_t		epochs[LEASE_EPOCH_LIST_MAX];
	int64_t		again[LEASE_EPOCH_LIST_MAX];
	int			count = -1;
	int			count_again = -1;
	const char *error = NULL;
	char		printed[LEASE_EPOCH_LIST_MAX * 21 + 1] = "";
	size_t		used = 0;

	memcpy(text, data, size);
	text[size] = '\0';				/* GUC values are C strings */

	if (LeaseParseEpochList(text, epochs, LEASE_EPOCH_LIST_MAX, &count, &error))
	{
		if (count < 0 || count > LEASE_EPOCH_LIST_MAX)
			abort();
		for (int i = 0; i < count; i++)
		{
			if (epochs[i] <= 0)
				abort();
			used += (size_t) snprintf(printed + used, sizeof(printed) - used,
									  i ? ",%lld" : "%lld", (long long) epochs[i]);
		}
		if (!LeaseParseEpochList(printed, again, LEASE_EPOCH_LIST_MAX, &count_again, &error) ||
			count_again != count || memcmp(epochs, again, sizeof(int64_t) * (size_t) count) != 0)
			abort();
	}
	else if (error == NULL || error[0] == '\0')
		abort();

	free(text);
	return 0;
}
