"""Every string the contract fixes, in one place (contract §2-§5, docs/contract.md)."""

from __future__ import annotations

from .responses import Choice

GENESIS_HASH = "aeebad4a796fcc2e15dc4c6061b45ed9b373f26adfc798ca7d2d8cc58182718e"
MIME_MARKDOWN = "text/markdown"
URI_PREFIX = "kairos://mem/"

CREATE_PROTOCOL_URI = "kairos://mem/00000000-0000-0000-0000-000000002001"
REFINE_SEARCH_URI = "kairos://mem/00000000-0000-0000-0000-000000002002"

# Step-answer error codes (contract §4).
NONCE_MISMATCH = "NONCE_MISMATCH"
PROOF_HASH_MISMATCH = "PROOF_HASH_MISMATCH"
TYPE_MISMATCH = "TYPE_MISMATCH"
MISSING_FIELD = "MISSING_FIELD"
COMMENT_TOO_SHORT = "COMMENT_TOO_SHORT"
COMMENT_IRRELEVANT = "COMMENT_IRRELEVANT"
COMMAND_FAILED = "COMMAND_FAILED"
USER_DECLINED = "USER_DECLINED"
MAX_RETRIES_EXCEEDED = "MAX_RETRIES_EXCEEDED"
MAX_RETRIES = 3

# Fields a response never carries (contract §4, "Never present").
FORBIDDEN_FIELDS = frozenset(
    {
        "next_step",
        "protocol_status",
        "attest_required",
        "genesis_hash",
        "previousProofHash",
        "last_proof_hash",
        "final_challenge",
        "final_solution",
    }
)

MSG_REDIRECTED = "Redirected to step 1 of this protocol chain."
MSG_SINGLE_STEP = "Protocol completed. Call kairos_attest to finalize."
MSG_COMPLETED = "Protocol completed. No further steps."
MSG_NONCE_MISMATCH = "Nonce mismatch. Use the nonce from this response's challenge."
MSG_PROOF_HASH_MISMATCH = "Proof hash mismatch. Use the proof_hash from this response's challenge."
MSG_MAX_RETRIES = "Step failed 3 times. Use your judgment to recover."
DEFAULT_COMMENT_MIN_LENGTH = 20


def next_action_next(next_uri: str) -> str:
    return f"call kairos_next with {next_uri} and solution matching challenge"


def next_action_attest_single(uri: str) -> str:
    return f"call kairos_attest with {uri}, outcome, and message"


def next_action_run_complete(uri: str) -> str:
    return (
        f"Run complete. Optionally call kairos_attest with {uri} "
        "to override outcome or add a message."
    )


def next_action_retry(uri: str, tool: str = "kairos_next") -> str:
    return f"retry {tool} with {uri} -- use nonce and proof_hash from THIS response's challenge"


def next_action_max_retries(refused_uri: str) -> str:
    return (
        f"Options: (1) call kairos_update with {refused_uri} to fix the step for future "
        f"executions (2) call kairos_attest with {refused_uri} and outcome failure to abort "
        "(3) ask the user for help"
    )


# kairos_search (contract §3, R7).
SEARCH_NEXT_ACTION = "Pick one choice and follow that choice's next_action."
SEARCH_NEXT_ACTION_SINGLE = "Follow the choice's next_action."
SEARCH_MSG_NONE = "No existing protocol matched your query. Refine your search or create a new one."
SEARCH_MSG_ONE = "Found 1 match."


def search_message_many(count: int, top_score: float) -> str:
    return (
        f"Found {count} matches (top confidence: {round(top_score * 100)}%). "
        "Choose one, refine your search, or create a new protocol."
    )


def match_next_action(uri: str) -> str:
    return f"call kairos_begin with {uri} to execute this protocol"


def refine_choice() -> Choice:
    """The refine choice, a dict of its own (a caller may change its tags)."""
    return {
        "uri": REFINE_SEARCH_URI,
        "label": "Get help refining your search",
        "chain_label": "Run protocol to turn vague user request into a better kairos_search "
                       "query",
        "score": None,
        "role": "refine",
        "tags": ["meta", "refine"],
        "next_action": (
            f"call kairos_begin with {REFINE_SEARCH_URI} to get step-by-step help turning the "
            "user's request into a better search query"
        ),
    }


def create_choice() -> Choice:
    """The create choice, a dict of its own (a caller may change its tags)."""
    return {
        "uri": CREATE_PROTOCOL_URI,
        "label": "Create New KAIROS Protocol Chain",
        "chain_label": "Create New KAIROS Protocol Chain",
        "score": None,
        "role": "create",
        "tags": ["meta", "creation"],
        "next_action": f"call kairos_begin with {CREATE_PROTOCOL_URI} to create a new protocol",
    }
