/*-------------------------------------------------------------------------
 *
 * module.c
 *	  Module entry point (_PG_init): settings, caches and the callbacks of
 *	  every part.  It stands above all of them; pg_lease.h, what they share,
 *	  stands below.
 *
 * The rest, one file per job, in families named by a prefix, each with one
 * header (a file calls down into its family and the families below):
 *   lease.h, the lease functions: lease_acquire.c (lease_acquire),
 *     lease_change.c (renew, release, revoke, handover), lease_row.c
 *     (reading, locking and changing a row), lease_takeover.c and
 *     lease_evict.c (a change of holder, bounded: the row, then the
 *     writers it waits for and ends), lease_row_lock.c, lease_row_write.c
 *     and lease_write_target.c (rows and history without the executor),
 *     lease_events.c (history and NOTIFY), lease_retention.c (its pruning);
 *   fence.h, the fence: fence_trigger.c (the trigger), fence_use.c
 *     (lease_use), fence_xact.c (tokens and grants of a transaction),
 *     fence_cache.c (rows kept across transactions), fence_lock.c (the
 *     lock manager's fence lock), fence_compat.c (1.2 backends after an
 *     update), fence_restore.c (a refusal inside COPY FROM);
 *   floors.h, downstream fences: floors_fence.c (the trigger's decisions,
 *     lease_raise), floors.c (the floors, their locks);
 *   notify.h, NOTIFY off the commit path: notify_queue.c and notify_xact.c
 *     (the commit path), notify_shmem.c (the shared queue), notifier.c
 *     (the worker);
 *   pg_lease.h, the base: settings.c (pg_lease.* parameters), catalog.c
 *     (objects, prepared statements, SPI), shmem.c (shared memory hooks),
 *     counters.c, epoch.c (tokens that never go back), xact_memo.c (what
 *     a transaction remembers, by savepoint);
 *   beside them: epoch_list.c and .h (pg_lease.epoch's parser), validate.h
 *     (argument checks), pg_compat.h (PostgreSQL majors).
 * structure.circles checks that every arrow among them points down, and
 * prints the floor each file stands on (scripts/circles.py).
 *
 *-------------------------------------------------------------------------
 */
#include "fence.h"
#include "floors.h"
#include "lease.h"
#include "notify.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	/* every backend forked from this postmaster runs this very code */
	if (process_shared_preload_libraries_in_progress)
		lease_preloaded = true;
	LeaseDefineSettings();
	LeaseCatalogInit();
	LeaseWriteInit();
	LeaseFenceXactInit();
	LeaseFloorFenceInit();
	LeaseFenceCacheInit();
	LeaseRetentionInit();
	LeaseCountersInit();
	LeaseNotifyInit();
	/* last: a placeholder's value is dropped, not taken, once reserved */
	MarkGUCPrefixReserved("pg_lease");
}
