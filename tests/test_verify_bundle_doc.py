"""docs/verify_bundle.py, the verifier anyone can run with Python and `cryptography` alone:
run as a subprocess that cannot import KAIROS or rfc8785, it gives the package's verdict
on every bundle the package makes and on every single-field change of one; docs/bundle.md's
test vector is what the code makes."""

from __future__ import annotations

import ast
import json
import re
import runpy
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.domain import keys
from kairos.domain.bundle import verify_bundle, verify_text
from kairos.domain.canonical import CHAIN_RULES, jcs
from tests.domain import bundlekit as kit

ROOT = Path(__file__).resolve().parent.parent
VERIFIER = ROOT / "docs" / "verify_bundle.py"
DOC = ROOT / "docs" / "bundle.md"
# The verifier runs where neither KAIROS nor rfc8785 can be imported.
ALONE = ("import runpy, sys\n"
         "class Refuse:\n"
         "    def find_spec(self, name, path=None, target=None):\n"
         "        if name.split('.')[0] in ('kairos', 'rfc8785', 'tests'):\n"
         "            raise ImportError(name + ' is not on a verifier machine')\n"
         "sys.meta_path.insert(0, Refuse())\n"
         f"sys.argv[0] = {str(VERIFIER)!r}\n"
         f"runpy.run_path({str(VERIFIER)!r}, run_name='__main__')\n")


def _verify(tmp: Path, bundles: dict[str, Any], key_set: Any = None, *, raw: bool = False
            ) -> tuple[int, dict[str, dict[str, Any]], str]:
    """Run the doc verifier once on every bundle; (exit status, verdict by name, stderr)."""
    keys_file = tmp / "keys.json"
    keys_file.write_text(json.dumps(key_set or keys.key_set([kit.KEY.public_key()])))
    files = []
    for name, bundle in bundles.items():
        path = tmp / f"{name}.json"
        path.write_bytes(bundle if raw else json.dumps(bundle, ensure_ascii=False).encode())
        files.append(str(path))
    done = subprocess.run([sys.executable, "-c", ALONE, *files, "--key", str(keys_file)],
                          capture_output=True, text=True, timeout=300, cwd=tmp)
    verdicts = {}
    for line in done.stdout.splitlines():
        verdict = json.loads(line)
        verdicts[Path(verdict.pop("file")).stem] = verdict
    return done.returncode, verdicts, done.stderr


def test_it_is_short_and_imports_only_the_standard_library_and_cryptography() -> None:
    source = VERIFIER.read_text("utf-8")
    assert len(source.splitlines()) < 150
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported - set(sys.stdlib_module_names) == {"cryptography"}


@pytest.mark.parametrize("rule", CHAIN_RULES)
def test_it_verifies_what_the_package_makes(tmp_path: Path, rule: str) -> None:
    bundles = {"ours": kit.make(rule), "theirs": kit.make(rule, kit.OTHER_KEY)}
    both = keys.key_set([kit.KEY.public_key(), kit.OTHER_KEY.public_key()])
    status, verdicts, err = _verify(tmp_path, bundles, both)
    assert (status, err) == (0, "")
    assert verdicts == {name: verify_bundle(b, keys.public_keys(json.dumps(both))).to_dict()
                        for name, b in bundles.items()}
    assert all(v["valid"] for v in verdicts.values())


@pytest.mark.parametrize("rule", CHAIN_RULES)
def test_every_single_field_change_gets_the_packages_verdict(tmp_path: Path, rule: str) -> None:
    bundle = kit.make(rule)
    changed = {f"change{i}": kit.tamper(bundle, p) for i, p in enumerate(kit.leaves(bundle))}
    status, verdicts, err = _verify(tmp_path, changed)
    assert (status, err) == (1, "")
    expected = {n: verify_bundle(b, [kit.KEY.public_key()]).to_dict() for n, b in changed.items()}
    assert verdicts == expected
    assert not any(v["valid"] for v in verdicts.values())


def test_fields_dropped_added_or_retyped_are_refused_without_a_traceback(tmp_path: Path) -> None:
    """The package names the field its schema refuses; the doc verifier, which has no
    schema, refuses the same bundles at the first check that cannot hold."""
    bundle, variants = kit.make(), {}
    for i, path in enumerate(kit.leaves(bundle)):
        variants[f"drop{i}"] = kit.tamper(bundle, path, drop=True)
        variants[f"type{i}"] = kit.tamper(bundle, path, [True])
    for name in ("run", "protocol", "attestation", "head", "signature", "proofs[1]"):
        variants[f"add-{name}"] = kit.tamper(bundle, f"{name}.note", "unsigned")
    variants.update({"top": kit.tamper(bundle, "note", "unsigned"), "list": [bundle],
                     "version-true": kit.tamper(bundle, "version", True)})
    status, verdicts, err = _verify(tmp_path, variants)
    assert (status, err) == (1, "")
    assert set(verdicts) == set(variants)
    package = {n: verify_bundle(b, [kit.KEY.public_key()]) for n, b in variants.items()}
    assert not any(v["valid"] for v in verdicts.values())
    assert not any(v.valid for v in package.values())
    assert verdicts["version-true"]["link"] == "body"  # only the body's hash tells 1 from true
    assert package["version-true"].link == "format"


