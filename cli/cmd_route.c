/*
 * cmd_route.c -- `fencecert route`: one attempt of the certified route, or
 * of a deliberately wrong control variant (--variant), configured by the
 * SPEC section 7 environment or the equivalent flags (flags win).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/cli.h"
#include "common/sqlite_setup.h"
#include "routes/controls.h"
#include "routes/failpoint.h"
#include "routes/runtime.h"

static const char route_help[] =
	"usage: fencecert route [--journal URL] [--target URL] [--workload FILE]\n"
	"                       [--try N] [--run-dir DIR] [--xcom-dir DIR]\n"
	"                       [--variant NAME]\n"
	"\n"
	"Run one attempt of a route: load the workload's source partition into the\n"
	"target under the commit journal and the target fence (SPEC section 6).\n"
	"Each flag defaults to its environment variable:\n"
	"\n"
	"  --journal URL     FENCECERT_JOURNAL      sqlite:PATH, postgresql://..., etcd://...\n"
	"  --target URL      FENCECERT_TARGET       sqlite:PATH, file:DIR, etcd://...,\n"
	"                                         postgresql://...[?fence=pg-2pc]\n"
	"  --workload FILE   FENCECERT_WORKLOAD     the operation (docs/routes.md)\n"
	"  --try N           FENCECERT_TRY_NUMBER   1, 2, ... (default 1)\n"
	"  --run-dir DIR     FENCECERT_RUN_DIR      local scratch (checkpoint.json)\n"
	"  --xcom-dir DIR    FENCECERT_XCOM_DIR     evidence (return.json)\n"
	"  --variant NAME    run a control route that certification must reject:\n"
	"                    naive, xcom-guard, checkpoint-guard, journal-no-fence,\n"
	"                    split-fence, pg-fence-row-only; no-fsync (file:\n"
	"                    targets; only a power-loss model rejects it)\n"
	"                    (docs/controls.md)\n"
	"  --help            show this help\n"
	"\n"
	"Also read: FENCECERT_FAILPOINT_FD (failpoint channel, docs/failpoints.md),\n"
	"FENCECERT_LEASE_OWNER (default \"route\"), FENCECERT_LEASE_TTL_MS (default\n"
	"30000), FENCECERT_PREV_XCOM_DIR (xcom-guard only).\n"
	"\n"
	"Exit status: 0 operation complete, 75 transient failure (retry allowed),\n"
	"100 fail-closed stop (do not retry; an operator must look), 64 usage.\n";

static const char *env_or_null(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* The environment part of the configuration; flags are applied after. */
static int config_from_env(struct route_config *c)
{
	const char *v;

	route_config_init(c);
	c->journal_url = env_or_null("FENCECERT_JOURNAL");
	c->target_url = env_or_null("FENCECERT_TARGET");
	c->workload_path = env_or_null("FENCECERT_WORKLOAD");
	c->run_dir = env_or_null("FENCECERT_RUN_DIR");
	c->xcom_dir = env_or_null("FENCECERT_XCOM_DIR");
	if ((v = env_or_null("FENCECERT_LEASE_OWNER")))
		c->lease_owner = v;
	if ((v = env_or_null("FENCECERT_TRY_NUMBER")) &&
	    (cli_parse_ll(v, &c->try_number) || c->try_number < 1))
		return cli_usage("route", "FENCECERT_TRY_NUMBER '%s' is not a "
				 "positive number", v);
	if ((v = env_or_null("FENCECERT_LEASE_TTL_MS")) &&
	    (cli_parse_ll(v, &c->lease_ttl_ms) || c->lease_ttl_ms < 1))
		return cli_usage("route", "FENCECERT_LEASE_TTL_MS '%s' is not a "
				 "positive number", v);
	return 0;
}

int cmd_route(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "journal", required_argument, NULL, 'j' },
		{ "target", required_argument, NULL, 't' },
		{ "workload", required_argument, NULL, 'w' },
		{ "try", required_argument, NULL, 'n' },
		{ "run-dir", required_argument, NULL, 'r' },
		{ "xcom-dir", required_argument, NULL, 'x' },
		{ "variant", required_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct route_config c;
	const char *variant = NULL;
	char err[256];
	int opt, rc;

	fc_sqlite_setup_fresh(); /* before any connection; maybe cloned */
	rc = config_from_env(&c);
	if (rc)
		return rc;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'j': c.journal_url = optarg; break;
		case 't': c.target_url = optarg; break;
		case 'w': c.workload_path = optarg; break;
		case 'r': c.run_dir = optarg; break;
		case 'x': c.xcom_dir = optarg; break;
		case 'v': variant = optarg; break;
		case 'n':
			if (cli_parse_ll(optarg, &c.try_number) || c.try_number < 1)
				return cli_usage("route", "--try '%s' is not a "
						 "positive number", optarg);
			break;
		case 'h':
			fputs(route_help, stdout);
			return 0;
		default:
			return cli_usage("route", "unknown option");
		}
	}
	if (optind < argc)
		return cli_usage("route", "unexpected argument '%s'", argv[optind]);
	if (variant && !controls_known(variant))
		return cli_usage("route", "unknown variant '%s' (naive, xcom-guard, "
				 "checkpoint-guard, journal-no-fence, split-fence, "
				 "pg-fence-row-only, no-fsync)",
				 variant);
	if (!c.target_url || !c.workload_path ||
	    (!c.journal_url && !(variant && !controls_need_journal(variant))))
		return cli_usage("route", "the journal, target and workload are "
				 "required (FENCECERT_JOURNAL, FENCECERT_TARGET, "
				 "FENCECERT_WORKLOAD or the flags)");
	if (failpoint_init(err, sizeof(err)))
		return cli_fail(FC_USAGE, "%s", err);
	if (variant)
		return controls_run(variant, &c);
	return runtime_run(&c);
}
