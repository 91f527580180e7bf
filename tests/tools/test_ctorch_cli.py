#!/usr/bin/python3
"""Tests of the `ctorch` command (tools/ctorch/): every subcommand, its --help, and its error
paths; `run` outputs are cross-checked against PyTorch on the reference models of
tests/models/make_models.py.

  test_ctorch_cli.py CTORCH_EXE MODELS_DIR [unittest args]

AOTInductor packages (.pt2) come from CTORCH_TEST_PACKAGES (tests/models/make_packages.py):
with a LibTorch >= 2.6 `inspect`, `run` and `bench` are checked on them; with an older one
the not-supported path is checked instead.
"""
import argparse
import json
import os
import pty
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_util import (EXE, MODELS, HAVE_AOTI, ctorch, ctorch_all, npy_header, model,  # noqa: E402
                      io, spinning_model)
from ctorch_cli_checks import Verify, VerifyByContents, Package, NpyAndJsonErrors  # noqa: E402,F401


class Help(unittest.TestCase):
    def test_top_level(self):
        r = ctorch("--help", check=0)
        for sub in ("info", "inspect", "run", "bench", "verify"):
            self.assertIn(sub, r.stdout)
        r = ctorch(check=2)
        self.assertIn("Usage: ctorch COMMAND", r.stderr)
        r = ctorch("frobnicate", check=2)
        self.assertIn("unknown command 'frobnicate'", r.stderr)
        v = ctorch("--version", check=0).stdout
        self.assertRegex(v, r"^ctorch \S+ \(LibTorch \S+\)$")
        self.assertTrue(torch.__version__.startswith(v.split("LibTorch ")[1].rstrip(")\n")), v)

    def test_every_subcommand(self):
        cases = [(sub, flag) for sub in ("info", "inspect", "run", "bench", "verify")
                 for flag in ("--help", "-h")]
        for (sub, _), r in zip(cases, ctorch_all(cases, check=0)):
            self.assertTrue(r.stdout.startswith(f"Usage: ctorch {sub}"), r.stdout)
            self.assertEqual(r.stderr, "")

    def test_usage_errors_exit_2(self):
        cases = [(("info", "--bogus"), "unknown option '--bogus'"),
                 (("info", "extra"), "unknown argument 'extra'"),
                 (("inspect",), "no model file given"),
                 (("inspect", "a.pt", "b.pt"), "one model file only"),
                 (("run",), "no model file given"),
                 (("run", model("gate"), "--method"), "--method needs a value"),
                 (("run", model("gate"), "--device", "tpu"), "bad device 'tpu'"),
                 (("bench", model("gate"), "--iters", "0"), "bad value '0' for --iters"),
                 (("bench", model("gate"), "--warmup", "x"), "bad value 'x' for --warmup"),
                 (("bench", model("gate"), "--frob"), "unknown option '--frob'"),
                 (("inspect", "a.pt2", "--model-name"), "--model-name needs a value"),
                 (("inspect", model("gate"), "--model-name", "m"),
                  "--model-name applies to AOTInductor packages"),
                 (("run", model("gate"), "--model-name", "m"),
                  "--model-name applies to AOTInductor packages"),
                 (("run", "m.pt2", "--method", "encode"),
                  "--method does not apply to an AOTInductor package"),
                 (("bench", "m.pt2", "--eval"),
                  "--eval does not apply to an AOTInductor package"),
                 (("verify",), "no file given"),
                 (("verify", "--frob", "x.pt"), "unknown option '--frob'"),
                 (("verify", "--module", "--pickle", "x.pt"),
                  "--module and --pickle exclude each other"),
                 (("verify", "x.pt", "--timeout"), "--timeout needs a value"),
                 (("verify", "x.pt", "--timeout", "soon"), "bad timeout 'soon'")]
        for (_, msg), r in zip(cases, ctorch_all([args for args, _ in cases], check=2)):
            self.assertIn(msg, r.stderr)
            self.assertIn("--help", r.stderr)


