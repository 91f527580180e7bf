"""Tests of `ctorch verify` and of AOTInductor packages (.pt2) under inspect, run and bench;
run by test_ctorch_cli.py, which imports these classes."""
import os
import tempfile
import unittest

import numpy as np
import torch

from cli_util import MODELS, PACKAGES, HAVE_AOTI, ctorch, model, package


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
