/* cli.h: the planner's commands against the API server (kubeconfig as every component:
 * --kubeconfig, else in-cluster, else $KUBECONFIG / ~/.kube/config):
 *
 *   submit FILE [--namespace NS] [--deployment D.yaml] [--retries N] [--dry-run] [--wait D]
 *       native YAML or CWL -> a Workflow; checked first (cycles, unknown dependencies, CWL
 *       features, deployment file, a step larger than the live cluster): bad input creates
 *       nothing. With --wait (default 30s) it prints the plan once the controller made it.
 *   list [--namespace NS]              the Workflows: phase, next start, predicted end
 *   show NAME [--namespace NS]         per step: state, start, end, nodes, predicted vs actual
 *   cancel NAME [--namespace NS]       spec.cancel = true; the controller deletes the
 *                                      reservations and gated pods
 *   gantt NAME --svg FILE              the plan over the cluster's occupancy and the other
 *                                      reservations
 * Each returns the process exit status. */
#ifndef TAREMA_PLANNER_CLI_H
#define TAREMA_PLANNER_CLI_H

int pl_cli_main(const char *cmd, int argc, char **argv);

#endif
