/*-------------------------------------------------------------------------
 *
 * fence.h
 *	  The fence: the trigger that lets a write to a fenced table pass only
 *	  under the current grant of its lease, and what it stands on.
 *
 * The family: fence_trigger.c (the trigger: which token a write carries,
 * and whether it passes), fence_use.c (lease_use), fence_xact.c (tokens
 * declared and rows kept for a transaction), fence_cache.c (rows kept
 * across transactions), fence_lock.c (the fence lock of a grant, in the
 * lock manager), fence_compat.c (writers that also lock the row, as 1.2
 * did), fence_restore.c (what a refusal inside COPY FROM says).  A table
 * fenced by a lease of another database is judged by floors.h instead.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_FENCE_H
#define PG_LEASE_FENCE_H

#include "pg_lease.h"

struct LOCKTAG;
struct LeaseTakeover;

/* fence_xact.c: a transaction's tokens, and the grants whose lock it holds */
extern void LeaseFenceXactInit(void);
extern void LeaseFenceDeclareToken(const char *name, int64 epoch);
extern bool LeaseFenceDeclaredToken(const char *name, int64 *epoch);
extern const LeaseRowState *LeaseFenceLockGrantShared(const char *name, int64 epoch);
extern const LeaseRowState *LeaseFenceLockedGrant(const char *name);
extern bool LeaseFencePeekRow(const char *name, LeaseRowState *state);
extern const LeaseRowState *LeaseFenceRefreshRow(const char *name);
extern void LeaseFenceForgetRow(const char *name);
extern void LeaseFenceForgetRowText(text *name);

/* fence_cache.c: lease rows kept across transactions while unchanged */
extern void LeaseFenceCacheInit(void);
extern void LeaseFenceGrantChanged(text *name);
extern uint64 LeaseFenceCacheStamp(const char *name);
extern bool LeaseFenceCacheLookup(const char *name, int64 epoch, LeaseRowState *state);
extern void LeaseFenceCacheStore(const char *name, const LeaseRowState *state, uint64 stamp);

/*
 * fence_lock.c: the fence lock of a grant (LEASE_LOCKTAG_CLASS): shared by
 * the grant's writers, exclusive by whoever ends it, within a takeover's
 * bound (lease.h).
 */
extern void LeaseFenceLockTag(struct LOCKTAG *tag, int64 epoch);
extern void LeaseFenceLockShare(const char *name, int64 epoch);
extern void LeaseFenceLockTagExclusive(struct LeaseTakeover *takeover,
									   const struct LOCKTAG *tag);
extern void LeaseFenceLockExclusive(struct LeaseTakeover *takeover);

/* fence_compat.c: whether fenced writers must also lock the row, as 1.2 did */
extern bool lease_preloaded;
extern bool LeaseFenceRowLockNeeded(void);

/*
 * fence_restore.c: a fenced write refused inside COPY FROM is, as like as not,
 * a data-only restore of a dump (pg_restore --data-only, a data-only SQL
 * dump), whose rows carry the epochs of earlier grants and never pass: the
 * refusal (same message, same SQLSTATE) then says how a dump is restored.
 * The SQL edition gives the same hint (lease_sql_copy_hint).
 */
#define LEASE_FENCE_RESTORE_HINT \
	"If this COPY restores a dump (pg_restore --data-only, or a data-only SQL dump), " \
	"rows written under earlier grants never pass the fence: restore the whole dump in one run " \
	"(its data goes in before the fence triggers), or disable trigger pg_lease_fence of the table " \
	"for the data step and enable it after (docs/operations.md, " \
	"\"Moving from the C edition to a managed service\")."
extern bool LeaseFenceInCopy(void);
/* errhint(LEASE_FENCE_RESTORE_HINT) in a COPY, else other (errhint() or 0) */
#define LeaseFenceHint(other) \
	(LeaseFenceInCopy() ? errhint("%s", LEASE_FENCE_RESTORE_HINT) : (other))

#endif							/* PG_LEASE_FENCE_H */