class Info(unittest.TestCase):
    def test_text(self):
        r = ctorch("info", check=0)
        for word in ("ctorch", "LibTorch", "library", "CUDA", "threads"):
            self.assertIn(word, r.stdout)

    def test_json_matches_torch(self):
        d = json.loads(ctorch("info", "--json", check=0).stdout)
        self.assertEqual(d["abi"], d["header_abi"])
        self.assertTrue(torch.__version__.startswith(d["libtorch"]), d)
        self.assertEqual(d["cuda_available"], torch.cuda.is_available())
        self.assertEqual(d["cuda_devices"], torch.cuda.device_count())
        self.assertGreaterEqual(d["threads"], 1)
        self.assertIn("libctorch.so", os.path.basename(d["library"]))
        self.assertTrue(os.path.exists(d["library"]), d["library"])


class Inspect(unittest.TestCase):
    def check_against_torch(self, name):
        d = json.loads(ctorch("inspect", model(name), "--json", check=0).stdout)
        m = torch.jit.load(model(name))
        self.assertEqual(d["type"], m._c._type().qualified_name())
        self.assertEqual(d["training"], m.training)
        params = [(n, list(p.shape), str(p.dtype).replace("torch.", "")) for n, p in m.named_parameters()]
        self.assertEqual([(p["name"], p["shape"], p["dtype"]) for p in d["parameters"]], params)
        self.assertEqual(d["parameters_total"]["numel"], sum(p.numel() for p in m.parameters()))
        bufs = [(n, list(b.shape)) for n, b in m.named_buffers()]
        self.assertEqual([(b["name"], b["shape"]) for b in d["buffers"]], bufs)
        self.assertEqual(d["buffers_total"]["count"], len(bufs))
        self.assertEqual([s["name"] for s in d["submodules"]], [n for n, _ in m.named_modules()][1:])
        methods = {x["name"]: x["schema"] for x in d["methods"]}
        self.assertIn("forward", methods)
        self.assertEqual(methods["forward"], str(m.forward.schema))
        return d

    def test_parameters(self):
        self.check_against_torch("gate")

    def test_buffers_and_submodules(self):
        d = self.check_against_torch("convbn")
        self.assertEqual({s["name"] for s in d["submodules"]}, {"conv", "bn"})
        self.assertIn("bn.running_mean", [b["name"] for b in d["buffers"]])

    def test_methods(self):
        d = self.check_against_torch("multi")
        self.assertTrue({"forward", "encode", "decode"} <= {x["name"] for x in d["methods"]})

    def test_extra_files(self):
        d = self.check_against_torch("with_meta")
        files = {f["name"]: f["bytes"] for f in d["extra_files"]}
        meta = json.dumps({"name": "with_meta", "version": 3})
        self.assertEqual(files, {"meta.json": len(meta), "notes.txt": 5})

    def test_text(self):
        out = ctorch("inspect", model("convbn"), check=0).stdout
        self.assertIn("TorchScript module __torch__.ConvBN", out)
        self.assertIn("forward(__torch__.ConvBN self, Tensor x) -> Tensor", out)
        self.assertRegex(out, r"conv\.weight\s+float32\[4, 3, 3, 3\]")
        self.assertIn("total: 4 parameters", out)
        self.assertIn("bn.running_var", out)

    def test_errors(self):
        r = ctorch("inspect", "/nonexistent/model.pt", check=1)
        self.assertIn("ct_module_load", r.stderr)
        self.assertIn("(status 4)", r.stderr)  # CT_ERR_NOT_FOUND
        with tempfile.NamedTemporaryFile(suffix=".pt") as f:
            f.write(b"not a zip archive")
            f.flush()
            r = ctorch("inspect", f.name, check=1)
            self.assertIn("(status 5)", r.stderr)  # CT_ERR_IO

    def test_crashing_archive_is_reported(self):
        # A mutated archive on which LibTorch 1.13's loader ends the process (found by
        # fuzz_module_load; tests/fuzz/KNOWN_CRASHES.md, parseClassConstant): inspect loads
        # it in a child first, as verify does, and reports the child's death; in-process
        # (--trusted, the previous default) it dies.
        bad = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fuzz",
                           "crashes", "class_constant.pt")
        r = ctorch("inspect", bad, check=1)
        self.assertEqual(r.stdout, "")
        d = json.loads(ctorch("inspect", bad, "--json", check=1).stdout)
        self.assertEqual(d["status"], 5)
        if torch.__version__.startswith("1.13"):  # the crash itself is LibTorch 1.13's
            self.assertRegex(r.stderr, r"ct_module_verify: loading '.*class_constant\.pt' "
                                       r"crashed the checking process: signal \d+ \([\w ]+\) "
                                       r"\(status 5\)")
            self.assertIn("crashed the checking process", d["error"])
            r = ctorch("inspect", "--trusted", bad)
            self.assertLess(r.returncode, 0, r.stderr)  # killed by a signal
        # --trusted on a good file: the same listing, without the child
        self.assertEqual(ctorch("inspect", "--trusted", model("convbn"), check=0).stdout,
                         ctorch("inspect", model("convbn"), check=0).stdout)


