"""Tests of `ctorch verify` and of AOTInductor packages (.pt2) under inspect, run and bench;
run by test_ctorch_cli.py, which imports these classes."""
import json
import os
import tempfile
import unittest

import numpy as np
import torch

from cli_util import MODELS, PACKAGES, HAVE_AOTI, ctorch, model, package, spinning_model


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
            if "--json" in args:  # the error as JSON on stdout
                self.assertEqual(json.loads(r.stdout)["status"], 7, args)
            else:
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


class NpyAndJsonErrors(unittest.TestCase):
    """inspect on .npy files; inspect/run/bench --json print a JSON error object on stdout
    when they fail; verify gives a missing or unreadable file no kind."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def npy(self, name, a):
        p = os.path.join(self.tmp.name, name)
        np.save(p, a)
        return p

    def test_inspect_npy(self):
        cases = [np.arange(12, dtype=np.float32).reshape(3, 4) / 3, np.arange(-2, 3),
                 np.array([True, False, True]), np.array(2.5), np.zeros((0, 3), np.int8),
                 np.array([1.5, np.nan, -np.inf], np.float16), np.array([1 + 2j, 3 - 4j])]
        for a in cases:
            p = self.npy("a.npy", a)
            d = json.loads(ctorch("inspect", p, "--json", check=0).stdout)
            self.assertEqual((d["file"], d["kind"], d["dtype"], d["shape"], d["numel"], d["bytes"]),
                             (p, "npy", str(a.dtype), list(a.shape), a.size, a.nbytes))
            first = a.ravel()[:10]
            if a.dtype.kind == "c":
                first = np.stack([first.real, first.imag], -1)
            if a.dtype == np.float16:
                self.assertEqual(d["first_values"], [1.5, "nan", "-inf"])
            else:
                np.testing.assert_array_equal(np.array(d["first_values"], a.dtype).reshape(first.shape), first)
        p = self.npy("x.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
        r = ctorch("inspect", p, check=0)
        self.assertEqual(r.stdout, f"{p}: NumPy array float32[3, 4], 12 elements, 48 bytes\n"
                                   "  values: [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, ...]\n")
        self.assertEqual(r.stderr, "")
        self.assertIn("values: [True, False, True]\n",
                      ctorch("inspect", self.npy("b.npy", np.array([True, False, True])), check=0).stdout)
        # npy_read's checks: a truncated file is an error, not a model load
        with open(p, "rb") as f:
            data = f.read()
        cut = os.path.join(self.tmp.name, "cut.npy")
        with open(cut, "wb") as f:
            f.write(data[:-4])
        r = ctorch("inspect", cut, check=1)
        self.assertIn("file ends before its 48 bytes of data", r.stderr)
        self.assertNotIn("ct_module_load", r.stderr)
        # run, bench and verify name the kind instead of failing to read a zip archive
        for args in (("run", p), ("bench", p, "--iters", "2"), ("verify", p)):
            r = ctorch(*args, check=1)
            self.assertIn(f"{p}: a NumPy .npy file (one array, no code): nothing to", r.stderr)
            self.assertNotIn("ct_module", r.stderr)
        d = json.loads(ctorch("verify", "--json", p, check=1).stdout)
        self.assertEqual((d["files"][0]["kind"], d["files"][0]["ok"]), ("npy", False))

    def check_error(self, args, rc, status):
        r = ctorch(*args, check=rc)
        self.assertEqual(len(r.stdout.splitlines()), 1, r.stdout)
        d = json.loads(r.stdout)
        self.assertEqual(set(d), {"file", "error"} | ({"status"} if status else set()), d)
        self.assertEqual(d.get("status"), status)
        self.assertIn(f"ctorch{'' if rc == 1 else ' ' + args[0]}: {d['error']}", r.stderr)
        if status:
            self.assertIn(f"{d['error']} (status {status})\n", r.stderr)
        return d

    def test_json_errors(self):
        missing = os.path.join(self.tmp.name, "missing.pt")
        bad = os.path.join(self.tmp.name, "bad.pt")
        with open(bad, "wb") as f:
            f.write(b"not a zip archive")
        x = self.npy("x.npy", np.zeros((2, 2), np.float32))
        for cmd in (("inspect",), ("run",), ("bench", "--iters", "2")):
            d = self.check_error((*cmd, "--json", missing), 1, 4)  # CT_ERR_NOT_FOUND
            self.assertEqual(d["file"], missing)
            self.assertIn("No such file", d["error"])
        self.check_error(("inspect", bad, "--json"), 1, 5)  # CT_ERR_IO
        d = self.check_error(("run", model("gate"), x, "--json"), 1, 8)  # shapes do not fit
        self.assertTrue(d["error"].startswith("forward: ct_module_forward: "), d)
        self.assertEqual(d["file"], model("gate"))
        d = self.check_error(("run", "--json", model("gate"), "4x4:float32", "-o",
                              os.path.join(self.tmp.name, "a.npy"), "-o",
                              os.path.join(self.tmp.name, "b.npy")), 1, None)
        self.assertIn("2 -o file(s) given but the model returned 1 tensor(s)", d["error"])
        cut = os.path.join(self.tmp.name, "cut.npy")
        with open(cut, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00")
        d = self.check_error(("inspect", "--json", cut), 1, None)
        self.assertIn("truncated .npy header", d["error"])
        d = self.check_error(("run", "--json", model("gate"), "--model-name", "m"), 2, None)
        self.assertEqual(d["error"], "--model-name applies to AOTInductor packages (.pt2) only")
        d = self.check_error(("inspect", "--json"), 2, None)
        self.assertEqual((d["file"], d["error"]), (None, "no model file given"))
        # without --json, nothing on stdout
        self.assertEqual(ctorch("inspect", missing, check=1).stdout, "")
        self.assertEqual(ctorch("run", missing, check=1).stdout, "")

    def test_json_error_on_timeout(self):
        spin = spinning_model(self.tmp.name)
        r = ctorch("run", spin, "3:float32", "--timeout", "1", "--json", check=124)
        self.assertEqual(json.loads(r.stdout), {"file": spin, "error": "did not finish within "
                                                "--timeout; stopped"})
        self.assertIn("did not finish within --timeout", r.stderr)

    def test_verify_kind_of_unreadable_files(self):
        missing = os.path.join(self.tmp.name, "missing.pt")
        d = json.loads(ctorch("verify", "--json", missing, self.tmp.name, check=1).stdout)
        self.assertEqual([(f["file"], f["ok"], f["kind"]) for f in d["files"]],
                         [(missing, False, None), (self.tmp.name, False, None)])
        self.assertEqual(d["files"][0]["status"], 4)
        self.assertIn("ct_module_verify", d["files"][0]["error"])
        # nor with a kind forced, nor with a package's name (it was refused as one)
        pt2 = os.path.join(self.tmp.name, "missing.pt2")
        for args in (("--pickle", missing), ("--module", missing), (pt2,)):
            d = json.loads(ctorch("verify", "--json", *args, check=1).stdout)
            self.assertEqual((d["files"][0]["kind"], d["files"][0]["status"]), (None, 4), args)
        # a readable file checked as a forced kind reports that kind
        d = json.loads(ctorch("verify", "--json", "--pickle", model("gate"), check=0).stdout)
        self.assertEqual(d["files"][0]["kind"], "torch.save")
