# Locating and loading libctorch, and the unwinder pitfalls of Debian's julia.

const _LIBPATH = Ref{String}("")
const _LIBHANDLE = Ref{Ptr{Cvoid}}(C_NULL)
const _LIBWHERE = Ref{String}("")
const ABI_VERSION = CTORCH_ABI_VERSION   # of the header this binding was generated from

const PRELOAD_FIX = "LD_PRELOAD=/lib/x86_64-linux-gnu/libgcc_s.so.1"

"""
    CTorch.library_candidates() -> Vector{Pair{String,String}}

Where `CTorch` looks for libctorch, in order: `ENV["CTORCH_LIBRARY"]`; the
library inside the `ctorch` Python package of the `python3` on PATH (a
`pip install libctorch` wheel); the system's (`ldconfig -p`, then pkg-config's
libdir: the Debian package `libctorch0`, `cmake --install`); the build trees of
the repository this package sits in (every `build*/libctorch.so` of the
directory holding `include/ctorch.h`, `build/` first); the system loader
(`libctorch`). Each entry is `where => path`. The first one that loads and has
the ABI version this binding needs is used; `CTorch.library_info()` says which.
"""
function library_candidates()
    c = Pair{String,String}[]
    p = get(ENV, "CTORCH_LIBRARY", "")
    isempty(p) || push!(c, "CTORCH_LIBRARY" => p)
    py = _python_package_library()
    py === nothing || push!(c, "python3's ctorch package" => py)
    for sys in _system_libraries()
        push!(c, "system" => sys)
    end
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

# The library of the `ctorch` Python package of the python3 on PATH (a wheel,
# `pip install libctorch`): ctorch.LIBRARY_PATH, asked without importing torch.
function _python_package_library()
    py = Sys.which("python3")
    py === nothing && return nothing
    code = "import importlib.util as u, os, sys\n" *
           "s = u.find_spec('ctorch')\n" *
           "d = os.path.dirname(s.origin) if s and s.origin else ''\n" *
           "p = [os.path.join(d, n) for n in ('libctorch.so', os.path.join('lib', 'libctorch.so'))]\n" *
           "print(next((x for x in p if os.path.isfile(x)), ''))"
    out = try
        read(pipeline(`$py -c $code`; stderr = devnull), String)
    catch
        return nothing
    end
    p = strip(out)
    return isempty(p) ? nothing : String(p)
end

# libctorch.so where the system has it: the dynamic loader's cache (ldconfig -p),
# then pkg-config's libdir (a Debian package or `cmake --install`).
function _system_libraries()
    found = String[]
    for cmd in (`ldconfig -p`, `/sbin/ldconfig -p`)
        out = try
            read(pipeline(cmd; stderr = devnull), String)
        catch
            continue
        end
        for m in eachmatch(r"libctorch\.so(?:\.\d+)* \(.*?\) => (\S+)", out)
            m[1] in found || push!(found, m[1])
        end
        break
    end
    libdir = try
        strip(read(pipeline(`pkg-config --variable=libdir ctorch`; stderr = devnull), String))
    catch
        ""
    end
    if !isempty(libdir) && isfile(joinpath(libdir, "libctorch.so"))
        p = joinpath(libdir, "libctorch.so")
        p in found || push!(found, p)
    end
    return found
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
        _LIBWHERE[] = where
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

"""
    CTorch.library_info() -> NamedTuple

Which libctorch this session loaded: `path`, `found_by` (the entry of
[`CTorch.library_candidates`](@ref) that matched), `abi` (its ABI version, the
one this binding needs), `ctorch` (its version) and `libtorch` (the LibTorch
version it was built against).
"""
function library_info()
    _LOADED[] || return (path = "", found_by = "", abi = 0, ctorch = "", libtorch = "")
    return (path = _LIBPATH[], found_by = _LIBWHERE[], abi = Int(ct_abi_version()),
            ctorch = unsafe_string(ct_version()), libtorch = unsafe_string(ct_torch_version()))
end

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

"""
    CTorch.safe_command()

The command that starts this julia with the preloads CTorch needs: libgcc_s
first (C++ exceptions), and for julia < 1.6 on a newer system libunwind, the
libunwind julia was built against (`CTORCH_JULIA_LIBUNWIND`,
`/opt/ctorch/julia-libunwind`, or `bindings/julia/get-libunwind.sh DIR`).
"""
function safe_command()
    gccs = filter(isfile, ["/lib/x86_64-linux-gnu/libgcc_s.so.1", "/usr/lib64/libgcc_s.so.1",
                           "/lib64/libgcc_s.so.1"])
    pre = [isempty(gccs) ? "/lib/x86_64-linux-gnu/libgcc_s.so.1" : gccs[1]]
    if julia_exceptions_unsafe()
        cands = filter(isfile, filter(!isempty, [get(ENV, "CTORCH_JULIA_LIBUNWIND", ""),
                                                  "/opt/ctorch/julia-libunwind/libunwind.so.8"]))
        push!(pre, isempty(cands) ? "DIR/libunwind.so.8 (bindings/julia/get-libunwind.sh DIR)" :
                   cands[1])
    end
    proj = dirname(dirname(@__FILE__))
    return "LD_PRELOAD=" * join(pre, ':') * " julia --project=" * proj
end

# Called first by __init__, before anything can throw inside LibTorch. Where C++
# or Julia exceptions would crash this process, CTorch refuses to load and names
# the command that works (CTORCH_ALLOW_UNSAFE_UNWIND=1 loads anyway, with a warning).
function _check_unwind_pitfall()
    julia_bad = julia_exceptions_unsafe()
    cxx_bad = unwind_pitfall()
    (julia_bad || cxx_bad) || return true
    why = julia_bad ?
        "this julia $(VERSION) uses the system libunwind (libunwind8 >= 1.4): a Julia exception " *
        "thrown through compiled code crashes the process (segfault)" :
        "this process resolves C++ exception unwinding to libunwind (" *
        something(unwinder_library(), "libunwind") * "), not libgcc_s: any error inside LibTorch " *
        "(a bad file, a shape mismatch, ...) would abort the process with SIGABRT"
    msg = "CTorch: " * why * ". Start julia as\n    " * safe_command() *
          "\nor with the repository's scripts/julia (see bindings/julia/README.md)."
    if get(ENV, "CTORCH_ALLOW_UNSAFE_UNWIND", "") == "1"
        @warn msg * " Loading anyway (CTORCH_ALLOW_UNSAFE_UNWIND=1)."
        return true
    end
    if julia_bad
        # Throwing would itself crash here: say it and stop.
        println(stderr, "ERROR: ", msg)
        flush(stderr)
        exit(1)
    end
    error(msg)
end
