#!/usr/bin/python3
# Issue 43's rewriter checked on the model fixtures (export_models.py; torch's exports), against
# onnxruntime:
#
#   1. `seedance model optimize` rewrites each model (--device cpu) and reports, as JSON, its
#      fused nodes by kind;
#   2. the rewritten model runs in Seedance's executor (`seedance model run`) and in onnxruntime
#      (ort_run.js, optimisations off) on the fixture's inputs; both must equal onnxruntime's
#      outputs of the original model within --tol (largest absolute difference over the largest
#      absolute reference value; the 1e-4 relative);
#   3. onnxruntime optimises the original model at the 'extended' level and saves it
#      (ort_run.js --save-optimized extended); its nodes are counted by kind with the same table
#      as Seedance's (FUSED_KINDS below; the rewritten model is counted here too and must agree
#      with Seedance's own report, so the two tables cannot drift apart);
#   4. the rewritten model must have at least as many fused nodes of each kind as onnxruntime's,
#      and pass ONNX's checker (full check);
#   5. the same model rewritten for a GPU (--device h100) must hold no fused node onnxruntime's
#      CUDA provider lacks (FusedGemm; FusedConv other than with Relu: GPU_UNSUPPORTED below) and
#      give the same outputs (run on the CPU here: no GPU in CI).
#
# Prints one table row per model: nodes in all and per kind, Seedance's against onnxruntime's.
# The "no more nodes in all" is printed per model ("total: met / NOT met") and is not a
# failure here: it is a figure of BENCHMARKS.md (not met on the transformer fixtures yet).
#
# Usage: /usr/bin/python3 tools/model_fixtures/rewrite_check.py --seedance BIN [--tol T]
#            FIXTURES_DIR WORK_DIR
# FIXTURES_DIR is make_fixtures.sh's output (after ort_run.js wrote each model's ort/ outputs).
# Exit 1 when a line fails, 2 on bad usage.
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
    import onnx
    import onnx.checker
    import onnx.numpy_helper
except ImportError as error:
    print(f"rewrite_check: {error}; install Debian's python3-numpy and python3-onnx",
          file=sys.stderr)
    sys.exit(1)

HERE = os.path.dirname(os.path.abspath(__file__))
# Node kind per (domain, op type), as seedance::model::FusedKind (rewrite.cc) classifies them.
# Gemm counts as a matrix product with bias only when it has its C input.
FUSED_KINDS = {
    "LayerNormalization": "layernorm", "SkipLayerNormalization": "layernorm",
    "SimplifiedLayerNormalization": "layernorm", "SkipSimplifiedLayerNormalization": "layernorm",
    "Gelu": "gelu", "FastGelu": "gelu", "BiasGelu": "gelu",
    "Attention": "attention", "MultiHeadAttention": "attention",
    "FusedGemm": "matmul-bias", "FusedConv": "conv-activation",
}
KINDS = ["layernorm", "gelu", "attention", "matmul-bias", "conv-activation"]
# (domain, op type, activation or None) -> why onnxruntime's CUDA provider cannot run it.
GPU_UNSUPPORTED = {("com.microsoft", "FusedGemm"): "no CUDA kernel"}


def kind_of(node):
    if node.op_type == "Gemm":
        return "matmul-bias" if len(node.input) > 2 and node.input[2] else ""
    return FUSED_KINDS.get(node.op_type, "")


def count(path):
    model = onnx.load(path)
    counts = collections.Counter(kind_of(n) for n in model.graph.node)
    result = {k: counts.get(k, 0) for k in KINDS}
    result["nodes"] = len(model.graph.node)
    return result


def load_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return onnx.numpy_helper.to_array(tensor)


def relative(got, want):
    scale = max(float(np.max(np.abs(want))), 1e-30)
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / scale


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def gpu_unrunnable(path):
    """The nodes of `path` a GPU target must not get, with why."""
    bad = []
    for node in onnx.load(path).graph.node:
        why = GPU_UNSUPPORTED.get((node.domain, node.op_type))
        if node.domain == "com.microsoft" and node.op_type == "FusedConv":
            act = next((a.s.decode() for a in node.attribute if a.name == "activation"), "")
            why = None if act == "Relu" else f"FusedConv with {act} (CUDA runs Relu only)"
        if why:
            bad.append(f"{node.name} ({node.op_type}): {why}")
    return bad


