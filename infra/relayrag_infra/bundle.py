"""What each function uploads: its bundle, the archive Cloud Build builds the function from.

A stage's bundle is a `main.py` written for that stage (`bundle_main`: it imports the stage's own module, or
`ingest_object`, and nothing of the other stages), the part of the `relayrag` package that main.py can load
(`function_modules`: the closure of its imports, lazy ones and the backend registry's targets included), the data
files of those packages, and the stage's requirements.txt (catalog.requirements_text, added by the caller). So a
change to one stage's module changes that stage's `bundle_digest` only and Pulumi rebuilds that one function; a
change to a module several stages load (relayrag.stages.base, a backend, the stage context) rebuilds each of them;
a change to code no function loads (the dashboard, the CLI, the assistant, the MCP gateway) rebuilds none.

Standard library only, like catalog: the tests and the deploy rehearsal (tests/infra/rehearsal.py) build the
same archives the Pulumi program uploads.
"""

from __future__ import annotations

import ast
import hashlib
import re
from pathlib import Path
from typing import Mapping

from relayrag_infra.catalog import FUNCTIONS_DIR, HTTP_STAGES, STAGES

BUNDLE_EXCLUDE = re.compile(r"(^|/)(__pycache__|\.pytest_cache|\.mypy_cache)(/|$)|\.py[co]$|(^|/)\.DS_Store$")

EVENT_ENTRY_MODULES: dict[str, str] = {"ingest_object": "relayrag.ingest.cloud_function"}
"""CloudEvent entry point -> the module that defines it (an HTTP stage's is relayrag.stages.<stage>)."""


def bundle_main(stage: str) -> str:
    """The `main.py` of `stage`'s bundle (Python source): functions-framework loads it and looks up the stage's
    entry point in it. It imports the stage's module (an HTTP stage: `relayrag.stages.<stage>` wrapped by
    relayrag.stage_http) or the CloudEvent function's module, nothing else. Raises KeyError for an unknown stage."""
    spec = STAGES[stage]
    head = (f'"""Cloud Functions entry module of relayrag\'s `{spec.entry_point}` function, written by '
            "infra/relayrag_infra/bundle.py:\nthis bundle holds only the code its stage loads (functions/main.py "
            'serves every stage from the source tree)."""\n\nimport sys\nfrom pathlib import Path\n\n'
            "sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bundle root holds the relayrag package\n\n")
    if stage in HTTP_STAGES:
        return (head + "from relayrag.stage_http import http_function  # noqa: E402\n"
                f"from relayrag.stages.{stage} import STAGE  # noqa: E402\n\n"
                f"{spec.entry_point} = http_function(STAGE)\n")
    module = EVENT_ENTRY_MODULES[spec.entry_point]
    return head + f"from {module} import {spec.entry_point}  # noqa: E402,F401\n"


def _package_modules(functions_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the relayrag package."""
    out = {}
    for p in sorted((functions_dir / "relayrag").rglob("*.py")):
        if BUNDLE_EXCLUDE.search(p.as_posix()):
            continue
        parts = list(p.relative_to(functions_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _module_references(name: str, source: str, is_package: bool, modules: Mapping[str, Path]) -> set[str]:
    """The relayrag modules one module may load: every `import` anywhere in it (lazy ones inside functions
    included, relative ones resolved), every string constant naming a `relayrag.x.y` module (the backend
    registry's "module:attribute" targets), and every module under an f-string prefix `relayrag.x.{...}`
    (relayrag.stage_registry imports `relayrag.stages.{name}`). Docstrings are prose and do not count."""
    tree = ast.parse(source, filename=name)
    package = name if is_package else name.rpartition(".")[0]
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    named: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            named |= {base, *(f"{base}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            named |= set(re.findall(r"relayrag(?:\.\w+)+", node.value))
        elif isinstance(node, ast.JoinedStr):
            for part in node.values:
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    for prefix in re.findall(r"relayrag(?:\.\w+)+\.$", part.value):
                        named |= {m for m in modules if m.startswith(prefix)}
    found = set()
    for dotted in named:  # `relayrag.a.b` loads relayrag, relayrag.a and relayrag.a.b
        parts = dotted.split(".")
        found |= {".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in modules}
    return found


_REFS: dict[tuple, frozenset[str]] = {}


def _file_references(name: str, path: Path, modules: Mapping[str, Path]) -> frozenset[str]:
    """`_module_references` of one file, kept while the file and the package's module list are unchanged
    (every stage's closure reads mostly the same files)."""
    st = path.stat()
    key = (name, str(path), st.st_mtime_ns, st.st_size, frozenset(modules))
    if key not in _REFS:
        _REFS[key] = frozenset(_module_references(name, path.read_text(encoding="utf-8"), path.name == "__init__.py",
                                                  modules))
    return _REFS[key]


def function_modules(stage: str, functions_dir: Path = FUNCTIONS_DIR) -> set[str]:
    """The relayrag modules `stage`'s function can load, starting from its `bundle_main`: the closure of
    `_module_references` (static, and wider than what one request imports: every lazy import and registry
    target counts). Raises KeyError for an unknown stage."""
    modules = _package_modules(functions_dir)
    seen: set[str] = set()
    todo = sorted(_module_references("main", bundle_main(stage), False, modules))
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += sorted(_file_references(name, modules[name], modules) - seen)
    return seen


def bundle_files(stage: str, functions_dir: Path = FUNCTIONS_DIR) -> dict[str, Path | str]:
    """Archive path -> content of `stage`'s source bundle: "main.py" -> its text (`bundle_main`), and every other
    path -> the file: the part of the `relayrag` package the function can load (`function_modules`), with the
    data files of its packages and of folders that are no package (assets/), without caches. A package the
    function never loads is left out whole (templates and static files included). requirements.txt is added by
    the caller (catalog.requirements_text). Raises KeyError for an unknown stage, FileNotFoundError when
    `functions_dir` has no relayrag package."""
    if not (functions_dir / "relayrag" / "__init__.py").is_file():
        raise FileNotFoundError(f"{functions_dir / 'relayrag'}: the relayrag package is missing")
    modules = _package_modules(functions_dir)
    loaded = function_modules(stage, functions_dir)
    unloaded_packages = [modules[m].parent for m in modules if m not in loaded and modules[m].name == "__init__.py"]
    files: dict[str, Path | str] = {"main.py": bundle_main(stage)}
    for p in sorted((functions_dir / "relayrag").rglob("*")):
        rel = p.relative_to(functions_dir).as_posix()
        if not p.is_file() or BUNDLE_EXCLUDE.search(rel):
            continue
        if any(pkg == p.parent or pkg in p.parents for pkg in unloaded_packages):
            continue
        if p.suffix == ".py":
            parts = list(p.relative_to(functions_dir).with_suffix("").parts)
            if ".".join(parts[:-1] if parts[-1] == "__init__" else parts) not in loaded:
                continue
        files[rel] = p
    return files


def file_bytes(content: Path | str) -> bytes:
    """The bytes of one `bundle_files` entry (a file's, or generated text as UTF-8)."""
    return content.encode("utf-8") if isinstance(content, str) else content.read_bytes()


def bundle_digest(files: Mapping[str, Path | str], requirements: str) -> str:
    """20 hex characters of SHA-256 over every archive path and its bytes, then requirements.txt: the name of the
    uploaded archive, so a function is rebuilt exactly when its own bundle changes."""
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + file_bytes(files[rel]) + b"\0")
    h.update(requirements.encode())
    return h.hexdigest()[:20]
