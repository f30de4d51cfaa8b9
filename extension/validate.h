/*-------------------------------------------------------------------------
 *
 * validate.h
 *	  Argument checks shared by the SQL-callable functions.
 *
 * Every check a caller can fail raises 22004 (a NULL where a value is
 * required) or 22023 (a value out of range), before anything is written.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_VALIDATE_H
#define PG_LEASE_VALIDATE_H

#include "pg_lease.h"

#include "common/int.h"
#include "fmgr.h"
#include "utils/builtins.h"

static inline void
LeaseRequireArg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
}

/* A lease name or holder: 1 to 255 bytes (text never holds a NUL). */
static inline void
LeaseCheckLabel(const char *what, int bytes)
{
	if (bytes < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", what)));
	if (bytes > LEASE_NAME_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be at most %d bytes long", what, LEASE_NAME_MAX_BYTES),
				 errdetail("The value is %d bytes long.", bytes)));
}

static inline text *
LeaseLabelArg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	text	   *value;

	LeaseRequireArg(fcinfo, argno, what);
	value = PG_GETARG_TEXT_PP(argno);
	LeaseCheckLabel(what, VARSIZE_ANY_EXHDR(value));
	return value;
}

static inline int64
LeaseEpochArg(FunctionCallInfo fcinfo, int argno)
{
	LeaseRequireArg(fcinfo, argno, "epoch");
	return PG_GETARG_INT64(argno);
}

/*
 * An interval as microseconds; false on overflow.  A month counts as 30
 * days and a day as 24 hours, so a lease lasts exactly its ttl whatever the
 * calendar or time zone does.
 */
static inline bool
LeaseIntervalUsec(const Interval *value, int64 *usec)
{
	int64		days_usec;
	int64		months_usec;

	return !(pg_mul_s64_overflow((int64) value->day, USECS_PER_DAY, &days_usec) ||
			 pg_mul_s64_overflow((int64) value->month, DAYS_PER_MONTH * USECS_PER_DAY, &months_usec) ||
			 pg_add_s64_overflow(value->time, days_usec, usec) ||
			 pg_add_s64_overflow(*usec, months_usec, usec));
}

/* A ttl as microseconds: positive and at most pg_lease.max_ttl. */
static inline int64
LeaseTtlArg(FunctionCallInfo fcinfo, int argno)
{
	int64		usec = 0;
	bool		ok;

	LeaseRequireArg(fcinfo, argno, "ttl");
	ok = LeaseIntervalUsec(PG_GETARG_INTERVAL_P(argno), &usec);

	if (ok && usec <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lease ttl must be positive")));
	if (!ok || usec > (int64) lease_max_ttl_ms * 1000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lease ttl must not exceed pg_lease.max_ttl"),
				 errdetail("pg_lease.max_ttl is %d ms.", lease_max_ttl_ms),
				 errhint("A superuser can raise pg_lease.max_ttl.")));
	return usec;
}

/* A lock delay as microseconds: zero or more, at most pg_lease.max_ttl. */
static inline int64
LeaseLockDelayArg(FunctionCallInfo fcinfo, int argno)
{
	int64		usec = 0;
	bool		ok;

	LeaseRequireArg(fcinfo, argno, "lock_delay");
	ok = LeaseIntervalUsec(PG_GETARG_INTERVAL_P(argno), &usec);

	if (ok && usec < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lease lock_delay must not be negative")));
	if (!ok || usec > (int64) lease_max_ttl_ms * 1000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lease lock_delay must not exceed pg_lease.max_ttl"),
				 errdetail("pg_lease.max_ttl is %d ms.", lease_max_ttl_ms)));
	return usec;
}

/* A ttl as an interval of pure time, the form the leases table stores. */
static inline Interval *
LeaseTtlInterval(int64 usec)
{
	Interval   *ttl = palloc0(sizeof(Interval));

	ttl->time = usec;
	return ttl;
}

#endif							/* PG_LEASE_VALIDATE_H */
