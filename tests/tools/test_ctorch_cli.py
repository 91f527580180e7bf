#!/usr/bin/python3
"""Tests of the `ctorch` command (tools/ctorch/): every subcommand, its --help, and its error
paths; `run` outputs are cross-checked against PyTorch on the reference models of
tests/models/make_models.py.

  test_ctorch_cli.py CTORCH_EXE MODELS_DIR [unittest args]

AOTInductor packages (.pt2) come from CTORCH_TEST_PACKAGES (tests/models/make_packages.py):
with a LibTorch >= 2.6 `inspect`, `run` and `bench` are checked on them; with an older one
the not-supported path is checked instead.
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

EXE, MODELS = sys.argv[1], sys.argv[2]
PACKAGES = os.environ.get("CTORCH_TEST_PACKAGES", "")


def ctorch(*args, check=None):
    r = subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, timeout=300)
    if check is not None:
        assert r.returncode == check, f"ctorch {args}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def ctorch_all(arg_lists, check=None):
    """ctorch once per argument list, two at a time (each start loads LibTorch,
    about a second here); the results in order."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda args: ctorch(*args, check=check), arg_lists))


def npy_header(shape):
    """A version 1.0 .npy header for float32 data of `shape` (a string, written as is)."""
    h = ("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape).encode()
    h += b" " * (63 - (10 + len(h)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h


def model(name):
    return os.path.join(MODELS, name + ".pt")


def io(name):
    return torch.load(os.path.join(MODELS, name + "_io.pt"))


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
        cases = [(("info", "--bogus"), "unknown argument '--bogus'"),
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
        r = ctorch("inspect", os.path.join(MODELS, "tensor.pt"), check=1)
        self.assertIn("ct_module_load", r.stderr)


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
        self.assertIn(f"{z.flatten()[0].item():.6g}", r.stdout)

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
        class Spin(torch.nn.Module):
            def forward(self, x):
                i = 0
                while True:
                    i += 1
                    if i < 0:
                        break
                return x + i

        spin = os.path.join(self.tmp.name, "spin.pt")
        torch.jit.script(Spin()).save(spin)
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
        self.assertRegex(r.stdout, r"latency ms\s+p50 [0-9.]+\s+p90 [0-9.]+\s+p99 [0-9.]+")
        self.assertIn("calls/s", r.stdout)

    def test_errors(self):
        r = ctorch("bench", model("gate"), "2x3:float32", "--iters", "3", check=1)
        self.assertIn("ctorch: forward: ", r.stderr)
        r = ctorch("bench", "/nonexistent.pt", "--iters", "3", check=1)
        self.assertIn("ct_module_load", r.stderr)


def libtorch_version():
    d = json.loads(ctorch("info", "--json", check=0).stdout)
    return tuple(int(x) for x in d["libtorch"].split(".")[:2])


HAVE_AOTI = libtorch_version() >= (2, 6)


class Verify(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def file(self, name, data):
        p = os.path.join(self.tmp.name, name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def test_module_ok(self):
        r = ctorch("verify", model("convbn"), check=0)
        self.assertEqual(r.stdout, f"{model('convbn')}: ok: TorchScript archive "
                                   "(loaded and inspected in a separate process)\n")
        self.assertEqual(r.stderr, "")
        r = ctorch("verify", "--module", model("gate"), check=0)
        self.assertIn("ok: TorchScript archive", r.stdout)

    def test_pickle_ok(self):
        tensor_pt = os.path.join(MODELS, "tensor.pt")
        # tried as TorchScript first, then as torch.save
        r = ctorch("verify", tensor_pt, check=0)
        self.assertEqual(r.stdout, f"{tensor_pt}: ok: torch.save file (loaded in a separate process)\n")
        r = ctorch("verify", "--pickle", tensor_pt, "--timeout", "60", check=0)
        self.assertIn("ok: torch.save file", r.stdout)

    def test_several_files(self):
        bad = self.file("bad.pt", b"garbage")
        r = ctorch("verify", model("gate"), bad, os.path.join(MODELS, "tensor.pt"), check=1)
        self.assertEqual(r.stdout.count(": ok: "), 2, r.stdout)
        self.assertIn(bad, r.stderr)

    def test_errors(self):
        # missing: the library's CT_ERR_NOT_FOUND, reported once
        r = ctorch("verify", "/nonexistent/model.pt", check=1)
        self.assertIn("ct_module_verify", r.stderr)
        self.assertIn("(status 4)", r.stderr)
        self.assertNotIn("ct_pickle_verify", r.stderr)
        # neither kind by its contents: no reader is tried
        bad = self.file("bad.pt", b"not a zip archive, not a pickle")
        r = ctorch("verify", bad, check=1)
        self.assertIn("not a TorchScript archive, a torch.save file or an AOTInductor package",
                      r.stderr)
        self.assertNotIn("ct_module_verify", r.stderr)
        self.assertNotIn("ct_pickle_verify", r.stderr)
        self.assertEqual(r.stdout, "")
        # forced kinds: one message each
        r = ctorch("verify", "--module", os.path.join(MODELS, "tensor.pt"), check=1)
        self.assertIn("ct_module_verify", r.stderr)
        self.assertNotIn("ct_pickle_verify", r.stderr)
        r = ctorch("verify", "--pickle", bad, check=1)
        self.assertIn("ct_pickle_verify", r.stderr)
        self.assertNotIn("ct_module_verify", r.stderr)
        # a truncated archive
        with open(model("gate"), "rb") as f:
            data = f.read()
        cut = self.file("cut.pt", data[: len(data) // 2])
        r = ctorch("verify", "--module", cut, check=1)
        self.assertIn("ct_module_verify", r.stderr)
        # packages are refused unless a kind is forced
        pt2 = self.file("m.pt2", b"PK\x03\x04")
        r = ctorch("verify", pt2, check=1)
        self.assertIn("AOTInductor packages (.pt2) hold compiled native code", r.stderr)


class VerifyByContents(unittest.TestCase):
    """Issue 20: a TorchScript archive whose check fails is never reported ok by
    reading it as a torch.save file (its data.pkl loads as a pickle)."""

    def test_failing_archive_is_not_ok_as_pickle(self):
        import zipfile
        with tempfile.TemporaryDirectory() as d:
            src, dst = model("gate"), os.path.join(d, "broken.pt")
            with zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zo:
                for it in zi.infolist():
                    data = zi.read(it.filename)
                    if "/code/" in it.filename and it.filename.endswith(".py"):
                        data = b"def forward(self, x):\n    return x +\n"
                    zo.writestr(it, data)
            r = ctorch("verify", dst, check=1)
            self.assertEqual(r.stdout, "")
            self.assertIn("ct_module_verify", r.stderr)
            self.assertNotIn("ct_pickle_verify", r.stderr)
            # a torch.save file in zip form is read as one
            t = os.path.join(d, "t.pt")
            torch.save({"w": torch.ones(2)}, t)
            r = ctorch("verify", t, check=0)
            self.assertIn("ok: torch.save file", r.stdout)
            # a package by contents, whatever its name
            pk = os.path.join(d, "pkg.bin")
            with zipfile.ZipFile(pk, "w") as z:
                z.writestr("archive/data/aotinductor/model/m.cpp", b"")
            r = ctorch("verify", pk, check=1)
            self.assertIn("AOTInductor packages (.pt2) hold compiled native code", r.stderr)

    def test_corrupt_debug_info_is_ok(self):
        # Only the debug pickles (source ranges for error messages) are bad:
        # the model loads and runs, so verify says ok, where it refused before.
        import zipfile
        with tempfile.TemporaryDirectory() as d:
            src, dst = model("gate"), os.path.join(d, "nodebug.pt")
            hit = 0
            with zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zo:
                for it in zi.infolist():
                    data = zi.read(it.filename)
                    if it.filename.endswith(".debug_pkl"):
                        data, hit = b"\x80\x02garbage", hit + 1
                    zo.writestr(it, data)
            self.assertGreater(hit, 0)
            r = ctorch("verify", dst, check=0)
            self.assertIn("ok", r.stdout)
            ctorch("run", dst, "3x4:float32", check=0)


def package(name):
    return os.path.join(PACKAGES, name + ".pt2")


class Package(unittest.TestCase):
    """inspect / run / bench on AOTInductor packages."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    @unittest.skipIf(HAVE_AOTI, "LibTorch >= 2.6 runs packages")
    def test_not_supported(self):
        # any .pt2 name goes to ct_package_load, which says what is needed
        pt2 = os.path.join(self.tmp.name, "model.pt2")
        with open(pt2, "wb") as f:
            f.write(b"PK\x05\x06" + b"\0" * 18)
        for args in (("inspect", pt2), ("inspect", pt2, "--json"),
                     ("run", pt2, "3x8:float32"), ("bench", pt2, "3x8:float32", "--iters", "2")):
            r = ctorch(*args, check=1)
            self.assertIn("ct_package_load", r.stderr, args)
            self.assertIn("AOTInductor packages need LibTorch >= 2.6", r.stderr, args)
            self.assertIn("(status 7)", r.stderr, args)  # CT_ERR_NOT_SUPPORTED
            self.assertEqual(r.stdout, "", args)

    def need_packages(self):
        if not HAVE_AOTI:
            self.skipTest("LibTorch < 2.6: no AOTInductor packages")
        if not os.path.exists(package("mlp")):
            self.skipTest("no packages in CTORCH_TEST_PACKAGES")

    def test_inspect(self):
        self.need_packages()
        io_ = torch.load(os.path.join(PACKAGES, "mlp_io.pt"))
        d = json.loads(ctorch("inspect", package("mlp"), "--json", check=0).stdout)
        self.assertEqual((d["kind"], d["model_name"], d["device"]), ("aoti_package", "model", "cpu"))
        self.assertEqual(d["constants"], sorted(io_["new_names"]))
        self.assertEqual(len(d["call_spec"]), 2)
        self.assertIsInstance(d["metadata"], dict)
        out = ctorch("inspect", package("mlp"), check=0).stdout
        self.assertIn("AOTInductor package, model 'model', runs on cpu", out)
        self.assertIn(f"constants ({len(io_['new_names'])}):", out)
        r = ctorch("inspect", package("mlp"), "--model-name", "nope", check=1)
        self.assertIn("ct_package_load", r.stderr)
        r = ctorch("inspect", package("not_a_zip"), check=1)
        self.assertIn("(status 5)", r.stderr)  # CT_ERR_IO

    def test_run(self):
        self.need_packages()
        io_ = torch.load(os.path.join(PACKAGES, "mlp_io.pt"))
        x = os.path.join(self.tmp.name, "x.npy")
        np.save(x, io_["inputs"][0].numpy())
        out = os.path.join(self.tmp.name, "y.npy")
        r = ctorch("run", package("mlp"), x, "-o", out, check=0)
        self.assertIn("output: written to", r.stdout)
        np.testing.assert_allclose(np.load(out), io_["outputs"][0].numpy(), rtol=1e-4, atol=1e-5)
        r = ctorch("run", package("mlp"), x, check=0)
        self.assertIn(f"output: float32{list(io_['outputs'][0].shape)} cpu = [", r.stdout)
        # three outputs, labelled in order
        m = torch.load(os.path.join(PACKAGES, "multi_io.pt"))
        ins = []
        for i, t in enumerate(m["inputs"]):
            p = os.path.join(self.tmp.name, f"in{i}.npy")
            np.save(p, t.numpy())
            ins.append(p)
        r = ctorch("run", package("multi"), *ins, check=0)
        for i in range(len(m["outputs"])):
            self.assertIn(f"output[{i}]: ", r.stdout)
        # wrong number of inputs: the library's message
        r = ctorch("run", package("mlp"), check=1)
        self.assertIn("ct_package_run", r.stderr)
        self.assertIn("(status 1)", r.stderr)

    def test_bench(self):
        self.need_packages()
        r = ctorch("bench", package("mlp"), "3x8:float32", "--iters", "5", "--warmup", "1", "--json",
                   check=0)
        d = json.loads(r.stdout)
        self.assertEqual(d["iters"], 5)
        self.assertLessEqual(d["p50"], d["max"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
