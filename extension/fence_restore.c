/*-------------------------------------------------------------------------
 *
 * fence_restore.c
 *	  Whether a fenced write is part of a COPY FROM: a data-only restore of a
 *	  dump, as like as not, whose refusals (fence_trigger.c, floors_fence.c)
 *	  then say how a dump is restored (LEASE_FENCE_RESTORE_HINT, fence.h).
 *
 * Twin: lease_sql_copy_hint in sql/sql_edition/60_fence.sql.
 *
 *-------------------------------------------------------------------------
 */
#include "fence.h"

#include "tcop/pquery.h"

/*
 * Whether this write is part of a COPY FROM (the top-level command's tag).
 * Only the hint depends on it, never whether the write passes.
 */
bool
LeaseFenceInCopy(void)
{
	return ActivePortal != NULL && ActivePortal->commandTag == CMDTAG_COPY;
}
