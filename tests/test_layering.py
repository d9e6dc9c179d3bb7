"""The library's layers point down only, and its modules import no circle; the app has
floors too (below).

Layers (a module may import its own layer and the ones below):
  0 errors, importing, fields, paths, spec, runfolder, limits, torch_build
  1 devices, params, models, relaxed (relaxed sharing's layers), tokenizer, release_fast
  2 paper, data.*
  3 kernels, objective, distil, checkpoint.*, card
  4 analysis.*, figures.* and readings.* (their plots and words), result, convert (albertize), factorise, relax, shallow
  5 training.*
  6 the command line (cli.*, __main__), the front door (lab: `import albert_lab as al`)
Imports inside functions count too (they are how a lower module would sneak upward);
imports under `if TYPE_CHECKING:` do not (they never run).

The app: app/main.py (the entry) stands on the rooms, app/rooms/<page>/, which stand on the
shell, app/shell/, which stands on the library. No room imports another room, the shell never
imports a room, and no app module is in an import circle, imports inside functions counted.
Session state is read and written only in app/shell/state.py, and no page draws its own
heading (app/main.py draws it from the registry).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from albert_lab.spec import ModelSpec, layer_group

ROOT = Path(__file__).resolve().parent.parent / "albert_lab"
LAYERS = {
    0: ("errors", "importing", "fields", "paths", "spec", "runfolder", "limits", "torch_build", "__init__"),
    1: ("devices", "params", "models", "relaxed", "tokenizer", "release_fast"),
    2: ("paper", "data"),
    3: ("kernels", "objective", "distil", "checkpoint", "card"),
    4: ("analysis", "figures", "readings", "result", "convert", "factorise", "relax", "shallow"),
    5: ("training",),
    6: ("cli", "lab", "__main__"),
}


def layer_of(module: str) -> int:
    parts = module.removeprefix("albert_lab.").split(".")
    for layer, names in LAYERS.items():
        if parts[0] in names:
            return layer
    raise AssertionError(f"albert_lab.{module} is in no layer: add it to LAYERS in {__file__}")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 2 else parts)


def imports(path: Path) -> list[tuple[str, bool]]:
    """(imported albert_lab module, at module level?) for every import that can run."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for n in ast.walk(node)}
    top = {id(n) for n in tree.body}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("albert_lab"):
            names = [f"{node.module}.{a.name}" if node.module in ("albert_lab.data", "albert_lab") and is_module(node.module, a.name)
                     else node.module for a in node.names]  # `from albert_lab import __version__` is the package itself
            found += [(n, id(node) in top) for n in names]
        elif isinstance(node, ast.Import):
            found += [(a.name, id(node) in top) for a in node.names if a.name.startswith("albert_lab")]
    return found


def is_module(package: str, name: str) -> bool:
    folder = ROOT.parent.joinpath(*package.split("."))
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_upward_import(module):
    for imported, _ in imports(MODULES[module]):
        if imported == "albert_lab" or imported.removeprefix("albert_lab.") in ("", "__init__"):
            continue
        assert layer_of(imported) <= layer_of(module), (
            f"{module} (layer {layer_of(module)}) imports {imported} (layer {layer_of(imported)}): layers point down only")


def test_no_import_circle_at_module_level():
    graph = {m: {i for i, top in imports(p) if top and i in MODULES and i != m} for m, p in MODULES.items()}
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                raise AssertionError("import circle: " + " -> ".join([*stack[stack.index(nxt):], nxt]))
            if nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [node])


def test_the_docstring_lists_the_layers_the_test_checks():
    """This file's docstring named three modules of layer 0 while LAYERS held five."""
    listed = {int(line.split()[0]): line for line in __doc__.splitlines() if line[:3].strip().isdigit()}
    assert set(listed) == set(LAYERS)
    for layer, names in LAYERS.items():
        missing = [n for n in names if n != "__init__" and n not in listed[layer]]
        assert not missing, (layer, missing)


