/*
 * cli.h: `annlab dataset list|prepare|generate|import|verify`.
 */
#ifndef ANNLAB_DATASETS_CLI_H
#define ANNLAB_DATASETS_CLI_H

/* argv[0] is "dataset".  Returns the process exit code (0 ok, 1 failure, 2 usage). */
int ann_dataset_cli(int argc, char **argv);

#endif
