/*-------------------------------------------------------------------------
 *
 * module.c
 *	  Module entry point (_PG_init): settings, caches and the callbacks of
 *	  every part.  It stands above all of them; pg_lease.h, the types and
 *	  functions the parts share, stands below.
 *
 * The rest, one file per job, by family:
 *   lease functions: lease_acquire.c (lease_acquire), lease_change.c (renew, release,
 *     revoke, handover), lease_row.c (reading, locking and changing a row),
 *     lease_takeover.c and lease_evict.c (a change of holder, bounded: the row, then
 *     the writers it waits for and ends), epoch.c (tokens that never go
 *     back), lease_events.c (history), lease_retention.c (its pruning);
 *   fence: fence_trigger.c (the trigger), fence_use.c (lease_use), fence_lock.c
 *     (the lock manager's fence lock), floors_fence.c and floors.c
 *     (downstream floors), fence_xact.c (tokens and grants of a
 *     transaction), fence_cache.c (rows kept across transactions),
 *     fence_compat.c (1.2 backends after an update), epoch_list.c (pg_lease.epoch);
 *   storage: catalog.c (objects, prepared statements, SPI), lease_row_lock.c and
 *     lease_row_write.c with lease_write_target.c (rows and history without the
 *     executor), shmem.c (shared memory hooks), counters.c;
 *   notify: notify_queue.c and notify_xact.c (the commit path),
 *     notify_shmem.c (the shared queue), notifier.c (the worker);
 *   settings.c (pg_lease.* parameters), pg_compat.h (major versions).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"
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
