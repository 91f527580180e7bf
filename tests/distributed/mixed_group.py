"""One process group, four languages: a rank in PyTorch's own Python
(torch.distributed, Gloo), a C rank (test_distributed --case mixed), a
Python rank through ctorch's ctypes binding, and a Julia rank
(bindings/julia/CTorch/test/dist_rank.jl), all on one TCPStore on loopback.
Each rank all-reduces, broadcasts and all-gathers the protocol's tensors and
prints the results' bytes; every rank must print the same bytes, and the
bytes must be the right values. Run twice: with the PyTorch rank as rank 0
(store server, torch's sequence number) and with the C rank as rank 0.

  /usr/bin/python3 mixed_group.py --c-rank build/tests/test_distributed \\
      [--torch-python /usr/bin/python3] [--julia scripts/julia]

Exit 0: passed; 77: skipped (no torch.distributed with Gloo in that Python).
The driver itself needs only the standard library."""
import argparse
import os
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expected(world: int) -> dict:
    x = [sum(struct.unpack("f", struct.pack("f", ((i * (r + 1)) % 97) / 7.0))[0]
             for r in range(world)) for i in range(1000)]
    bc = struct.pack("<4q", *[(world - 1) * 10 + i for i in range(4)])
    ag = b"".join(struct.pack("<2f", r, r + 0.5) for r in range(world))
    return {"allreduce": x, "broadcast": bc.hex(), "allgather": ag.hex()}


def run(kinds: list, cmds: dict, deadline: float) -> None:
    world, port = len(kinds), free_port()
    procs = []
    for rank, kind in enumerate(kinds):
        cmd = cmds[kind] + ["--rank", str(rank), "--world", str(world), "--port", str(port)]
        if kind == "c":  # the C test program takes its case last
            cmd += ["--case", "mixed"]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      cwd=ROOT))
    t0, outs = time.time(), []
    for rank, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=max(1.0, deadline - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            sys.exit("rank %d (%s) still running after %.0f s: a hang" % (rank, kinds[rank],
                                                                      deadline))
        if p.returncode != 0:
            for q in procs:
                q.kill()
            sys.exit("rank %d (%s) failed (%d):\n%s\n%s" % (rank, kinds[rank], p.returncode,
                                                          out.decode(), err.decode()[-3000:]))
        lines = dict(l.split(" ", 1) if " " in l else (l, "")
                     for l in out.decode().splitlines() if l.strip())
        outs.append(lines)
    want = expected(world)
    for rank, lines in enumerate(outs):
        for key in ("allreduce", "broadcast", "allgather", "done"):
            if key not in lines:
                sys.exit("rank %d (%s) printed no %r line: %r" % (rank, kinds[rank], key, lines))
        for key in ("allreduce", "broadcast", "allgather"):
            if lines[key] != outs[0][key]:
                sys.exit("rank %d (%s) disagrees with rank 0 (%s) on %s" % (
                    rank, kinds[rank], kinds[0], key))
    got = struct.unpack("<1000f", bytes.fromhex(outs[0]["allreduce"]))
    bad = [i for i in range(1000) if abs(got[i] - want["allreduce"][i]) > 1e-5 * max(1, got[i])]
    if bad:
        sys.exit("all_reduce values wrong at %d places, e.g. [%d] %r vs %r" % (
            len(bad), bad[0], got[bad[0]], want["allreduce"][bad[0]]))
    for key in ("broadcast", "allgather"):
        if outs[0][key] != want[key]:
            sys.exit("%s: %s, expected %s" % (key, outs[0][key], want[key]))
    print("mixed group %s: %d ranks agree bit for bit (%.1f s)" % (
        "/".join(kinds), world, time.time() - t0))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--c-rank", required=True)
    ap.add_argument("--torch-python", default="/usr/bin/python3")
    ap.add_argument("--ctorch-python", default=sys.executable)
    ap.add_argument("--julia", default=None, help="scripts/julia, or omit to leave Julia out")
    a = ap.parse_args()
    lib = os.environ.get("CTORCH_LIBRARY")
    if lib:
        import ctypes
        if not ctypes.CDLL(lib).ct_distributed_has_backend(b"gloo"):
            print("SKIP: this libctorch has no Gloo backend (c10d with Gloo)")
            sys.exit(77)
    probe = subprocess.run([a.torch_python, "-c", "import torch.distributed as d; "
                            "assert d.is_available() and d.is_gloo_available()"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if probe.returncode != 0:
        print("SKIP: %s has no torch.distributed with Gloo" % a.torch_python)
        sys.exit(77)
    cmds = {"torch": [a.torch_python, os.path.join(HERE, "rank_torch.py")],
            "c": [os.path.abspath(a.c_rank)],
            "python": [a.ctorch_python, os.path.join(HERE, "rank_ctorch.py")]}
    kinds = ["torch", "c", "python"]
    if a.julia:
        cmds["julia"] = [a.julia, os.path.join(ROOT, "bindings", "julia", "CTorch", "test",
                                               "dist_rank.jl")]
        kinds.append("julia")
    run(kinds, cmds, 240)
    run(kinds[1:] + kinds[:1], cmds, 240)


if __name__ == "__main__":
    main()
