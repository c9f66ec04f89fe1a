#!/usr/bin/python3
# Exports the reference models of seedance_model's tests (issue 37) with Debian's python3-torch
# and writes torch's outputs next to them, so that the executor is checked against models a real
# exporter made (not hand-built graphs) and against a second, independent implementation:
#
#   encoder_op17  nn.TransformerEncoderLayer (d_model 64, 4 heads, FF 128), opset 17, [2,16,64]
#   encoder_op13  the same layer at opset 13 (LayerNorm decomposed into Reduce/Sub/Pow/Sqrt/Div)
#   decoder_op14  a small causal (GPT-style) decoder: token + learned position embedding, two
#                 pre-LN self-attention blocks under a causal mask, GELU MLP; ids [1,16] ->
#                 logits [1,16,100]
#   bert_op14     a Hugging Face BERT-style encoder layer written out (d_model 64, 4 heads, FF 128):
#                 heads as [B, H, S, d] (view + permute), a key-padding mask input added to the
#                 scores, GELU's tanh form, post-LN; x [2,16,64], mask [2,16] -> y [2,16,64]
#   encoder_op17_dyn, bert_op14_dyn
#                 the encoder layer and the BERT-style layer exported with dynamic batch and
#                 sequence axes (what real exports carry; the rewriter must prove shapes
#                 symbolically there)
#   cnn           (Conv 3x3, BatchNorm, ReLU, MaxPool) x2, global average pool, Linear; [2,3,32,32]
#                 (torch's eval-mode export folds each BatchNorm into its Conv)
#   digits_mlp    an MLP 64-64-10 trained here on scikit-learn's digits train split, run on the
#                 test split (so that top-1 agreement with torch means something)
#
# Usage: /usr/bin/python3 tools/model_fixtures/export_models.py OUT_DIR
#
# Each model goes to OUT_DIR/<model>/ in ONNX's conformance layout: model.onnx and
# test_data_set_0/input_N.pb, output_N.pb (TensorProtos named as the graph's inputs and
# outputs; the outputs are torch's). digits_mlp/ also holds labels.pb (int64, the test labels)
# and accuracy.txt (torch's top-1 accuracy). OUT_DIR/manifest.json lists the models, their
# opsets and op types, and the torch, onnx and scikit-learn versions. Everything is seeded and
# single-threaded, so a rerun on the same machine writes the same tensors. Runs once per build
# (torch is a test-time dependency only); takes well under a minute on one core.
# Exit 2 on bad usage, 1 when a module is missing or an exported model fails ONNX's checker.
import json
import os
import sys
import time

USAGE = "usage: export_models.py OUT_DIR"


def fail(message, code=1):
    print(f"export_models: {message}", file=sys.stderr)
    sys.exit(code)


if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
    fail(USAGE, 2)
OUT_DIR = sys.argv[1]

try:
    import numpy as np
    import onnx
    import onnx.checker
    import onnx.numpy_helper
    import sklearn
    import torch
    from torch import nn

    import digits_training  # beside this script: the digits MLP's recipe
except ImportError as error:
    fail(f"{error}; install Debian's python3-torch, python3-onnx and python3-sklearn "
         "(tools/install_deps.sh) and run with /usr/bin/python3")

SEED = digits_training.SEED


def seed_everything():
    digits_training.seed_everything()


# --- the models -------------------------------------------------------------------------------

def make_encoder():
    seed_everything()
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                       batch_first=True)
    x = torch.randn(2, 16, 64)
    return layer.eval(), (x,), ["x"], ["y"]


class CausalDecoder(nn.Module):
    """A GPT-style decoder: pre-LN self-attention blocks under a causal mask."""

    def __init__(self, vocab=100, seq=16, d_model=64, nhead=4, layers=2):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model)
        self.positions = nn.Parameter(torch.randn(seq, d_model) * 0.02)
        self.blocks = nn.ModuleList([
            nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=4 * d_model, dropout=0.0,
                                       activation="gelu", batch_first=True, norm_first=True)
            for _ in range(layers)])
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)
        # -inf above the diagonal: position i attends to positions <= i only.
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, ids):
        h = self.tokens(ids) + self.positions
        for block in self.blocks:
            h = block(h, src_mask=self.mask)
        return self.head(self.norm(h))


def make_decoder():
    seed_everything()
    model = CausalDecoder()
    ids = torch.randint(0, 100, (1, 16), dtype=torch.int64)
    return model.eval(), (ids,), ["ids"], ["logits"]


class BertLayer(nn.Module):
    """A BERT-style encoder layer as Hugging Face writes it (not nn.MultiheadAttention)."""

    def __init__(self, d_model=64, nhead=4, dim_feedforward=128):
        super().__init__()
        self.nhead, self.head_dim = nhead, d_model // nhead
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model, eps=1e-12)
        self.ff1 = nn.Linear(d_model, dim_feedforward)
        self.ff2 = nn.Linear(dim_feedforward, d_model)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-12)

    def heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.nhead, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        b, s, d = x.shape
        q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / (self.head_dim ** 0.5)
        scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0  # padding keys
        context = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).reshape(b, s, d)
        h = self.norm1(x + self.out(context))
        return self.norm2(h + self.ff2(nn.functional.gelu(self.ff1(h), approximate="tanh")))


def make_bert():
    seed_everything()
    x = torch.randn(2, 16, 64)
    mask = torch.ones(2, 16)
    mask[1, 11:] = 0  # the second sequence is 11 tokens long
    return BertLayer().eval(), (x, mask), ["x", "mask"], ["y"]


