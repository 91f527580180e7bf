# Locating and loading libctorch, and the unwinder pitfalls of Debian's julia.

const _LIBPATH = Ref{String}("")
const _LIBHANDLE = Ref{Ptr{Cvoid}}(C_NULL)
const ABI_VERSION = CTORCH_ABI_VERSION   # of the header this binding was generated from

const PRELOAD_FIX = "LD_PRELOAD=/lib/x86_64-linux-gnu/libgcc_s.so.1"

"""
    CTorch.library_candidates() -> Vector{Pair{String,String}}

Where `CTorch` looks for libctorch, in order (the same order as the Python
package): `ENV["CTORCH_LIBRARY"]`; the build trees of the repository this
package sits in (every `build*/libctorch.so` of the directory holding
`include/ctorch.h`, `build/` first); the system loader (`libctorch`, e.g. after
`cmake --install`). Each entry is `where => path`. The first one that loads
and has the ABI version this binding needs is used.
"""
function library_candidates()
    c = Pair{String,String}[]
    p = get(ENV, "CTORCH_LIBRARY", "")
    isempty(p) || push!(c, "CTORCH_LIBRARY" => p)
    d = @__DIR__
    for _ in 1:6
        parent = dirname(d)
        parent == d && break
        d = parent
        if isfile(joinpath(d, "include", "ctorch.h"))
            subs = sort!(filter(e -> startswith(e, "build") && isdir(joinpath(d, e)), readdir(d)))
            i = findfirst(isequal("build"), subs)
            i === nothing || (deleteat!(subs, i); pushfirst!(subs, "build"))
            append!(c, ["build tree" => joinpath(d, s, "libctorch.so") for s in subs])
            break
        end
    end
    push!(c, "system loader" => "libctorch")
    return c
end

function _load_library!()
    errs = String[]
    for (where, cand) in library_candidates()
        if occursin('/', cand) && !isfile(cand)
            push!(errs, "$where: $cand (no such file)")
            continue
        end
        h = Libdl.dlopen(cand, Libdl.RTLD_LAZY | Libdl.RTLD_LOCAL; throw_error = false)
        if h === nothing || h == C_NULL
            push!(errs, "$where: $cand (dlopen failed)")
            continue
        end
        fp = Libdl.dlsym(h, :ct_abi_version; throw_error = false)
        if fp === nothing || fp == C_NULL
            push!(errs, "$where: $cand (not libctorch: no ct_abi_version)")
            continue
        end
        abi = ccall(fp, Int32, ())
        if abi != ABI_VERSION
            push!(errs, "$where: $cand (ABI version $abi, this binding needs $(ABI_VERSION))")
            continue
        end
        isempty(errs) || !startswith(errs[1], "CTORCH_LIBRARY") ||
            @warn "CTorch: CTORCH_LIBRARY is unusable ($(errs[1])); using $cand instead"
        _LIBHANDLE[] = h
        _LIBPATH[] = occursin('/', cand) ? abspath(cand) : something(Libdl.dlpath(h), cand)
        return true
    end
    @error "CTorch: libctorch not found; set ENV[\"CTORCH_LIBRARY\"] to the path of libctorch.so" tried = errs
    return false
end

# Resolves every `@cfunc`; false (and an error logged) when the library lacks
# one: it is older than this binding, and is refused rather than given
# fallback paths per function.
function _resolve_symbols!()
    h = _LIBHANDLE[]
    missing = Symbol[]
    for (name, slot) in _SYMBOLS
        p = Libdl.dlsym(h, name; throw_error = false)
        slot[] = p === nothing ? C_NULL : p
        p === nothing && push!(missing, name)
    end
    isempty(missing) && return true
    @error "CTorch: libctorch at $(_LIBPATH[]) is older than this binding: it lacks " *
           join(sort(missing), ", ") * "; use the library built from the same ctorch version"
    return false
end

"""
    CTorch.library_path()

The path of the libctorch this session loaded.
"""
library_path() = _LIBPATH[]

