/*-------------------------------------------------------------------------
 *
 * fence_use.c
 *	  lease_use: the token a transaction declares for a lease's fence.
 *
 * The fence trigger (fence_trigger.c) reads the declaration; a declaration
 * of this database's current grant also takes the grant's fence lock at
 * once, so the transaction is ordered before any change of holder from
 * here on.
 *
 * Twin: lease_use in sql/sql_edition/60_fence.sql.
 *
 *-------------------------------------------------------------------------
 */
#include "fence.h"

#include "access/xact.h"
#include "utils/builtins.h"
#include "validate.h"

/*
 * Declare the token that this transaction's writes to tables fenced by the
 * lease carry.  Transaction-scoped, so it works through transaction poolers.
 */
PG_FUNCTION_INFO_V1(lease_use);
Datum
lease_use(PG_FUNCTION_ARGS)
{
	text	   *name = LeaseLabelArg(fcinfo, 0, "lease name");
	int64		epoch = LeaseEpochArg(fcinfo, 1);
	LeaseRowState row;
	char	   *str;

	if (epoch <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("epoch must be positive")));
	WarnNoTransactionBlock(true, "lease_use()");
	LeaseCatalogEnsure(fcinfo->flinfo->fn_oid);
	str = text_to_cstring(name);
	LeaseFenceDeclareToken(str, epoch);
	/*
	 * A fenced transaction from here on: the grant's fence lock, at once,
	 * when the token is this database's grant of the lease.  A token of
	 * another store's lease (a downstream fence) takes only its floor's
	 * lock, at its first write: epochs of different stores share numbers,
	 * and a local lock of the same number would tie it to an unrelated
	 * local grant (SPEC "Changes in 1.5").  A token not yet granted here is
	 * locked by the trigger at its first write.
	 */
	if (LeaseFenceLockedGrant(str) == NULL && LeaseFencePeekRow(str, &row) && row.epoch == epoch)
		(void) LeaseFenceLockGrantShared(str, epoch);
	PG_RETURN_VOID();
}
