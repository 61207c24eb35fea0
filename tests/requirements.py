"""The requirements manifest: every validation rule of ``kairos_next`` and ``kairos_begin``
and every rule of docs/contract.md §4 and §6 has an id; ``test_requirements.py`` checks
each id is covered by a test marked ``@pytest.mark.req("<id>")``."""

REQUIREMENTS: dict[str, str] = {
    # kairos_next's responses (contract §4)
    "S003-1": "must_obey true for success and recoverable errors; false only after max retries",
    "S003-2": "current_step always has uri, content, mimeType",
    "S003-3": "challenge always has type and description",
    "S003-4": "next_action is always present (success, error, max retries)",
    "S003-5": "top-level proof_hash present when a proof was stored",
    "S003-6": "error_code and retry_count present on error responses",
    "S003-7": "removed fields never present in kairos_next responses",
    # kairos_begin's responses (contract §4)
    "S004-1": "must_obey true for all kairos_begin responses",
    "S004-2": "current_step always has uri, content, mimeType",
    "S004-3": "challenge always has type and description",
    "S004-4": "next_action always present and contains a kairos://mem/ URI",
    "S004-5": "removed fields never present in kairos_begin responses",
    # contract §4, rules R1-R12 (D3-n is rule Rn)
    "D3-1": "kairos_next uri is the step to show next; solution answers the previous step",
    "D3-2": "last step: completed message and run-complete next_action; attest takes solution",
    "D3-3": "single-step protocol: begin says completed, next_action calls kairos_attest",
    "D3-4": "a step's challenge is the declared one; none declared gives the default comment",
    "D3-5": "every challenge from begin, next (success or error) and redirect has nonce and hash",
    "D3-6": "retries per run and step, reset on accept; 1-2 recoverable; 3 max; later accepted",
    "D3-11": "a refused answer shows the refused step with a fresh challenge and exact texts",
    "D3-12": "bad input gets a structured error naming the field; nothing half-written",
    # contract §6, the proof chain
    "D4-1": "GENESIS is sha256('genesis') and is step 1's proof_hash",
    "D4-2": "proof_hash = sha256(previous_hash + canonical_json(record)), recomputable offline",
    "D4-3": "challenge.proof_hash is the hash to echo; top-level proof_hash is the stored hash",
    "D4-4": "a nonce is single-use and bound to run, step and attempt; replays are refused",
    "D4-5": "the run is found by nonce, else by the caller's latest run waiting at that step",
}
