/*-------------------------------------------------------------------------
 *
 * pg_lease.h
 *	  The base every family of files stands on: what they all share (our
 *	  SQLSTATEs, the epoch layout, the tables' columns, the lock tag classes)
 *	  and the files they all call: settings.c (pg_lease.* parameters),
 *	  catalog.c (the extension's objects and prepared statements), shmem.c
 *	  (shared memory, when preloaded), counters.c, epoch.c (fencing tokens)
 *	  and xact_memo.c (what a transaction remembers, by savepoint).
 *
 * Above it, one header per family: lease.h (lease_*.c: the lease functions
 * and the rows they write), fence.h (fence_*.c: the fence trigger and its
 * locks), floors.h (floors*.c: downstream fences), notify.h (notify*.c,
 * notifier.c: NOTIFY off the commit path).  Beside it: pg_compat.h (the
 * differences between PostgreSQL majors), validate.h (argument checks),
 * epoch_list.h (pg_lease.epoch's parser, free of server headers).
 *
 * A lease is a row of the leases table; its epoch is the fencing token of the
 * latest grant.  Functions that change leases run as SECURITY DEFINER with a
 * pinned search_path, and every query they prepare names its objects by
 * schema, so neither the caller's search_path nor its privileges matter.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_H
#define PG_LEASE_H

#include "postgres.h"
#include "pg_compat.h"

#include "access/xact.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"

/* Fenced write rejected: a newer epoch was granted (stale leader). */
#define ERRCODE_LEASE_STALE_EPOCH	MAKE_SQLSTATE('L','S','0','0','1')
/* Fenced write rejected: latest epoch, but expired, released or revoked. */
#define ERRCODE_LEASE_NOT_HELD		MAKE_SQLSTATE('L','S','0','0','2')
/* Fenced write rejected: the write carries no token. */
#define ERRCODE_LEASE_NO_TOKEN		MAKE_SQLSTATE('L','S','0','0','3')

#define LEASE_NAME_MAX_BYTES		255

/*
 * Epoch layout: the era in the high bits, a counter from the lease_epoch_seq
 * sequence in the low 47.  The era is the WAL timeline plus a base that
 * lease_epoch_mark keeps (epoch.c).  A promoted standby writes on a newer
 * timeline, so its epochs exceed every epoch of the old primary, even ones
 * whose WAL never reached the standby; the base keeps eras growing across a
 * restore, pg_upgrade or pg_resetwal, which start again at timeline 1.
 */
#define LEASE_EPOCH_COUNTER_BITS	47
#define LEASE_EPOCH_COUNTER_MAX		((INT64CONST(1) << LEASE_EPOCH_COUNTER_BITS) - 1)
#define LEASE_EPOCH_TIMELINE_MAX	0xFFFF

/*
 * The columns of leases, as lease_row_lock.c returns them in a slot
 * (0-based).
 */
#define LEASE_COL_NAME			0
#define LEASE_COL_HOLDER		1
#define LEASE_COL_EPOCH			2
#define LEASE_COL_ACQUIRED_AT	3
#define LEASE_COL_RENEWED_AT	4
#define LEASE_COL_EXPIRES_AT	5
#define LEASE_COL_TTL			6
#define LEASE_COL_TRANSITIONS	7
#define LEASE_COL_OWNER_ROLE	8
#define LEASE_COL_LOCK_DELAY	9	/* 1.1; absent from a 1.0 schema */
#define LEASE_NATTS				10

/* The columns of lease_events (1.1 and later). */
#define LEASE_EVENT_COL_ID			0
#define LEASE_EVENT_COL_TIME		1
#define LEASE_EVENT_COL_EVENT		2
#define LEASE_EVENT_COL_NAME		3
#define LEASE_EVENT_COL_HOLDER		4
#define LEASE_EVENT_COL_EPOCH		5
#define LEASE_EVENT_COL_EXPIRES_AT	6
#define LEASE_EVENT_COL_ROLE		7
#define LEASE_EVENT_COL_PID			8
#define LEASE_EVENT_NATTS			9

/*
 * Lock tag classes: our locks are advisory tags (database, two 32-bit keys)
 * whose fourth field is one of these; pg_advisory_lock uses 1 and 2.
 *   - the fence lock of a grant (fence_lock.c), keyed by the epoch's high
 *     and low bits: "LS";
 *   - the floor lock of a token downstream (floors.c), keyed by a 64-bit
 *     hash of (store, name, epoch): "LF";
 *   - the lock that serializes moves of the epoch mark (epoch.c), keys 0
 *     and 0: "LE".
 */
#define LEASE_LOCKTAG_CLASS			0x4C53
#define LEASE_FLOOR_LOCKTAG_CLASS	0x4C46
#define LEASE_ERA_LOCKTAG_CLASS		0x4C45

/* settings.c: the pg_lease.* parameters */
typedef struct LeaseEpochList
{
	int			count;
	int64		epochs[FLEXIBLE_ARRAY_MEMBER];
} LeaseEpochList;

