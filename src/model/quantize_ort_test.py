#!/usr/bin/python3
"""`seedance model quantize` against onnxruntime, the way a user meets it (issue 37, item 8).

For every torch fixture (tools/model_fixtures/make_fixtures.sh) and the public data folder's
hello_deepa.onnx, and for the digits MLP rewritten to opset 11 (so that the opset < 13 forms are
run too): `seedance model plan --gpu H100` makes a plan, and uniform plans put every layer in
FP16, BF16, FP8-E4M3 and INT8. Each plan is written by `seedance model quantize`, the written
model is run by onnxruntime (tools/model_fixtures/ort_run.js, onnxruntime-node's CPU build) and
its outputs are compared with `seedance model run --plan` (Seedance's emulation of the plan):
within 1e-3 relative (L2), as the issue asks. Also checked: the written model is smaller where
the plan narrows weights, and differs from the FP32 model (the quantization is in it).

Usage: quantize_ort_test.py SEEDANCE FIXTURES_DIR SOURCE_DIR
Exit 0 pass, 1 fail, 77 skipped (fixtures or onnxruntime-node missing and
SEEDANCE_REQUIRE_DATA is not 1).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

TOLERANCE = 1e-3
FORMATS = ["fp16", "bf16", "fp8-e4m3", "int8"]


def skip_or_fail(why):
    print(f"quantize_ort_test: {why}", file=sys.stderr)
    sys.exit(1 if os.environ.get("SEEDANCE_REQUIRE_DATA") == "1" else 77)


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    seedance, fixtures, source = sys.argv[1:]
    try:
        import numpy as np
        import onnx
        import onnx.numpy_helper
    except ImportError as e:
        skip_or_fail(f"{e} (Debian's python3-onnx)")
    ort_run = os.path.join(source, "tools", "model_fixtures", "ort_run.js")
    if not os.path.isdir(os.path.join(source, "tools", "onnxruntime", "node_modules",
                                      "onnxruntime-node")) or shutil.which("node") is None:
        skip_or_fail("onnxruntime-node is missing (tools/install_onnxruntime.sh)")
    models = sorted(d for d in os.listdir(fixtures)
                    if os.path.isfile(os.path.join(fixtures, d, "model.onnx"))) \
        if os.path.isdir(fixtures) else []
    if len(models) < 5:
        skip_or_fail(f"{fixtures}: the torch fixtures are missing (make_fixtures.sh)")
    data_dir = os.environ.get("SEEDANCE_DATA_DIR", os.path.join(source, "..", "shared", "data"))
    deepa = os.path.join(data_dir, "onnx-models", "hello_deepa.onnx")
    if not os.path.isfile(deepa):
        skip_or_fail(f"{deepa} is missing")

    def read(path):
        return onnx.numpy_helper.to_array(onnx.load_tensor(path)).astype(np.float64)

    def seedance_cli(*args):
        r = subprocess.run([seedance, "model", *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"FAIL: seedance model {' '.join(args)}: exit {r.returncode}: "
                             f"{r.stderr.strip()}")
        return r.stdout

    work = tempfile.mkdtemp(prefix="seedance-quantize-ort-")
    try:
        # The models and their inputs: name -> (model path, folder of input_N.pb).
        sources = {m: (os.path.join(fixtures, m, "model.onnx"),
                       os.path.join(fixtures, m, "test_data_set_0")) for m in models}
        drawn = os.path.join(work, "hello_deepa_input")
        seedance_cli("run", deepa, "-o", drawn)  # writes a drawn input_0.pb beside its output
        sources["hello_deepa"] = (deepa, drawn)
        old = onnx.load(sources["digits_mlp"][0])  # Gemm and Relu are the same at opset 11
        old.opset_import[0].version = 11
        old.ir_version = 6
        onnx.save(old, os.path.join(work, "digits_mlp_op11.onnx"))
        sources["digits_mlp_op11"] = (os.path.join(work, "digits_mlp_op11.onnx"),
                                      sources["digits_mlp"][1])

        cases = []  # (case folder, model name, plan name)
        for name, (model, inputs) in sorted(sources.items()):
            plan_path = os.path.join(work, f"{name}.plan.json")
            seedance_cli("plan", model, "--gpu", "H100", "--inputs", inputs, "-o", plan_path)
            plan = json.load(open(plan_path))
            fp32 = os.path.join(work, f"{name}.fp32")
            seedance_cli("run", model, "--inputs", inputs, "-o", fp32)
            plans = {"planned": plan_path}
            for fmt in FORMATS:
                uniform = {"layers": [{"node": l["node"], "format": fmt} for l in plan["layers"]]}
                plans[fmt] = os.path.join(work, f"{name}.{fmt}.json")
                with open(plans[fmt], "w") as f:
                    json.dump(uniform, f)
            for plan_name, path in plans.items():
                case = os.path.join(work, f"{name}.{plan_name}")
                os.makedirs(case)
                shutil.copytree(inputs, os.path.join(case, "test_data_set_0"),
                                ignore=shutil.ignore_patterns("output_*"))
                seedance_cli("quantize", model, "--plan", path, "-o",
                             os.path.join(case, "model.onnx"))
                seedance_cli("run", model, "--plan", path, "--inputs",
                             os.path.join(case, "test_data_set_0"), "-o",
                             os.path.join(case, "emulated"))
                cases.append((case, name, plan_name, model))

        r = subprocess.run(["node", ort_run] + [c[0] for c in cases], capture_output=True,
                           text=True)
        if r.returncode != 0:
            print(f"FAIL: onnxruntime did not run the written models: {r.stderr.strip()}")
            return 1
        failures = 0
        worst = 0.0
        for case, name, plan_name, model in cases:
            outputs = sorted(f for f in os.listdir(os.path.join(case, "ort")))
            differs = False
            for out in outputs:
                ort = read(os.path.join(case, "ort", out))
                emulated = read(os.path.join(case, "emulated", out))
                fp32 = read(os.path.join(work, f"{name}.fp32", out))
                rel = np.linalg.norm(ort - emulated) / max(np.linalg.norm(emulated), 1e-30)
                worst = max(worst, rel)
                differs = differs or not np.array_equal(ort, fp32)
                if not rel <= TOLERANCE:
                    print(f"FAIL: {name} {plan_name} {out}: onnxruntime vs emulation {rel:.3g}")
                    failures += 1
            narrowed = plan_name != "planned" or any(
                l["format"] != "fp32" for l in json.load(open(
                    os.path.join(work, f"{name}.plan.json")))["layers"])
            if narrowed and not differs:
                print(f"FAIL: {name} {plan_name}: the written model computes the FP32 outputs")
                failures += 1
            written = os.path.getsize(os.path.join(case, "model.onnx"))
            if narrowed and not (plan_name == "bf16" and name.endswith("op11")) and \
                    written >= os.path.getsize(model):
                print(f"FAIL: {name} {plan_name}: {written} bytes written, not below the "
                      f"model's {os.path.getsize(model)}")
                failures += 1
        print(f"quantize_ort_test: {len(cases)} written models run by onnxruntime, largest "
              f"relative L2 against the emulation {worst:.3g} (tolerance {TOLERANCE})")
        return 1 if failures else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
