"""constraints.txt must pin exactly what pyproject.toml asks for, so a new machine installs what
CI tested (`pip install -c constraints.txt -e '.[test]'`)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def pins() -> dict[str, str]:
    found: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        requirement = Requirement(text)
        specifiers = list(requirement.specifier)
        assert len(specifiers) == 1 and specifiers[0].operator == "==", f"not an exact pin: {line!r}"
        found[canonicalize_name(requirement.name)] = specifiers[0].version
    return found


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {})
    requirements = [Requirement(r) for r in project["dependencies"] + [r for group in extras.values() for r in group]]
    return [
        r for r in requirements if canonicalize_name(r.name) != canonicalize_name(project["name"])
    ]  # extras of extras


def test_every_declared_dependency_is_pinned_to_a_version_it_accepts():
    pinned = pins()
    problems = []
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        if name not in pinned:
            problems.append(f"{requirement.name} is not in constraints.txt")
        elif not requirement.specifier.contains(pinned[name], prereleases=True):
            problems.append(f"{requirement.name}=={pinned[name]} does not satisfy `{requirement}`")
    assert not problems, "regenerate constraints.txt (see README, Development): " + "; ".join(problems)


def test_the_lock_file_was_generated_from_these_dependencies():
    """Each pin names what needs it (`# via ...`); a pin of this project's must be a dependency
    pyproject.toml still declares, and a pin needed only by other pins must name pinned ones."""
    declared_names = {canonicalize_name(r.name) for r in declared()}
    pinned = pins()
    problems = []
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if "==" not in line or "# via" not in line:
            continue
        name = canonicalize_name(line.split("==", 1)[0].strip())
        needed_by = [v.strip() for v in line.split("# via", 1)[1].split(",")]
        for dependent in needed_by:
            if dependent == "streamops (pyproject.toml)":
                if name not in declared_names:
                    problems.append(f"{name} is locked for streamops but pyproject.toml no longer declares it")
            elif canonicalize_name(dependent) not in pinned:
                problems.append(f"{name} is locked for {dependent}, which is not locked")
    assert not problems, "regenerate constraints.txt (see README, Development): " + "; ".join(problems)


def test_the_installed_environment_is_the_locked_one():
    """What this test run imports is what constraints.txt says (CI installs from it)."""
    mismatched = {}
    for name, version in pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        if installed != version:
            mismatched[name] = (installed, version)
    assert not mismatched, f"installed != locked (install with -c constraints.txt): {mismatched}"
