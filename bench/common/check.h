/* Failing a run when the allocator misbehaves. */
#ifndef BENCH_CHECK_H
#define BENCH_CHECK_H

#include <stdio.h>
#include <stdlib.h>

/* A NULL return, a misaligned block or lost data ends the run with status 3,
 * which the driver reports as a failure of the allocator under test. */
#define CHECK(cond, what)                                                   \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "hakbench: %s (%s:%d)\n", what, __FILE__,       \
                    __LINE__);                                              \
            exit(3);                                                        \
        }                                                                   \
    } while (0)

#endif
