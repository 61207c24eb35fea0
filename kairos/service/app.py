"""The one service every surface calls. Wiring happens here and only here."""

from __future__ import annotations

from typing import Any

from ..config import Settings, load_settings
from ..store.db import Store
from .ports import Embedder
from .protocols import Caller, ProtocolService
from .runs import RunService


class Kairos:
    def __init__(self, settings: Settings | None = None, *, store: Store | None = None,
                 embedder: Embedder | None = None) -> None:
        self.settings = settings or load_settings()
        if store is None:
            if not self.settings.database_url:
                self.settings.home_path.mkdir(parents=True, exist_ok=True)
            store = Store(self.settings.url)
        self.store = store
        self.embedder = embedder
        self.protocols = ProtocolService(store)
        self.runs = RunService(store, self.protocols, embedder)
        self.protocols.install_builtins()

    # protocols
    def mint(self, markdown_doc: Any, caller: Caller = Caller(), *,
             llm_model_id: str | None = None, force_update: bool = False) -> dict[str, Any]:
        return self.protocols.mint(markdown_doc, caller, llm_model_id=llm_model_id,
                                   force_update=bool(force_update))

    def update(self, uris: Any, caller: Caller = Caller(), *, markdown_doc: Any = None,
               updates: Any = None) -> dict[str, Any]:
        return self.protocols.update(uris, caller, markdown_doc=markdown_doc, updates=updates)

    def delete(self, uris: Any, caller: Caller = Caller(), *,
               protocol: bool = False) -> dict[str, Any]:
        return self.protocols.delete(uris, caller, protocol=protocol)

    def dump(self, uri: Any, caller: Caller = Caller(), *,
             protocol: bool = False) -> dict[str, Any]:
        return self.protocols.dump(uri, caller, protocol=protocol)

    # execution
    def begin(self, uri: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.runs.begin(uri, caller)

    def next(self, uri: Any, solution: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.runs.next(uri, solution, caller)

    def attest(self, uri: Any, outcome: Any, message: Any, caller: Caller = Caller(), *,
               quality_bonus: Any = 0.0, llm_model_id: Any = None,
               solution: Any = None) -> dict[str, Any]:
        return self.runs.attest(uri, outcome, message, caller, quality_bonus=quality_bonus,
                                llm_model_id=llm_model_id, solution=solution)

    def verify_run(self, run_id: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.runs.verify(run_id, caller)

    def proof_log(self, run_id: Any, caller: Caller = Caller()) -> dict[str, Any]:
        return self.runs.proof_log(run_id, caller)

    def run_history(self, caller: Caller = Caller(), limit: int = 20) -> list[dict[str, Any]]:
        return self.runs.history(caller, limit)

    def metrics(self, uri: Any, caller: Caller = Caller()) -> dict[str, Any]:
        """Quality metrics of the protocol that ``uri`` belongs to."""
        with self.store.read() as repo:
            _, proto, rows = self.protocols.resolve(repo, uri, caller)
            m = repo.protocol_metrics(proto["id"])
            per_step = repo.step_metrics_of(proto["id"])
        base: dict[str, Any] = {"runs": 0, "successes": 0, "failures": 0, "quality_bonus": 0.0,
                "last_outcome": None, "last_run_at": None, "per_model": {}}
        if m is not None:
            base.update({k: m[k] for k in base})
        base["steps"] = [
            {"uri": f"kairos://mem/{r['id']}", "label": r["label"],
             **{k: (per_step[r["id"]][k] if r["id"] in per_step else 0)
                for k in ("accepted", "refused", "failures")}}
            for r in rows
        ]
        return base

    def close(self) -> None:
        self.store.close()
