"""Lexical evidence: stems, noise, shares of the query's words, rarity across store sizes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.domain.lexical import RARE, is_noise, other_word, rarity, stem, words


def test_plural_and_verb_forms_meet_at_one_stem() -> None:
    for forms in (("release", "releases", "released", "releasing"), ("file", "files"),
                  ("test", "tests", "testing", "tested"), ("run", "running"),
                  ("policy", "policies"), ("deploy", "deploys", "deployed")):
        assert len({stem(f) for f in forms}) == 1, forms
    assert stem("status") == "status" and stem("analysis") == "analysis"
    assert stem("pod") != stem("podcast")


def test_a_word_and_the_same_word_with_a_final_e_are_different_words() -> None:
    """They meet at one stem, but a record holding the other word does not hold the
    query's: "buildkit" is not found in a text about "buildkite"."""
    for a, b in (("buildkit", "buildkite"), ("stat", "state"), ("glob", "globes")):
        assert stem(a) == stem(b) and other_word(a, b) and other_word(b, a), (a, b)
    for a, b in (("release", "released"), ("release", "releases"), ("process", "processes"),
                 ("cache", "caches"), ("file", "files")):
        assert not other_word(a, b), (a, b)
    w = words(["buildkit"], [2], 4_613)
    assert w.holds("bk", "Upload artifacts with the buildkite agent.") == (0, 0)
    assert w.holds("docker buildx create", "Use the buildkit builder.") == (0, 1)
    assert words(["states"], [5], 48).holds("State of the cluster", "") == (1, 1)


def test_numbers_and_random_tokens_are_noise_and_tool_names_are_not() -> None:
    noise = ["88812", "2024", "1795639653395", "a7fk29xq", "Kp3vQ9zLm2Tt8Rw1Ya",
             "Trq8812Zzv0Lk", "x" * 30, "xyz123garbagev2test1795639759331noonesearchesthis"]
    words_ = ["sha256sum", "h264", "s3", "k8s", "log4j", "i18n", "b2sum", "x86", "ed25519",
              "release", "qwzx", "ipv6", "mp4"]
    assert [w for w in noise if not is_noise(w)] == []
    assert [w for w in words_ if is_noise(w)] == []


def test_rarity_reads_the_same_whatever_the_store_size() -> None:
    """A word one document holds is rarest in any store; the boundary RARE allows a few
    documents in a small store and a few more in a large one."""
    assert rarity(48, 1) == rarity(50_000, 1) == 1.0
    assert rarity(48, 3) >= RARE > rarity(48, 5)
    assert rarity(5_000, 12) >= RARE > rarity(5_000, 20)
    assert rarity(100, 100) == 0.0


def test_shares_of_the_query_words_in_title_and_text() -> None:
    w = words(["release", "python", "2024"], [3, 10, 1], 48)
    assert w.informative == 2  # "2024" is noise and weighs nothing
    title_bits, any_bits = w.holds("Release a Python package to PyPI", "Upload with twine.")
    lex = w.of(title_bits, any_bits)
    assert lex.title_share == 1.0 and lex.share == 1.0 and lex.all_title
    step = w.of(*w.holds("Ship a hotfix", "Cut a release branch and deploy it."))
    assert 0 < step.share < 1 and step.title_share == 0 and not step.all_title
    assert w.of(0, 0).share == 0


def test_a_rare_word_found_in_a_step_makes_the_evidence_rare_and_complete() -> None:
    w = words(["patronictl"], [1], 48)
    lex = w.of(*w.holds("Fail over the primary database", "Run patronictl failover."))
    assert lex.rare_full and not lex.all_title
    common = words(["database"], [30], 48)
    assert not common.of(*common.holds("Fail over", "the database")).rare_full


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=6),
       st.integers(min_value=0, max_value=63), st.integers(min_value=0, max_value=63))
def test_shares_stay_between_zero_and_one(counts: list[int], title: int, anywhere: int) -> None:
    w = words([f"word{chr(97 + i)}" for i in range(len(counts))], counts, 60)
    lex = w.of(title, anywhere)
    assert 0.0 <= lex.title_share <= lex.share <= 1.0 + 1e-9
    assert 0.0 <= lex.rare <= 1.0


@given(st.lists(st.from_regex(r"[0-9]{2,12}", fullmatch=True), min_size=1, max_size=4))
def test_a_query_of_numbers_has_no_informative_word(numbers: list[str]) -> None:
    assert words(numbers, [1] * len(numbers), 100).informative == 0
