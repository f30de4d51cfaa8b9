/*-------------------------------------------------------------------------
 *
 * pg_compat.h
 *	  Every difference between the PostgreSQL majors pg_lease builds on
 *	  (13 to 18), in one place.
 *
 * The sources are written against the newest interfaces; where an older
 * major lacks a name, it is defined here under that same name, and where a
 * call's arguments changed, a Lease* wrapper takes what every major can
 * give.  No other file tests PG_VERSION_NUM.  (fence_compat.c is something
 * else: schema 1.2 compatibility.)
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_PG_COMPAT_H
#define PG_LEASE_PG_COMPAT_H

#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/tableam.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "storage/ipc.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/sinvaladt.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/tuplestore.h"

#if PG_VERSION_NUM < 130000
#error "pg_lease needs PostgreSQL 13 or later"
#endif

/*
 * 14 moved the backend status array and the wait events out of pgstat.h
 * into headers of their own.
 */
#if PG_VERSION_NUM >= 140000
#include "utils/backend_status.h"
#include "utils/wait_event.h"
#else
#include "pgstat.h"
#endif

/*
 * 18 replaced pg_attribute_noreturn(), written after a declaration, with
 * pg_noreturn, written before it.  GCC and Clang take the attribute in
 * front as well, so the older majors use it there.
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * Before 14, hash_create took string keys whenever neither HASH_BLOBS nor
 * HASH_FUNCTION was given; 14 made it a flag of its own.
 */
#ifndef HASH_STRINGS
#define HASH_STRINGS 0
#endif

/*
 * A setting's check hook hands its extra to the GUC machinery, which frees
 * it: with free() up to 15, with pfree() from 16 on (GUC memory became a
 * memory context; malloc'd memory makes that pfree fail at the next
 * COMMIT).  guc_malloc gives what each major frees; before 16 it is plain
 * malloc (NULL on failure, no message).
 */
#if PG_VERSION_NUM < 160000
#define guc_malloc(elevel, size)	malloc(size)
#define guc_free(ptr)				free(ptr)
#endif

/* MarkGUCPrefixReserved is 15's name for EmitWarningsOnPlaceholders. */
#if PG_VERSION_NUM < 150000
#define MarkGUCPrefixReserved(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/*
 * The timeline new WAL is written on.  Before 15 a backend kept it in
 * ThisTimeLineID, brought up to date by RecoveryInProgress() once it sees
 * recovery (a standby's, before a promotion) has ended; 15 reads it from
 * shared memory.
 */
#if PG_VERSION_NUM < 150000
static inline TimeLineID
GetWALInsertionTimeLine(void)
{
	(void) RecoveryInProgress();
	return ThisTimeLineID;
}
#endif

/*
 * A set-returning function's tuplestore, in materialize mode.  15 has
 * InitMaterializedSRF; this is what it does with flags 0.
 */
#if PG_VERSION_NUM < 150000
static inline void
InitMaterializedSRF(FunctionCallInfo fcinfo, bits32 flags)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext old;
	TupleDesc	desc;

	Assert(flags == 0);
	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		(rsinfo->allowedModes & SFRM_Materialize) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("materialize mode required, but it is not allowed in this context")));
	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = tuplestore_begin_heap(true, false, work_mem);
	rsinfo->setDesc = desc;
	MemoryContextSwitchTo(old);
}
#endif

/*
 * Shared memory requests.  15 added shmem_request_hook, run once every
 * library's _PG_init is done; before it, a library asks from _PG_init
 * itself.  LeaseShmemRequestHookSet installs request and returns true where
 * the hook exists; where it does not, it returns false and the caller asks
 * at once.
 */
#if PG_VERSION_NUM >= 150000
static inline bool
LeaseShmemRequestHookSet(shmem_request_hook_type request, shmem_request_hook_type *prev)
{
	*prev = shmem_request_hook;
	shmem_request_hook = request;
	return true;
}
#else
typedef void (*shmem_request_hook_type) (void);

static inline bool
LeaseShmemRequestHookSet(shmem_request_hook_type request, shmem_request_hook_type *prev)
{
	*prev = NULL;
	return false;
}
#endif

/*
 * The status of the idx-th backend (1-based) in this backend's snapshot of
 * the status array: renamed in 17.
 */
#if PG_VERSION_NUM >= 170000
#define LeaseLocalBackendStatus(idx) pgstat_get_local_beentry_by_index(idx)
#else
#define LeaseLocalBackendStatus(idx) pgstat_fetch_stat_local_beentry(idx)
#endif

