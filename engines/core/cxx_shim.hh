/*
 * cxx_shim.hh: helpers for the reference peers' C++ shims only.
 *
 * ann_cxx_guard is the one place where C++ exceptions of the reference peers'
 * libraries (hnswlib, FAISS) become annlab status codes.  Every entry point
 * of a C++ shim runs its body through ann_cxx_guard, so no exception crosses
 * into C: std::bad_alloc becomes -ENOMEM, any other exception the code the
 * caller names (ANN_ECORRUPT while loading a file, ANN_EINTERNAL otherwise),
 * or -ENOSPC when its text says the disk is full, with the exception's text
 * in the detail message.  C++ only.
 */
#ifndef ANNLAB_CORE_CXX_SHIM_HH
#define ANNLAB_CORE_CXX_SHIM_HH

extern "C" {
#include "engines/core/params.h"
#include "engines/core/status.h"
}

#include <cerrno>
#include <cstring>
#include <exception>
#include <new>

/* Run f() (returning an int status); map exceptions as described above.
 * what: context for the message ("ref-hnswlib build", a file path). */
template <class F> static inline int ann_cxx_guard(int exc_code, const char *what, F &&f) noexcept
{
    try {
        return f();
    } catch (const std::bad_alloc &) {
        return ann_fail(-ENOMEM, "%s: out of memory", what);
    } catch (const std::exception &e) {
        /* a library that says the disk is full only in its message (FAISS's
         * index writer): ENOSPC, which `annlab run` retries on --resume */
        int code = std::strstr(e.what(), "No space left on device") ? -ENOSPC : exc_code;
        return ann_fail(code, "%s: %s", what, e.what());
    } catch (...) {
        return ann_fail(exc_code, "%s: unknown C++ exception", what);
    }
}

/* Parameter-table entries (C++17 has no partial designated initializers). */
static inline constexpr ann_param_spec ann_cxx_param_int(const char *name, double min, double max,
                                                         double def, const char *help)
{
    return ann_param_spec{ name, ANN_PARAM_INT, min, max, def, nullptr, nullptr, help, 0, nullptr, 0 };
}
/* An int search parameter that must be >= k (ann_param_spec.at_least_k). */
static inline constexpr ann_param_spec ann_cxx_param_int_k(const char *name, double min,
                                                           double max, double def,
                                                           const char *help)
{
    return ann_param_spec{ name, ANN_PARAM_INT, min, max, def, nullptr, nullptr, help, 1, nullptr, 0 };
}
/* The end of a table; owner as ANN_PARAM_END_OF's (params.h). */
static inline constexpr ann_param_spec ann_cxx_param_end(const char *owner)
{
    return ann_param_spec{ nullptr, ANN_PARAM_INT, 0, 0, 0, nullptr, nullptr, nullptr, 0, owner, 0 };
}

#endif
