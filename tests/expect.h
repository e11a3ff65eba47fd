/* expect.h: the one check macro of the C test programs (tests/unit_tests.c,
 * tests/multigpu_tests.c). Each program is one file, so the counters live
 * here; it prints them itself as "...: N passed, N failed". */
#ifndef REDUCE_TESTS_EXPECT_H
#define REDUCE_TESTS_EXPECT_H

#include <stdio.h>

static int passed, failed;

#define EXPECT(cond)                                                        \
    do {                                                                    \
        if (cond) {                                                         \
            passed++;                                                       \
        } else {                                                            \
            failed++;                                                       \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
        }                                                                   \
    } while (0)

#endif
