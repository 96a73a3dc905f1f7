/*
 * version.h: annlab's version, raised by hand when the results a run
 * writes change meaning; `annlab --version` prints it beside the source
 * commit, which identifies a build exactly.
 */
#ifndef ANNLAB_HARNESS_VERSION_H
#define ANNLAB_HARNESS_VERSION_H

#define ANNLAB_VERSION "0.17.0"

#endif
