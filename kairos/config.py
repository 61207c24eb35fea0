"""Settings from environment variables (``KAIROS_*``) and an optional ``kairos.toml``.

Each value remembers where it came from, so ``kairos doctor`` can say so.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULTS: dict[str, Any] = {
    "home": "~/.kairos",
    "database_url": "",
    "space": "default",
    "embedder": "local",
    "openai_base_url": "https://api.openai.com/v1",
    "openai_model": "text-embedding-3-small",
    "openai_api_key": "",
    "search_threshold": 0.30,
    "host": "127.0.0.1",
    "port": 8765,
    "api_tokens": "",
    "tokens_file": "",
}


@dataclass
class Settings:
    values: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def home_path(self) -> Path:
        return Path(str(self.values["home"])).expanduser()

    @property
    def url(self) -> str:
        if self.values["database_url"]:
            return str(self.values["database_url"])
        return f"sqlite:///{self.home_path / 'kairos.db'}"


def _coerce(key: str, raw: Any) -> Any:
    default = DEFAULTS[key]
    if isinstance(default, float):
        return float(raw)
    if isinstance(default, int):
        return int(raw)
    return str(raw)


def load_settings(env: dict[str, str] | None = None, toml_path: Path | None = None,
                  **overrides: Any) -> Settings:
    """Precedence: explicit overrides > environment > kairos.toml > defaults."""
    env = dict(os.environ) if env is None else env
    values = dict(DEFAULTS)
    sources = dict.fromkeys(DEFAULTS, "default")
    path = toml_path or Path(env.get("KAIROS_CONFIG", "kairos.toml"))
    if path.is_file():
        with path.open("rb") as fh:
            data = tomllib.load(fh)
        for key, raw in data.get("kairos", data).items():
            if key in DEFAULTS:
                values[key], sources[key] = _coerce(key, raw), f"file {path}"
    for key in DEFAULTS:
        name = f"KAIROS_{key.upper()}"
        if name in env and env[name] != "":
            values[key], sources[key] = _coerce(key, env[name]), f"env {name}"
    for key, raw in overrides.items():
        if raw is not None:
            values[key], sources[key] = _coerce(key, raw), "argument"
    return Settings(values, sources)