/*
 * A virtual transaction id names its backend by a BackendId up to 16 and by
 * a ProcNumber from 17 on, and PGPROC keeps both parts in its vxid from 17.
 */
#if PG_VERSION_NUM >= 170000
#define LeaseVxidProcNumber(vxid)	((vxid).procNumber)
#define LEASE_INVALID_PROC_NUMBER	INVALID_PROC_NUMBER
#define LeaseProcByNumber(number)	ProcNumberGetProc(number)
#define LeaseProcNumberOf(proc)		((proc)->vxid.procNumber)
#define LeaseProcLxid(proc)			((proc)->vxid.lxid)
#else
#define LeaseVxidProcNumber(vxid)	((vxid).backendId)
#define LEASE_INVALID_PROC_NUMBER	InvalidBackendId
#define LeaseProcByNumber(number)	BackendIdGetProc(number)
#define LeaseProcNumberOf(proc)		((proc)->backendId)
#define LeaseProcLxid(proc)			((proc)->lxid)
#endif

/* A backend's top transaction id: in PGXACT up to 13, in PGPROC from 14. */
#if PG_VERSION_NUM >= 140000
#define LeaseProcXid(proc)	((proc)->xid)
#else
#define LeaseProcXid(proc)	(ProcGlobal->allPgXact[(proc)->pgprocno].xid)
#endif

/* heap_fetch: keep_buf was heap_fetch_extended's alone up to 14. */
static inline bool
LeaseHeapFetch(Relation rel, Snapshot snapshot, HeapTuple tuple, Buffer *buffer,
			   bool keep_buf)
{
#if PG_VERSION_NUM >= 150000
	return heap_fetch(rel, snapshot, tuple, buffer, keep_buf);
#else
	return heap_fetch_extended(rel, snapshot, tuple, buffer, keep_buf);
#endif
}

/*
 * What table_tuple_update says the indexes need: a bool up to 15; from 16
 * none, all, or only the summarizing ones (BRIN) when the update was HOT.
 */
#if PG_VERSION_NUM >= 160000
typedef TU_UpdateIndexes LeaseUpdateIndexes;
#define LeaseUpdateIndexesNone(u)			((u) == TU_None)
#define LeaseUpdateIndexesOnlySummarizing(u) ((u) == TU_Summarizing)
#define LeaseIndexIsSummarizing(info)		((info)->ii_Summarizing)
#else
typedef bool LeaseUpdateIndexes;
#define LeaseUpdateIndexesNone(u)			(!(u))
#define LeaseUpdateIndexesOnlySummarizing(u) false
#define LeaseIndexIsSummarizing(info)		false
#endif

/* index_insert: 14 added the hint that the update left the key unchanged. */
static inline bool
LeaseIndexInsert(Relation index, Datum *values, bool *isnull, ItemPointer tid,
				 Relation heap, IndexUniqueCheck check, bool unchanged,
				 IndexInfo *info)
{
#if PG_VERSION_NUM >= 140000
	return index_insert(index, values, isnull, tid, heap, check, unchanged, info);
#else
	return index_insert(index, values, isnull, tid, heap, check, info);
#endif
}

/* getIdentitySequence: 17 takes the relation, not its OID. */
static inline Oid
LeaseIdentitySequence(Relation rel, AttrNumber attnum, bool missing_ok)
{
#if PG_VERSION_NUM >= 170000
	return getIdentitySequence(rel, attnum, missing_ok);
#else
	return getIdentitySequence(RelationGetRelid(rel), attnum, missing_ok);
#endif
}

/*
 * The primary key's index.  18 returns a deferrable one only when asked;
 * the keys pg_lease looks up by are never deferrable, so it does not ask.
 */
static inline Oid
LeasePrimaryKeyIndex(Relation rel)
{
#if PG_VERSION_NUM >= 180000
	return RelationGetPrimaryKeyIndex(rel, false);
#else
	return RelationGetPrimaryKeyIndex(rel);
#endif
}

/* index_beginscan: 18 added instrumentation (none here). */
static inline IndexScanDesc
LeaseIndexBeginScan(Relation heap, Relation index, Snapshot snapshot,
					int nkeys, int norderbys)
{
#if PG_VERSION_NUM >= 180000
	return index_beginscan(heap, index, snapshot, NULL, nkeys, norderbys);
#else
	return index_beginscan(heap, index, snapshot, nkeys, norderbys);
#endif
}

#endif							/* PG_LEASE_PG_COMPAT_H */
