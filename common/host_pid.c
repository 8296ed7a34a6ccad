/*
 * host_pid.c -- the outermost namespace's pid of this process (host_pid.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/host_pid.h"

long host_pid(void)
{
	char line[256];
	long pid = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return (long)getpid();
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "NSpid:", 6) == 0) {
			pid = strtol(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return pid > 0 ? pid : (long)getpid();
}
