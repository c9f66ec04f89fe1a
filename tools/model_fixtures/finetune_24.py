#!/usr/bin/python3
# Fine-tunes a 2:4-pruned digits MLP (issue 37, 2:4 structured sparsity): reads the model
# `seedance model sparsify` wrote from the fixtures' digits_mlp/model.onnx, rebuilds the MLP in
# torch with its weights, trains it again by the dense model's own recipe (digits_training.py:
# the same split, epochs, Adam settings and seeded batches) while the pruned weights stay zero
# (the mask, weight != 0 as read, is re-applied after every optimizer step, as NVIDIA's ASP
# does), and evaluates top-1 accuracy on the same 450 test digits.
#
# Usage: /usr/bin/python3 tools/model_fixtures/finetune_24.py --dense DENSE.onnx
#            --pruned PRUNED.onnx -o OUT_DIR
#
# Writes OUT_DIR/model.onnx (the fine-tuned model, exported as the dense one was: opset 13, input
# "x", output "logits") and OUT_DIR/finetune_24.json: the top-1 accuracy of the dense model, of
# the pruned one before fine-tuning and after, the recipe, and the kept fraction of each weight.
# Seeded and single-threaded: a rerun on the same machine writes the same model.
# Exit 2 on bad usage or a model that is not the digits MLP (two Gemm layers 64-64-10), 1 when a
# module is missing or the fine-tuned weights lose the 2:4 pattern.
import argparse
import json
import os
import sys


def fail(message, code=1):
    print(f"finetune_24: {message}", file=sys.stderr)
    sys.exit(code)


try:
    import numpy as np
    import onnx
    import onnx.numpy_helper
    import torch

    import digits_training  # beside this script: the digits MLP's recipe
except ImportError as error:
    fail(f"{error}; install Debian's python3-torch, python3-onnx and python3-sklearn "
         "(tools/install_deps.sh) and run with /usr/bin/python3")


def load_mlp(path):
    """The digits MLP with the weights of the ONNX model at PATH (its two Gemm layers)."""
    try:
        proto = onnx.load(path)
    except Exception as error:  # protobuf raises several kinds
        fail(f"{path}: not an ONNX model: {error}", 2)
    initializers = {t.name: onnx.numpy_helper.to_array(t) for t in proto.graph.initializer}
    gemms = [n for n in proto.graph.node if n.op_type == "Gemm"]
    model = digits_training.make_mlp()
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    if len(gemms) != len(linears):
        fail(f"{path}: {len(gemms)} Gemm nodes; the digits MLP has {len(linears)}", 2)
    for node, linear in zip(gemms, linears):
        attrs = {a.name: a for a in node.attribute}
        if len(node.input) < 3 or any(i not in initializers for i in node.input[1:3]):
            fail(f"{path}: Gemm {node.name} does not read its weight and bias from initializers",
                 2)
        weight = initializers[node.input[1]]
        if "transB" not in attrs or attrs["transB"].i == 0:
            weight = weight.T  # torch keeps [out, in]
        bias = initializers[node.input[2]]
        if weight.shape != tuple(linear.weight.shape) or bias.shape != tuple(linear.bias.shape):
            fail(f"{path}: Gemm {node.name} has weight {list(weight.shape)} and bias "
                 f"{list(bias.shape)}; expected {list(linear.weight.shape)} and "
                 f"{list(linear.bias.shape)}", 2)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(np.array(weight, dtype=np.float32)))
            linear.bias.copy_(torch.from_numpy(np.array(bias, dtype=np.float32)))
    return model.eval(), proto


def groups_violating_24(weight):
    """Groups of 4 along the reduction axis (the last of torch's [out, in]) holding fewer
    than 2 zeros."""
    groups = weight.reshape(weight.shape[0], -1, 4)
    return int(((groups == 0).sum(-1) < 2).sum())


def main():
    parser = argparse.ArgumentParser(description="Fine-tune a 2:4-pruned digits MLP.")
    parser.add_argument("--dense", required=True, help="the dense digits_mlp/model.onnx")
    parser.add_argument("--pruned", required=True, help="the same model pruned 2:4")
    parser.add_argument("-o", "--output", required=True, help="folder for model.onnx and JSON")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    x_train, x_test, y_train, y_test = digits_training.load_split()
    dense, _ = load_mlp(args.dense)
    model, proto = load_mlp(args.pruned)
    weights = [m.weight for m in model if isinstance(m, torch.nn.Linear)]
    violations = sum(groups_violating_24(w.detach()) for w in weights)
    if violations:
        fail(f"{args.pruned}: {violations} groups of 4 hold fewer than 2 zeros: not 2:4-pruned", 2)
    masks = [(w.detach() != 0).float() for w in weights]
    dense_top1 = digits_training.top1(dense, x_test, y_test)
    pruned_top1 = digits_training.top1(model, x_test, y_test)

    def apply_masks():
        with torch.no_grad():
            for w, mask in zip(weights, masks):
                w.mul_(mask)

    digits_training.seed_everything()
    model.train()
    digits_training.train(model, x_train, y_train, after_step=apply_masks)
    finetuned_top1 = digits_training.top1(model, x_test, y_test)
    violations = sum(groups_violating_24(w.detach()) for w in weights)
    if violations:
        fail(f"fine-tuning broke the 2:4 pattern in {violations} groups")

    os.makedirs(args.output, exist_ok=True)
    path = os.path.join(args.output, "model.onnx")
    opset = next(i.version for i in proto.opset_import if i.domain in ("", "ai.onnx"))
    torch.onnx.export(model, (torch.from_numpy(x_test),), path, opset_version=opset,
                      input_names=["x"], output_names=["logits"], do_constant_folding=True,
                      training=torch.onnx.TrainingMode.EVAL)
    report = {"generator": "tools/model_fixtures/finetune_24.py", "dense": args.dense,
              "pruned": args.pruned, "test_samples": len(y_test),
              "dense_top1": dense_top1, "pruned_top1": pruned_top1,
              "finetuned_top1": finetuned_top1,
              "recipe": {"epochs": digits_training.EPOCHS,
                         "optimizer": "Adam", "learning_rate": digits_training.LEARNING_RATE,
                         "batch_size": digits_training.BATCH_SIZE, "seed": digits_training.SEED},
              "kept_fraction": [float(m.mean()) for m in masks]}
    with open(os.path.join(args.output, "finetune_24.json"), "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print(f"finetune_24: top-1 dense {dense_top1:.4f}, pruned 2:4 {pruned_top1:.4f}, fine-tuned "
          f"{finetuned_top1:.4f} ({digits_training.EPOCHS} epochs) -> {path}")


if __name__ == "__main__":
    main()
