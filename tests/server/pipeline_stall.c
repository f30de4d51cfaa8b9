/*
 * pipeline_stall: a fenced writer whose backend waits on its client in the
 * middle of a statement, as a client stopped inside libpq's pipeline mode
 * leaves it: the INSERT has run (its fence passed, its lock is held), no
 * Sync has come, so pg_stat_activity shows the backend "active", waiting
 * on ClientRead, and PostgreSQL ignores a cancel it receives so (a cancel
 * is dropped while the backend reads a command).  Used by
 * tests/server/sql_edition_client_read.sh.
 *
 *   pipeline_stall EPOCH TABLE GOFILE    (server from the PG* variables)
 *
 * Prints its backend's pid, then, once GOFILE exists (at most 120 s),
 * sends the Sync and COMMIT and prints "committed" or "failed: MESSAGE".
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int
ok(PGconn *conn, const char *sql)
{
	PGresult   *r = PQexec(conn, sql);
	int			good = PQresultStatus(r) == PGRES_COMMAND_OK;

	if (!good)
		printf("failed: %s: %s", sql, PQerrorMessage(conn));
	PQclear(r);
	return good;
}

int
main(int argc, char **argv)
{
	PGconn	   *conn;
	char		sql[256];
	const char *values[1] = {"stalled"};
	PGresult   *r;
	int			good = 1;

	if (argc != 4)
	{
		fprintf(stderr, "usage: pipeline_stall EPOCH TABLE GOFILE\n");
		return 2;
	}
	conn = PQconnectdb("");
	if (PQstatus(conn) != CONNECTION_OK)
	{
		printf("failed: %s", PQerrorMessage(conn));
		return 1;
	}
	snprintf(sql, sizeof(sql), "SET LOCAL pg_lease.epoch = '%s'", argv[1]);
	if (!ok(conn, "BEGIN") || !ok(conn, sql))
		return 1;
	printf("%d\n", PQbackendPID(conn));
	fflush(stdout);

	snprintf(sql, sizeof(sql), "INSERT INTO %s (id, note) VALUES (1, $1)", argv[2]);
	if (!PQenterPipelineMode(conn) ||
		!PQsendQueryParams(conn, sql, 1, NULL, values, NULL, NULL, 0) ||
		PQflush(conn) != 0)
	{
		printf("failed: %s", PQerrorMessage(conn));
		return 1;
	}
	for (int i = 0; i < 12000 && access(argv[3], F_OK) != 0; i++)
		usleep(10000);

	/* the Sync, then the INSERT's result, the Sync's, and COMMIT */
	if (!PQpipelineSync(conn))
		good = 0;
	while (good && (r = PQgetResult(conn)) != NULL)
	{
		ExecStatusType s = PQresultStatus(r);

		if (s != PGRES_COMMAND_OK && s != PGRES_PIPELINE_SYNC)
			good = 0;
		PQclear(r);
	}
	if (good)
	{
		r = PQgetResult(conn);	/* the Sync's */
		good = r != NULL && PQresultStatus(r) == PGRES_PIPELINE_SYNC;
		PQclear(r);
	}
	if (good && PQexitPipelineMode(conn) && ok(conn, "COMMIT"))
		printf("committed\n");
	else if (!good)
		printf("failed: %s", PQerrorMessage(conn));
	PQfinish(conn);
	return 0;
}