def make_cnn():
    seed_everything()

    def stage(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                nn.MaxPool2d(2)]

    model = nn.Sequential(*stage(3, 16), *stage(16, 32), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 10))
    # Running statistics other than (0, 1), so that the normalisation does something.
    for bn in (m for m in model if isinstance(m, nn.BatchNorm2d)):
        bn.running_mean.copy_(torch.randn(bn.num_features) * 0.1)
        bn.running_var.copy_(torch.rand(bn.num_features) + 0.5)
        bn.weight.data.copy_(torch.rand(bn.num_features) + 0.5)
        bn.bias.data.copy_(torch.randn(bn.num_features) * 0.1)
    x = torch.randn(2, 3, 32, 32)
    return model.eval(), (x,), ["x"], ["logits"]


def make_digits_mlp():
    """Trains the MLP by digits_training.py's recipe; returns the model, the test inputs, the
    labels and torch's accuracy."""
    seed_everything()
    x_train, x_test, y_train, y_test = digits_training.load_split()
    model = digits_training.train(digits_training.make_mlp(), x_train, y_train)
    accuracy = digits_training.top1(model, x_test, y_test)
    return model, (torch.from_numpy(x_test),), ["x"], ["logits"], y_test, accuracy


# --- export -----------------------------------------------------------------------------------

def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(onnx.numpy_helper.from_array(np.ascontiguousarray(array), name).SerializeToString())


def export(name, model, inputs, input_names, output_names, opset, dynamic=False):
    """Exports MODEL at OPSET into OUT_DIR/NAME/, writes torch's outputs; returns a manifest row.
    dynamic: every input's and output's first two axes are named dynamic axes (batch, seq)."""
    folder = os.path.join(OUT_DIR, name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    # Grad stays enabled, as in export: nn.TransformerEncoderLayer's fused "fast path" (which
    # torch 1.13 cannot export) runs only without grad, so the reference takes the same path.
    outputs = model(*inputs)
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    axes = {n: {0: "batch", 1: "seq"} for n in input_names + output_names} if dynamic else None
    torch.onnx.export(model, inputs, path, opset_version=opset, input_names=input_names,
                      output_names=output_names, do_constant_folding=True,
                      training=torch.onnx.TrainingMode.EVAL, dynamic_axes=axes)
    proto = onnx.load(path)
    try:
        onnx.checker.check_model(proto, full_check=True)  # with strict shape inference
    except Exception as error:  # onnx raises several kinds
        fail(f"{path}: ONNX's checker refuses the exported model: {error}")
    graph_inputs = [i.name for i in proto.graph.input
                    if i.name not in {t.name for t in proto.graph.initializer}]
    graph_outputs = [o.name for o in proto.graph.output]
    if graph_inputs != input_names or graph_outputs != output_names:
        fail(f"{path}: graph inputs {graph_inputs} / outputs {graph_outputs}, expected "
             f"{input_names} / {output_names}")
    for i, (tensor, tensor_name) in enumerate(zip(inputs, input_names)):
        write_tensor(os.path.join(data, f"input_{i}.pb"), tensor.detach().numpy(), tensor_name)
    for i, (tensor, tensor_name) in enumerate(zip(outputs, output_names)):
        write_tensor(os.path.join(data, f"output_{i}.pb"), tensor.detach().numpy(), tensor_name)
    ops = sorted({node.op_type for node in proto.graph.node})
    opset_imports = {imp.domain or "ai.onnx": imp.version for imp in proto.opset_import}
    print(f"export_models: {name}: opset {opset}, {len(proto.graph.node)} nodes, "
          f"{len(proto.graph.initializer)} initializers, ops: {' '.join(ops)}")
    return {"name": name, "dir": name, "opset": opset, "opset_import": opset_imports,
            "ir_version": proto.ir_version, "inputs": input_names, "outputs": output_names,
            "nodes": len(proto.graph.node), "ops": ops}


def main():
    start = time.monotonic()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(OUT_DIR, exist_ok=True)
    rows = []
    encoder = make_encoder()
    rows.append(export("encoder_op17", *encoder, opset=17))
    rows.append(export("encoder_op13", *encoder, opset=13))
    rows.append(export("decoder_op14", *make_decoder(), opset=14))
    rows.append(export("bert_op14", *make_bert(), opset=14))
    rows.append(export("encoder_op17_dyn", *encoder, opset=17, dynamic=True))
    rows.append(export("bert_op14_dyn", *make_bert(), opset=14, dynamic=True))
    rows.append(export("cnn", *make_cnn(), opset=13))

    model, inputs, input_names, output_names, labels, accuracy = make_digits_mlp()
    row = export("digits_mlp", model, inputs, input_names, output_names, opset=13)
    write_tensor(os.path.join(OUT_DIR, "digits_mlp", "labels.pb"), labels, "labels")
    with open(os.path.join(OUT_DIR, "digits_mlp", "accuracy.txt"), "w") as f:
        f.write(f"{accuracy:.6f}\n")
    row.update(labels="labels.pb", torch_top1_accuracy=accuracy, test_samples=len(labels))
    rows.append(row)
    print(f"export_models: digits_mlp: torch top-1 accuracy {accuracy:.4f} on {len(labels)} "
          "test digits")

    manifest = {"generator": "tools/model_fixtures/export_models.py", "seed": SEED,
                "torch": torch.__version__, "onnx": onnx.__version__,
                "sklearn": sklearn.__version__, "numpy": np.__version__,
                "ops": sorted({op for r in rows for op in r["ops"]}), "models": rows}
    with open(os.path.join(OUT_DIR, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    print(f"export_models: {len(rows)} models in {OUT_DIR} ({time.monotonic() - start:.1f} s)")


if __name__ == "__main__":
    main()
