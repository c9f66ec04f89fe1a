#!/usr/bin/python3
# Compares torch's reference outputs of the model fixtures (export_models.py) with
# onnxruntime's (ort_run.js), so that the two references are known to agree before the executor
# is measured against them: per model and output, the relative L2 error ||ort - torch|| / ||torch||
# and the largest absolute difference; for a model with labels.pb (digits_mlp), also both
# top-1 accuracies and their top-1 agreement.
#
# Usage: /usr/bin/python3 tools/model_fixtures/compare.py [--tol REL_L2] FIXTURES_DIR
#
# FIXTURES_DIR is export_models.py's OUT_DIR (with manifest.json), after ort_run.js has written
# each model's ort/output_N.pb. Prints one line per output. Exit 1 when an output is missing,
# differs in shape or element type, or has a relative L2 error above --tol (default 1e-5);
# exit 2 on bad usage.
import argparse
import json
import os
import sys

try:
    import numpy as np
    import onnx
    import onnx.numpy_helper
except ImportError as error:
    print(f"compare: {error}; install Debian's python3-numpy and python3-onnx", file=sys.stderr)
    sys.exit(1)


def load(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return onnx.numpy_helper.to_array(tensor)


def main():
    parser = argparse.ArgumentParser(description="torch vs onnxruntime on the model fixtures")
    parser.add_argument("--tol", type=float, default=1e-5, help="largest relative L2 error")
    parser.add_argument("fixtures", metavar="FIXTURES_DIR")
    args = parser.parse_args()  # exits 2 on bad usage
    manifest_path = os.path.join(args.fixtures, "manifest.json")
    if not os.path.isfile(manifest_path):
        parser.error(f"{manifest_path} not found: run export_models.py first")
    with open(manifest_path) as f:
        manifest = json.load(f)

    failures = []
    for model in manifest["models"]:
        folder = os.path.join(args.fixtures, model["dir"])
        for i, name in enumerate(model["outputs"]):
            ref_path = os.path.join(folder, "test_data_set_0", f"output_{i}.pb")
            ort_path = os.path.join(folder, "ort", f"output_{i}.pb")
            if not os.path.isfile(ort_path):
                failures.append(f"{ort_path} missing: run ort_run.js first")
                continue
            ref, got = load(ref_path), load(ort_path)
            if ref.shape != got.shape or ref.dtype != got.dtype:
                failures.append(f"{model['name']}/{name}: torch {ref.dtype}{list(ref.shape)}, "
                                f"ort {got.dtype}{list(got.shape)}")
                continue
            r, g = ref.astype(np.float64), got.astype(np.float64)
            rel = float(np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-30))
            max_abs = float(np.max(np.abs(g - r))) if r.size else 0.0
            line = (f"{model['name']:>14} {name:<8} {str(list(ref.shape)):<14} "
                    f"rel_l2 {rel:.3e}  max_abs {max_abs:.3e}")
            labels_path = os.path.join(folder, model.get("labels", "-"))
            if "labels" in model and os.path.isfile(labels_path):
                labels = load(labels_path)
                top_ref, top_ort = ref.argmax(-1), got.argmax(-1)
                line += (f"  top-1: torch {np.mean(top_ref == labels):.4f}, "
                         f"ort {np.mean(top_ort == labels):.4f}, "
                         f"agreement {np.mean(top_ref == top_ort):.4f}")
            print(line)
            if not rel <= args.tol:  # NaN fails too
                failures.append(f"{model['name']}/{name}: relative L2 {rel:.3e} > {args.tol:g}")
    for failure in failures:
        print(f"compare: FAIL {failure}", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
