/* asa_cli.h: `tarema-sim asa`, the ASA learner's convergence scenario on the command line. */
#ifndef TAREMA_SIM_ASA_CLI_H
#define TAREMA_SIM_ASA_CLI_H

/* argv[0] is "asa"; returns the exit status (0 ok, 1 failure, 2 usage). */
int sim_asa_main(int argc, char **argv);

#endif