def test_another_key_and_a_retired_key_fail(tmp_path: Path) -> None:
    forged = kit.make()
    forged["signature"]["value"] = keys.b64url(kit.OTHER_KEY.sign(jcs(forged["head"])))
    status, verdicts, _ = _verify(tmp_path, {"other": kit.make(key=kit.OTHER_KEY),
                                             "forged": forged})
    assert status == 1
    assert verdicts["other"] == {"valid": False, "link": "signature", "field": "signature.kid",
                                 "step": None, "reason": "expected a trusted key's id"}
    assert verdicts["forged"]["reason"] == "does not sign this head"


def test_text_that_is_no_bundle(tmp_path: Path) -> None:
    text = json.dumps(kit.make())
    twice = text.replace('"version": 1,', '"version": 1, "version": 1,', 1).encode()
    status, verdicts, err = _verify(tmp_path, {"twice": twice}, raw=True)
    assert status == 1 and err == ""
    assert verdicts["twice"] == verify_text(twice, [kit.KEY.public_key()]).to_dict()
    status, verdicts, err = _verify(tmp_path, {"cut": text[:-1].encode()}, raw=True)
    assert status == 2 and verdicts == {} and err.startswith("verify_bundle: ")
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_an_unreadable_key_file_is_one_line(tmp_path: Path) -> None:
    status, _, err = _verify(tmp_path, {"b": kit.make()}, {"keys": [{"x": 1}]})
    assert status == 2 and err.startswith("verify_bundle: ") and "Traceback" not in err
    done = subprocess.run([sys.executable, "-c", ALONE, "missing.json", "--key", "nope.json"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1


# --- RFC 8785 as the doc verifier writes it ------------------------------------------------

JCS_OF_DOC = runpy.run_path(str(VERIFIER))["jcs"]
FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [1e21, 1e-7, 1e-6, 123456789012345680000.0, 5e-324, 1.7976931348623157e308, -0.0, 0.1,
     100.0, 1e16, 2.5e-5, 4.5e20])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | FLOATS | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=500, deadline=None)
@given(JSON)
def test_the_doc_verifiers_rfc8785_is_the_rfc8785_package(value: Any) -> None:
    assert JCS_OF_DOC(value).encode("utf-8") == rfc8785.dumps(value)


# RFC 8785, appendix B (numbers as IEEE 754 bits) and section 3.2.3 (the order of keys).
RFC8785_NUMBERS = [
    ("0000000000000000", "0"), ("8000000000000000", "0"), ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"), ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"), ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"), ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"), ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"), ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"), ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"), ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"), ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"), ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"), ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2")]
RFC8785_KEYS = {"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter",
                "1": "One", "\U0001f600": "Emoji", "\u0080": "Control", "\u00f6": "o"}


@pytest.mark.parametrize(("bits", "text"), RFC8785_NUMBERS)
def test_numbers_are_written_as_rfc8785_shows(bits: str, text: str) -> None:
    number = struct.unpack(">d", bytes.fromhex(bits))[0]
    assert JCS_OF_DOC(number) == text == rfc8785.dumps(number).decode()


def test_keys_are_sorted_as_rfc8785_shows() -> None:
    order = list(json.loads(JCS_OF_DOC(RFC8785_KEYS)))
    assert order == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]
    assert JCS_OF_DOC(RFC8785_KEYS).encode() == rfc8785.dumps(RFC8785_KEYS)


@pytest.mark.parametrize("value", [2**53, -(2**53), float("inf"), float("nan"), "\ud800",
                                   {"\udc00": 1}])
def test_both_refuse_what_rfc8785_cannot_hold(value: Any) -> None:
    with pytest.raises(ValueError):
        JCS_OF_DOC(value).encode("utf-8")
    with pytest.raises(ValueError):
        rfc8785.dumps(value)


# --- the test vector of docs/bundle.md --------------------------------------------------------

def _blocks(after: str) -> str:
    """The first fenced block after the sentence that starts with ``after``."""
    text = DOC.read_text("utf-8")
    found = re.search(re.escape(after) + r".*?```\w*\n(.*?)\n```", text, re.DOTALL)
    assert found, after
    return found.group(1)


def test_the_vector_in_the_doc_is_what_the_script_makes() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bundle_vector.py"),
                           "--check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_vector_in_the_doc_holds(tmp_path: Path) -> None:
    """Checked from the doc's own text, as an implementer would."""
    text = DOC.read_text("utf-8")
    seed = re.search(r"seed \(hex\): `([0-9a-f]{64})`", text)
    assert seed
    key = keys.private_key(bytes.fromhex(seed.group(1)))
    key_set = json.loads(_blocks("Its key set"))
    assert key_set == keys.key_set([key.public_key()])
    bundle = json.loads(_blocks("The bundle, `BUNDLE.json`"))
    head = _blocks("The head's canonical bytes")
    assert head.encode("utf-8") == jcs(bundle["head"])
    signature = re.search(r"signature, base64url: `([\w-]+)`", text)
    assert signature and signature.group(1) == keys.b64url(key.sign(head.encode("utf-8")))
    assert signature.group(1) == bundle["signature"]["value"]
    assert verify_bundle(bundle, [key.public_key()]).valid
    status, verdicts, err = _verify(tmp_path, {"vector": bundle}, key_set)
    assert (status, err) == (0, "") and verdicts["vector"]["valid"]
