"""The structured error shape, pinned."""

from __future__ import annotations

from kairos.domain.errors import KairosError, MarkdownError, NotFoundError, ValidationError


def test_error_shapes() -> None:
    assert ValidationError("outcome", "'success' or 'failure'").to_dict() == {
        "error_code": "INVALID_INPUT",
        "message": "Invalid outcome: expected 'success' or 'failure'.",
        "field": "outcome",
        "expected": "'success' or 'failure'",
    }
    assert NotFoundError("No protocol step at x.").to_dict() == {
        "error_code": "NOT_FOUND", "message": "No protocol step at x.", "field": "uri"}
    err = MarkdownError("NO_HEADING", "m", field="markdown_doc", line=3)
    assert err.to_dict() == {"error_code": "NO_HEADING", "message": "m",
                             "field": "markdown_doc", "line": 3}
    assert (ValidationError("f", "e").status, NotFoundError("m").status, err.status) == (
        422, 404, 422)
    assert isinstance(err, KairosError)
