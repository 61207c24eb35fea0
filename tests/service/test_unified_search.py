"""Contract §5: entries, the unified search, session memory and the quality rails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kairos.domain.errors import KairosError
from kairos.search.embedders import LocalEmbedder
from kairos.service import Kairos
from tests.conftest import make_kairos
from tests.fakes import HashEmbedder

VAULT = {"entity_type": "experience", "category": "security",
         "title": "Rotate database passwords quarterly",
         "playbook": "Rotate the database password every quarter. Store it in the vault, never "
                     "in git. Restart the workers after the rotation.",
         "author": "ana", "section": "useful"}
KAFKA = {"entity_type": "manual", "category": "operations", "title": "Kafka broker runbook",
         "content": "Check consumer lag first. Restart a broker only after moving leadership. "
                    "Rotate the broker keystore yearly.", "summary": "Operating kafka brokers",
         "author": "bo"}
GIT = {"entity_type": "experience", "category": "coding",
       "title": "Never force-push shared branches",
       "playbook": "Force-pushing a shared branch rewrites history others built on. Use "
                   "revert commits instead.", "author": "ana", "section": "harmful"}


@pytest.fixture
def k(home: Path, model: LocalEmbedder) -> Kairos:
    """Three entries in a store searched with the real local model."""
    kairos = make_kairos(home, model)
    for entry in (VAULT, KAFKA, GIT):
        kairos.write_entry(dict(entry))
    return kairos


def _ids(response: dict[str, Any]) -> list[str]:
    return [r["title"] for r in response["results"]]


def test_results_carry_every_field_of_the_schema(k: Kairos) -> None:
    response = k.search_entries({"query": "rotate database password vault"})
    assert set(response) >= {"results", "count", "total", "has_more", "top_score", "warnings",
                             "session_applied", "provider", "search_mode", "degraded",
                             "provider_hint"}
    first = response["results"][0]
    assert set(first) >= {"entity_id", "entity_type", "title", "section", "score", "rank",
                          "reason", "provider", "degraded", "hint", "heading", "snippet",
                          "author", "updated_at"}
    assert first["title"] == VAULT["title"] and first["rank"] == 1
    assert 0.5 <= first["score"] <= 1 and first["provider"] == "local"
    assert response["search_mode"] == "hybrid" and response["degraded"] is False
    assert "playbook" not in first  # full bodies only when asked for
    assert response["count"] == len(response["results"])


def test_types_default_and_protocols_on_request(k: Kairos) -> None:
    k.mint("# Rotate database passwords with the vault CLI\n\n## Rotate\n\nvault write "
           "database/rotate-root\n")
    default = k.search_entries({"query": "rotate database password vault", "min_score": 0})
    assert {r["entity_type"] for r in default["results"]} <= {"experience", "manual"}
    everything = k.search_entries({"query": "rotate database password vault", "min_score": 0,
                                   "types": ["experience", "manual", "protocol"]})
    protocols = [r for r in everything["results"] if r["entity_type"] == "protocol"]
    assert protocols and protocols[0]["entity_id"].startswith("kairos://mem/")


def test_category_and_filters_are_and_exact_and_ignore_nulls(k: Kairos) -> None:
    q = {"query": "rotate restart", "min_score": 0}
    assert _ids(k.search_entries({**q, "category": "operations"})) == [KAFKA["title"]]
    by_ana = k.search_entries({**q, "filters": {"author": "ana", "section": None}})
    assert set(_ids(by_ana)) <= {VAULT["title"], GIT["title"]} and by_ana["results"]
    both = k.search_entries({**q, "filters": {"author": "ana", "section": "harmful"}})
    assert set(_ids(both)) <= {GIT["title"]}
    assert k.search_entries({**q, "filters": {"author": "An"}})["results"] == []


def test_fields_are_additive_and_return_full_bodies(k: Kairos) -> None:
    response = k.search_entries({"query": "kafka broker", "fields": ["content", "summary"]})
    first = response["results"][0]
    assert first["content"] == KAFKA["content"] and first["summary"] == KAFKA["summary"]
    assert first["snippet"]  # the snippet stays


def test_snippet_len_and_best_sentences(k: Kairos) -> None:
    response = k.search_entries({"query": "restart the workers after a password rotation",
                                 "snippet_len": 80})
    snippet = response["results"][0]["snippet"]
    assert len(snippet) <= 80 and "Restart the workers" in snippet
    for bad in (79, 641, "300"):
        with pytest.raises(KairosError) as info:
            k.search_entries({"query": "x", "snippet_len": bad})
        assert info.value.field == "snippet_len"


@pytest.mark.parametrize(("request_body", "field"), [
    ({"query": ""}, "query"),
    ({"query": "x" * 2001}, "query"),
    ({"query": "x", "types": ["video"]}, "types"),
    ({"query": "x", "limit": 26}, "limit"),
    ({"query": "x", "limit": 0}, "limit"),
    ({"query": "x", "offset": -1}, "offset"),
    ({"query": "x", "min_score": 1.5}, "min_score"),
    ({"query": "x", "filters": {"colour": "red"}}, "filters"),
    ({"query": "x", "fields": ["secret"]}, "fields"),
    ({"query": "x", "hide_viewed": "yes"}, "hide_viewed"),
    ({"query": "x", "surprise": 1}, "surprise"),
])
def test_request_model_validation(k: Kairos, request_body: dict, field: str) -> None:
    with pytest.raises(KairosError) as info:
        k.search_entries(request_body)
    assert info.value.status == 422
    assert info.value.field in (field, f"{field}.0", f"{field}.colour")


def test_min_score_is_enforced_by_default_with_a_warning(k: Kairos) -> None:
    response = k.search_entries({"query": "quantum chromodynamics lattice"})
    assert response["results"] == [] and response["min_score"] == 0.50
    assert response["warnings"] and response["warnings"][0].startswith("low_confidence")
    assert response["top_score"] is None or response["top_score"] < 0.50
    explicit = k.search_entries({"query": "quantum chromodynamics lattice rotate",
                                 "min_score": 0.0})
    assert explicit["results"] and explicit["min_score"] == 0.0


def test_text_mode_default_threshold_and_transparency(home: Path) -> None:
    k = make_kairos(home, KAIROS_EMBEDDER="none")
    k.write_entry(dict(VAULT))
    response = k.search_entries({"query": "rotate database password"})
    assert response["search_mode"] == "text" and response["degraded"] is True
    assert response["min_score"] == 0.35 and response["provider"] == "none"
    assert "text" in response["provider_hint"]
    assert response["results"][0]["score"] > 0.35  # a real score, not 0.0
    assert response["results"][0]["degraded"] is True


def test_a_loading_model_falls_back_to_text_and_says_so(home: Path) -> None:
    k = make_kairos(home, HashEmbedder(ready=False))
    k.write_entry(dict(VAULT))
    response = k.search_entries({"query": "rotate database password"})
    assert response["search_mode"] == "text" and response["degraded"] is True
    assert response["provider"] == "fake" and "unavailable" in response["provider_hint"]


def test_pagination_total_and_has_more_stay_correct_under_hiding(kairos: Kairos) -> None:
    for i in range(7):
        kairos.write_entry({"entity_type": "experience", "category": "general",
                            "title": f"Cache warmup lesson {i}",
                            "playbook": f"Warm the cache {i} before traffic arrives, step {i}."})
    q = {"query": "warm the cache before traffic", "min_score": 0, "session_id": "s1"}
    page1 = kairos.search_entries({**q, "limit": 3})
    assert (page1["count"], page1["total"], page1["has_more"]) == (3, 7, True)
    page3 = kairos.search_entries({**q, "limit": 3, "offset": 6, "downrank_viewed": False})
    assert (page3["count"], page3["total"], page3["has_more"]) == (1, 7, False)
    assert page3["results"][0]["rank"] == 7
    hidden = kairos.search_entries({**q, "limit": 3, "hide_viewed": True})
    assert hidden["total"] == 3 and hidden["has_more"] is False  # 4 viewed are hidden
    seen = set(_ids(page1)) | set(_ids(page3))
    assert not seen & set(_ids(hidden))


def test_every_hide_and_downrank_combination(k: Kairos) -> None:
    q = {"query": "rotate the database password vault", "min_score": 0}
    base = {r["entity_id"]: r["score"] for r in k.search_entries(q)["results"]}
    vault_id = next(i for i, s in base.items() if s == max(base.values()))
    k.read_entries({"ids": [vault_id]}, session_id="sess")  # reading marks it viewed

    def run(hide: bool, down: bool) -> dict[str, float]:
        r = k.search_entries({**q, "hide_viewed": hide, "downrank_viewed": down},
                             session_id="sess")
        assert r["session_applied"] is True
        return {x["entity_id"]: x["score"] for x in r["results"]}

    assert vault_id not in run(True, True)
    assert vault_id not in run(True, False)         # hide wins; downrank ignored
    assert run(False, True)[vault_id] == pytest.approx(base[vault_id] * 0.5, abs=1e-3)
    assert run(False, False)[vault_id] == pytest.approx(base[vault_id], abs=1e-3)
    no_session = k.search_entries({**q, "hide_viewed": True})
    assert no_session["session_applied"] is False and vault_id in {
        r["entity_id"] for r in no_session["results"]}


def test_session_tracks_views_citations_and_queries(k: Kairos) -> None:
    result = k.search_entries({"query": "kafka broker"}, session_id="conv-1")
    shown = [r["entity_id"] for r in result["results"]]
    k.cite("conv-1", shown[:1])
    info = k.session_info("conv-1")
    assert info["viewed_ids"] == shown and info["cited_ids"] == shown[:1]
    assert info["last_queries"] == ["kafka broker"]
    for unknown in ("never-seen", "bad id!", None):
        with pytest.raises(KairosError) as err:
            k.session_info(unknown)
        assert err.value.status == 404


def test_header_session_wins_and_malformed_ids_are_ignored(k: Kairos) -> None:
    body = {"query": "kafka broker", "session_id": "from-body"}
    k.search_entries(body, session_id="from-header")
    assert k.session_info("from-header")["last_queries"] == ["kafka broker"]
    with pytest.raises(KairosError):
        k.session_info("from-body")
    ignored = k.search_entries({"query": "kafka broker", "session_id": "spaces are bad"})
    assert ignored["session_applied"] is False and ignored["results"]


def test_read_entries_fields_semantics(k: Kairos) -> None:
    entry_id = k.search_entries({"query": "kafka broker"})["results"][0]["entity_id"]
    full = k.read_entries({"ids": [entry_id]})["entries"][0]
    assert full["content"] == KAFKA["content"] and "preview" not in full
    preview = k.read_entries({"ids": [entry_id], "fields": ["preview"], "snippet_len": 80})
    only = preview["entries"][0]
    assert set(only) == {"entity_id", "entity_type", "title", "preview"}
    assert len(only["preview"]) <= 80
    some = k.read_entries({"ids": [entry_id], "fields": ["summary", "author"]})["entries"][0]
    assert set(some) == {"entity_id", "entity_type", "title", "summary", "author"}
    with pytest.raises(KairosError) as info:
        k.read_entries({"ids": [entry_id], "fields": ["nonsense"]})
    assert info.value.status == 422 and "nonsense" in info.value.message
    missing = k.read_entries({"ids": [entry_id, "nope"]})
    assert missing["count"] == 1 and missing["missing"] == ["nope"]


@pytest.mark.parametrize(("entry", "field"), [
    ({**VAULT, "title": "x" * 121}, "title"),
    ({**VAULT, "playbook": "x" * 2001}, "playbook"),
    ({**VAULT, "section": "contextual"}, "context"),
    ({**VAULT, "category": "astrology"}, "category"),
    ({**VAULT, "section": "great"}, "section"),
    ({**VAULT, "entity_type": "video"}, "entity_type"),
    ({**VAULT, "colour": "red"}, "colour"),
    ({**KAFKA, "content": ""}, "content"),
])
def test_entry_validation(kairos: Kairos, entry: dict, field: str) -> None:
    with pytest.raises(KairosError) as info:
        kairos.write_entry(entry)
    assert info.value.field == field and info.value.status == 422


def test_contextual_experience_with_context_is_fine(kairos: Kairos) -> None:
    stored = kairos.write_entry({**VAULT, "section": "contextual",
                                 "context": "Only for the legacy cluster."})
    assert stored["entry"]["context"] == "Only for the legacy cluster."


def test_categories_are_seeded_and_listable(kairos: Kairos) -> None:
    cats = kairos.list_categories()
    codes = [c["code"] for c in cats["categories"]]
    assert cats["count"] == len(codes) >= 8 and "security" in codes and "general" in codes


def test_duplicate_check_on_write(k: Kairos) -> None:
    same = k.write_entry({**VAULT, "title": "Rotate database passwords each quarter"})
    assert same["recommendation"] == "review_first"
    assert same["duplicates"][0]["title"] == VAULT["title"]
    assert same["duplicates"][0]["score"] >= 0.85
    unrelated = k.write_entry({"entity_type": "experience", "category": "general",
                               "title": "Label freezer boxes",
                               "playbook": "Write the date on every freezer box."})
    assert unrelated["duplicates"] == [] and "recommendation" not in unrelated


def test_duplicates_between_half_and_085_are_listed_as_fyi(home: Path) -> None:
    k = make_kairos(home, KAIROS_EMBEDDER="none")
    k.write_entry(dict(VAULT))
    half = k.write_entry({**VAULT, "title": "Rotate database passwords",
                          "playbook": "Rotate the database password every quarter. Store it "
                                      "in the vault."})
    assert half["duplicates"] and "recommendation" not in half
    assert 0.5 <= half["duplicates"][0]["score"] < 0.85


def test_update_entry_revalidates_and_reindexes(k: Kairos) -> None:
    entry_id = k.search_entries({"query": "kafka broker"})["results"][0]["entity_id"]
    k.update_entry({"entity_id": entry_id, "updates": {"content": "Zookeeper quorum checks."}})
    found = k.search_entries({"query": "check the zookeeper quorum"})
    assert found["results"][0]["entity_id"] == entry_id
    with pytest.raises(KairosError) as info:
        k.update_entry({"entity_id": entry_id, "updates": {"category": "nope"}})
    assert info.value.field == "category"
    with pytest.raises(KairosError) as info:
        k.update_entry({"entity_id": "missing", "updates": {"title": "x"}})
    assert info.value.status == 404


def test_sessions_belong_to_a_space(k: Kairos) -> None:
    from kairos.service import Caller

    k.search_entries({"query": "kafka broker"}, session_id="shared-id")
    other = Caller(space="other")
    with pytest.raises(KairosError) as info:
        k.session_info("shared-id", other)
    assert info.value.status == 404
    with pytest.raises(KairosError) as cited:
        k.cite("shared-id", ["x"], other)  # citing never creates a session
    assert cited.value.status == 404
    assert k.session_info("shared-id")["cited_ids"] == []