# ---- The libunwind pitfall -------------------------------------------------------
#
# Debian's julia links the system libunwind.so.8, which also exports
# `_Unwind_RaiseException`. If the process-wide definition comes from libunwind
# rather than libgcc_s, every C++ `throw` inside LibTorch (even one that ctorch
# catches a few frames up) ends in std::terminate: a bare SIGABRT. Preloading
# libgcc_s makes its definition win.

"""
    CTorch.unwinder_library()

The shared object that provides the process-wide `_Unwind_RaiseException`
(the one C++ `throw` uses), or `nothing` if it cannot be determined.
"""
function unwinder_library()
    p = ccall(:dlsym, Ptr{Cvoid}, (Ptr{Cvoid}, Cstring), C_NULL, "_Unwind_RaiseException")
    p == C_NULL && return nothing
    info = Ref{NTuple{4,Ptr{Cvoid}}}((C_NULL, C_NULL, C_NULL, C_NULL))
    ok = ccall(:dladdr, Cint, (Ptr{Cvoid}, Ptr{NTuple{4,Ptr{Cvoid}}}), p, info)
    (ok == 0 || info[][1] == C_NULL) && return nothing
    return unsafe_string(Ptr{UInt8}(info[][1]))
end

"""
    CTorch.unwind_pitfall()

`true` when C++ exceptions would abort this process: the `_Unwind_RaiseException`
in use comes from libunwind (not libgcc_s). Falls back to checking
`Libdl.dllist()` for libunwind and `ENV["LD_PRELOAD"]` for libgcc_s.
"""
function unwind_pitfall()
    lib = try
        unwinder_library()
    catch
        nothing
    end
    if lib !== nothing
        return occursin("libunwind", basename(lib))
    end
    has_unwind = any(l -> occursin("libunwind", basename(l)), Libdl.dllist())
    preload_ok = occursin("libgcc_s", get(ENV, "LD_PRELOAD", ""))
    return has_unwind && !preload_ok
end

# Second pitfall (Debian 11's julia 1.5.3 on Debian 12): the system libunwind
# 1.6 makes Julia's *own* exceptions segfault when they unwind through
# JIT-compiled code. Heuristic: Julia < 1.6 using the system libunwind.so.8
# while dpkg says libunwind8 is 1.4 or newer.
function julia_exceptions_unsafe()
    VERSION >= v"1.6" && return false
    libs = filter(l -> occursin("libunwind.so.8", l), Libdl.dllist())
    isempty(libs) && return false
    real = realpath(first(libs))
    startswith(real, "/usr/lib/") || startswith(real, "/lib/") || return false
    status = "/var/lib/dpkg/status"
    isfile(status) || return false
    ver = nothing
    open(status) do io
        inpkg = false
        for line in eachline(io)
            if startswith(line, "Package: ")
                inpkg = line == "Package: libunwind8"
            elseif inpkg && startswith(line, "Version: ")
                ver = line[10:end]
                break
            end
        end
    end
    ver === nothing && return false
    m = match(r"^(\d+)\.(\d+)", ver)
    m === nothing && return false
    return (parse(Int, m[1]), parse(Int, m[2])) >= (1, 4)
end

function _warn_unwind_pitfall()
    if julia_exceptions_unsafe()
        @warn "CTorch: this julia $(VERSION) uses the system libunwind (libunwind8 >= 1.4), with which " *
              "a Julia exception thrown through compiled code crashes the process (segfault), " *
              "so errors from libctorch could not be caught. Preload the libunwind julia was built " *
              "against (bindings/julia/get-libunwind.sh DIR), e.g.\n    " * PRELOAD_FIX *
              ":DIR/libunwind.so.8 julia ..."
    end
    unwind_pitfall() || return false
    @warn "CTorch: this Julia process resolves C++ exception unwinding to libunwind (" *
          something(unwinder_library(), "libunwind") * "), not libgcc_s. Any error raised " *
          "inside LibTorch (a bad file, a shape mismatch, ...) will then abort the whole " *
          "process with SIGABRT instead of becoming a CTorchError. Fix: start Julia with the " *
          "repository's scripts/julia, or\n    " * PRELOAD_FIX * " julia ...\n(see bindings/julia/README.md)."
    return true
end
