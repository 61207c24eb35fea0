"""Outcome boost, SIMILAR_MEMORY_FOUND, and the OpenAI-compatible provider."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx2
import numpy as np
import pytest

from kairos.domain.errors import KairosError
from kairos.search.embedders import EmbedderUnavailable, OpenAIEmbedder, make_embedder
from kairos.service import Caller, Kairos
from tests.conftest import make_kairos


def test_successful_protocols_rank_a_little_higher(home: Path) -> None:
    kairos = make_kairos(home, KAIROS_EMBEDDER="none")
    docs = {name: kairos.mint(f"# Restart the {name} service\n\n## Restart\n\nRestart the "
                              f"service with systemctl ({name}).\n")["items"][0]["uri"]
            for name in ("alpha", "bravo")}
    query = "how do I restart the service with systemctl?"
    before = {c["uri"]: c["score"] for c in kairos.search(query)["choices"]
              if c["role"] == "match"}
    for i in range(4):
        caller = Caller(id=f"agent-{i}")
        begun = kairos.begin(docs["bravo"], caller)
        kairos.attest(docs["bravo"], "success", "restarted", caller,
                      solution={"type": "comment", "nonce": begun["challenge"]["nonce"],
                                "proof_hash": begun["challenge"]["proof_hash"],
                                "comment": {"text": "Restarted bravo on web-1 at 10:04; "
                                                        "systemctl reports it active."}})
    after = {c["uri"]: c["score"] for c in kairos.search(query)["choices"]
             if c["role"] == "match"}
    assert after[docs["bravo"]] > before[docs["bravo"]]
    assert after[docs["bravo"]] - before[docs["bravo"]] <= 0.05 + 0.01
    assert after[docs["alpha"]] == before[docs["alpha"]]


def test_similar_memory_found_unless_force_update(kairos: Kairos) -> None:
    kairos.mint("# Rotate the vault root token\n\n## Rotate\n\nvault token create and revoke "
                "the old root token.\n")
    with pytest.raises(KairosError) as info:
        kairos.mint("# Rotate vault root token\n\n## Rotate\n\nvault token create and revoke "
                    "the old root token.\n")
    assert info.value.code == "SIMILAR_MEMORY_FOUND" and info.value.status == 409
    assert info.value.details["score"] >= 0.9
    assert info.value.details["chain_label"] == "Rotate the vault root token"
    forced = kairos.mint("# Rotate vault root token\n\n## Rotate\n\nvault token create and "
                         "revoke the old root token.\n", force_update=True)["items"][0]
    assert forced["recommendation"] == "review_first" and forced["duplicates"]


def test_a_write_reports_fyi_duplicates(kairos: Kairos) -> None:
    kairos.mint("# Rotate the vault root token\n\n## Rotate\n\nRevoke the old root token.\n")
    item = kairos.mint("# Audit vault policies\n\n## Audit\n\nList vault policies and review "
                       "the root token usage.\n")["items"][0]
    assert "recommendation" not in item
    assert all(d["score"] < 0.9 for d in item["duplicates"])


def _openai_server(dim: int = 8) -> httpx2.MockTransport:
    """An OpenAI-compatible /v1/embeddings endpoint (deterministic vectors)."""
    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.url.path != "/v1/embeddings":
            return httpx2.Response(404)
        if request.headers.get("authorization") != "Bearer sk-test":
            return httpx2.Response(401, json={"error": "bad key"})
        body = json.loads(request.content)
        data = [{"index": i, "embedding": [float((hash(t) >> s) % 7) + 1 for s in range(dim)]}
                for i, t in enumerate(body["input"])]
        return httpx2.Response(200, json={"data": list(reversed(data)), "model": body["model"]})
    return httpx2.MockTransport(handler)


def test_openai_compatible_embedder() -> None:
    e = OpenAIEmbedder("http://tei.local/v1", "bge-small", "sk-test", transport=_openai_server())
    vectors = e.embed(["a", "b", "c"])
    assert vectors.shape == (3, 8)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert e.model_id == "openai:bge-small:8" and e.state == "ready"
    bad = OpenAIEmbedder("http://tei.local/v1", "m", "wrong", transport=_openai_server())
    with pytest.raises(EmbedderUnavailable):
        bad.embed(["x"])
    assert bad.state.startswith("failed")


def test_openai_failure_falls_back_to_text(home: Path) -> None:
    failing = OpenAIEmbedder("http://tei.local/v1", "m", "wrong", transport=_openai_server())
    k = make_kairos(home, failing)
    k.write_entry({"entity_type": "experience", "category": "general", "title": "Warm caches",
                   "playbook": "Warm the cache before traffic arrives."})
    response = k.search_entries({"query": "warm the cache"})
    assert response["results"] and response["search_mode"] == "text"


def test_embedder_factory() -> None:
    assert make_embedder("none").name == "none"
    assert make_embedder("local").name == "local"
    with pytest.raises(ValueError):
        make_embedder("word2vec")


def test_writes_while_the_provider_is_down_are_queued_and_drained(home: Path) -> None:
    """A remote provider that fails: the write is stored with its text and queued
    (``index.pending``); once the provider answers, the drain embeds it, with no restart."""
    up = threading.Event()
    server = _openai_server()

    def flaky(request: httpx2.Request) -> httpx2.Response:
        if not up.is_set():
            return httpx2.Response(503, json={"error": "loading"})
        return server.handle_request(request)

    embedder = OpenAIEmbedder("http://tei.local/v1", "m", "sk-test",
                              transport=httpx2.MockTransport(flaky))
    k = make_kairos(home, embedder)
    k.write_entry({"entity_type": "experience", "category": "general", "title": "Warm caches",
                   "playbook": "Warm the cache before traffic arrives."})
    assert k.health()["index"]["pending"] == 1
    k.search_engine.background.start(interval=0.05)
    up.set()
    deadline = time.monotonic() + 20
    while k.health()["index"]["pending"] and time.monotonic() < deadline:
        time.sleep(0.05)
    state = k.health()["index"]
    assert state["pending"] == 0 and state["with_vectors"] == 1
    assert k.search_entries({"query": "warm the cache"})["search_mode"] != "text"