def test_layer_group_map_equals_transformers_for_every_l_and_n():
    """The spec's layer-to-group map is the one transformers' AlbertTransformer runs."""
    import inspect

    from transformers.models.albert import modeling_albert

    source = inspect.getsource(modeling_albert.AlbertTransformer.forward)
    assert "int(i / (self.config.num_hidden_layers / self.config.num_hidden_groups))" in source
    for layers in range(1, 49):
        for groups in (n for n in range(1, layers + 1) if layers % n == 0):
            expected = [int(i / (layers / groups)) for i in range(layers)]
            assert [layer_group(i, layers, groups) for i in range(layers)] == expected
            spec = ModelSpec(hidden_size=64, num_heads=1, num_layers=layers, num_groups=groups, vocab_size=50)
            assert spec.group_of_layer == expected
    # where the reference code's int(i / L * N) differs: L = N = 22, layer 15
    assert int(15 / 22 * 22) == 14 and layer_group(15, 22, 22) == 15


# ---- the app: rooms stand on the shell, which stands on the library -------------------------------
APP = ROOT.parent / "app"
SHELL, ROOMS = "app.shell", "app.rooms"


def app_module_name(path: Path) -> str:
    parts = list(path.relative_to(APP.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


APP_MODULES = {app_module_name(p): p for p in sorted(APP.rglob("*.py"))}


def app_imports(path: Path) -> set[str]:
    """The app modules `path` imports, at module level or inside functions (`from app.shell
    import pace` is app.shell.pace; `from app.rooms.x.views import y` is app.rooms.x.views)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "app":
            found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in APP_MODULES else node.module for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "app"}
    return found


def room_of(module: str) -> str | None:
    """The room (app/rooms/<stem>/) a module belongs to, or None for the shell and the entry."""
    parts = module.split(".")
    return parts[2] if module.startswith(ROOMS + ".") and len(parts) > 2 else None


def test_app_modules_are_the_entry_the_shell_and_rooms():
    for module in APP_MODULES:
        assert module in ("app", "app.main", ROOMS) or module.startswith((SHELL, ROOMS + ".")), (
            f"{module}: the app is app/main.py, the shell (app/shell/) and the rooms (app/rooms/<page>/)")


def test_no_room_imports_another_room():
    crossing = [(m, i) for m, p in APP_MODULES.items() if room_of(m) for i in app_imports(p)
                if room_of(i) and room_of(i) != room_of(m)]
    assert crossing == [], f"a room imports another room (move what they share into app/shell/): {crossing}"


def test_the_shell_never_imports_a_room():
    upward = [(m, i) for m, p in APP_MODULES.items() if m.startswith(SHELL) for i in app_imports(p)
              if i == ROOMS or i.startswith(ROOMS + ".") or i == "app.main"]
    assert upward == [], f"the shell imports a room or the entry: {upward}"


def test_no_import_circle_in_the_app():
    """Imports inside functions count: they are how a circle gets closed."""
    graph = {m: {i for i in app_imports(p) if i in APP_MODULES and i != m} for m, p in APP_MODULES.items()}
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import circle: " + " -> ".join([*stack[stack.index(nxt):], nxt]))
            if nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_session_state_only_in_the_shells_state_module():
    """Pages and the shell keep values through app/shell/state.py's typed API, never by session-state strings."""
    allowed = APP / "shell" / "state.py"
    users = [str(p.relative_to(APP.parent)) for p in APP.rglob("*.py") if p != allowed and "session_state" in p.read_text()]
    assert users == []


def test_no_page_draws_its_own_heading():
    """app/main.py draws each page's heading from the registry."""
    titled = [str(p.relative_to(APP.parent)) for p in (APP / "rooms").glob("*/page.py") if "st.title" in p.read_text()]
    assert titled == []
    assert "registry.room(" in (APP / "main.py").read_text() and "st.title(" in (APP / "main.py").read_text()


def test_every_room_of_the_registry_is_a_folder_and_back():
    from app.shell.registry import PAGES

    folders = {p.parent.name for p in (APP / "rooms").glob("*/page.py")}
    assert folders == {room.stem for room in PAGES}


def test_each_room_keeps_one_typed_object():
    """A room's kept values are one dataclass, declared in the room (app.shell.state.kept keys it by the room's name)."""
    by_room: dict[str, set[str]] = {}
    for module, path in APP_MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "kept" and node.args:
                assert room_of(module), f"{module} keeps a room's object outside a room"
                by_room.setdefault(room_of(module), set()).add(ast.unparse(node.args[0]).split(".")[-1])
    assert by_room and all(len(kinds) == 1 for kinds in by_room.values()), by_room


KEYED = {"Control", "widget", "set_widget", "has_widget", "default_widget", "from_url", "form"}  # first argument: a key


def test_rooms_type_no_widget_key():
    """A room's widget keys are derived from the room and the option (registry.Room.key: `key("depth")` is dl_depth
    on the Depth lab), never typed: 70 hand-picked keys in 20 prefixes said nothing of how to name the next one."""
    typed = []
    for path in sorted((APP / "rooms").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                given = [k.value for k in node.keywords if k.arg == "key"] + (node.args[:1] if name in KEYED else [])
                typed += [f"{path.relative_to(APP.parent)}:{node.lineno}" for value in given
                          if isinstance(value, ast.JoinedStr) or isinstance(getattr(value, "value", None), str)]  # "..." or f"..."
    assert typed == [], f"widget keys typed in a room (write key('option'), key = registry.keys(__file__)): {typed}"


WIDGET_CALLS = {"number_input", "slider", "select_slider", "selectbox", "radio", "multiselect", "text_input", "text_area",
                "toggle", "checkbox", "pills", "segmented_control"}


def test_rooms_draw_no_option_row_by_hand():
    """A control that sets an option is drawn by the shell from its row (app/shell/rows.py: Form.draw), its type,
    bounds, choices and default the row's: rooms had made 89 widgets by hand, and only 5 read a record's option."""
    from albert_lab.analysis.registry import ANALYSES, DISC_OPTIONS, VGG_OPTIONS
    from albert_lab.training.config import OPTIONS

    rows = {o.name for a in ANALYSES for o in a.options} | {o.name for o in (*OPTIONS, *DISC_OPTIONS, *VGG_OPTIONS)}
    by_hand = []
    for path in sorted((APP / "rooms").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in WIDGET_CALLS:
                keys = [k.value for k in node.keywords if k.arg == "key" and isinstance(k.value, ast.Call)
                        and getattr(k.value.func, "id", None) == "key" and k.value.args]
                by_hand += [f"{path.relative_to(APP.parent)}:{node.lineno} {k.args[0].value}" for k in keys
                            if isinstance(k.args[0], ast.Constant) and k.args[0].value in rows]
    assert by_hand == [], f"option rows drawn by hand (draw them with rows.Form): {by_hand}"


def test_each_room_keys_its_widgets_with_a_prefix_of_its_own():
    """A prefix ends at the key's first underscore, so two rooms' keys never meet."""
    from app.shell.registry import PAGES, keys, room

    prefixes = [page.prefix for page in PAGES]
    assert len(set(prefixes)) == len(prefixes) and all(p.isalnum() for p in prefixes), prefixes
    assert keys(str(APP / "rooms" / "depth_lab" / "page.py"))("heat") == "dl_heat" == room("depth_lab").key("heat")
    assert room("training").key("loss", "20261101-000000-x") == "tr_loss_20261101-000000-x"


def heavy_functions() -> set[str]:
    """The library's heavy work, by name: each analysis of the registry (and the function an option of one
    writes with), every public function that reports its progress (a `progress` callback: long by its own
    word; the Depth lab's trainers among them) and every maker of a model under a folder (`*_into`:
    albertize_into, relax_into, probe_into)."""
    from albert_lab.analysis.registry import ANALYSES

    heavy = {a.function for a in ANALYSES} | {o.writes for a in ANALYSES for o in a.options if o.writes}
    for path in ROOT.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                told = [a for a in [*node.args.args, *node.args.kwonlyargs] if a.arg == "progress" and a.annotation is not None
                        and any(word in ast.unparse(a.annotation) for word in ("Progress", "Callable"))]  # a callback, not a number
                if told or node.name.endswith("_into"):
                    heavy.add(node.name)
    return heavy


def test_the_heavy_work_is_found():
    """What the check below counts as heavy holds the work that once ran outside the runner."""
    assert {"train_disc", "train_vgg", "albertize_into", "relax_into", "probe_into", "gradient_flow", "score_pairs",
            "curve_and_energy"} <= heavy_functions()


def test_rooms_compute_analyses_only_through_the_one_runner():
    """app/shell/runner.py is the one runner of the pages' heavy work (a queue turn, progress with the time
    left, Stop, results kept for every visitor, per-checkpoint notes): only it takes turns, and the ways it
    replaced are gone (the Depth lab's own bar, Stop and turn among them). A room never builds a Part by
    hand: Part.of keys it by the analysis, the selection and every input, Part.call by the function and
    every input. A room calls heavy work (heavy_functions: not only the registry's analyses) only inside
    what it hands the runner: Part.of's analysis or Part.call's function (a function or a lambda), or
    what it gives batches.together for typed pairs: in a visitor's turn, with its progress and its Stop.
    A model made and offered goes through app/shell/making.py, which hands its maker to Part.call."""
    takers = sorted(m for m, p in APP_MODULES.items() if "app.shell.turns" in app_imports(p))
    assert takers == ["app.shell.runner"], f"only the runner takes turns: {takers}"
    gone = {"stoppable", "each_checkpoint", "computation", "queued", "forget_stop", "heavy_turn", "_Pace"}
    heavy = heavy_functions()
    found = []
    for module, path in APP_MODULES.items():
        tree = ast.parse(path.read_text())
        names = ({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
                 | {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
                 | {n.name for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef))})
        assert not names & gone, f"{module} uses {sorted(names & gone)}: pages run their heavy work through app.shell.runner.run"
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "app.shell.selection"
                    and "run" in {a.name for a in n.names}], f"{module}: analyses run through app.shell.runner.run"
        if not room_of(module):
            continue
        parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        handed = [given for node in ast.walk(tree) if isinstance(node, ast.Call) for given in _handed(node)]
        handed_names = {given.id for given in handed if isinstance(given, ast.Name)}
        handed_lambdas = {id(given) for given in handed if isinstance(given, ast.Lambda)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            called = ast.unparse(node.func).split(".")[-1]
            if called == "Part":
                found.append(f"{module}:{node.lineno}: Part(...) built by hand; use Part.of or Part.call")
            if called in heavy and not _within(node, parents, handed_names, handed_lambdas):
                found.append(f"{module}:{node.lineno}: {ast.unparse(node.func)}(...) outside the runner")
    assert not found, found


def _handed(call: ast.Call) -> list[ast.expr]:
    """What a call hands to the runner: Part.of's analysis, Part.call's function; batches.together's lambdas
    and the functions its arguments call."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("of", "call") and ast.unparse(func.value).split(".")[-1] == "Part":
        return call.args[2:3] if func.attr == "of" else call.args[1:2]
    if isinstance(func, ast.Attribute) and func.attr == "together":
        return [n.func if isinstance(n, ast.Call) else n for a in call.args for n in ast.walk(a)
                if isinstance(n, ast.Lambda) or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name))]
    return []


def _within(node: ast.AST, parents: dict[int, ast.AST], names: set[str], lambdas: set[int]) -> bool:
    while id(node) in parents:
        node = parents[id(node)]
        if id(node) in lambdas or (isinstance(node, ast.FunctionDef) and node.name in names):
            return True
    return False
