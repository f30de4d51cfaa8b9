/*-------------------------------------------------------------------------
 *
 * floors.h
 *	  Downstream fences: a table fenced by a lease of another database,
 *	  through the highest epoch of that lease this database has seen (its
 *	  floor).
 *
 * The family: floors.c keeps the floors (their rows, their locks, raises)
 * and says which lease store this database is; floors_fence.c decides the
 * fence trigger's writes by them, remembers the floors a transaction
 * passed, and raises a floor ahead of the work (lease_raise).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_LEASE_FLOORS_H
#define PG_LEASE_FLOORS_H

#include "pg_lease.h"

#include "utils/relcache.h"

/* A floor: the lease store that holds the lease, and the lease's name. */
typedef struct LeaseFloorKey
{
	const char *store;
	const char *name;
} LeaseFloorKey;

/* floors.c */
extern char *LeaseFloorStoreId(void);
extern int64 LeaseFloorRaise(const LeaseFloorKey *key, int64 epoch);
extern int64 LeaseFloorHold(const LeaseFloorKey *key, int64 epoch);
extern int64 LeaseFloorCheck(const LeaseFloorKey *key, int64 epoch);
extern int64 LeaseFloorPeek(const LeaseFloorKey *key);

/* floors_fence.c: the fence trigger on a table fenced by a floor */
extern void LeaseFloorFenceInit(void);
extern void LeaseFloorFenceNamed(const LeaseFloorKey *key, Relation rel, int64 token);
extern int64 LeaseFloorFenceUnnamed(const LeaseFloorKey *key, Relation rel,
									const int64 *epochs, int count);

#endif							/* PG_LEASE_FLOORS_H */
