/* stats_class.h: the row of hak_stats that counts blocks of a size. */
#ifndef TESTS_STATS_CLASS_H
#define TESTS_STATS_CLASS_H

#include "check.h"
#include "hakmem.h"

/* The class serving n-byte blocks: the smallest block size >= n (-1: none). */
static inline int stats_class_of(const struct hak_stats *s, size_t n)
{
	int best = -1;
	for (int c = 0; c < HAK_STATS_CLASSES; c++)
		if (s->classes[c].block_size >= n &&
		    (best < 0 || s->classes[c].block_size < s->classes[best].block_size))
			best = c;
	return best;
}

/* Class c (of stats_class_of; none if negative) counts as many live blocks
 * in `now` as it did in `before`: a check. */
static inline void stats_class_live_back(const struct hak_stats *now,
					 const struct hak_stats *before, int c)
{
	if (c >= 0)
		CHECKF(now->classes[c].live == before->classes[c].live,
		       "live blocks of the class back to %llu, not %llu",
		       (unsigned long long)now->classes[c].live,
		       (unsigned long long)before->classes[c].live);
}

#endif
