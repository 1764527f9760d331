"""`hydrolite init NAME`: a new project whose checks pass right after creation.

The files come from `hydrolite/project_template/` (`.tmpl` files; `__module__` in a path is
the project's package, `dot_` at the start of a name is a dot): `pyproject.toml` (the
hydrolite dependency, pytest with the simulator's plugin, mypy `--strict` with hydrolite's
plugin, hydrolite-lint's settings), one program, one simulator scenario test, a pre-commit
config with local hydrolite-lint and mypy hooks, a README and a .gitignore.

hydrolite is not on PyPI, so a bare `hydrolite` requirement would not install (or would
find some other package of that name). The dependency line therefore points at the
hydrolite that runs `init`, as pip recorded where it came from (PEP 610's
`direct_url.json`): a checkout (`hydrolite @ file:///path/to/checkout`, editable or not),
a wheel file, or a VCS / archive URL; a hydrolite installed from an index is pinned to its
version. `--hydrolite-spec` writes any requirement instead (a private index's
`hydrolite==0.1.0`, a git URL, a wheel on a shared drive).
"""

from __future__ import annotations

import json
import keyword
import os
import re
from importlib import metadata
from pathlib import Path
from string import Template
from typing import ClassVar

from .errors import HydroliteError

TEMPLATE = Path(__file__).with_name("project_template")
PROJECT_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")  # PEP 508 names
#: modules a project package must not shadow (its tests import it by this name)
TAKEN = {"hydrolite", "hydrolite_lint", "pyspark", "pytest", "mypy", "tests", "test"}
#: the dev tools when hydrolite's own metadata does not name them (same ranges as its dev extra)
DEV_DEFAULTS = {"pytest": "pytest>=8", "mypy": "mypy>=2.4.1,<2.5"}


class InitError(HydroliteError):
    """`hydrolite init` cannot create the project."""

    code: ClassVar[str] = "HL-INIT"


def project_names(target: str) -> tuple[Path, str, str]:
    """(directory, project name, package name) for `hydrolite init TARGET`."""
    directory = Path(target).expanduser().resolve()
    project = directory.name
    if not PROJECT_NAME.match(project):
        raise InitError(
            f"{project!r} is not a project name: letters, digits, '-', '_' and '.', starting and ending with a "
            "letter or digit\n  fix: hydrolite init my-pipeline"
        )
    module = re.sub(r"[-.]+", "_", project).lower()
    if not module.isidentifier() or keyword.iskeyword(module) or module[0].isdigit():
        raise InitError(
            f"project {project!r} gives the package name {module!r}, which Python cannot import\n"
            "  fix: start the name with a letter and avoid Python keywords (e.g. my-pipeline)"
        )
    if module in TAKEN:
        raise InitError(
            f"a project named {project!r} would have a package {module!r} that shadows the module of that name\n"
            f"  fix: choose another name (e.g. {module}-pipeline)"
        )
    return directory, project, module


def _spec_from_direct_url(info: dict[str, object]) -> str | None:
    """The requirement for an install pip recorded with a URL (PEP 610), or None."""
    url = info.get("url")
    if not isinstance(url, str):
        return None
    vcs = info.get("vcs_info")
    if isinstance(vcs, dict):
        commit = vcs.get("commit_id")
        return f"hydrolite @ {vcs.get('vcs', 'git')}+{url}" + (f"@{commit}" if commit else "")
    if url.startswith("file://") and not os.path.exists(url[len("file://") :]):
        return None  # installed from a file or checkout that is gone: it cannot install again
    return f"hydrolite @ {url}"


def _checkout_of_this_module() -> Path | None:
    """The checkout this hydrolite is imported from (run from source, not installed), if any."""
    root = Path(__file__).resolve().parents[1]
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and re.search(r'(?m)^name = "hydrolite"$', pyproject.read_text()):
        return root
    return None


def hydrolite_requirement(spec: str | None = None) -> str:
    """The hydrolite line of the new project's dependencies (see the module docstring)."""
    if spec is not None:
        if not re.match(r"^\s*hydrolite(\s*[\[@<>=!~;]|\s*$)", spec):
            raise InitError(
                f"--hydrolite-spec must be a requirement for hydrolite, got {spec!r}\n"
                "  fix: e.g. 'hydrolite @ file:///path/to/hydrolite', 'hydrolite @ git+https://...', 'hydrolite==0.1.0'"
            )
        return spec.strip()
    try:
        dist = metadata.distribution("hydrolite")
    except metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        recorded = dist.read_text("direct_url.json")
        if recorded:
            found = _spec_from_direct_url(json.loads(recorded))
            if found is not None:
                return found
        elif dist.version:
            return f"hydrolite=={dist.version}"
    checkout = _checkout_of_this_module()
    if checkout is not None:
        return f"hydrolite @ {checkout.as_uri()}"
    raise InitError(
        "cannot tell where this hydrolite was installed from, so the new project could not install it\n"
        "  fix: pass --hydrolite-spec, e.g. 'hydrolite @ file:///path/to/hydrolite' or 'hydrolite==0.1.0'"
    )


def dev_requirements() -> list[str]:
    """pytest and mypy, in the ranges hydrolite's own dev extra uses (its mypy plugin is tested with those)."""
    found = dict(DEV_DEFAULTS)
    declared = (metadata.requires("hydrolite") or []) if _installed() else []
    for req in declared:
        name = re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0].lower()
        if name in found and "extra" in req and '"dev"' in req.replace("'", '"'):
            found[name] = req.split(";")[0].strip()
    return [found[k] for k in sorted(found)]


def _installed() -> bool:
    try:
        metadata.distribution("hydrolite")
    except metadata.PackageNotFoundError:
        return False
    return True


def _check_target(directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise InitError(f"{directory} exists and is not a directory\n  fix: choose another name")
    if directory.is_dir():
        present = sorted(p.name for p in directory.iterdir())
        if present:
            shown = ", ".join(present[:5]) + (", ..." if len(present) > 5 else "")
            raise InitError(
                f"{directory} already exists and is not empty ({shown}); init never overwrites files\n"
                "  fix: choose a new project name, or empty that directory first"
            )


def create_project(target: str, spec: str | None = None) -> list[Path]:
    """Write the new project under `target`; returns the files written (relative paths)."""
    directory, project, module = project_names(target)
    _check_target(directory)
    values = {
        "project": project,
        "module": module,
        "hydrolite_spec": hydrolite_requirement(spec),
        "dev_requirements": "\n".join(f'    "{r}",' for r in dev_requirements()),
    }
    written: list[Path] = []
    for source in sorted(TEMPLATE.rglob("*.tmpl")):
        relative = source.relative_to(TEMPLATE).with_suffix("")
        parts = [module if p == "__module__" else "." + p[4:] if p.startswith("dot_") else p for p in relative.parts]
        path = directory.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(source.read_text()).substitute(values))
        written.append(path.relative_to(directory))
    return written
