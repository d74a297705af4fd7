/* sizing_cli.h: the `tarema-sim sizing` subcommand (argument parsing and output). */
#ifndef TAREMA_SIM_SIZING_CLI_H
#define TAREMA_SIM_SIZING_CLI_H

/* argv[0] is "sizing". Returns the exit status: 0, 1 on a failure, 2 on a usage error. */
int sim_sizing_main(int argc, char **argv);

#endif
