/* assert.h: LAYA_ASSERT, for invariants inside laya.c (what the engine built itself: a batch it
 * packed, results it counted), never for input. Input is validated at the boundary and refused
 * with an error value; an invariant that fails is a bug in laya.c.
 *
 * Active in Debug builds, the sanitizer builds included (NDEBUG unset): a failure prints the
 * condition, file, line and function to stderr and aborts. Compiled out in Release (NDEBUG, as
 * CMake's Release sets it): the condition is not evaluated, so it must have no side effect. */
#ifndef LAYA_CORE_ASSERT_H
#define LAYA_CORE_ASSERT_H

#ifndef NDEBUG
#define LAYA_ASSERTS_ON 1
#define LAYA_ASSERT(cond) ((cond) ? (void)0 : laya_assert_fail(#cond, __FILE__, __LINE__, __func__))
#else
#define LAYA_ASSERTS_ON 0
#define LAYA_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

#if defined(__GNUC__)
__attribute__((noreturn))
#endif
void laya_assert_fail(const char *cond, const char *file, int line, const char *func);

#endif
