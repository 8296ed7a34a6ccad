/*
 * commands.h -- the subcommands of the fencecert binary, one file each
 * (cli/cmd_NAME.c), dispatched by cli/main.c.
 *
 * Each subcommand is `int cmd_NAME(int argc, char **argv)` returning the
 * process exit status; argv[0] is the subcommand name.  Errors go to
 * stderr as "fencecert: FAMILY: message"; machine output (JSON) goes to
 * stdout; every subcommand answers --help and documents its exit status
 * at the top of its file (the shared codes are common/cli.h's).
 *
 * Who includes it: cli/main.c and the cli/cmd_*.c files, nothing else: a
 * command is the top of the layers and no module calls one.
 */
#ifndef FENCECERT_COMMANDS_H
#define FENCECERT_COMMANDS_H

int cmd_id(int argc, char **argv);
int cmd_journal(int argc, char **argv);
int cmd_route(int argc, char **argv);
int cmd_certify(int argc, char **argv);
int cmd_gate(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_target(int argc, char **argv);
int cmd_report(int argc, char **argv);

#endif
