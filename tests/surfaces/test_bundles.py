"""Signed run bundles from a real server and store: exported by REST and by the command
line, verified by ``kairos verify-bundle`` and by ``docs/verify_bundle.py`` alone (no
KAIROS), every single-field tamper named by both, keys rotated, the key file on disk."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kairos.domain import keys
from kairos.domain.bundle import verify_bundle
from kairos.domain.caller import Caller
from kairos.domain.errors import NotFoundError
from kairos.domain.requests import NonceRef, RunRef
from kairos.service import Kairos
from tests.client import Agent
from tests.conftest import in_process, make_kairos
from tests.domain import bundlekit as kit
from tests.spec.seedkit import THREE_STEPS, shell_ok
from tests.surfaces.test_cli import env, finish_a_run, one_error, run  # noqa: F401

pytestmark = pytest.mark.anyio
VERIFIER = Path(__file__).parents[2] / "docs" / "verify_bundle.py"
OTHER = Caller(space="elsewhere")


def _steps(k: Agent) -> list[str]:
    minted = k.mint(THREE_STEPS, force_update=True)
    return [s["uri"] for s in minted["items"][0]["steps"]]


def _finished(k: Agent) -> str:
    return finish_a_run(k, _steps(k))  # type: ignore[arg-type]


def _export(k: Agent | Kairos, run_id: str, caller: Caller = Caller()) -> dict[str, Any]:
    service = k.service if isinstance(k, Agent) else k
    return service.export_run(RunRef(run_id=run_id), caller)


def offline(folder: Path, bundles: dict[str, Any], key_set: Any) -> list[dict[str, Any]]:
    """``docs/verify_bundle.py`` run as a stranger runs it: a copy of it in an empty
    directory holding only the bundles and the key set, no KAIROS_* in the environment,
    and ``kairos`` impossible to import. Its verdicts, in the order of ``bundles``."""
    folder.mkdir()
    shutil.copy(VERIFIER, folder / "verify_bundle.py")
    (folder / "keys.json").write_text(json.dumps(key_set), "utf-8")
    for name, bundle in bundles.items():
        data = bundle if isinstance(bundle, bytes) else json.dumps(bundle).encode("utf-8")
        (folder / name).write_bytes(data)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*bundles, "keys.json", "verify_bundle.py"])
    script = ("import runpy, sys; sys.modules['kairos'] = None; "
              "sys.argv = ['verify_bundle.py', *sys.argv[1:]]; "
              "runpy.run_path('verify_bundle.py', run_name='__main__')")
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("KAIROS_") and k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", script, *bundles, "--key", "keys.json"],
                          cwd=folder, env=clean, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert [v.pop("file") for v in verdicts] == list(bundles)
    return verdicts


def cli_verdict(path: Path, key: Path | None = None) -> tuple[int, dict[str, Any]]:
    args = ["verify-bundle", str(path), "--json"] + (["--key", str(key)] if key else [])
    done = run(*args)
    verdict = json.loads(done.stdout)
    assert verdict.pop("file") == str(path)
    return done.exit_code, verdict


# --- export and verify ------------------------------------------------------------------


async def test_a_run_exported_by_rest_and_cli_verifies_with_both_verifiers(
        env: Path, kairos: Agent, tmp_path: Path) -> None:  # noqa: F811
    run_id = _finished(kairos)
    async with in_process(kairos) as http:
        response = await http.get(f"/api/v1/runs/{run_id}/bundle")
        key_set = (await http.get(keys.KEYS_PATH)).json()
    assert response.status_code == 200, response.text
    assert response.headers["content-disposition"] == \
        f'attachment; filename="run-{run_id}.bundle.json"'
    rest = response.json()
    assert rest["run"]["id"] == run_id and rest["run"]["status"] == "finished"
    assert len(rest["proofs"]) == 3 and rest["run"]["proven"] is True
    assert rest["attestation"]["outcome"] == "success"
    assert rest["signature"]["kid"] == key_set["keys"][0]["kid"]

    exported = run("export-run", run_id[:8])
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.stdout)["head"] == rest["head"]  # same run, same head
    to_file = run("export-run", run_id, "-o", str(tmp_path / "run.json"))
    assert to_file.exit_code == 0 and to_file.stdout == ""
    assert (tmp_path / "run.json").read_text("utf-8") == exported.stdout

    (tmp_path / "keys.json").write_text(json.dumps(key_set), "utf-8")
    (tmp_path / "rest.json").write_bytes(response.content)
    valid = {"valid": True, "link": None, "field": None, "step": None,
             "reason": f"run {run_id}: 3 proofs chained under rfc8785, signed by key "
                       f"{key_set['keys'][0]['kid']}"}
    for path in (tmp_path / "rest.json", tmp_path / "run.json"):
        assert cli_verdict(path, tmp_path / "keys.json") == (0, valid)
        assert cli_verdict(path) == (0, valid)  # the local server's key, from KAIROS_HOME
    human = run("verify-bundle", "-", input=exported.stdout)
    assert human.exit_code == 0 and human.stdout == f"valid: {valid['reason']}\n"
    assert offline(tmp_path / "stranger", {"rest.json": response.content,
                                           "cli.json": exported.stdout.encode("utf-8")},
                   key_set) == [valid, valid]


async def test_an_active_run_exports_its_chain_so_far(kairos: Agent, tmp_path: Path) -> None:
    steps = _steps(kairos)
    first = kairos.begin(steps[0])
    kairos.next(steps[1], shell_ok(first["challenge"]))
    run_id = kairos.service.run_of_nonce(NonceRef(nonce=first["challenge"]["nonce"]),
                                         Caller())["run_id"]
    bundle = _export(kairos, run_id)
    assert bundle["run"]["status"] == "active" and bundle["run"]["outcome"] is None
    assert len(bundle["proofs"]) == 1 and bundle["attestation"] is None
    assert bundle["head"]["chain_head"] == kairos.verify_run(run_id)["head"]
    verdict = offline(tmp_path / "v", {"b.json": bundle}, kairos.key_set())[0]
    assert verdict["valid"], verdict


# --- tampering, other keys, rotation -----------------------------------------------------


def test_every_single_field_tamper_is_named_by_both_verifiers(
        env: Path, kairos: Agent, tmp_path: Path) -> None:  # noqa: F811
    bundle = _export(kairos, _finished(kairos))
    paths = list(kit.leaves(bundle))
    assert len(paths) > 80
    tampered = {f"t{i}.json": kit.tamper(bundle, path) for i, path in enumerate(paths)}
    key_file = tmp_path / "keys.json"
    key_file.write_text(json.dumps(kairos.key_set()), "utf-8")
    stranger = offline(tmp_path / "stranger", tampered, kairos.key_set())
    for (name, changed), path, theirs in zip(tampered.items(), paths, stranger, strict=True):
        (tmp_path / name).write_text(json.dumps(changed), "utf-8")
        code, ours = cli_verdict(tmp_path / name, key_file)
        assert code == 1 and not ours["valid"], path
        assert (ours["link"], ours["field"], ours["step"]) == kit.expected(path), path
        assert theirs == ours, path


def test_a_bundle_of_another_key_fails_and_a_rotated_set_verifies_both(
        home: Path, tmp_path: Path) -> None:
    old_pem, new_pem = tmp_path / "old.pem", tmp_path / "new.pem"
    old_pem.write_bytes(keys.private_pem(kit.KEY))
    new_pem.write_bytes(keys.private_pem(kit.OTHER_KEY))
    before = make_kairos(home, KAIROS_EMBEDDER="none", KAIROS_SIGNING_KEY=str(old_pem))
    old_bundle = _export(before, _finished(before))
    old_set = before.key_set()
    before.close()
    (tmp_path / "old-keys.json").write_text(json.dumps(old_set), "utf-8")
    after = make_kairos(home, KAIROS_EMBEDDER="none", KAIROS_SIGNING_KEY=str(new_pem),
                        KAIROS_PUBLISHED_KEYS=str(tmp_path / "old-keys.json"))
    new_bundle = _export(after, _finished(after))
    rotated = after.key_set()
    assert [k["kid"] for k in rotated["keys"]] == [keys.key_id(kit.OTHER_KEY),
                                                   keys.key_id(kit.KEY)]
    new_only = keys.key_set([kit.OTHER_KEY.public_key()])
    forged = json.loads(json.dumps(old_bundle))
    forged["signature"]["kid"] = keys.key_id(kit.OTHER_KEY)  # claims the trusted key
    verdicts = offline(tmp_path / "v1", {"old.json": old_bundle, "new.json": new_bundle},
                       rotated)
    verdicts += offline(tmp_path / "v2", {"old.json": old_bundle, "forged.json": forged},
                        new_only)
    assert [v["valid"] for v in verdicts[:2]] == [True, True]
    assert [(v["link"], v["field"]) for v in verdicts[2:]] == [
        ("signature", "signature.kid"), ("signature", "signature.value")]
    assert verdicts[3]["reason"] == "does not sign this head"


# --- the key ------------------------------------------------------------------------------


def test_the_key_file_is_made_owner_only_and_reused(home: Path) -> None:
    first = make_kairos(home, KAIROS_EMBEDDER="none")
    path = home / "signing-key.pem"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    kid = first.signing.kid
    assert first.key_set()["keys"][0]["kid"] == kid
    first.close()
    again = make_kairos(home, KAIROS_EMBEDDER="none")
    assert again.signing.kid == kid and path.read_bytes() == keys.private_pem(again.signing.key)


def test_a_configured_key_is_used_and_a_bad_one_is_one_line(env: Path, tmp_path: Path,  # noqa: F811
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    pem = tmp_path / "mine.pem"
    pem.write_bytes(keys.private_pem(kit.KEY))
    monkeypatch.setenv("KAIROS_EMBEDDER", "none")
    monkeypatch.setenv("KAIROS_SIGNING_KEY", str(pem))
    doctor = run("doctor", "--json")
    assert json.loads(doctor.stdout)["signing_key"]["kid"] == keys.key_id(kit.KEY), doctor.output
    assert not (env / "signing-key.pem").exists()
    (tmp_path / "junk.pem").write_text("not a key")
    for bad, why in ((tmp_path / "absent.pem", "no such file"),
                     (tmp_path / "junk.pem", "expected an Ed25519 private key in PEM")):
        monkeypatch.setenv("KAIROS_SIGNING_KEY", str(bad))
        for command in (["serve", "--port", "1"], ["mcp"]):
            done = run(*command)
            assert done.exit_code == 2 and done.stdout == ""
            line = one_error(done.stderr)
            assert f"KAIROS_SIGNING_KEY='{bad}'" in line and why in line, line
    monkeypatch.setenv("KAIROS_SIGNING_KEY", str(pem))
    monkeypatch.setenv("KAIROS_PUBLISHED_KEYS", str(tmp_path / "junk.pem"))
    done = run("serve", "--port", "1")
    assert done.exit_code == 2 and "KAIROS_PUBLISHED_KEYS=" in one_error(done.stderr)


def test_verify_bundle_needs_a_key_and_a_bundle(env: Path, tmp_path: Path,  # noqa: F811
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """No server, no store: a home without a key file says to pass --key."""
    monkeypatch.setenv("KAIROS_HOME", str(tmp_path / "empty-home"))
    monkeypatch.setenv("KAIROS_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    bundle = tmp_path / "b.json"
    bundle.write_text(json.dumps(kit.make()), "utf-8")
    no_key = run("verify-bundle", str(bundle))
    assert no_key.exit_code == 2 and "pass --key" in one_error(no_key.stderr)
    assert not (tmp_path / "empty-home").exists()
    pem = tmp_path / "public.pem"
    pem.write_bytes(keys.public_pem(kit.KEY.public_key()))
    assert run("verify-bundle", str(bundle), "--key", str(pem)).exit_code == 0
    other = tmp_path / "other.pem"
    other.write_bytes(keys.public_pem(kit.OTHER_KEY.public_key()))
    broken = run("verify-bundle", str(bundle), "--key", str(other))
    assert broken.exit_code == 1
    assert broken.stdout == ("broken at link signature (signature.kid): expected a trusted "
                             "key's id\n")
    (tmp_path / "text.json").write_text("not json")
    for args in (["verify-bundle", str(tmp_path / "text.json"), "--key", str(pem)],
                 ["verify-bundle", str(bundle), "--key", str(bundle)],
                 ["verify-bundle", str(tmp_path / "absent.json"), "--key", str(pem)]):
        done = run(*args)
        assert done.exit_code == 2, args
        one_error(done.stderr)


# --- who may see what ------------------------------------------------------------------


async def test_keys_are_public_and_bundles_are_the_spaces_own(kairos: Agent) -> None:
    run_id = _finished(kairos)
    with pytest.raises(NotFoundError) as theirs:
        _export(kairos, run_id, OTHER)
    with pytest.raises(NotFoundError) as unknown:
        _export(kairos, "00000000-0000-4000-8000-000000000000", OTHER)
    assert theirs.value.message == f"No run {run_id}."
    assert (theirs.value.code, theirs.value.field) == (unknown.value.code, unknown.value.field)
    async with in_process(kairos, tokens={"t-mine": "default", "t-other": "elsewhere"}) as http:
        open_keys = await http.get(keys.KEYS_PATH)
        assert open_keys.status_code == 200 and open_keys.json() == kairos.key_set()
        assert (await http.get(f"/api/v1/runs/{run_id}/bundle")).status_code == 401
        other = await http.get(f"/api/v1/runs/{run_id}/bundle",
                               headers={"Authorization": "Bearer t-other"})
        assert other.status_code == 404 and other.json()["message"] == f"No run {run_id}."
        mine = await http.get(f"/api/v1/runs/{run_id}/bundle",
                              headers={"Authorization": "Bearer t-mine"})
        assert mine.status_code == 200 and mine.json()["run"]["id"] == run_id
        paths = (await http.get("/openapi.json", headers={"Authorization": "Bearer t-mine"})
                 ).json()["paths"]
    assert keys.KEYS_PATH in paths and "/api/v1/runs/{run_id}/bundle" in paths


def _verdict(k: Agent, bundle: dict[str, Any]) -> bool:
    return verify_bundle(bundle, keys.public_keys(json.dumps(k.service.key_set()))).valid


def test_a_bundle_holds_the_version_its_run_followed(kairos: Agent) -> None:
    steps = _steps(kairos)
    started = kairos.begin(steps[0])
    kairos.mint(THREE_STEPS.replace("Check that everything works.", "Check it all."),
                force_update=True)
    response = kairos.next(steps[1], shell_ok(started["challenge"]))
    done = kairos.attest(steps[2], "success", "finished on version 1",
                         solution=shell_ok(response["challenge"]))
    old = _export(kairos, done["run_id"])
    new = _export(kairos, finish_a_run(kairos, steps))  # type: ignore[arg-type]
    assert (old["protocol"]["version"], new["protocol"]["version"]) == (1, 2)
    assert "Check that everything works." in old["protocol"]["markdown"]
    assert "Check it all." in new["protocol"]["markdown"]
    assert old["run"]["chain_rule"] == new["run"]["chain_rule"] == "rfc8785"
    assert _verdict(kairos, old) and _verdict(kairos, new)


def test_a_run_whose_protocol_was_deleted_still_exports_and_verifies(kairos: Agent) -> None:
    steps = _steps(kairos)
    run_id = finish_a_run(kairos, steps)  # type: ignore[arg-type]
    kairos.delete(steps[0], protocol=True)
    bundle = _export(kairos, run_id)
    assert bundle["run"]["outcome"] == "success" and _verdict(kairos, bundle)
