/* blocks.c: see blocks.h. */
#include "blocks.h"

#include "check.h"
#include "pattern.h"

void blocks_init(struct block_set *s, size_t count_max, size_t bytes_max,
		 void (*release)(void *p))
{
	s->count_max = count_max < 256 ? count_max : 256;
	s->bytes_max = bytes_max;
	s->head = s->count = s->bytes = 0;
	s->next_seed = 1;
	s->release = release;
}

static void evict_oldest(struct block_set *s)
{
	size_t first = (s->head + 256 - s->count) % 256;
	struct live_block *b = &s->slot[first];
	size_t bad = pattern_find_mismatch(b->p, b->n, b->seed);
	CHECKF(bad == (size_t)-1,
	       "block %p of %zu bytes changed at offset %zu while live",
	       b->p, b->n, bad);
	s->release(b->p);
	s->bytes -= b->n;
	s->count--;
}

void blocks_add(struct block_set *s, void *p, size_t n)
{
	if (!CHECKF(p != NULL, "allocation of %zu bytes returned NULL", n))
		return;
	while (s->count > 0 &&
	       (s->count == s->count_max || s->bytes + n > s->bytes_max))
		evict_oldest(s);
	struct live_block *b = &s->slot[s->head];
	b->p = p;
	b->n = n;
	b->seed = s->next_seed++;
	pattern_fill(p, n, b->seed);
	s->head = (s->head + 1) % 256;
	s->count++;
	s->bytes += n;
}

void blocks_clear(struct block_set *s)
{
	while (s->count > 0)
		evict_oldest(s);
}
