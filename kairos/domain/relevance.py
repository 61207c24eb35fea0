"""Does a verification comment report its step? (``COMMENT_IRRELEVANT``)

A report names something the step's text does not: a file, a number, a finding, what
changed and why. "Done as described: the hotfix changes are written down." names nothing;
"Fixed the login crash by checking for a missing session before using it." names several
things. So a comment must carry at least ``MIN_NEW_WORDS`` words that are neither in the
step's prose (``doctext.step_prose``: label and body, without the challenge line) nor
generic (``GENERIC``). The rule is lexical and deterministic: its verdict does not depend
on a model, a provider or timing.

Chosen on the tuning half of ``tests/data/comment_relevance.jsonl`` (``bench/
comment_relevance.py`` reports the test half). Two semantic signals from the local model
were measured there and left out: a floor on the comment-to-step cosine, and closeness to
generic filler. Both refused real reports under steps that only ask for one ("Write down
what the hotfix changes and why" ← the login-crash comment above: cosine −0.10) and caught
no filler that the word rule misses. Pure, no I/O.
"""

from __future__ import annotations

import re

__all__ = ["GENERIC", "MIN_NEW_WORDS", "new_words", "refuses"]

MIN_NEW_WORDS = 2

#: Words that any comment may use without saying anything about its step.
GENERIC = frozenset(
    "the a an and or but of to in on for with by at from as is was were be been being it "
    "its this that these those i we you my our your me us have has had did do does done "
    "not no all any each every so then than there here up out into onto about after "
    "before over under per via just also only very more most some what which who how "
    "step steps described instructed instructions instruction asked according process "
    "task tasks completed complete completing finished finish finishing successfully "
    "success successful fine good ok okay everything nothing anything something issue "
    "issues problem problems worked works working work followed follow following "
    "performed perform carried required requirements requested expected now again "
    "already will would should could can are found written verified checked confirmed "
    "made make makes handled taken care went well wrote write yes sure".split()
)

_WORD = re.compile(r"[^\W_]+")


def _stem(word: str) -> str:
    return word[:5]


def new_words(comment: str, step: str) -> list[str]:
    """Words of ``comment`` that ``step`` does not contain (compared by their first five
    letters, a crude stem) and that are not generic; any word with a digit counts."""
    seen = {_stem(w) for w in _WORD.findall(step.lower())}
    return [w for w in _WORD.findall(comment.lower())
            if any(c.isdigit() for c in w)
            or (len(w) >= 3 and w not in GENERIC and _stem(w) not in seen)]


def refuses(comment: str, step: str) -> bool:
    """True when ``comment`` says nothing that ``step`` did not already say."""
    return len(new_words(comment, step)) < MIN_NEW_WORDS
