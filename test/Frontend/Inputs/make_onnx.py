#!/usr/bin/env python3
"""Small ONNX models for the importer's tests, written with onnx.helper (no
PyTorch): make_onnx.py KIND OUT.onnx

    mlp-loss      Gemm -> Relu -> Gemm -> SoftmaxCrossEntropyLoss (x, y)
    mlp-forward   the same without the loss (logits out)
    mlp-dynamic   mlp-forward with the batch dim dynamic ("N")
    seq-dynamic   an input whose second dim is dynamic
    unsupported   a Celu between the layers
    bad-attr      a Softmax with an attribute it does not have
    ln-axis       a LayerNormalization over axis 1 of a rank-3 tensor
    opset12       mlp-loss at opset 12
    external      mlp-loss with its weights in OUT.onnx.data
    custom-domain a node of domain com.microsoft
    not-a-loss    a graph whose output is int64
    reads-mean    LayerNormalization whose Mean output is read
    shapes        a Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain
    gelu-erf      x * 0.5 * (1 + erf(x / sqrt 2)) between the layers
    conv-pads     a Conv padded more on one side than the other
    matmul-1d, erf-alone, gather-3d, slice-back, ce-weights, nll-plain,
    cast-string, pool-ceil, conv3d, input-type, trilu-runtime, no-nodes:
                  one node each in a use the importer refuses
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

B, D, H, C = 4, 8, 16, 3


def weights(rng):
    return [numpy_helper.from_array(rng.standard_normal((H, D)).astype(np.float32) * 0.1, "fc1.weight"),
            numpy_helper.from_array(np.zeros(H, np.float32), "fc1.bias"),
            numpy_helper.from_array(rng.standard_normal((C, H)).astype(np.float32) * 0.1, "fc2.weight"),
            numpy_helper.from_array(np.zeros(C, np.float32), "fc2.bias")]


def mlp(kind, rng):
    batch = "N" if kind == "mlp-dynamic" else B
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, D])
    nodes = [helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"],
                              name="/fc1/Gemm", transB=1)]
    act = "h"
    if kind == "unsupported":
        nodes.append(helper.make_node("Celu", ["h"], ["c"], name="/act/Celu"))
        act = "c"
    elif kind == "gelu-erf":
        two = numpy_helper.from_array(np.array(1.4142135623730951, np.float32), "sqrt2")
        half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
        one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
        nodes += [helper.make_node("Constant", [], ["s"], name="/act/c0", value=two),
                  helper.make_node("Constant", [], ["p5"], name="/act/c1", value=half),
                  helper.make_node("Constant", [], ["o"], name="/act/c2", value=one),
                  helper.make_node("Div", ["h", "s"], ["d"], name="/act/Div"),
                  helper.make_node("Erf", ["d"], ["e"], name="/act/Erf"),
                  helper.make_node("Add", ["e", "o"], ["a"], name="/act/Add"),
                  helper.make_node("Mul", ["h", "a"], ["m"], name="/act/Mul"),
                  helper.make_node("Mul", ["m", "p5"], ["g"], name="/act/Mul_1")]
        act = "g"
    else:
        nodes.append(helper.make_node("Relu", ["h"], ["r"], name="/act/Relu"))
        act = "r"
    nodes.append(helper.make_node("Gemm", [act, "fc2.weight", "fc2.bias"],
                                  ["logits"], name="/fc2/Gemm", transB=1))
    inputs, outputs = [x], []
    if kind in ("mlp-loss", "opset12", "external", "unsupported", "gelu-erf"):
        inputs.append(helper.make_tensor_value_info("y", TensorProto.INT64, [B]))
        nodes.append(helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "y"],
                                      ["loss"], name="/loss", reduction="mean"))
        outputs.append(helper.make_tensor_value_info("loss", TensorProto.FLOAT, []))
    else:
        outputs.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, C]))
    graph = helper.make_graph(nodes, "mlp", inputs, outputs, weights(rng))
    opset = 12 if kind == "opset12" else 17
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def single(kind):
    """One-node graphs around an op the importer refuses."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, 2, D])
    out = helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])
    nodes, inits, inputs = [], [], [x]
    if kind == "seq-dynamic":
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, "T", D])]
        nodes.append(helper.make_node("ReduceMean", ["x"], ["loss"], name="/mean", keepdims=0))
    elif kind == "bad-attr":
        nodes += [helper.make_node("Softmax", ["x"], ["s"], name="/attn/Softmax", axis=-1),
                  helper.make_node("ReduceMean", ["s"], ["loss"], name="/mean", keepdims=0)]
        nodes[0].attribute.append(helper.make_attribute("temperature", 2.0))
    elif kind == "ln-axis":
        inits = [numpy_helper.from_array(np.ones((2, D), np.float32), "ln.weight")]
        nodes += [helper.make_node("LayerNormalization", ["x", "ln.weight"], ["n"],
                                   name="/ln/LayerNormalization", axis=1),
                  helper.make_node("ReduceMean", ["n"], ["loss"], name="/mean", keepdims=0)]
    elif kind == "reads-mean":
        inits = [numpy_helper.from_array(np.ones(D, np.float32), "ln.weight")]
        nodes += [helper.make_node("LayerNormalization", ["x", "ln.weight"], ["n", "mu"],
                                   name="/ln/LayerNormalization"),
                  helper.make_node("Add", ["n", "mu"], ["a"], name="/add"),
                  helper.make_node("ReduceMean", ["a"], ["loss"], name="/mean", keepdims=0)]
    elif kind == "conv-pads":
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, 1, 8, 8])]
        inits = [numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "conv.weight")]
        nodes += [helper.make_node("Conv", ["x", "conv.weight"], ["c"], name="/conv/Conv",
                                   kernel_shape=[3, 3], pads=[1, 1, 0, 0]),
                  helper.make_node("ReduceMean", ["c"], ["loss"], name="/mean", keepdims=0)]
    elif kind == "custom-domain":
        nodes += [helper.make_node("FastGelu", ["x"], ["g"], name="/act/FastGelu",
                                   domain="com.microsoft"),
                  helper.make_node("ReduceMean", ["g"], ["loss"], name="/mean", keepdims=0)]
    elif kind == "not-a-loss":
        nodes.append(helper.make_node("Shape", ["x"], ["loss"], name="/shape"))
        out = helper.make_tensor_value_info("loss", TensorProto.INT64, [3])
    elif kind == "shapes":
        # view(B, -1) written the way exports write it: from the shape.
        inits = [numpy_helper.from_array(np.ones(2 * D, np.float32), "scale")]
        zero = numpy_helper.from_array(np.array(0, np.int64), "zero")
        minus = numpy_helper.from_array(np.array([-1], np.int64), "minus")
        axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
        nodes += [helper.make_node("Shape", ["x"], ["shape"], name="/view/Shape"),
                  helper.make_node("Constant", [], ["i0"], name="/view/Constant", value=zero),
                  helper.make_node("Gather", ["shape", "i0"], ["b"], name="/view/Gather"),
                  helper.make_node("Constant", [], ["ax"], name="/view/Constant_1", value=axes),
                  helper.make_node("Unsqueeze", ["b", "ax"], ["b1"], name="/view/Unsqueeze"),
                  helper.make_node("Constant", [], ["m1"], name="/view/Constant_2", value=minus),
                  helper.make_node("Concat", ["b1", "m1"], ["target"], name="/view/Concat", axis=0),
                  helper.make_node("Reshape", ["x", "target"], ["flat"], name="/view/Reshape"),
                  helper.make_node("Mul", ["flat", "scale"], ["scaled"], name="/scale/Mul"),
                  helper.make_node("ReduceMean", ["scaled"], ["loss"], name="/mean", keepdims=0)]
    elif kind in REFUSED:
        inputs, nodes, inits, out = REFUSED[kind]()
    graph = helper.make_graph(nodes, kind, inputs, [out], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)])