extern int	lease_max_ttl_ms;
extern int	lease_max_leases_per_role;
extern int	lease_event_retention_s;
extern int	lease_takeover_timeout_ms;
extern char *lease_store_id_setting;
extern void LeaseDefineSettings(void);
extern const LeaseEpochList *LeaseSettingEpochs(void);

/* catalog.c: the extension's objects and the statements prepared on them */
typedef enum LeasePlan
{
	LEASE_PLAN_INSERT,			/* first grant of a name */
	LEASE_PLAN_GRANT,			/* new epoch for a free or expired lease */
	LEASE_PLAN_EXTEND,			/* renew, or the holder acquires again */
	LEASE_PLAN_FREE,			/* release or revoke */
	LEASE_PLAN_EVENT,			/* append to lease_events */
	LEASE_PLAN_PRUNE_EVENTS,	/* a lease's events past retention */
	LEASE_PLAN_COUNT_ROLE,		/* leases whose latest grant a role made */
	LEASE_PLAN_FLOOR_INSERT,	/* the first floor of (store, name) */
	LEASE_PLAN_FLOOR_UPDATE,	/* raise a floor, unless its row is locked */
	LEASE_PLAN_ERA_READ,		/* the epoch mark (1.5) */
	LEASE_PLAN_ERA_RECORDED,	/* the highest epoch in leases and lease_events */
	LEASE_PLAN_ERA_WRITE,		/* move the epoch mark */
	LEASE_PLAN_COUNT
} LeasePlan;

extern void LeaseCatalogInit(void);
extern void LeaseCatalogEnsure(Oid member_func);
extern SPIPlanPtr LeaseGetPlan(LeasePlan plan);
extern uint64 LeaseExecute(LeasePlan plan, Datum *values, const char *nulls,
						   int expected);
extern Oid	LeaseTableRelid(void);
extern Oid	LeaseEventsRelid(void);
extern Oid	LeaseEpochSequence(void);
extern Oid	LeaseCallerRole(void);
extern Datum LeaseCallerRoleName(void);
extern bool LeaseCallerIsSuperuser(void);
extern bool LeaseSchema11(void);
extern Oid	LeaseUpgradesRelid(void);
extern Oid	LeaseFloorsRelid(void);
extern Oid	LeaseEpochMarkRelid(void);

/* shmem.c: the parts of pg_lease in shared memory (when preloaded) */
typedef struct LeaseShmemPart
{
	const char *name;			/* of its ShmemInitStruct */
	Size		(*size) (void);
	Size		(*extra) (void);	/* more, for what init allocates; or NULL */
	const char *tranche;		/* a named LWLock tranche of one lock, or NULL */
	void		(*init) (void *memory, bool found); /* under AddinShmemInitLock */
} LeaseShmemPart;

extern void LeaseShmemRegister(const LeaseShmemPart *part);

/* counters.c: per-lease counters in shared memory (when preloaded) */
typedef enum LeaseCounterKind
{
	LEASE_COUNT_GRANT,
	LEASE_COUNT_RENEWAL,
	LEASE_COUNT_RELEASE,
	LEASE_COUNT_REVOKE,
	LEASE_COUNT_HANDOVER,
	LEASE_COUNT_EVICTION,
	LEASE_COUNT_REJECTED_STALE,	/* LS001 */
	LEASE_COUNT_REJECTED_NOT_HELD,	/* LS002 */
	LEASE_COUNT_REJECTED_NO_TOKEN,	/* LS003 */
	LEASE_COUNTER_KINDS
} LeaseCounterKind;

extern void LeaseCountersInit(void);
extern void LeaseCount(const char *name, int len, LeaseCounterKind kind);
extern void LeaseCountText(text *name, LeaseCounterKind kind);

/* epoch.c: the next epoch, drawn under the lease row's lock */
extern int64 LeaseNextEpoch(void);

/* A lease row as the fences keep it (fence.h), and a floor pass its epoch */
typedef struct LeaseRowState
{
	int64		epoch;
	bool		held;			/* holder is not null */
	TimestampTz expires_at;
} LeaseRowState;

/* xact_memo.c: what a transaction remembers, savepoint by savepoint */
typedef struct LeaseXactMemo
{
	struct LeaseXactMemo *next;
	SubTransactionId subid;		/* the subtransaction that made it */
	LeaseRowState state;		/* of a token or a floor pass: the epoch */
	char		key[FLEXIBLE_ARRAY_MEMBER];
} LeaseXactMemo;

extern LeaseXactMemo *LeaseXactMemoPush(LeaseXactMemo **memo, Size len);
extern void LeaseXactMemoDrop(LeaseXactMemo **link);
extern void LeaseXactMemoAtEnd(LeaseXactMemo **memo, XactEvent event);
extern void LeaseXactMemoAtSubEnd(LeaseXactMemo **memo, SubXactEvent event,
								  SubTransactionId subid, SubTransactionId parent);

#endif							/* PG_LEASE_H */
