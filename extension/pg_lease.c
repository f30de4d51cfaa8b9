/*-------------------------------------------------------------------------
 *
 * pg_lease.c
 *	  Module entry point: settings, caches and transaction callbacks.
 *
 * The rest lives in one file per job: lease.c (acquire, renew, release,
 * revoke), fence.c (the fence trigger and lease_use), epoch.c (tokens),
 * events.c (history and NOTIFY), retention.c (its pruning), xact_state.c (per-transaction state),
 * catalog.c (prepared statements), row_lock.c and row_write.c (lease rows
 * and history without the executor), settings.c (pg_lease.* parameters),
 * takeover.c (bounded takeover), counters.c (shared-memory counters),
 * notify_queue.c, notify_shmem.c and notifier.c (NOTIFY off the commit path).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"
#include "notifier.h"

#include "fmgr.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	LeaseDefineSettings();
	LeaseCatalogInit();
	LeaseWriteInit();
	LeaseXactStateInit();
	LeaseRetentionInit();
	LeaseCountersInit();
	LeaseNotifyInit();
	/* last: a placeholder's value is dropped, not taken, once reserved */
	MarkGUCPrefixReserved("pg_lease");
}
