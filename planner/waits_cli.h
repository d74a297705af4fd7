/* waits_cli.h: `tarema-planner waits`, the learned queue waits per job shape (docs/asa.md). */
#ifndef TAREMA_PLANNER_WAITS_CLI_H
#define TAREMA_PLANNER_WAITS_CLI_H

/* argv[0] is "waits". Returns the process exit status. */
int planner_waits_main(int argc, char **argv);

#endif
