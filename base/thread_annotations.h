// Thread-safety annotations: Clang's capability attributes as macros, so that locking
// rules are written next to the data they protect and checked at compile time.
//
// `GUARDED_BY(mu_)` on a member says it is read and written only with mu_ held;
// `REQUIRES(mu_)` on a function says its caller holds mu_; `EXCLUDES(mu_)` that the
// caller must not (the function takes it). Mutex types carry CAPABILITY, RAII lockers
// SCOPED_CAPABILITY (base/mutex.h). scripts/thread_safety_check.sh compiles every file that
// uses them with clang's -Wthread-safety (ctest `thread_safety`); other compilers see
// empty macros, so the annotations cost nothing at run time.
//
// Thread-safety: none needed (macros only).
#pragma once

#if defined(__clang__)
#define SY_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SY_THREAD_ANNOTATION(x)  // GCC and others: no analysis
#endif

// A type that acts as a lock ("mutex", "role", ...).
#define CAPABILITY(x) SY_THREAD_ANNOTATION(capability(x))
// An RAII type that holds a capability for its lifetime.
#define SCOPED_CAPABILITY SY_THREAD_ANNOTATION(scoped_lockable)
// A data member read and written only with the capability held.
#define GUARDED_BY(x) SY_THREAD_ANNOTATION(guarded_by(x))
// A pointer member whose pointee is accessed only with the capability held.
#define PT_GUARDED_BY(x) SY_THREAD_ANNOTATION(pt_guarded_by(x))
// Lock ordering: this capability is taken before / after the given ones.
#define ACQUIRED_BEFORE(...) SY_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) SY_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
// The caller holds the capability (exclusively / at least shared) on entry and exit.
#define REQUIRES(...) SY_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) SY_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// The function takes / releases the capability (and the caller did not / did hold it).
#define ACQUIRE(...) SY_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) SY_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) SY_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) SY_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) SY_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
// The function takes the capability when it returns the given value.
#define TRY_ACQUIRE(...) SY_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) SY_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
// The caller must not hold the capability (the function takes it itself).
#define EXCLUDES(...) SY_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// Checks at run time that the capability is held; the analysis then assumes it is.
#define ASSERT_CAPABILITY(x) SY_THREAD_ANNOTATION(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) SY_THREAD_ANNOTATION(assert_shared_capability(x))
// The function returns a reference to the given capability.
#define RETURN_CAPABILITY(x) SY_THREAD_ANNOTATION(lock_returned(x))
// Turns the analysis off for one function (say why next to it).
#define NO_THREAD_SAFETY_ANALYSIS SY_THREAD_ANNOTATION(no_thread_safety_analysis)
