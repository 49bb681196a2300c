"""Build hook: ship the repository's workflows/*.yaml inside the package (relayrag/workflows/).

workflows/ at the repository root stays the one source of truth (infra deploys it, the emulators run it);
a wheel or sdist install has no repository, so the build copies the YAMLs next to the code, where
relayrag.engine.local.workflows_dir() finds them. All other metadata is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class build_py_with_workflows(build_py):
    def run(self):
        super().run()
        src = ROOT / "workflows"
        if not src.is_dir():  # building from an sdist made before workflows/ was shipped
            raise SystemExit(f"build: {src} is missing; it holds the workflow YAMLs the package runs")
        dst = Path(self.build_lib) / "relayrag" / "workflows"
        dst.mkdir(parents=True, exist_ok=True)
        for path in sorted(src.glob("*.yaml")):
            shutil.copy2(path, dst / path.name)


setup(cmdclass={"build_py": build_py_with_workflows})
