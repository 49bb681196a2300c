"""Every stage of the workflow by name: STAGES maps each entry-point name to its `Stage`, in the order of the one
stage catalog (relayrag.catalog.HTTP_STAGES). A stage's module is imported the first time STAGES gives its Stage
(a `relayrag ask` on the rag route does not import the sql stage); its name is known without importing it (`in`,
iteration). The embedded engine, the service and the tools use it; a deployed function does not (its bundle's
main.py imports `relayrag.stages.<name>` of its own stage only, and the bundle holds no other stage:
infra/relayrag_infra/bundle.py)."""

import importlib
from collections.abc import Iterator, Mapping

from relayrag.catalog import HTTP_STAGES
from relayrag.stages.base import Stage


class _Stages(Mapping[str, Stage]):
    """name -> relayrag.stages.<name>.STAGE, imported on first access (thread-safe: Python's import lock)."""

    def __init__(self, names: tuple[str, ...]):
        self._names = names
        self._loaded: dict[str, Stage] = {}

    def __getitem__(self, name: str) -> Stage:
        stage = self._loaded.get(name)
        if stage is None:
            if name not in self._names:
                raise KeyError(name)
            stage = self._loaded[name] = importlib.import_module(f"relayrag.stages.{name}").STAGE
        return stage

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __repr__(self) -> str:
        return f"STAGES({', '.join(self._names)})"


STAGES: Mapping[str, Stage] = _Stages(HTTP_STAGES)
