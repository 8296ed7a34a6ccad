/*
 * dl_pq.c -- the libpq functions fencecert calls, forwarded to libpq.so.5
 * opened on first use (see dl.h for why).
 *
 * PQ_FUNCS names each function once, in DL_SHIM's form (dl.h).  A libpq
 * function missing from the list shows as an undefined reference at link
 * time: add it here.
 */
#include <libpq-fe.h>

#include "common/dl.h"
#include "common/dl_pq.h"

#define PQ_FUNCS(F, V, H) \
	V(PQclear, (PGresult *res), (res)) \
	F(char *, PQcmdTuples, (PGresult *res), (res), NULL) \
	F(PGconn *, PQconnectdb, (const char *conninfo), (conninfo), NULL) \
	F(PGconn *, PQconnectdbParams, (const char *const *keywords, \
	  const char *const *values, int expand_dbname), \
	  (keywords, values, expand_dbname), NULL) \
	V(PQconninfoFree, (PQconninfoOption *opts), (opts)) \
	F(int, PQbackendPID, (const PGconn *conn), (conn), 0) \
	F(PQconninfoOption *, PQconninfoParse, (const char *conninfo, \
	  char **errmsg), (conninfo, errmsg), NULL) \
	F(int, PQconsumeInput, (PGconn *conn), (conn), 0) \
	F(char *, PQerrorMessage, (const PGconn *conn), (conn), \
	  (char *)"libpq is not loaded") \
	F(char *, PQescapeLiteral, (PGconn *conn, const char *str, \
	  size_t length), (conn, str, length), NULL) \
	F(PGresult *, PQexec, (PGconn *conn, const char *query), \
	  (conn, query), NULL) \
	F(PGresult *, PQexecParams, (PGconn *conn, const char *command, \
	  int nParams, const Oid *paramTypes, \
	  const char *const *paramValues, const int *paramLengths, \
	  const int *paramFormats, int resultFormat), (conn, command, \
	  nParams, paramTypes, paramValues, paramLengths, paramFormats, \
	  resultFormat), NULL) \
	F(PGresult *, PQexecPrepared, (PGconn *conn, const char *stmtName, \
	  int nParams, const char *const *paramValues, \
	  const int *paramLengths, const int *paramFormats, \
	  int resultFormat), (conn, stmtName, nParams, paramValues, \
	  paramLengths, paramFormats, resultFormat), NULL) \
	V(PQfinish, (PGconn *conn), (conn)) \
	F(char *, PQfname, (const PGresult *res, int field), (res, field), \
	  NULL) \
	V(PQfreemem, (void *ptr), (ptr)) \
	F(int, PQgetlength, (const PGresult *res, int tup, int field), \
	  (res, tup, field), 0) \
	F(PGresult *, PQgetResult, (PGconn *conn), (conn), NULL) \
	F(int, PQgetisnull, (const PGresult *res, int tup, int field), \
	  (res, tup, field), 1) \
	F(char *, PQgetvalue, (const PGresult *res, int tup, int field), \
	  (res, tup, field), NULL) \
	F(int, PQisBusy, (PGconn *conn), (conn), 0) \
	F(int, PQntuples, (const PGresult *res), (res), 0) \
	F(PGresult *, PQprepare, (PGconn *conn, const char *stmtName, \
	  const char *query, int nParams, const Oid *paramTypes), \
	  (conn, stmtName, query, nParams, paramTypes), NULL) \
	F(char *, PQresultErrorField, (const PGresult *res, int fieldcode), \
	  (res, fieldcode), NULL) \
	F(char *, PQresultErrorMessage, (const PGresult *res), (res), \
	  (char *)"libpq is not loaded") \
	F(ExecStatusType, PQresultStatus, (const PGresult *res), (res), \
	  PGRES_FATAL_ERROR) \
	F(int, PQsendPrepare, (PGconn *conn, const char *stmtName, \
	  const char *query, int nParams, const Oid *paramTypes), \
	  (conn, stmtName, query, nParams, paramTypes), 0) \
	F(int, PQsendQuery, (PGconn *conn, const char *query), \
	  (conn, query), 0) \
	F(int, PQsendQueryParams, (PGconn *conn, const char *command, \
	  int nParams, const Oid *paramTypes, \
	  const char *const *paramValues, const int *paramLengths, \
	  const int *paramFormats, int resultFormat), (conn, command, \
	  nParams, paramTypes, paramValues, paramLengths, paramFormats, \
	  resultFormat), 0) \
	F(int, PQsendQueryPrepared, (PGconn *conn, const char *stmtName, \
	  int nParams, const char *const *paramValues, \
	  const int *paramLengths, const int *paramFormats, \
	  int resultFormat), (conn, stmtName, nParams, paramValues, \
	  paramLengths, paramFormats, resultFormat), 0) \
	F(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn *conn, \
	  PQnoticeProcessor proc, void *arg), (conn, proc, arg), NULL) \
	F(int, PQsocket, (const PGconn *conn), (conn), -1) \
	F(ConnStatusType, PQstatus, (const PGconn *conn), (conn), \
	  CONNECTION_BAD) \
	F(PGTransactionStatusType, PQtransactionStatus, (const PGconn *conn), \
	  (conn), PQTRANS_UNKNOWN)

DL_SHIM(PQ_FUNCS, "libpq", "libpq.so.5", "FENCECERT_LIBPQ")

int dl_pq_load(char *err, size_t errlen)
{
	return dl_lib_load(&dl_self, FC_JOURNAL_UNAVAILABLE, err, errlen);
}
