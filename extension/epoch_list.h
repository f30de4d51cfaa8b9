/*-------------------------------------------------------------------------
 *
 * epoch_list.h
 *	  Parser of the pg_lease.epoch setting, free of server dependencies so
 *	  that it can be fuzzed on its own (tests/fuzz).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_EPOCH_LIST_H
#define PG_LEASE_EPOCH_LIST_H

#include <stdbool.h>
#include <stdint.h>

/* Enough for a process that holds many leases, small enough to scan. */
#define LEASE_EPOCH_LIST_MAX	64

/*
 * Parse "e1, e2, ..." (positive decimal epochs, spaces and tabs around
 * commas allowed; empty means none) into epochs[0..*count).  On failure
 * returns false and sets *error to a sentence for the user.
 */
extern bool LeaseParseEpochList(const char *text, int64_t *epochs, int max,
								int *count, const char **error);

/* Whether epoch is listed; the largest listed (0 for none). */
extern bool LeaseEpochListed(const int64_t *epochs, int count, int64_t epoch);
extern int64_t LeaseEpochListHighest(const int64_t *epochs, int count);

#endif							/* PG_LEASE_EPOCH_LIST_H */
