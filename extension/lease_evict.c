/*-------------------------------------------------------------------------
 *
 * lease_evict.c
 *	  Ending the backends whose fenced transactions hold up a change of
 *	  holder past pg_lease.takeover_timeout.
 *
 * A backend idle in transaction (waiting on its client) is terminated; one
 * running a statement is cancelled first, and terminated if it still holds
 * on LEASE_CANCEL_GRACE_MS later.  Each backend is recorded once: a log
 * line and an evict event with its pid.  The callers decide who is in the
 * way (fence_lock.c asks the lock manager, lease_takeover.c reads a 1.2 row
 * lock's xmax); this file only signals and records.
 *
 * Twin: lease_sql_lock_exclusive in sql/sql_edition/40_fence_lock.sql,
 * which ends the writers in its way by the same rules.
 *
 *-------------------------------------------------------------------------
 */
#include "lease.h"

#include <signal.h>

#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "utils/builtins.h"

/* How long a cancelled statement's transaction may take to let go. */
#define LEASE_CANCEL_GRACE_MS	250

void
LeaseTakeoverBegin(LeaseTakeover *takeover, const LeaseEnding *ending)
{
	memset(takeover, 0, sizeof(*takeover));
	takeover->ending = ending;
	INSTR_TIME_SET_CURRENT(takeover->start);
}

void
LeaseTakeoverEnd(LeaseTakeover *takeover)
{
	if (takeover->items != NULL)
		pfree(takeover->items);
	takeover->items = NULL;
	takeover->count = takeover->size = 0;
}

/* Milliseconds since the takeover began, on the monotonic clock: a step of
 * the wall clock neither shortens nor stretches the bound. */
double
LeaseTakeoverWaited(const LeaseTakeover *takeover)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, takeover->start);
	return INSTR_TIME_GET_MILLISEC(now);
}

static LeaseEvictee *
LeaseEvicteeFor(LeaseTakeover *takeover, int pid, uint32 xact)
{
	LeaseEvictee *e;
	int			i;

	for (i = 0; i < takeover->count; i++)
	{
		e = &takeover->items[i];
		if (e->pid == pid && e->xact == xact)
			return e;
	}
	if (takeover->count == takeover->size)
	{
		takeover->size = Max(8, takeover->size * 2);
		takeover->items = takeover->items == NULL ?
			palloc(sizeof(LeaseEvictee) * takeover->size) :
			repalloc(takeover->items, sizeof(LeaseEvictee) * takeover->size);
	}
	e = &takeover->items[takeover->count++];
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->xact = xact;
	e->cancelled_ms = -1;
	return e;
}

static void
LeaseSignal(int pid, int sig)
{
	/* as pg_signal_backend: the backend leads its own process group */
#ifdef HAVE_SETSID
	if (kill(-pid, sig) != 0)
#else
	if (kill(pid, sig) != 0)
#endif
		ereport(WARNING,
				(errmsg("pg_lease: could not send signal to process %d: %m", pid)));
}

/*
 * Signal proc, whose transaction (xact: its xid or local transaction id,
 * as the caller identified it) is in the way, as its state needs.  The
 * caller holds ProcArrayLock and has checked that proc still runs that
 * transaction: it cannot end while the lock is held.
 */
void
LeaseEvictProc(LeaseTakeover *takeover, PGPROC *proc, uint32 xact, double now_ms)
{
	LeaseEvictee *e;
	bool		idle;

	/* a prepared transaction has no process (pid 0): it waits */
	if (proc->pid == 0 || proc == MyProc || proc->databaseId != MyDatabaseId)
		return;
	e = LeaseEvicteeFor(takeover, proc->pid, xact);
	if (e->terminated)
		return;
	/* idle in transaction (or paused mid-COPY): waiting on its client */
	idle = proc->wait_event_info == WAIT_EVENT_CLIENT_READ;
	if (idle || (e->cancelled_ms >= 0 && now_ms - e->cancelled_ms >= LEASE_CANCEL_GRACE_MS))
	{
		LeaseSignal(proc->pid, SIGTERM);
		e->terminated = true;
	}
	else if (e->cancelled_ms < 0)
	{
		LeaseSignal(proc->pid, SIGINT);
		e->cancelled_ms = now_ms;
	}
}

/* Record each signalled backend once: a log line, and an evict event. */
void
LeaseRecordEvictions(LeaseTakeover *takeover)
{
	const LeaseEnding *ending = takeover->ending;
	int			i;

	for (i = 0; i < takeover->count; i++)
	{
		LeaseEvictee *e = &takeover->items[i];

		if (e->recorded || (e->cancelled_ms < 0 && !e->terminated))
			continue;
		ereport(LOG,
				(errmsg("pg_lease: %s backend %d, whose transaction holds the fence lock of lease \"%s\" epoch " INT64_FORMAT,
						e->terminated ? "terminating" : "cancelling the statement of",
						e->pid, text_to_cstring(ending->name), ending->epoch),
				 errdetail("The grant of epoch " INT64_FORMAT " is ending, and the transaction was still open pg_lease.takeover_timeout (%d ms) later.",
						   ending->epoch, lease_takeover_timeout_ms)));
		LeaseRecordEvent("evict", ending->name, ending->holder, ending->epoch,
						 ending->expires_at, e->pid);
		e->recorded = true;
	}
}

/*
 * The ended backends did not let go within LEASE_EVICT_BOUND_MS (a
 * prepared transaction, a backend that does not answer signals): the
 * change of holder fails rather than waiting on.  who lists them.
 */
void
LeaseTakeoverTimedOut(const LeaseTakeover *takeover, const char *who)
{
	const LeaseEnding *ending = takeover->ending;

	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not end the grant of lease \"%s\" epoch " INT64_FORMAT ": fenced transactions still hold it",
					text_to_cstring(ending->name), ending->epoch),
			 errdetail("Transactions %s did not end within %d ms of being signalled.",
					   who != NULL && who[0] != '\0' ? who : "(none)", LEASE_EVICT_BOUND_MS),
			 errhint("A prepared transaction must be finished with COMMIT PREPARED or ROLLBACK PREPARED.")));
}
