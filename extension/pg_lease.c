/*-------------------------------------------------------------------------
 *
 * pg_lease.c
 *	  Module entry point: settings, caches and transaction callbacks.
 *
 * The rest lives in one file per job: lease.c (acquire, renew, release,
 * revoke), fence.c (the fence trigger), fence_use.c (lease_use), epoch.c (tokens),
 * events.c (history and NOTIFY), retention.c (its pruning), xact_state.c (per-transaction state),
 * grant_cache.c (lease rows kept across transactions),
 * catalog.c (prepared statements), row_lock.c and row_write.c (lease rows
 * and history without the executor), settings.c (pg_lease.* parameters),
 * fence_lock.c (the fence lock in the lock manager), takeover.c and evict.c
 * (bounded takeover), compat.c (1.2 backends after an update), counters.c (shared-memory counters),
 * notify_queue.c, notify_shmem.c and notifier.c (NOTIFY off the commit path).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"
#include "notifier.h"

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
	LeaseXactStateInit();
	LeaseGrantCacheInit();
	LeaseRetentionInit();
	LeaseCountersInit();
	LeaseNotifyInit();
	/* last: a placeholder's value is dropped, not taken, once reserved */
	MarkGUCPrefixReserved("pg_lease");
}
