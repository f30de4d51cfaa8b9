/*-------------------------------------------------------------------------
 *
 * notify.h
 *	  NOTIFY pg_lease off the commit path: the shared queue of notifications,
 *	  what committing transactions call to fill it, and the per-database
 *	  worker that sends what it holds.
 *
 * The family: notify_queue.c and notify_xact.c (the commit path: a
 * transaction's payloads, queued or sent at its events), notify_shmem.c
 * (the queue in shared memory, and what an entry still needs, as the
 * commit log says; it knows neither who fills it nor who sends from it),
 * notifier.c (the worker).
 *
 * A queued notification names the transaction that made the change (xid)
 * and, once one has taken it on, the transaction that sends it (sender).
 * Both are resolved from the commit log, so nothing is sent for a change
 * that did not commit, and nothing twice: a sender that aborts gives its
 * notifications back.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_NOTIFY_H
#define PG_LEASE_NOTIFY_H

#include "pg_lease.h"

#include "fmgr.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

#define LEASE_NOTIFY_CHANNEL		"pg_lease"

/* pg_lease.notify_mode */
typedef enum LeaseNotifyMode
{
	LEASE_NOTIFY_WORKER,		/* queue; the database's worker sends */
	LEASE_NOTIFY_COMMIT			/* NOTIFY in the changing transaction */
} LeaseNotifyMode;

/* Lease name and payload of one queued notification, both terminated. */
#define LEASE_NOTIFY_DATA_BYTES		1000

typedef struct LeaseNotifyEntry
{
	Oid			database;
	TransactionId xid;			/* the transaction that made the change */
	TransactionId sender;		/* the transaction sending it, or invalid */
	bool		done;			/* sent, or its change rolled back */
	uint16		name_len;
	uint16		payload_len;
	char		data[LEASE_NOTIFY_DATA_BYTES];	/* name \0 payload \0 */
} LeaseNotifyEntry;

/* Databases that may have a worker at one time. */
#define LEASE_NOTIFIER_MAX_DATABASES	64

typedef struct LeaseNotifierDatabase
{
	Oid			database;		/* InvalidOid: slot free */
	pid_t		pid;			/* the worker once attached, else 0 */
	Latch	   *latch;			/* its latch, or NULL */
} LeaseNotifierDatabase;

/*
 * The queue: entries numbered from 0 up, entry n in slot n % size.  Those
 * from tail to head are live; any of them may be done already, tail only
 * moves over done ones.
 */
typedef struct LeaseNotifyShared
{
	LWLock	   *lock;
	uint64		head;
	uint64		tail;
	int			size;
	LeaseNotifierDatabase databases[LEASE_NOTIFIER_MAX_DATABASES];
	LeaseNotifyEntry entries[FLEXIBLE_ARRAY_MEMBER];
} LeaseNotifyShared;

extern LeaseNotifyShared *lease_notify;

static inline LeaseNotifyEntry *
LeaseNotifyEntryAt(uint64 n)
{
	return &lease_notify->entries[n % lease_notify->size];
}

static inline const char *
LeaseNotifyEntryName(const LeaseNotifyEntry *entry)
{
	return entry->data;
}

static inline const char *
LeaseNotifyEntryPayload(const LeaseNotifyEntry *entry)
{
	return entry->data + entry->name_len + 1;
}

/*
 * A handover's payload.  Its successor is known to be waiting for it, so
 * the handing-over transaction sends it itself (no hop through the worker).
 */
static inline bool
LeaseNotifyIsHandover(const char *payload)
{
	static const char handover[] = "{\"event\":\"handover\"";

	return strncmp(payload, handover, sizeof(handover) - 1) == 0;
}

/* What an entry needs, as LeaseNotifyResolve finds it. */
typedef enum LeaseNotifyState
{
	LEASE_NOTIFY_DONE,			/* sent, or nothing to send */
	LEASE_NOTIFY_WAITING,		/* its change has not committed yet */
	LEASE_NOTIFY_SENDING,		/* a sender that has not committed yet has it */
	LEASE_NOTIFY_READY			/* committed, and nobody sends it */
} LeaseNotifyState;

/* notify_shmem.c: the queue's memory, and what an entry needs */
extern void LeaseNotifyShmemInit(void);
extern LeaseNotifyState LeaseNotifyResolve(LeaseNotifyEntry *entry);
extern void LeaseNotifyAdvanceTail(void);

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

#endif							/* PG_LEASE_NOTIFY_H */
