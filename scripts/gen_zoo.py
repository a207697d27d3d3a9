#!/usr/bin/env python3
"""Writes the model zoo, models/zoo/*.json, as npusim graph JSON (docs/graph.md).

Shapes are the real architectures'; weights are not stored (a graph names tensors and shapes
only), and every tensor is int8 as an NPU deployment quantises them. Deterministic: rerun after
changing a model and commit the result.

  resnet50       ResNet-50 v1.5 (torchvision), 1x3x224x224
  mobilenetv2    MobileNetV2 1.0 (torchvision), 1x3x224x224, ReLU6 as Clip
  yolo_tiny      a YOLOv3-tiny-style detector, 1x3x416x416, two heads (13x13, 26x26)
  bert_base_layer  one BERT-base encoder layer: sequence 128, hidden 768, 12 heads, FFN 3072
  llm7b_decoder_layer  one Llama-2-7B decoder layer at prefill: sequence 512, hidden 4096,
                 32 heads of 128, SwiGLU FFN 11008, RMSNorm as LayerNorm, RoPE as element-wise
"""
import json
import os


class Graph:
    def __init__(self, name, description):
        self.name = name
        self.description = description
        self.tensors = []
        self.layers = []
        self.inputs = []
        self.outputs = []
        self.shapes = {}
        self.count = {}

    def tensor(self, name, shape, constant=False, layout=""):
        self.tensors.append({"name": name, "dtype": "int8", "shape": list(shape),
                             "layout": layout, "constant": constant})
        self.shapes[name] = list(shape)
        return name

    def uniq(self, base):
        n = self.count.get(base, 0)
        self.count[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def layer(self, name, op, inputs, out_shape, attrs=None, layout=""):
        out = self.tensor(f"{name}.out", out_shape, layout=layout)
        entry = {"name": name, "op": op, "inputs": inputs, "outputs": [out]}
        if attrs:
            entry["attrs"] = attrs
        self.layers.append(entry)
        return out

    # --- CNN pieces (NCHW) ---
    def conv(self, name, x, cout, k, s=1, p=None, group=1, bn=True, act="Relu"):
        n, c, h, w = self.shapes[x]
        p = k // 2 if p is None else p
        oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        wt = self.tensor(f"{name}.weight", [cout, c // group, k, k], constant=True)
        y = self.layer(name, "Conv", [x, wt], [n, cout, oh, ow],
                       {"kernel_shape": [k, k], "strides": [s, s], "pads": [p, p, p, p],
                        "group": group}, "NCHW")
        if bn:
            params = [self.tensor(f"{name}.bn.{q}", [cout], constant=True)
                      for q in ("scale", "bias", "mean", "var")]
            y = self.layer(f"{name}.bn", "BatchNormalization", [y] + params, [n, cout, oh, ow],
                           layout="NCHW")
        if act == "Relu":
            y = self.layer(f"{name}.relu", "Relu", [y], [n, cout, oh, ow], layout="NCHW")
        elif act == "Relu6":
            y = self.layer(f"{name}.relu6", "Clip", [y], [n, cout, oh, ow], layout="NCHW")
        elif act == "LeakyRelu":
            y = self.layer(f"{name}.leaky", "LeakyRelu", [y], [n, cout, oh, ow], layout="NCHW")
        return y

    def pool(self, name, op, x, k, s, pads):
        n, c, h, w = self.shapes[x]
        oh = (h + pads[0] + pads[2] - k) // s + 1
        ow = (w + pads[1] + pads[3] - k) // s + 1
        return self.layer(name, op, [x], [n, c, oh, ow],
                          {"kernel_shape": [k, k], "strides": [s, s], "pads": pads}, "NCHW")

    def binary(self, name, op, a, b):
        return self.layer(name, op, [a, b], self.shapes[a])

    def unary(self, name, op, x):
        return self.layer(name, op, [x], self.shapes[x])

    def fc(self, name, x, cout, bias=True):
        *lead, k = self.shapes[x]
        wt = self.tensor(f"{name}.weight", [k, cout], constant=True)
        y = self.layer(name, "MatMul", [x, wt], lead + [cout])
        if bias:
            b = self.tensor(f"{name}.bias", [cout], constant=True)
            y = self.layer(f"{name}.bias_add", "Add", [y, b], lead + [cout])
        return y

    def view(self, name, x, shape, op="Reshape"):
        return self.layer(name, op, [x], shape)

    def write(self, folder):
        doc = {"format": "npusim-graph", "version": 1, "name": self.name,
               "description": self.description, "batch": 1, "tensors": self.tensors,
               "inputs": self.inputs, "outputs": self.outputs, "layers": self.layers}
        path = os.path.join(folder, f"{self.name}.json")
        with open(path, "w") as f:
            f.write("{\n")
            keys = list(doc)
            for i, key in enumerate(keys):
                sep = "," if i < len(keys) - 1 else ""
                if isinstance(doc[key], list) and doc[key] and isinstance(doc[key][0], dict):
                    f.write(f'  "{key}": [\n')
                    for j, item in enumerate(doc[key]):
                        f.write("    " + json.dumps(item) + ("," if j < len(doc[key]) - 1 else "") + "\n")
                    f.write("  ]" + sep + "\n")
                else:
                    f.write(f"  {json.dumps(key)}: {json.dumps(doc[key])}{sep}\n")
            f.write("}\n")


def resnet50():
    g = Graph("resnet50", "ResNet-50 v1.5, 224x224, int8")
    x = g.tensor("input", [1, 3, 224, 224], layout="NCHW")
    g.inputs.append(x)
    y = g.conv("conv1", x, 64, 7, 2, 3)
    y = g.pool("maxpool", "MaxPool", y, 3, 2, [1, 1, 1, 1])
    cin = 64
    for stage, (blocks, width) in enumerate([(3, 64), (4, 128), (6, 256), (3, 512)], start=1):
        for b in range(blocks):
            s = 2 if (b == 0 and stage > 1) else 1
            name = f"layer{stage}.{b}"
            out = width * 4
            z = g.conv(f"{name}.conv1", y, width, 1)
            z = g.conv(f"{name}.conv2", z, width, 3, s)
            z = g.conv(f"{name}.conv3", z, out, 1, act=None)
            short = g.conv(f"{name}.downsample", y, out, 1, s, act=None) if b == 0 else y
            y = g.binary(f"{name}.add", "Add", z, short)
            y = g.unary(f"{name}.relu", "Relu", y)
            cin = out
    y = g.layer("avgpool", "GlobalAveragePool", [y], [1, cin, 1, 1], layout="NCHW")
    y = g.view("flatten", y, [1, cin], "Flatten")
    y = g.fc("fc", y, 1000)
    g.outputs.append(y)
    return g


def mobilenetv2():
    g = Graph("mobilenetv2", "MobileNetV2 1.0, 224x224, int8, ReLU6 as Clip")
    x = g.tensor("input", [1, 3, 224, 224], layout="NCHW")
    g.inputs.append(x)
    y = g.conv("features.0", x, 32, 3, 2, act="Relu6")
    cin = 32
    idx = 1
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            name = f"features.{idx}"
            hidden = cin * t
            z = y
            if t != 1:
                z = g.conv(f"{name}.expand", z, hidden, 1, act="Relu6")
            z = g.conv(f"{name}.dw", z, hidden, 3, stride, group=hidden, act="Relu6")
            z = g.conv(f"{name}.project", z, c, 1, act=None)
            if stride == 1 and cin == c:
                z = g.binary(f"{name}.add", "Add", z, y)
            y = z
            cin = c
            idx += 1
    y = g.conv(f"features.{idx}", y, 1280, 1, act="Relu6")
    y = g.layer("avgpool", "GlobalAveragePool", [y], [1, 1280, 1, 1], layout="NCHW")
    y = g.view("flatten", y, [1, 1280], "Flatten")
    y = g.fc("classifier", y, 1000)
    g.outputs.append(y)
    return g


def yolo_tiny():
    g = Graph("yolo_tiny", "YOLOv3-tiny-style detector, 416x416, int8, two heads")
    x = g.tensor("input", [1, 3, 416, 416], layout="NCHW")
    g.inputs.append(x)
    y = x
    route = None
    for i, c in enumerate([16, 32, 64, 128, 256, 512]):
        y = g.conv(f"conv{i}", y, c, 3, act="LeakyRelu")
        if c == 256:
            route = y  # 26x26x256, reused by the second head
        if c < 512:
            y = g.pool(f"pool{i}", "MaxPool", y, 2, 2, [0, 0, 0, 0])
        else:
            y = g.pool(f"pool{i}", "MaxPool", y, 2, 1, [0, 0, 1, 1])  # 13x13 kept
    y = g.conv("conv6", y, 1024, 3, act="LeakyRelu")
    y = g.conv("conv7", y, 256, 1, act="LeakyRelu")
    h1 = g.conv("conv8", y, 512, 3, act="LeakyRelu")
    h1 = g.conv("head1", h1, 255, 1, bn=False, act=None)
    z = g.conv("conv9", y, 128, 1, act="LeakyRelu")
    z = g.layer("upsample", "Resize", [z], [1, 128, 26, 26], layout="NCHW")
    z = g.layer("concat", "Concat", [z, route], [1, 384, 26, 26], {"axis": 1}, "NCHW")
    z = g.conv("conv10", z, 256, 3, act="LeakyRelu")
    h2 = g.conv("head2", z, 255, 1, bn=False, act=None)
    g.outputs += [h1, h2]
    return g


def attention_block(g, x, seq, hidden, heads, name, bias=True, rope=False):
    d = hidden // heads
    q = g.fc(f"{name}.q", x, hidden, bias)
    k = g.fc(f"{name}.k", x, hidden, bias)
    v = g.fc(f"{name}.v", x, hidden, bias)
    if rope:
        cos = g.tensor(f"{name}.rope.cos", [seq, hidden], constant=True)
        q = g.binary(f"{name}.q_rope", "Mul", q, cos)
        k = g.binary(f"{name}.k_rope", "Mul", k, cos)
    q = g.view(f"{name}.q_heads", q, [1, seq, heads, d])
    q = g.layer(f"{name}.q_t", "Transpose", [q], [1, heads, seq, d], {"perm": [0, 2, 1, 3]})
    k = g.view(f"{name}.k_heads", k, [1, seq, heads, d])
    k = g.layer(f"{name}.k_t", "Transpose", [k], [1, heads, d, seq], {"perm": [0, 2, 3, 1]})
    v = g.view(f"{name}.v_heads", v, [1, seq, heads, d])
    v = g.layer(f"{name}.v_t", "Transpose", [v], [1, heads, seq, d], {"perm": [0, 2, 1, 3]})
    s = g.layer(f"{name}.scores", "MatMul", [q, k], [1, heads, seq, seq])
    scale = g.tensor(f"{name}.scale", [1], constant=True)
    s = g.binary(f"{name}.scale_mul", "Mul", s, scale)
    if rope:
        mask = g.tensor(f"{name}.causal_mask", [seq, seq], constant=True)
        s = g.binary(f"{name}.mask", "Add", s, mask)
    p = g.layer(f"{name}.softmax", "Softmax", [s], [1, heads, seq, seq], {"axis": -1})
    c = g.layer(f"{name}.context", "MatMul", [p, v], [1, heads, seq, d])
    c = g.layer(f"{name}.context_t", "Transpose", [c], [1, seq, heads, d], {"perm": [0, 2, 1, 3]})
    c = g.view(f"{name}.merge", c, [1, seq, hidden])
    return g.fc(f"{name}.out", c, hidden, bias)


def norm(g, name, x, hidden):
    gamma = g.tensor(f"{name}.weight", [hidden], constant=True)
    beta = g.tensor(f"{name}.bias", [hidden], constant=True)
    return g.layer(name, "LayerNorm", [x, gamma, beta], g.shapes[x], {"axis": -1})


def bert_base_layer():
    seq, hidden, heads, ffn = 128, 768, 12, 3072
    g = Graph("bert_base_layer", "one BERT-base encoder layer, sequence 128, int8")
    x = g.tensor("hidden_states", [1, seq, hidden])
    g.inputs.append(x)
    a = attention_block(g, x, seq, hidden, heads, "attention")
    y = norm(g, "attention.norm", g.binary("attention.residual", "Add", a, x), hidden)
    h = g.fc("ffn.up", y, ffn)
    h = g.unary("ffn.gelu", "Gelu", h)
    h = g.fc("ffn.down", h, hidden)
    out = norm(g, "ffn.norm", g.binary("ffn.residual", "Add", h, y), hidden)
    g.outputs.append(out)
    return g


def llm7b_decoder_layer():
    seq, hidden, heads, ffn = 512, 4096, 32, 11008
    g = Graph("llm7b_decoder_layer",
              "one Llama-2-7B decoder layer at prefill, sequence 512, int8 weights and activations")
    x = g.tensor("hidden_states", [1, seq, hidden])
    g.inputs.append(x)
    n1 = norm(g, "input_norm", x, hidden)
    a = attention_block(g, n1, seq, hidden, heads, "self_attn", bias=False, rope=True)
    y = g.binary("attn_residual", "Add", a, x)
    n2 = norm(g, "post_attention_norm", y, hidden)
    gate = g.fc("mlp.gate", n2, ffn, bias=False)
    up = g.fc("mlp.up", n2, ffn, bias=False)
    sig = g.unary("mlp.silu_sigmoid", "Sigmoid", gate)
    gate = g.binary("mlp.silu", "Mul", gate, sig)
    h = g.binary("mlp.gate_up", "Mul", gate, up)
    h = g.fc("mlp.down", h, hidden, bias=False)
    g.outputs.append(g.binary("mlp_residual", "Add", h, y))
    return g


def main():
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "zoo")
    os.makedirs(folder, exist_ok=True)
    for build in (resnet50, mobilenetv2, yolo_tiny, bert_base_layer, llm7b_decoder_layer):
        build().write(folder)


if __name__ == "__main__":
    main()