def _mean(value):
    """The loss: a mean of `value`."""
    return helper.make_node("ReduceMean", [value], ["loss"], name="/mean", keepdims=0)


def _f(name, shape, kind=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, kind, shape)


def _loss():
    return _f("loss", [])


def _refused():
    ones = lambda name, shape: numpy_helper.from_array(np.ones(shape, np.float32), name)
    ints = lambda name, values: numpy_helper.from_array(np.array(values, np.int64), name)
    return {
        "matmul-1d": lambda: ([_f("x", [D])], [
            helper.make_node("MatMul", ["x", "w"], ["m"], name="/mm"), _mean("m")],
            [ones("w", (D, C))], _loss()),
        "erf-alone": lambda: ([_f("x", [B, D])], [
            helper.make_node("Erf", ["x"], ["e"], name="/erf"), _mean("e")], [], _loss()),
        "gather-3d": lambda: ([_f("i", [B], TensorProto.INT64)], [
            helper.make_node("Gather", ["t", "i"], ["g"], name="/gather"), _mean("g")],
            [ones("t", (5, 2, D))], _loss()),
        "slice-back": lambda: ([_f("x", [B, D])], [
            helper.make_node("Constant", [], ["s"], name="/c0", value=ints("s", [-1])),
            helper.make_node("Constant", [], ["e"], name="/c1", value=ints("e", [-100])),
            helper.make_node("Constant", [], ["a"], name="/c2", value=ints("a", [1])),
            helper.make_node("Constant", [], ["st"], name="/c3", value=ints("st", [-1])),
            helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["r"], name="/slice"),
            _mean("r")], [], _loss()),
        "ce-weights": lambda: ([_f("x", [B, C]), _f("y", [B], TensorProto.INT64)], [
            helper.make_node("SoftmaxCrossEntropyLoss", ["x", "y", "w"], ["loss"],
                             name="/loss")], [ones("w", (C,))], _loss()),
        "nll-plain": lambda: ([_f("x", [B, C]), _f("y", [B], TensorProto.INT64)], [
            helper.make_node("NegativeLogLikelihoodLoss", ["x", "y"], ["loss"],
                             name="/loss")], [], _loss()),
        "cast-string": lambda: ([_f("x", [B, D])], [
            helper.make_node("Cast", ["x"], ["c"], name="/cast", to=TensorProto.STRING),
            helper.make_node("Cast", ["c"], ["f"], name="/back", to=TensorProto.FLOAT),
            _mean("f")], [], _loss()),
        "pool-ceil": lambda: ([_f("x", [B, 1, 5, 5])], [
            helper.make_node("MaxPool", ["x"], ["p"], name="/pool", kernel_shape=[2, 2],
                             strides=[2, 2], ceil_mode=1), _mean("p")], [], _loss()),
        "conv3d": lambda: ([_f("x", [B, 1, 4, 4, 4])], [
            helper.make_node("Conv", ["x", "w"], ["c"], name="/conv",
                             kernel_shape=[3, 3, 3]), _mean("c")],
            [ones("w", (2, 1, 3, 3, 3))], _loss()),
        "input-type": lambda: ([_f("x", [B, D], TensorProto.UINT8)], [
            helper.make_node("Cast", ["x"], ["f"], name="/cast", to=TensorProto.FLOAT),
            _mean("f")], [], _loss()),
        "trilu-runtime": lambda: ([_f("x", [B, D, D])], [
            helper.make_node("Trilu", ["x"], ["t"], name="/trilu"), _mean("t")], [],
            _loss()),
        "no-nodes": lambda: ([_f("x", [B, D])], [], [], _f("x", [B, D])),
    }


REFUSED = _refused()


def main():
    kind, out = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(0)
    if kind.startswith("mlp") or kind in ("unsupported", "opset12", "external", "gelu-erf"):
        model = mlp(kind, rng)
    else:
        model = single(kind)
    if kind == "external":
        onnx.save_model(model, out, save_as_external_data=True,
                        all_tensors_to_one_file=True,
                        location=out.split("/")[-1] + ".data", size_threshold=0)
        return
    onnx.save(model, out)


if __name__ == "__main__":
    main()
