"""A model directory describes its model: ``model.json`` names it (and so the stored
vectors' model id), gives its dimension, a prefix put before every text and the
tokenizer's padding id."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kairos.search.embedders import MODEL_DIR, LocalEmbedder

pytestmark = pytest.mark.slow


def _model_dir(tmp_path: Path, **meta: object) -> Path:
    for name in ("model.onnx", "tokenizer.json"):
        (tmp_path / name).symlink_to(MODEL_DIR / name)
    shipped = json.loads((MODEL_DIR / "model.json").read_text("utf-8"))
    (tmp_path / "model.json").write_text(json.dumps({**shipped, **meta}), "utf-8")
    return tmp_path


def test_model_json_names_the_model_and_its_prefix(tmp_path: Path,
                                                   model: LocalEmbedder) -> None:
    other = LocalEmbedder(_model_dir(tmp_path, model="org/other-model", prefix="query: "))
    assert other.model_id == "local:other-model-int8:384" != model.model_id
    assert model.model_id == "local:all-MiniLM-L6-v2-int8:384" and model.prefix == ""
    texts = ["compress a folder", "rotate the database credentials"]
    np.testing.assert_allclose(other.embed(texts),
                               model.embed([f"query: {t}" for t in texts]), atol=1e-5)


def test_batches_pad_with_the_models_pad_id(tmp_path: Path, model: LocalEmbedder) -> None:
    texts = ["undo the last commit", "list the files of a directory, newest first"]
    batched = LocalEmbedder(_model_dir(tmp_path, pad_id=100), batch_size=2)
    padding = batched.load()._tokenizer.padding
    assert (padding["pad_id"], padding["pad_token"]) == (100, "[UNK]")
    assert float(np.min(np.sum(batched.embed(texts) * model.embed(texts), axis=1))) > 0.98
