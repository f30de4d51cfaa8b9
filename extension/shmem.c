/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  One request hook and one startup hook for every part of pg_lease that
 *	  lives in shared memory (only when preloaded).
 *
 * Each part registers, from _PG_init, its size (and what its setup
 * allocates besides, such as a shared hash table), an optional named LWLock
 * tranche of one lock, and the function that sets its memory up under
 * AddinShmemInitLock (found: another backend already did).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_lease.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#define LEASE_SHMEM_PARTS	4

static const LeaseShmemPart *parts[LEASE_SHMEM_PARTS];
static int	nparts = 0;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Whether shmem_request_hook asks for all parts (15 on; see pg_compat.h). */
static bool request_hooked = false;

static void
LeaseShmemRequestPart(const LeaseShmemPart *part)
{
	RequestAddinShmemSpace(part->size());
	if (part->extra != NULL)
		RequestAddinShmemSpace(part->extra());
	if (part->tranche != NULL)
		RequestNamedLWLockTranche(part->tranche, 1);
}

static void
LeaseShmemRequest(void)
{
	int			i;

	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	for (i = 0; i < nparts; i++)
		LeaseShmemRequestPart(parts[i]);
}

static void
LeaseShmemStartup(void)
{
	int			i;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	for (i = 0; i < nparts; i++)
	{
		bool		found;
		void	   *memory = ShmemInitStruct(parts[i]->name, parts[i]->size(), &found);

		parts[i]->init(memory, found);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* From _PG_init, while shared_preload_libraries are being loaded. */
void
LeaseShmemRegister(const LeaseShmemPart *part)
{
	Assert(process_shared_preload_libraries_in_progress);
	if (nparts == LEASE_SHMEM_PARTS)
		elog(ERROR, "pg_lease: too many shared memory parts");
	if (nparts == 0)
	{
		request_hooked = LeaseShmemRequestHookSet(LeaseShmemRequest,
												  &prev_shmem_request_hook);
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = LeaseShmemStartup;
	}
	parts[nparts++] = part;
	/* no request hook: ask now, from _PG_init, as the older majors want */
	if (!request_hooked)
		LeaseShmemRequestPart(part);
}
