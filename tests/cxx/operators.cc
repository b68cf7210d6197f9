/*
 * operators.cc: the C++ allocation operators in every standard form
 * (plain, array, sized, aligned, nothrow) are hakmem's, return aligned
 * distinct memory for every size and alignment, throw std::bad_alloc (or
 * return nullptr for nothrow) when a request cannot be served, and call the
 * installed new_handler before giving up.
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "active.h"
#include "blocks.h"
#include "check.h"

namespace {

using std::align_val_t;
using std::nothrow_t;
using std::size_t;

bool aligned(const void *p, size_t a)
{
	return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0;
}

// Every replaceable global operator: each must resolve to hakmem.
void test_every_form_is_hakmems()
{
	struct form {
		const char *name;
		const void *fn;
	};
#define FORM(type, op) { #type, reinterpret_cast<const void *>(static_cast<type>(op)) }
	const form forms[] = {
		FORM(void *(*)(size_t), ::operator new),
		FORM(void *(*)(size_t), ::operator new[]),
		FORM(void *(*)(size_t, const nothrow_t &) noexcept, ::operator new),
		FORM(void *(*)(size_t, const nothrow_t &) noexcept, ::operator new[]),
		FORM(void *(*)(size_t, align_val_t), ::operator new),
		FORM(void *(*)(size_t, align_val_t), ::operator new[]),
		FORM(void *(*)(size_t, align_val_t, const nothrow_t &) noexcept, ::operator new),
		FORM(void *(*)(size_t, align_val_t, const nothrow_t &) noexcept, ::operator new[]),
		FORM(void (*)(void *) noexcept, ::operator delete),
		FORM(void (*)(void *) noexcept, ::operator delete[]),
		FORM(void (*)(void *, size_t) noexcept, ::operator delete),
		FORM(void (*)(void *, size_t) noexcept, ::operator delete[]),
		FORM(void (*)(void *, const nothrow_t &) noexcept, ::operator delete),
		FORM(void (*)(void *, const nothrow_t &) noexcept, ::operator delete[]),
		FORM(void (*)(void *, align_val_t) noexcept, ::operator delete),
		FORM(void (*)(void *, align_val_t) noexcept, ::operator delete[]),
		FORM(void (*)(void *, size_t, align_val_t) noexcept, ::operator delete),
		FORM(void (*)(void *, size_t, align_val_t) noexcept, ::operator delete[]),
		FORM(void (*)(void *, align_val_t, const nothrow_t &) noexcept, ::operator delete),
		FORM(void (*)(void *, align_val_t, const nothrow_t &) noexcept, ::operator delete[]),
	};
#undef FORM
	if (!provided_by_hakmem(reinterpret_cast<const void *>(&std::malloc))) {
		check_skip("operator forms: hakmem is not loaded");
		return;
	}
	for (size_t i = 0; i < sizeof forms / sizeof *forms; i++)
		CHECKF(provided_by_hakmem(forms[i].fn), "operator %zu (%s) is not hakmem's",
		       i, forms[i].name);
}

block_set live;

void no_release(void *) {}

// Plain, array, sized and nothrow forms for many sizes; blocks are patterned
// while live so that overlapping blocks fail.
void test_sizes()
{
	blocks_init(&live, 64, size_t(64) << 20, no_release);
	std::vector<std::pair<void *, size_t>> all;
	for (size_t n = 0; n < (size_t(8) << 20); n = n < 4096 ? n + 1 : n * 5 / 4) {
		void *a = ::operator new(n);
		void *b = ::operator new[](n);
		void *c = ::operator new(n, std::nothrow);
		void *d = ::operator new[](n, std::nothrow);
		for (void *p : { a, b, c, d }) {
			CHECKF(p != nullptr && aligned(p, 16), "new(%zu) = %p", n, p);
			if (n > 0 && p)
				blocks_add(&live, p, n);
		}
		blocks_clear(&live);
		::operator delete(a, n);
		::operator delete[](b, n);
		::operator delete(c, std::nothrow);
		::operator delete[](d);
	}
}

void test_alignments()
{
	for (size_t a = 1; a <= (size_t(8) << 20); a *= 2) {
		for (size_t n : { size_t(1), a, 3 * a + 1 }) {
			const align_val_t al{ a };
			void *p = ::operator new(n, al);
			void *q = ::operator new[](n, al);
			void *r = ::operator new(n, al, std::nothrow);
			void *s = ::operator new[](n, al, std::nothrow);
			for (void *x : { p, q, r, s })
				CHECKF(x && aligned(x, a < 16 ? 16 : a), "new(%zu, align %zu) = %p",
				       n, a, x);
			::operator delete(p, n, al);
			::operator delete[](q, al);
			::operator delete(r, al, std::nothrow);
			::operator delete[](s, n, al);
		}
	}
}

struct alignas(4096) page_aligned {
	char bytes[100];
};
struct counted {
	static int alive;
	std::string text = std::string(100, 'x');
	counted() { alive++; }
	~counted() { alive--; }
};
int counted::alive;

// new-expressions: overaligned types and arrays with destructors (whose
// size includes the array cookie and reaches sized delete[]).
void test_expressions()
{
	for (int i = 0; i < 100; i++) {
		auto *one = new page_aligned;
		auto *many = new page_aligned[7];
		CHECK(aligned(one, 4096) && aligned(many, 4096));
		delete one;
		delete[] many;
		auto *arr = new counted[size_t(i) + 1];
		CHECK(counted::alive == i + 1);
		delete[] arr;
		CHECK(counted::alive == 0);
	}
	// The standard library on top: containers build, grow and free.
	std::map<std::string, std::vector<int>> m;
	for (int i = 0; i < 20000; i++)
		m[std::to_string(i * 7919 % 20000)].push_back(i);
	long sum = 0;
	for (const auto &kv : m)
		for (int v : kv.second)
			sum += v;
	CHECK(m.size() == 20000 && sum == 20000L * 19999 / 2);
}

int handler_calls;

void counting_handler()
{
	// Give up on the third call: operator new must then throw.
	if (++handler_calls == 3)
		std::set_new_handler(nullptr);
}

void test_failure()
{
	const size_t huge = SIZE_MAX / 2;
	bool threw = false;
	try {
		void *p = ::operator new(huge);
		::operator delete(p);
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	CHECKF(threw, "operator new(%zu) did not throw bad_alloc", huge);
	threw = false;
	try {
		void *p = ::operator new[](huge, align_val_t{ 64 });
		::operator delete[](p, align_val_t{ 64 });
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	CHECK(threw);
	CHECK(::operator new(huge, std::nothrow) == nullptr);
	CHECK(::operator new[](huge, std::nothrow) == nullptr);
	CHECK(::operator new(huge, align_val_t{ 256 }, std::nothrow) == nullptr);
	CHECK(::operator new[](SIZE_MAX, align_val_t{ 256 }, std::nothrow) == nullptr);

	// The new_handler is called until it gives up, then bad_alloc.
	handler_calls = 0;
	std::set_new_handler(counting_handler);
	threw = false;
	try {
		void *p = ::operator new(huge);
		::operator delete(p);
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	CHECKF(threw && handler_calls == 3, "new_handler called %d times, threw %d",
	       handler_calls, threw);
	handler_calls = 0;
	std::set_new_handler(counting_handler);
	CHECKF(::operator new(huge, std::nothrow) == nullptr && handler_calls == 3,
	       "nothrow new: new_handler called %d times", handler_calls);
	std::set_new_handler(nullptr);
}

} // namespace

int main()
{
	check_init("operators");
	test_every_form_is_hakmems();
	test_sizes();
	test_alignments();
	test_expressions();
	test_failure();
	return check_finish();
}
