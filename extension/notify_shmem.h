/*-------------------------------------------------------------------------
 *
 * notify_shmem.h
 *	  The shared queue of pg_lease's notifications (notify_shmem.c): its
 *	  entries, the databases that have a worker, and how an entry's
 *	  transactions are resolved.  notify_queue.c fills it, notifier.c
 *	  sends from it; neither is known here.
 *
 *-------------------------------------------------------------------------
 */
#ifndef LEASE_NOTIFY_SHMEM_H
#define LEASE_NOTIFY_SHMEM_H

#include "postgres.h"

#include "storage/latch.h"
#include "storage/lwlock.h"

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

/* What an entry needs, as LeaseNotifyResolve finds it. */
typedef enum LeaseNotifyState
{
	LEASE_NOTIFY_DONE,			/* sent, or nothing to send */
	LEASE_NOTIFY_WAITING,		/* its change has not committed yet */
	LEASE_NOTIFY_SENDING,		/* a sender that has not committed yet has it */
	LEASE_NOTIFY_READY			/* committed, and nobody sends it */
} LeaseNotifyState;

/* notify_shmem.c */
extern void LeaseNotifyShmemInit(void);
extern LeaseNotifyState LeaseNotifyResolve(LeaseNotifyEntry *entry);
extern void LeaseNotifyAdvanceTail(void);

#endif							/* LEASE_NOTIFY_SHMEM_H */
