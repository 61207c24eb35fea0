"""Settings from environment variables (``KAIROS_*``) and an optional ``kairos.toml``.

Each value remembers where it came from, so ``kairos doctor`` can say so. Everything is
validated once, when the settings are loaded: a malformed file, an unknown key or a bad
value raises ``ConfigError`` naming every problem (key, value, where it came from and what
was expected), before any command does anything.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic import ValidationError as PydanticError

from .domain.limits import SETTINGS, Limits, setting_defaults

SIGNING_KEY_FILE = "signing-key.pem"  # in the data directory, unless configured

class _Settings(BaseModel):
    """Each setting: its default, its checks (types, ranges, choices; no unknown keys) and
    what it expects, in words (the ``description``)."""

    model_config = ConfigDict(extra="forbid")

    home: str = Field("~/.kairos", min_length=1, description="a directory path")
    database_url: str = Field(
        "", pattern=r"^(|sqlite(\+\w+)?:///.*|postgres(ql)?(\+\w+)?://.+)$",
        description="empty, sqlite:///<file> or postgresql://…")
    space: str = Field("default", min_length=1, max_length=64,
                       description="1 to 64 characters")
    embedder: Literal["local", "openai", "none"] = Field(
        "local", description="local, openai or none")
    openai_base_url: str = Field("https://api.openai.com/v1", pattern=r"^https?://.+",
                                 description="an http:// or https:// URL")
    openai_model: str = Field("text-embedding-3-small", min_length=1,
                              description="a model name")
    openai_api_key: str = Field("", description="a string")
    search_threshold: float = Field(0.30, ge=0.0, le=1.0, allow_inf_nan=False,
                                    description="a number from 0 to 1")
    host: str = Field("127.0.0.1", min_length=1,
                      description="an address such as 127.0.0.1 or 0.0.0.0")
    port: int = Field(8765, ge=1, le=65535, description="an integer from 1 to 65535")
    workers: int = Field(1, ge=1, le=64, description="an integer from 1 to 64")
    api_tokens: str = Field("", description="token:space,…")
    tokens_file: str = Field("", description="a file path")
    run_idle_minutes: int = Field(
        1440, ge=0, le=525600,
        description="an integer from 0 (runs never expire) to 525600 (a year)")
    signing_key: str = Field(
        "", description="empty (KAIROS_HOME/signing-key.pem, made on first start) or the "
                        "path of an Ed25519 private key in PEM")
    published_keys: str = Field(
        "", description="empty or the path of a key set JSON of earlier public keys")


#: The limits of kairos/domain/limits.py as settings (``max_body_bytes``, ...).
_LIMITS: dict[str, Any] = {key: (int, Field(default, ge=1, description="a positive integer"))
                           for key, default in setting_defaults().items()}
_Values = create_model("_Values", __base__=_Settings, **_LIMITS)
DEFAULTS: dict[str, Any] = {key: f.default for key, f in _Values.model_fields.items()}
EXPECTED: dict[str, str] = {key: str(f.description)
                            for key, f in _Values.model_fields.items()}


#: KAIROS_* variables that are read outside the settings (by the MCP forwarder, the error
#: handler, the test suite and the benchmarks): not warned about as unknown.
OTHER_VARIABLES = frozenset({
    "KAIROS_CONFIG", "KAIROS_TOKEN", "KAIROS_SESSION_ID", "KAIROS_TRACEBACK",
    "KAIROS_TEST_DATABASE_URL", "KAIROS_FUZZ_EXAMPLES", "KAIROS_KILL9_ROUNDS",
    "KAIROS_RACE_TRIALS", "KAIROS_CHROMIUM", "KAIROS_BENCH_CODE"})


def unknown_variables(env: dict[str, str] | None = None) -> list[str]:
    """One warning per ``KAIROS_*`` variable that is not a setting (a typo is ignored, so
    say so), naming the setting it most resembles."""
    env = dict(os.environ) if env is None else env
    known = [f"KAIROS_{key.upper()}" for key in DEFAULTS]
    warnings = []
    for name in sorted(env):
        if not name.startswith("KAIROS_") or name in OTHER_VARIABLES or name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        hint = f"; did you mean {close[0]}?" if close else ""
        warnings.append(f"{name} is not a KAIROS setting (ignored){hint}")
    return warnings


def _redacted(url: str) -> str:
    """A database URL without its password."""
    scheme, sep, rest = url.partition("://")
    user, at, host = rest.rpartition("@")
    return f"{scheme}{sep}{user.split(':')[0]}:***@{host}" if at else url


def _environment_problems(checked: dict[str, Any], sources: dict[str, str]) -> list[str]:
    """What the values ask of this machine: a data directory that can be one, and the
    PostgreSQL driver when a PostgreSQL URL is set."""
    problems = []
    home = Path(str(checked["home"])).expanduser()
    if home.exists() and not home.is_dir():
        problems.append(f"{source_name('home', sources['home'])}={str(checked['home'])!r}: "
                        "expected a directory, but it is a file")
    url = str(checked["database_url"])
    if url.startswith("postgres") and importlib.util.find_spec("psycopg") is None:
        problems.append(f"{source_name('database_url', sources['database_url'])}="
                        f"{_redacted(url)!r}: PostgreSQL needs its driver; install it with "
                        "pip install -e '.[postgres]' (or pip install 'psycopg[binary]')")
    return problems


class ConfigError(ValueError):
    """The configuration cannot be used; ``problems`` has one sentence per bad key."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("configuration: " + "; ".join(problems))


