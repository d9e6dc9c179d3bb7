"""docs/ARCHITECTURE.md, the map a newcomer follows, cannot drift from the code: it names every
module of the library, the shell and the rooms, each library module on its own floor (the
layering test's LAYERS), the floors in order, and the shell lowest first (no shell module imports
one the map lists after it)."""

import ast
import re
from pathlib import Path

from test_layering import APP_MODULES, SHELL, app_imports, layer_of

ROOT = Path(__file__).resolve().parent.parent
MAP = (ROOT / "docs" / "ARCHITECTURE.md").read_text()


def block_after(heading: str) -> str:
    """The first fenced block after `heading` in the map."""
    return re.search(rf"{re.escape(heading)}.*?```\n(.*?)```", MAP, re.S).group(1)


def listed_library() -> list[tuple[int, str]]:
    """(floor, module path under albert_lab/) in the map's order."""
    floor, listed = None, []
    for line in block_after("## The library, layer by layer").splitlines():
        if match := re.match(r"layer (\d+):", line):
            floor = int(match.group(1))
        elif match := re.match(r"\s+(\S+\.py)\s", line + " "):
            listed.append((floor, match.group(1)))
    return listed


def modules(folder: Path) -> set[str]:
    """Every module under `folder`, as paths relative to it; a package's __init__.py only where it holds code (a
    function, a class, an import), not where it holds nothing, a docstring or a version."""
    def code(path: Path) -> bool:
        return any(isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))
                   for node in ast.parse(path.read_text()).body)

    return {p.relative_to(folder).as_posix() for p in folder.rglob("*.py")
            if "__pycache__" not in p.parts and (p.name != "__init__.py" or code(p))}


def test_the_map_names_every_library_module_once_on_its_floor_in_floor_order():
    listed = listed_library()
    names = [name for _, name in listed]
    assert sorted(set(names)) == sorted(names), "a module listed twice"
    assert set(names) == modules(ROOT / "albert_lab"), (f"missing from the map: {sorted(modules(ROOT / 'albert_lab') - set(names))}; "
                                                        f"listed but gone: {sorted(set(names) - modules(ROOT / 'albert_lab'))}")
    floors = [floor for floor, _ in listed]
    assert floors == sorted(floors), "the floors are listed out of order"
    wrong = [(name, floor, layer_of(name.removesuffix(".py").replace("/", "."))) for floor, name in listed
             if layer_of(name.removesuffix(".py").replace("/", ".")) != floor]
    assert not wrong, f"on another floor in tests/test_layering.py's LAYERS (module, map, LAYERS): {wrong}"


def test_the_map_names_every_shell_module_lowest_first_and_every_room_file():
    shell = re.findall(r"^  (\w+)\.py\s", block_after("## The app: shell, rooms, entry").split("app/rooms/")[0], re.M)
    assert set(shell) == {p.stem for p in (ROOT / "app" / "shell").glob("*.py") if p.stem != "__init__"}, shell
    order = {name: i for i, name in enumerate(shell)}
    upward = [(module, imported) for module, path in APP_MODULES.items() if module.startswith(SHELL + ".")
              for imported in app_imports(path) if imported.startswith(SHELL + ".")
              and order[imported.split(".")[-1]] > order[module.split(".")[-1]]]
    assert not upward, f"a shell module imports one the map lists after it: {upward}"
    rooms = set(re.findall(r"^  (\w+/\w+\.py)\s", block_after("## The app: shell, rooms, entry"), re.M))
    assert rooms == {p for p in modules(ROOT / "app" / "rooms") if "/" in p}, (
        f"missing: {sorted({p for p in modules(ROOT / 'app' / 'rooms') if '/' in p} - rooms)}")
