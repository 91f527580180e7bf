"""Checks a libctorch wheel as a packaging engineer would (the wheel leg, issue 38):
    python3 scripts/ci/check_wheel.py WHEEL TORCH_VERSION
- the distribution is `libctorch`, it requires torch==X.Y.* of the torch it was built with,
  and records that torch (ctorch/_build_info.py);
- the platform tag is manylinux_2_N for the newest GLIBC_2.N its own files need (torch's
  libraries are not in it and not counted, as torchvision's wheels do) and the file name
  carries the same tag;
- every ELF file's RUNPATH has only $ORIGIN-relative entries, none empty;
- it carries the ctorch command (entry point and binary), the .pyi stubs and py.typed.
Standard library only (and readelf/objdump from binutils)."""
import os
import re
import subprocess
import sys
import tempfile
import zipfile


def fail(msg):
    print("check_wheel: FAILED: " + msg)
    sys.exit(1)


def main(wheel, torch_version):
    z = zipfile.ZipFile(wheel)
    names = z.namelist()
    meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = z.read(meta_name).decode()
    if not re.search(r"^Name: libctorch$", meta, re.M):
        fail("the distribution is not named libctorch")
    minor = ".".join(torch_version.split(".")[:2])
    if not re.search(r"^Requires-Dist: torch ?==%s\.\*" % re.escape(minor), meta, re.M):
        fail("no Requires-Dist: torch==%s.* in\n%s" % (minor, meta))
    info = z.read("ctorch/_build_info.py").decode()
    if "TORCH_SOURCE = 'pypi'" not in info or "TORCH_VERSION = '%s" % torch_version not in info:
        fail("ctorch/_build_info.py does not record torch %s from PyPI:\n%s" % (torch_version, info))
    for need in ("ctorch/bin/ctorch", "ctorch/py.typed", "ctorch/_aten_ops.pyi", "ctorch/libctorch.so"):
        if need not in names:
            fail("%s is not in the wheel" % need)
    ep = z.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    if not re.search(r"^ctorch\s*=\s*ctorch\._cli:main", ep, re.M):
        fail("no ctorch console script:\n" + ep)
    if any(n.startswith("torch/") or "/libtorch" in n or "nvidia/" in n for n in names):
        fail("the wheel bundles torch's libraries")
    wheel_tag = os.path.basename(wheel)[:-4].split("-")[-1]
    tag_in_meta = re.search(r"^Tag: (\S+)$", z.read(meta_name.replace("METADATA", "WHEEL")).decode(), re.M)
    with tempfile.TemporaryDirectory() as d:
        newest = 17
        for n in ("ctorch/libctorch.so", "ctorch/bin/ctorch"):
            p = z.extract(n, d)
            dyn = subprocess.run(["readelf", "-d", p], capture_output=True, text=True).stdout
            m = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]", dyn)
            entries = m.group(1).split(":") if m else []
            bad = [e for e in entries if not e.startswith("$ORIGIN")]
            if bad:
                fail("%s RUNPATH has entries that are not $ORIGIN-relative: %r" % (n, entries))
            if not any(e.endswith("/torch/lib") for e in entries):
                fail("%s RUNPATH does not reach torch/lib: %r" % (n, entries))
            syms = subprocess.run(["objdump", "-T", p], capture_output=True, text=True).stdout
            for v in re.findall(r"GLIBC_2\.(\d+)", syms):
                newest = max(newest, int(v))
            print("check_wheel: %s RUNPATH %s" % (n, ":".join(entries)))
        want = "manylinux_2_%d_x86_64" % newest
        if wheel_tag != want or not tag_in_meta or not tag_in_meta.group(1).endswith(want):
            fail("platform tag %s (WHEEL: %s), expected %s (GLIBC_2.%d)"
                 % (wheel_tag, tag_in_meta.group(1) if tag_in_meta else None, want, newest))
    print("check_wheel: %s: libctorch, torch==%s.*, %s, relative RUNPATHs, ctorch command, "
          "stubs" % (os.path.basename(wheel), minor, wheel_tag))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