@dataclass
class Settings:
    values: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None

    @cached_property
    def limits(self) -> Limits:
        """The configurable limits (``max_*``), as the checks take them."""
        return Limits(**{name: int(self.values[key]) for key, name in SETTINGS.items()})

    @property
    def home_path(self) -> Path:
        return Path(str(self.values["home"])).expanduser()

    @property
    def signing_key_path(self) -> Path:
        """The server's private key: KAIROS_SIGNING_KEY, else made in the data directory."""
        configured = str(self.values["signing_key"])
        return (Path(configured).expanduser() if configured
                else self.home_path / SIGNING_KEY_FILE)

    @property
    def published_keys_path(self) -> Path | None:
        """Earlier public keys (a key set JSON) still published after a rotation."""
        configured = str(self.values["published_keys"])
        return Path(configured).expanduser() if configured else None

    @property
    def url(self) -> str:
        if self.values["database_url"]:
            return str(self.values["database_url"])
        return f"sqlite:///{self.home_path / 'kairos.db'}"


def source_name(key: str, source: str) -> str:
    """How a user names where a value came from: ``KAIROS_PORT``, ``--port``, a file."""
    if source.startswith("env "):
        return source[4:]
    if source == "argument":
        return "--" + key.replace("_", "-")
    if source.startswith("file "):
        return f"{key} in {source[5:]}"
    return key


def config_path(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    return Path(env.get("KAIROS_CONFIG") or "kairos.toml")


def load_settings(env: dict[str, str] | None = None, toml_path: Path | None = None,
                  **overrides: Any) -> Settings:
    """Precedence: explicit overrides > environment > kairos.toml > defaults.

    Raises ConfigError naming every unreadable file, unknown key and bad value."""
    env = dict(os.environ) if env is None else env
    raw: dict[str, Any] = dict(DEFAULTS)
    sources = dict.fromkeys(DEFAULTS, "default")
    problems: list[str] = []
    path = toml_path or config_path(env)
    if path.is_file():
        try:
            with path.open("rb") as fh:
                data = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError([f"{path}: not a readable TOML file ({exc})"]) from None
        table = data.get("kairos", data)
        if not isinstance(table, dict):
            table = {}
            problems.append(f"{path}: [kairos] must be a table of settings")
        for key, value in table.items():
            if key in DEFAULTS:
                raw[key], sources[key] = value, f"file {path}"
            else:
                problems.append(f"{path}: unknown key {key!r} (known: {', '.join(DEFAULTS)})")
    for key in DEFAULTS:
        name = f"KAIROS_{key.upper()}"
        if env.get(name, "") != "":
            raw[key], sources[key] = env[name], f"env {name}"
    for key, value in overrides.items():
        if value is not None:
            raw[key], sources[key] = value, "argument"
    try:
        checked = _Values(**raw).model_dump()
    except PydanticError as exc:
        checked = {}
        for error in exc.errors():
            key = str(error["loc"][0]) if error["loc"] else "?"
            problems.append(f"{source_name(key, sources.get(key, 'default'))}="
                            f"{raw.get(key)!r}: expected {EXPECTED.get(key, error['msg'])}")
    if not problems:
        problems = _environment_problems(checked, sources)
    if problems:
        raise ConfigError(problems)
    return Settings(checked, sources)


__all__ = ["DEFAULTS", "EXPECTED", "OTHER_VARIABLES", "ConfigError", "Settings", "config_path",
           "load_settings", "source_name", "unknown_variables"]