class Run(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def npy(self, name, a):
        p = os.path.join(self.tmp.name, name)
        np.save(p, a)
        return p

    def test_npy_in_npy_out(self):
        d = io("gate")
        x = self.npy("x.npy", d["inputs"][0].numpy())
        out = os.path.join(self.tmp.name, "y.npy")
        r = ctorch("run", model("gate"), x, "-o", out, check=0)
        self.assertIn("output: written to", r.stdout)
        y = np.load(out)
        self.assertEqual(y.dtype, np.float32)
        np.testing.assert_allclose(y, d["output"].numpy(), rtol=1e-6, atol=1e-6)

    def test_method_and_printing(self):
        d = io("multi")
        x = self.npy("x.npy", d["inputs"][0].numpy())
        out = os.path.join(self.tmp.name, "z.npy")
        ctorch("run", model("multi"), "--method", "encode", x, "-o", out, check=0)
        np.testing.assert_allclose(np.load(out), d["encode_out"].numpy(), rtol=1e-6, atol=1e-6)
        r = ctorch("run", model("multi"), "-m", "encode", x, check=0)
        z = d["encode_out"]
        self.assertIn(f"output: float32{list(z.shape)} cpu = [", r.stdout)
        # the shortest text that reads back as the same float32
        self.assertIn(f"= [{str(np.float32(z.flatten()[0].item()))}, ", r.stdout)

    def test_tuple_outputs_and_dtypes(self):
        d = io("dtypes")
        x = self.npy("x.npy", d["inputs"][0].numpy())
        outs = [os.path.join(self.tmp.name, f"o{i}.npy") for i in range(3)]
        r = ctorch("run", model("dtypes"), x, *sum((["-o", o] for o in outs), []), check=0)
        for i, (o, ref) in enumerate(zip(outs, d["output"])):
            self.assertIn(f"output[{i}]: written to {o}", r.stdout)
            a = np.load(o)
            self.assertEqual(a.dtype, ref.numpy().dtype)
            np.testing.assert_array_equal(a, ref.numpy())
        # printed, not written: int64, bool and float64 in short form
        r = ctorch("run", model("dtypes"), x, check=0)
        self.assertIn("output[0]: int64[3] cpu = [", r.stdout)
        self.assertIn("output[1]: bool[3, 5] cpu = [", r.stdout)
        self.assertIn("output[2]: float64[3, 5] cpu = [", r.stdout)
        self.assertIn(", ...", r.stdout)  # 15 elements are elided

    def test_noncontiguous_output(self):
        d = io("noncontig")
        out = os.path.join(self.tmp.name, "t.npy")
        ctorch("run", model("noncontig"), self.npy("x.npy", d["inputs"][0].numpy()), "-o", out, check=0)
        np.testing.assert_array_equal(np.load(out), d["output"].numpy())

    @torch.no_grad()
    def test_generated_inputs_match_torch(self):
        m = torch.jit.load(model("gate"))
        out = os.path.join(self.tmp.name, "y.npy")
        ctorch("run", model("gate"), "3x4:float32:zeros", "-o", out, check=0)
        np.testing.assert_allclose(np.load(out), m(torch.zeros(3, 4)).numpy(), rtol=1e-6)
        ctorch("run", model("gate"), "3x4:float32:ones", "-o", out, check=0)
        np.testing.assert_allclose(np.load(out), m(torch.ones(3, 4)).numpy(), rtol=1e-6)
        # rand with --seed draws what torch.manual_seed + torch.rand draws
        ctorch("run", model("gate"), "3x4:float32", "--seed", "7", "-o", out, check=0)
        torch.manual_seed(7)
        np.testing.assert_allclose(np.load(out), m(torch.rand(3, 4)).numpy(), rtol=1e-6)
        ctorch("run", model("gate"), "3x4:float32:randn", "--seed", "7", "-o", out, check=0)
        torch.manual_seed(7)
        np.testing.assert_allclose(np.load(out), m(torch.randn(3, 4)).numpy(), rtol=1e-6)

    def test_npy_dtypes_round_trip(self):
        # WithMeta is x + 1: the output keeps the input's dtype
        for dt in (np.float32, np.float64, np.int32, np.int64, np.int16, np.uint8, np.float16):
            a = (np.arange(6).reshape(2, 3) % 5).astype(dt)
            out = os.path.join(self.tmp.name, "y.npy")
            ctorch("run", model("with_meta"), self.npy("a.npy", a), "-o", out, check=0)
            y = np.load(out)
            self.assertEqual(y.dtype, a.dtype, dt)
            np.testing.assert_array_equal(y, a + 1)
        s = self.npy("s.npy", np.array(2.5))  # 0-dim
        out = os.path.join(self.tmp.name, "y.npy")
        ctorch("run", model("with_meta"), s, "-o", out, check=0)
        self.assertEqual(np.load(out).shape, ())
        self.assertEqual(np.load(out), 3.5)

    def test_errors(self):
        x = self.npy("x.npy", np.zeros((3, 4), np.float32))
        cases = [
            (("run", model("gate")), "forward", None),                       # missing argument
            (("run", model("gate"), x, x), "forward", None),                 # one too many
            (("run", model("gate"), "--method", "nope", x), "nope", "(status 4)"),
            (("run", "/nonexistent.pt", x), "ct_module_load", "(status 4)"),
            (("run", model("gate"), "3x4:float33"), "unknown dtype 'float33'", None),
            (("run", model("gate"), "3y4:float32"), "bad shape '3y4'", None),
            (("run", model("gate"), "3x4:float32:pink"), "unknown fill 'pink'", None),
            (("run", model("gate"), "nonsense"), "expected FILE.npy or SHAPE:DTYPE", None),
            (("run", model("gate"), "/nonexistent.npy"), "No such file", None),
        ]
        a_out, b_out = (os.path.join(self.tmp.name, f) for f in ("a.npy", "b.npy"))
        cases.append((("run", model("gate"), x, "-o", a_out, "-o", b_out), "2 -o file(s) given", None))
        for args, msg, code in cases:
            r = ctorch(*args, check=1)
            self.assertIn(msg, r.stderr, args)
            if code:
                self.assertIn(code, r.stderr, args)
        # refused before anything is written
        self.assertFalse(os.path.exists(a_out) or os.path.exists(b_out))
        # the library's own message for a shape mismatch inside the model
        r = ctorch("run", model("gate"), "2x3:float32", check=1)
        self.assertIn("ctorch: forward: ", r.stderr)
        self.assertRegex(r.stderr, r"status [18]\)")
        bad = os.path.join(self.tmp.name, "bad.npy")
        with open(bad, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00")
        self.assertIn("truncated", ctorch("run", model("gate"), bad, check=1).stderr)
        with open(bad, "wb") as f:
            f.write(np.zeros(3, np.float32).tobytes())
        self.assertIn("not a .npy file", ctorch("run", model("gate"), bad, check=1).stderr)
        short = self.npy("short.npy", np.zeros((3, 4), np.float32))
        with open(short, "r+b") as f:
            f.truncate(os.path.getsize(short) - 4)
        self.assertIn("file ends before", ctorch("run", model("gate"), short, check=1).stderr)
        fortran = self.npy("f.npy", np.asfortranarray(np.zeros((3, 4), np.float32)))
        self.assertIn("Fortran-order", ctorch("run", model("gate"), fortran, check=1).stderr)
        big = self.npy("big.npy", np.zeros((3, 4), ">f4"))
        self.assertIn("unsupported .npy dtype '>f4'", ctorch("run", model("gate"), big, check=1).stderr)
        # A negative dimension was read as positive: (-3, 4) loaded as (3, 4);
        # a shape whose element count overflows 64 bits was not refused.
        for shape, needle in (("(-3, 4)", "negative dimension"),
                              ("(4611686018427387904, 4)", "more elements than fit")):
            path = os.path.join(self.tmp.name, "hand.npy")
            with open(path, "wb") as f:
                f.write(npy_header(shape) + np.zeros(12, np.float32).tobytes())
            self.assertIn(needle, ctorch("run", model("gate"), path, check=1).stderr)

    def test_timeout_stops_a_method_that_never_returns(self):
        spin = spinning_model(self.tmp.name)
        r = ctorch("run", spin, "3:float32", "--timeout", "2", check=124)
        self.assertIn("did not finish within --timeout", r.stderr)
        ctorch("run", model("gate"), "3x4:float32", "--timeout", "120", check=0)
        r = ctorch("run", model("gate"), "3x4:float32", "--timeout", "0", check=2)
        self.assertIn("bad timeout", r.stderr)

    def test_output_errors_exit_nonzero(self):
        # Output that cannot be written (/dev/full) is an error, not exit 0.
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full")
        with open("/dev/full", "w") as full:
            r = subprocess.run([EXE, "info"], stdout=full, stderr=subprocess.PIPE, text=True,
                               timeout=300)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("cannot write the output", r.stderr)
        with open("/dev/full", "w") as full:
            r = subprocess.run([EXE, "inspect", model("gate")], stdout=full,
                               stderr=subprocess.PIPE, text=True, timeout=300)
        self.assertEqual(r.returncode, 1, r.stderr)

    def test_fifo_refused(self):
        # A FIFO blocked `inspect` forever.
        fifo = os.path.join(self.tmp.name, "fifo.pt")
        os.mkfifo(fifo)
        r = ctorch("inspect", fifo, check=1)
        self.assertIn("not a regular file", r.stderr)


class Bench(unittest.TestCase):
    def test_json(self):
        r = ctorch("bench", model("gate"), "3x4:float32", "--iters", "25", "--warmup", "3",
                   "--threads", "1", "--json", check=0)
        self.assertEqual(r.stderr, "")  # no progress bar when not a terminal
        d = json.loads(r.stdout)
        self.assertEqual((d["iters"], d["warmup"], d["threads"], d["method"]), (25, 3, 1, "forward"))
        self.assertLessEqual(d["min"], d["p50"])
        self.assertLessEqual(d["p50"], d["p90"])
        self.assertLessEqual(d["p90"], d["p99"])
        self.assertLessEqual(d["p99"], d["max"])
        self.assertAlmostEqual(d["throughput_per_s"], 1000.0 / d["mean"], delta=1e-3 * d["throughput_per_s"])

    def test_text_and_method(self):
        r = ctorch("bench", model("multi"), "2x6:float32", "--method", "encode", "--iters", "5", check=0)
        self.assertIn("encode: 5 calls after 10 warm-up", r.stdout)
        self.assertRegex(r.stdout, r"latency\s+p50 [0-9.]+ (ns|µs|ms|s)\s+p90 [0-9.]+ (ns|µs|ms|s)")
        self.assertIn("calls/s", r.stdout)

    def test_errors(self):
        r = ctorch("bench", model("gate"), "2x3:float32", "--iters", "3", check=1)
        self.assertIn("ctorch: forward: ", r.stderr)
        r = ctorch("bench", "/nonexistent.pt", "--iters", "3", check=1)
        self.assertIn("ct_module_load", r.stderr)

SCALAR_MODEL = """
import torch
class S(torch.nn.Module):
    def forward(self, x: torch.Tensor, s: float, k: int, b: bool):
        return (x * s, s * 2.0, k, not b, torch.tensor([k, -5]), torch.tensor([b, False]),
                torch.complex(torch.tensor([1.0, 3.0]), torch.tensor([2.0, -4.0])))
torch.jit.script(S()).save(__import__("sys").argv[1])
"""


class Issue26(unittest.TestCase):
    """Issue 26, items 7 to 9: torch.save files, getopt_long options, cJSON output, lossless
    printing, scalar arguments, scaled units, and the progress bar on a timer."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        torch.manual_seed(0)
        cls.net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
        cls.sd = os.path.join(d, "sd.pt")
        torch.save(cls.net.state_dict(), cls.sd)
        cls.ckpt = os.path.join(d, "ckpt.pt")
        opt = torch.optim.SGD(cls.net.parameters(), lr=0.1, momentum=0.9)
        torch.save({"model": cls.net.state_dict(), "epoch": 7, "big": 2**62 + 1, "best": True,
                    "args": argparse.Namespace(lr=0.25, name="x"), "opt": opt.state_dict()},
                   cls.ckpt)
        cls.legacy = os.path.join(d, "legacy.pt")
        torch.save({"w": torch.zeros(2, 5, dtype=torch.float64)}, cls.legacy,
                   _use_new_zipfile_serialization=False)
        script = os.path.join(d, "mk.py")
        with open(script, "w") as f:
            f.write(SCALAR_MODEL)
        cls.scalar = os.path.join(d, "scalar.pt")
        subprocess.run([sys.executable, script, cls.scalar], check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    # item 7: torch.save files
    def test_inspect_state_dict(self):
        d = json.loads(ctorch("inspect", self.sd, "--json", check=0).stdout)
        self.assertEqual((d["kind"], d["type"]), ("torch.save", "Dict[str, Tensor]"))
        sd = self.net.state_dict()
        items = d["tree"]["items"]
        self.assertEqual(list(items), list(sd))
        for k, t in sd.items():
            self.assertEqual((items[k]["dtype"], items[k]["shape"]),
                             (str(t.dtype).replace("torch.", ""), list(t.shape)), k)
        self.assertEqual(d["tensors_total"], {"count": len(sd),
                                              "numel": sum(t.numel() for t in sd.values()),
                                              "bytes": sum(t.numel() * t.element_size()
                                                           for t in sd.values())})
        out = ctorch("inspect", self.sd, check=0).stdout
        self.assertIn("torch.save file, Dict[str, Tensor]", out)
        self.assertRegex(out, r"\n  0\.weight\s+float32\[4, 3\]\n")
        self.assertIn("total: 7 tensors, 33 elements, 136 bytes", out)
        self.assertNotIn("ct_pickle_load", out)

    def test_inspect_checkpoint_tree(self):
        d = json.loads(ctorch("inspect", self.ckpt, "--json", check=0).stdout)
        items = d["tree"]["items"]
        self.assertEqual(items["epoch"], {"type": "int", "value": 7})
        self.assertEqual(items["big"]["value"], 2**62 + 1)  # exact, not through a double
        self.assertIs(items["best"]["value"], True)
        self.assertEqual(items["args"]["class"], "argparse.Namespace")
        self.assertEqual(items["args"]["state"]["items"]["lr"]["value"], 0.25)
        self.assertEqual(items["model"]["items"]["0.weight"]["shape"], [4, 3])
        group = items["opt"]["items"]["param_groups"]["items"][0]["items"]
        self.assertEqual(group["momentum"]["value"], 0.9)
        self.assertEqual(d["tensors_total"]["count"], 7)
        out = ctorch("inspect", self.ckpt, check=0).stdout
        self.assertRegex(out, r"\n  model\s+Dict\[str, Tensor\] \(7 items\)\n    0\.weight\s+float32")
        self.assertRegex(out, r"\n  args\s+argparse\.Namespace object\n    lr\s+float = 0\.25\n")
        self.assertRegex(out, r"\n  big\s+int = 4611686018427387905\n")
        # legacy (pre-1.6) files and the reference tensor file too
        out = ctorch("inspect", self.legacy, check=0).stdout
        self.assertRegex(out, r"w\s+float64\[2, 5\]")
        d = json.loads(ctorch("inspect", os.path.join(MODELS, "tensor.pt"), "--json", check=0).stdout)
        self.assertEqual((d["tree"]["type"], d["tensors_total"]["count"]), ("Tensor", 1))

    def test_run_and_bench_refuse_checkpoints(self):
        for args in (("run", self.sd), ("bench", self.ckpt, "--iters", "2")):
            r = ctorch(*args, check=1)
            self.assertIn("a torch.save file", r.stderr)
            self.assertIn(f"'ctorch inspect {args[1]}'", r.stderr)
            self.assertNotIn("ct_module_load", r.stderr)

    # item 8: getopt_long, cJSON, lossless printing, scalar arguments, units
    def test_getopt_forms(self):
        for form in (["--iters=4", "--warmup=1"], ["--iters", "4", "--warmup", "1"],
                     ["--it=4", "--warm", "1"]):  # unique abbreviations, as getopt_long has
            d = json.loads(ctorch("bench", model("gate"), "3x4:float32", *form, "--json",
                                  check=0).stdout)
            self.assertEqual((d["iters"], d["warmup"]), (4, 1), form)
        # -- ends the options: an input that starts with '-'
        r = ctorch("run", self.scalar, "2:float32:ones", "1.5:float64", "--", "-2:int64",
                   "True:bool", check=0)
        self.assertIn("output[2]: int = -2\n", r.stdout)
        r = ctorch("run", self.scalar, "2:float32", "1.5:float64", "-2:int64", check=2)
        self.assertIn("unknown option '-2'", r.stderr)
        subs = ("info", "inspect", "run", "bench", "verify")
        rs = ctorch_all([("help", sub) for sub in subs] + [(sub, "--help") for sub in subs],
                        check=0)
        for sub, r, direct in zip(subs, rs, rs[len(subs):]):
            self.assertEqual(r.stdout, direct.stdout)
            self.assertTrue(r.stdout.startswith(f"Usage: ctorch {sub}"), r.stdout)
        self.assertIn("unknown command 'frob'", ctorch("help", "frob", check=2).stderr)
        self.assertIn("--timeout needs a value", ctorch("run", model("gate"), "--timeout",
                                                         check=2).stderr)
        self.assertIn("--eval takes no value", ctorch("run", model("gate"), "--eval=1",
                                                       check=2).stderr)

    def test_scalar_arguments_and_lossless_printing(self):
        r = ctorch("run", self.scalar, "2:float32:ones", "1.5:float64", "+4611686018427387905:int64",
                   "True:bool", check=0)
        self.assertEqual(r.stdout.splitlines(), [
            "output[0]: float32[2] cpu = [1.5, 1.5]",
            "output[1]: float = 3.0",
            "output[2]: int = 4611686018427387905",
            "output[3]: bool = False",
            "output[4]: int64[2] cpu = [4611686018427387905, -5]",
            "output[5]: bool[2] cpu = [True, False]",
            "output[6]: complex64[2] cpu = [(1.0+2.0j), (3.0-4.0j)]"])
        r = ctorch("run", self.scalar, "2:float32", "1.5:int64", "+1:int64", "1:bool", check=1)
        self.assertIn("a float scalar needs a float dtype", r.stderr)

    def test_run_json(self):
        r = ctorch("run", "--json", self.scalar, "2:float32:ones", "0.1:float64",
                   "+4611686018427387905:int64", "False:bool", check=0)
        d = json.loads(r.stdout)
        self.assertEqual((d["file"], d["method"]), (self.scalar, "forward"))
        o = {x["name"]: x for x in d["outputs"]}
        # float32 in the shortest text that reads back as the same float32
        self.assertEqual(o["output[0]"]["values"], [0.1, 0.1])
        self.assertEqual(o["output[1]"], {"name": "output[1]", "type": "float", "value": 0.2})
        self.assertEqual(o["output[2]"]["value"], 4611686018427387905)
        self.assertIs(o["output[3]"]["value"], True)
        self.assertEqual(o["output[4]"]["values"], [4611686018427387905, -5])
        self.assertEqual(o["output[5]"]["values"], [False, False])
        self.assertEqual(o["output[6]"]["values"], [[1.0, 2.0], [3.0, -4.0]])
        # a reference model: every element, equal to PyTorch's float32 result
        io_ = io("gate")
        x = os.path.join(self.tmp.name, "x.npy")
        np.save(x, io_["inputs"][0].numpy())
        d = json.loads(ctorch("run", model("gate"), x, "--json", check=0).stdout)
        (out,) = d["outputs"]
        self.assertEqual(out["shape"], list(io_["output"].shape))
        np.testing.assert_array_equal(np.array(out["values"], np.float32),
                                      io_["output"].numpy().ravel())

    def test_verify_json(self):
        bad = os.path.join(self.tmp.name, "bad.pt")
        with open(bad, "wb") as f:
            f.write(b"neither")
        r = ctorch("verify", "--json", model("gate"), self.sd, bad, check=1)
        d = json.loads(r.stdout)
        self.assertIs(d["ok"], False)
        self.assertEqual([(f["file"], f["ok"], f["kind"]) for f in d["files"]],
                         [(model("gate"), True, "torchscript"), (self.sd, True, "torch.save"),
                          (bad, False, None)])
        self.assertIn("not a TorchScript archive", d["files"][2]["error"])
        d = json.loads(ctorch("verify", "--json", "/nonexistent.pt", check=1).stdout)
        self.assertEqual(d["files"][0]["status"], 4)

    def test_bench_units(self):
        r = ctorch("bench", model("gate"), "3x4:float32", "--iters", "20", check=0)
        m = re.search(r"latency\s+p50 ([0-9.]+) (ns|µs|ms|s)\s", r.stdout)
        self.assertTrue(m, r.stdout)
        self.assertTrue(1 <= float(m.group(1)) < 1000, r.stdout)  # the unit fits the number

    # item 9: the progress bar on a timer
    def bench_with_stderr_on_a_terminal(self, args):
        master, slave = pty.openpty()
        t0 = time.monotonic()
        p = subprocess.Popen([EXE, *args], stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        chunks = []

        def drain():
            while True:
                try:
                    b = os.read(master, 65536)
                except OSError:
                    return
                if not b:
                    return
                chunks.append(b)

        reader = threading.Thread(target=drain)
        reader.start()
        with p.stdout:
            out = p.stdout.read()
        self.assertEqual(p.wait(timeout=300), 0)
        wall = time.monotonic() - t0
        reader.join()
        os.close(master)
        return json.loads(out), b"".join(chunks), wall

    def test_progress_bar_on_a_timer(self):
        # enough calls to last several redraw periods (0.1 s) even on a quiet machine
        args = ["bench", model("gate"), "3x4:float32", "--iters", "200000", "--warmup", "100",
                "--threads", "1", "--json"]
        tty, err, wall = self.bench_with_stderr_on_a_terminal(args)
        piped = ctorch(*args, check=0)
        self.assertEqual(piped.stderr, "")  # no bar when not a terminal
        d = json.loads(piped.stdout)
        redraws = err.count(b"\r")
        self.assertIn(b"bench   [", err)
        self.assertGreaterEqual(redraws, 1)
        # at most one redraw per 0.1 s (and the final clear), not one per call
        self.assertLessEqual(redraws, wall / 0.1 + 3, (redraws, wall))
        # the figures do not depend on the terminal (generous: a shared 2-core machine)
        self.assertLess(tty["p50"], 3 * d["p50"] + 0.01, (tty, d))
        self.assertLess(d["p50"], 3 * tty["p50"] + 0.01, (tty, d))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