def check_gpu_target(args, model, fixture, work, failures):
    gpu = os.path.join(work, "h100")
    os.makedirs(gpu)
    shutil.copytree(os.path.join(fixture, "test_data_set_0"), os.path.join(gpu, "test_data_set_0"))
    rewritten = os.path.join(gpu, "model.onnx")
    run([args.seedance, "model", "optimize", os.path.join(fixture, "model.onnx"), "--device",
         "h100", "-o", rewritten])
    for bad in gpu_unrunnable(rewritten):
        failures.append(f"{model} for h100: {bad}")
    run([args.seedance, "model", "run", rewritten, "--inputs",
         os.path.join(gpu, "test_data_set_0"), "-o", os.path.join(gpu, "seedance")])
    run(["node", os.path.join(HERE, "ort_run.js"), gpu + "/"])
    compare_outputs(f"{model} for h100 (Seedance)", fixture, os.path.join(gpu, "seedance"),
                    args.tol, failures)
    compare_outputs(f"{model} for h100 (onnxruntime)", fixture, os.path.join(gpu, "ort"),
                    args.tol, failures)


def compare_outputs(name, fixture, got_dir, tol, failures):
    worst = 0.0
    i = 0
    while os.path.exists(os.path.join(fixture, "ort", f"output_{i}.pb")):
        want = load_tensor(os.path.join(fixture, "ort", f"output_{i}.pb"))
        got_path = os.path.join(got_dir, f"output_{i}.pb")
        if not os.path.exists(got_path):
            failures.append(f"{name}: {got_path} missing")
            return worst
        got = load_tensor(got_path)
        if got.shape != want.shape:
            failures.append(f"{name}: output {i} shape {got.shape}, want {want.shape}")
            return worst
        worst = max(worst, relative(got, want))
        i += 1
    if worst > tol:
        failures.append(f"{name}: outputs differ by {worst:.2e} relative (> {tol})")
    return worst


def check_model(args, model, failures):
    fixture = os.path.join(args.fixtures, model)
    work = os.path.join(args.work, model)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    shutil.copytree(os.path.join(fixture, "test_data_set_0"), os.path.join(work, "test_data_set_0"))
    rewritten = os.path.join(work, "model.onnx")
    report = json.loads(run([args.seedance, "model", "optimize", os.path.join(fixture, "model.onnx"),
                             "-o", rewritten, "--format", "json"]))
    run([args.seedance, "model", "run", rewritten, "--inputs",
         os.path.join(work, "test_data_set_0"), "-o", os.path.join(work, "seedance")])
    run(["node", os.path.join(HERE, "ort_run.js"), work + "/"])
    ort_dir = os.path.join(work, "original")
    os.makedirs(ort_dir)
    shutil.copy(os.path.join(fixture, "model.onnx"), ort_dir)
    run(["node", os.path.join(HERE, "ort_run.js"), "--save-optimized", "extended", ort_dir + "/"])
    err_seedance = compare_outputs(f"{model} (Seedance)", fixture, os.path.join(work, "seedance"),
                                   args.tol, failures)
    err_ort = compare_outputs(f"{model} (onnxruntime)", fixture, os.path.join(work, "ort"),
                              args.tol, failures)
    ours = count(rewritten)
    theirs = count(os.path.join(ort_dir, "ort_extended.onnx"))
    if ours != report["after"]:
        failures.append(f"{model}: counted {ours}, seedance reported {report['after']}")
    for kind in KINDS:
        if ours[kind] < theirs[kind]:
            failures.append(f"{model}: {ours[kind]} {kind} nodes, onnxruntime {theirs[kind]}")
    try:
        onnx.checker.check_model(onnx.load(rewritten), full_check=True)
    except Exception as error:  # the checker raises its own exception types
        failures.append(f"{model}: ONNX's checker: {error}")
    check_gpu_target(args, model, fixture, work, failures)
    cells = " ".join(f"{ours[k]}/{theirs[k]}" for k in KINDS)
    total = "met" if ours["nodes"] <= theirs["nodes"] else "NOT met"
    print(f"{model:16s} {ours['nodes']:5d}/{theirs['nodes']:<5d} {cells}   "
          f"{err_seedance:.1e} {err_ort:.1e}   total: {total}")


def main():
    parser = argparse.ArgumentParser(description="seedance model optimize vs onnxruntime")
    parser.add_argument("--seedance", required=True, help="the seedance binary")
    parser.add_argument("--tol", type=float, default=1e-4, help="largest relative difference")
    parser.add_argument("fixtures", metavar="FIXTURES_DIR")
    parser.add_argument("work", metavar="WORK_DIR")
    args = parser.parse_args()  # exits 2 on bad usage
    with open(os.path.join(args.fixtures, "manifest.json")) as f:
        models = [m["name"] for m in json.load(f)["models"]]
    print(f"{'model':16s} nodes(seedance/ort) {' '.join(KINDS)} (seedance/ort)   "
          "max rel. error: seedance ort")
    failures = []
    for model in models:
        try:
            check_model(args, model, failures)
        except (RuntimeError, OSError, ValueError) as error:
            failures.append(f"{model}: {error}")
    for f in failures:
        print(f"rewrite_check: FAIL {f}", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
