"""The Python bindings (python/eqfuse): optimize, run and check_rules on the bundled example
models, against their ONNX test data, and the errors they raise. Run by CTest (python_test)
with PYTHONPATH at the build tree's python/ folder; EQFUSE_SOURCE_DIR names the checkout."""

import os
import sys
import tempfile
import unittest

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:  # Debian: python3-numpy python3-onnx (scripts/setup installs them)
    print(f"skipped: {e}")
    sys.exit(77)

import eqfuse

SOURCE = os.environ.get("EQFUSE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
MLP = os.path.join(SOURCE, "examples", "models", "mlp", "model.onnx")
RTOL, ATOL = 1e-3, 1e-4


def test_data(model_path):
    folder = os.path.join(os.path.dirname(model_path), "test_data_set_0")
    load = lambda name: numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, name)))
    return load("input_0.pb"), load("output_0.pb")


class Optimize(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model, cls.report = eqfuse.optimize(MLP, device="h200")

    def test_returns_a_model_that_onnx_accepts(self):
        self.assertIsInstance(self.model, onnx.ModelProto)
        onnx.checker.check_model(self.model)

    def test_fuses_and_verifies(self):
        r = self.report
        self.assertLess(r["kernels_after"], r["kernels_before"])
        self.assertLess(r["predicted_ms_after"], r["predicted_ms_before"])
        self.assertEqual(r["verified"], "passed")
        self.assertGreater(r["rules"]["count"], 0)
        self.assertIn(r["extraction"]["method"], ("dag", "ilp", "greedy"))

    def test_prices_16_bit_storage_when_asked(self):
        _, bf16 = eqfuse.optimize(MLP, device="h200", precision="bf16", verify=False)
        self.assertEqual(self.report["precision"], "f32")
        self.assertEqual(bf16["precision"], "bf16")
        self.assertLess(bf16["predicted_ms_before"], self.report["predicted_ms_before"])
        with self.assertRaisesRegex(eqfuse.Error, "precision 'f64'"):
            eqfuse.optimize(MLP, precision="f64")

    def test_report_says_why(self):
        r = self.report
        self.assertEqual(len(r["kernels"]), sum(r["kernel_kinds"].values()))
        for k in r["kernels"]:
            self.assertTrue(k["fused_ops"])
            self.assertIn("output", k)
        # The MLP's bias Add and GELU's Add are rebuilt by rules inside the kernels.
        self.assertTrue(r["replaced"])
        for e in r["replaced"]:
            self.assertTrue(e["rules"])
            self.assertTrue(e["now"].startswith("inside kernel ") or "(" in e["now"])

    def test_optimized_model_matches_the_test_data(self):
        x, expected = test_data(MLP)
        name = self.model.graph.input[0].name
        for backend in ("interpreter", "cpu"):
            with self.subTest(backend=backend):
                (got,) = eqfuse.run(self.model, {name: x}, backend=backend).values()
                self.assertEqual(got.shape, expected.shape)
                np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)

    def test_cuda_backend_runs_or_says_there_is_no_gpu(self):
        x, expected = test_data(MLP)
        name = self.model.graph.input[0].name
        try:
            (got,) = eqfuse.run(self.model, {name: x}, backend="cuda").values()
        except eqfuse.Error as e:
            self.assertIn("no GPU", str(e))
        else:
            np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)

    def test_bf16_twin_is_close_but_not_equal(self):
        x, expected = test_data(MLP)
        name = self.model.graph.input[0].name
        (got,) = eqfuse.run(self.model, {name: x}, backend="cpu", precision="bf16").values()
        self.assertEqual(got.dtype, np.float32)  # inputs and outputs stay f32
        np.testing.assert_allclose(got, expected, rtol=5e-2, atol=5e-2)
        self.assertGreater(np.abs(got - expected).max(), 1e-4)
        with self.assertRaises(eqfuse.Error):
            eqfuse.run(self.model, {name: x}, precision="bf16")  # the interpreter has none

    def test_model_given_as_proto_bytes_or_path_object(self):
        from pathlib import Path
        proto = onnx.load(MLP)
        for given in (proto, proto.SerializeToString(), Path(MLP)):
            with self.subTest(given=type(given).__name__):
                _, report = eqfuse.optimize(given, phases=("algebra",), verify=False)
                self.assertEqual(report["verified"], "skipped")

    def test_out_writes_a_file_that_loads(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mlp_opt.onnx")
            eqfuse.optimize(MLP, out=path, verify=False)
            onnx.checker.check_model(onnx.load(path))


class Run(unittest.TestCase):
    def test_original_matches_the_test_data(self):
        x, expected = test_data(MLP)
        outputs = eqfuse.run(MLP, {"input_0": x})
        self.assertEqual(list(outputs), [onnx.load(MLP).graph.output[0].name])
        np.testing.assert_allclose(next(iter(outputs.values())), expected, rtol=RTOL, atol=ATOL)

    def test_non_contiguous_input_is_accepted(self):
        x, expected = test_data(MLP)
        transposed_twice = np.ascontiguousarray(x.transpose(0, 2, 1)).transpose(0, 2, 1)
        (got,) = eqfuse.run(MLP, {"input_0": transposed_twice}).values()
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)


