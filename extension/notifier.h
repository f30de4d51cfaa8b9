/*-------------------------------------------------------------------------
 *
 * notifier.h
 *	  NOTIFY pg_lease off the commit path: what committing transactions
 *	  call to fill the shared queue (notify_queue.c, notify_xact.c) and the
 *	  per-database worker that sends what it holds (notifier.c).  The
 *	  queue itself is notify_shmem.h.
 *
 * A queued notification names the transaction that made the change (xid)
 * and, once one has taken it on, the transaction that sends it (sender).
 * Both are resolved from the commit log, so nothing is sent for a change
 * that did not commit, and nothing twice: a sender that aborts gives its
 * notifications back.
 *
 *-------------------------------------------------------------------------
 */
#ifndef LEASE_NOTIFIER_H
#define LEASE_NOTIFIER_H

#include "postgres.h"

#include "fmgr.h"
#include "notify_shmem.h"

#define LEASE_NOTIFY_CHANNEL		"pg_lease"

/* pg_lease.notify_mode */
typedef enum LeaseNotifyMode
{
	LEASE_NOTIFY_WORKER,		/* queue; the database's worker sends */
	LEASE_NOTIFY_COMMIT			/* NOTIFY in the changing transaction */
} LeaseNotifyMode;

/* notify_xact.c */
extern void LeaseNotifyInit(void);

/* notify_queue.c */
extern int	lease_notify_mode;
extern void LeaseNotify(const char *name, const char *payload);

/* notify_queue.c, for notify_xact.c: this transaction's payloads */
extern bool LeaseNotifyPreCommit(void);
extern bool LeaseNotifyPending(void);
extern void LeaseNotifyPendingReset(void);
extern void LeaseNotifyPendingSubAbort(SubTransactionId subid);
extern void LeaseNotifyPendingSubCommit(SubTransactionId subid, SubTransactionId parent);

/* notifier.c */
extern bool LeaseNotifierStart(Oid database);
extern void LeaseNotifierStop(Oid database);
extern PGDLLEXPORT void lease_notifier_main(Datum main_arg);

#endif							/* LEASE_NOTIFIER_H */
