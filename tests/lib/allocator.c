#include "allocator.h"

#include <stdlib.h>
#include <string.h>

bool testing_hakmem(void)
{
	const char *allocator = getenv("TEST_ALLOCATOR");
	return allocator != NULL && strcmp(allocator, "hakmem") == 0;
}

bool hakmem_asks_huge_pages(void)
{
	const char *thp = getenv("HAKMEM_THP");
	if (thp != NULL && *thp != '\0')
		return strcmp(thp, "0") != 0;
	const char *profile = getenv("HAKMEM_PROFILE");
	return profile == NULL || strcmp(profile, "lean") != 0;
}
