/*-------------------------------------------------------------------------
 *
 * validate.h
 *	  Argument checks shared by the SQL-callable functions.
 *
 * Every check a caller can fail raises 22004 (a NULL where a value is
 * required) or 22023 (a value out of range), before anything is written.
 *
 * Twins (kept equal by tests/contract/cases.json): lease_sql_label,
 * lease_sql_interval_us and lease_sql_epoch_arg in
 * sql/sql_edition/10_base.sql; check_label, check_ttl and check_grant in
 * client/src/testing/lease_store.cpp.
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

/*
 * An interval argument as microseconds, at most pg_lease.max_ttl: above
 * zero, or with zero_ok at least zero.  what names it in the messages.
 */
static inline int64
LeaseIntervalArg(FunctionCallInfo fcinfo, int argno, const char *what, bool zero_ok)
{
	int64		usec = 0;
	bool		ok;

	LeaseRequireArg(fcinfo, argno, what);
	ok = LeaseIntervalUsec(PG_GETARG_INTERVAL_P(argno), &usec);

	if (ok && (zero_ok ? usec < 0 : usec <= 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 zero_ok ? errmsg("lease %s must not be negative", what) :
				 errmsg("lease %s must be positive", what)));
	if (!ok || usec > (int64) lease_max_ttl_ms * 1000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lease %s must not exceed pg_lease.max_ttl", what),
				 errdetail("pg_lease.max_ttl is %d ms.", lease_max_ttl_ms),
				 errhint("A superuser can raise pg_lease.max_ttl.")));
	return usec;
}

/* A ttl: positive.  A lock delay: zero or more. */
#define LeaseTtlArg(fcinfo, argno)			LeaseIntervalArg(fcinfo, argno, "ttl", false)
#define LeaseLockDelayArg(fcinfo, argno)	LeaseIntervalArg(fcinfo, argno, "lock_delay", true)

/* A ttl as an interval of pure time, the form the leases table stores. */
static inline Interval *
LeaseTtlInterval(int64 usec)
{
	Interval   *ttl = palloc0(sizeof(Interval));

	ttl->time = usec;
	return ttl;
}

#endif							/* PG_LEASE_VALIDATE_H */