class Errors(unittest.TestCase):
    def test_missing_file_names_it(self):
        with self.assertRaises(eqfuse.Error) as caught:
            eqfuse.optimize("no/such/model.onnx")
        self.assertIn("no/such/model.onnx", str(caught.exception))
        self.assertEqual(caught.exception.kind, "bad_input")
        self.assertIsInstance(caught.exception, RuntimeError)

    def test_garbage_bytes(self):
        with self.assertRaises(eqfuse.Error):
            eqfuse.run(b"this is not a model", {})

    def test_unknown_input_name(self):
        x, _ = test_data(MLP)
        with self.assertRaises(eqfuse.Error) as caught:
            eqfuse.run(MLP, {"nope": x})
        self.assertIn("nope", str(caught.exception))

    def test_wrong_shape_names_the_input(self):
        with self.assertRaises(eqfuse.Error) as caught:
            eqfuse.run(MLP, {"input_0": np.zeros((2, 2), np.float32)})
        self.assertIn("input_0", str(caught.exception))

    def test_unsupported_dtype(self):
        with self.assertRaises(eqfuse.Error) as caught:
            eqfuse.run(MLP, {"input_0": np.zeros((8, 128, 256), np.complex64)})
        self.assertIn("complex64", str(caught.exception))

    def test_bad_option(self):
        with self.assertRaises(eqfuse.Error) as caught:
            eqfuse.optimize(MLP, extract="best")
        self.assertIn("best", str(caught.exception))

    def test_wrong_model_type(self):
        with self.assertRaises(TypeError):
            eqfuse.run(42, {})


class CheckRules(unittest.TestCase):
    def test_sound_rule_is_proved_and_unsound_refuted(self):
        text = (
            "(rewrite add-comm (Add ?a ?b) (Add ?b ?a))\n"
            "(rewrite sub-comm-wrong (Sub ?a ?b) (Sub ?b ?a))\n"
        )
        proofs = {p["name"]: p for p in eqfuse.check_rules(text=text, cache=False)}
        self.assertEqual(proofs["add-comm"]["verdict"], "proved")
        self.assertEqual(proofs["sub-comm-wrong"]["verdict"], "refuted")
        self.assertIn("text", proofs["sub-comm-wrong"]["counterexample"])

    def test_rule_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mine.rules")
            with open(path, "w") as f:
                f.write("(rewrite relu-twice (Relu (Relu ?x)) (Relu ?x))\n")
            (proof,) = eqfuse.check_rules(path)
            self.assertEqual((proof["name"], proof["verdict"]), ("relu-twice", "proved"))

    def test_typo_gives_file_line_column(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "typo.rules")
            with open(path, "w") as f:
                f.write("(rewrite ok (Add ?a ?b) (Add ?b ?a))\n(rewrite bad (Add ?a) ?a\n")
            with self.assertRaises(eqfuse.Error) as caught:
                eqfuse.check_rules(path)
            self.assertIn(f"{path}:2:", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
