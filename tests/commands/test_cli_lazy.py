"""The command line imports only the module of the command being run, and every command keeps its options."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from dprelease import cli


def _sub(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return parser._subparsers._group_actions[0]  # type: ignore[union-attr]


def _helps(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], str]:
    """format_help() of every parser and sub-parser, keyed by the command path."""
    out = {prefix: parser.format_help()}
    if parser._subparsers is not None:
        for action in parser._subparsers._group_actions:
            for name, child in action.choices.items():
                out.update(_helps(child, prefix + (name,)))
    return out


FULL = None


def _full():
    global FULL
    if FULL is None:
        FULL = _helps(cli.build_parser())
    return FULL


def test_registry_lists_every_command_with_its_module_and_help():
    full = cli.build_parser()
    sub = _sub(full)
    assert list(sub.choices) == list(cli.COMMANDS)
    assert {a.dest: a.help for a in sub._choices_actions} == {k: v[1] for k, v in cli.COMMANDS.items()}
    for name in cli._command_modules():
        module = importlib.import_module(f"dprelease.commands.{name}")
        if not hasattr(module, "register"):
            continue
        probe = argparse.ArgumentParser().add_subparsers()
        module.register(probe)
        for command in probe.choices:
            assert cli.COMMANDS[command][0] == name, command
        for hook, group in (("register_evaluate", "evaluate"), ("register_experiment", "experiment")):
            if hasattr(module, hook):
                assert name in cli.EXTENDERS[group], (name, hook)


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_lazy_parser_gives_each_command_the_same_options(command):
    lazy = _helps(cli.build_parser(command))
    full = _full()
    mine = {path: text for path, text in lazy.items() if path[:1] == (command,)}
    assert mine == {path: text for path, text in full.items() if path[:1] == (command,)}
    assert lazy[()] == full[()]  # the command list is the same too


@pytest.mark.parametrize("argv, command", [(["--help"], ""), ([], ""), (["--version"], ""), (["diffpart", "x"], "diffpart"),
                                           (["evaluate", "counting", "--help"], "evaluate"), (["nope"], None),
                                           (["-h", "diffpart"], "")])
def test_requested_command(argv, command):
    assert cli._requested_command(argv) == command


def test_a_command_imports_only_its_own_modules():
    code = ("import sys, dprelease.cli as c; c.build_parser('diffpart'); "
            "bad = [m for m in sys.modules if m.startswith(('dprelease.commands.relational', 'dprelease.commands.stream', "
            "'dprelease.commands.itemsets', 'dprelease.evaluation', 'dprelease.itemsets', 'scipy', 'pandas', 'opendp'))]; "
            "assert not bad, bad; c.build_parser(''); print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    bare = subprocess.run([sys.executable, "-c", "import sys, dprelease.cli as c; c.build_parser(''); "
                                                 "print(sorted(m for m in sys.modules if m.startswith('numpy'))[:1])"],
                          capture_output=True, text=True, timeout=60)
    assert bare.stdout.strip() == "[]", bare.stdout  # the bare command list needs no numpy at all


def test_command_functions_import_what_they_use():
    """Handlers import the algorithms they need themselves: every name a module-level function reads is
    imported at the top, defined in the module, imported in that function, or a builtin."""
    import ast
    import builtins
    from pathlib import Path

    import dprelease.commands as commands

    problems = []
    for path in sorted(Path(commands.__path__[0]).glob("*.py")):
        tree = ast.parse(path.read_text())
        known = set(dir(builtins)) | {"__file__"}
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                known |= {(a.asname or a.name).split(".")[0] for a in node.names}
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                known.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.If, ast.Try)):
                known |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for fn in (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            local = set()
            for n in ast.walk(fn):
                if isinstance(n, (ast.Import, ast.ImportFrom)):
                    local |= {(a.asname or a.name).split(".")[0] for a in n.names}
                elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    local.add(n.id)
                elif isinstance(n, ast.arg):
                    local.add(n.arg)
                elif isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                    local.add(n.name)
                elif isinstance(n, ast.ExceptHandler) and n.name:
                    local.add(n.name)
            loads = {n.id for stmt in fn.body for n in ast.walk(stmt) if isinstance(n, ast.Name)
                     and isinstance(n.ctx, ast.Load)}
            missing = loads - local - known
            if missing:
                problems.append(f"{path.name}:{fn.name}: {sorted(missing)}")
    assert not problems, problems


_RUN_AND_LIST = ("import sys; from dprelease import cli; code = cli.main(sys.argv[1:]); "
                 "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'scipy', 'sklearn', "
                 "'matplotlib', 'networkx', 'pyspark'}))")


@pytest.mark.parametrize("argv", [
    ["diffpart", "{ex}/baskets.dat", "--universe", "1..12", "-e", "1"],
    ["degrees", "{tmp}/g.txt", "-e", "1", "--theta", "8"],
    ["rps", "{ex}/table1-jobs.csv", "--schema", "{ex}/table1-schema.yaml", "-e", "1"],
    ["diffgen", "{ex}/table1-jobs.csv", "--schema", "{ex}/table1-schema.yaml", "-e", "1"],
    ["mondrian", "{ex}/table1-jobs.csv", "--schema", "{ex}/table1-schema.yaml", "-k", "2"],
])
def test_a_release_imports_no_library_it_does_not_use(argv, tmp_path):
    """A whole default release (reading, the algorithm, writing) imports none of the heavy libraries it has no
    use for: pyarrow's ``pa.array`` on a numpy array imports pandas (0.13 s) and scipy.optimize's isotonic
    regression costs 0.3 s to import, each once more than the release it served."""
    from dprelease.examples import path as examples_path

    (tmp_path / "g.txt").write_text("".join(f"{i} {j}\n" for i in range(12) for j in range(i + 1, 12, 3)))
    ex = examples_path("baskets.dat").parent
    args = [a.format(ex=ex, tmp=tmp_path) for a in argv] + ["-o", str(tmp_path / "out.csv"), "-q"]
    proc = subprocess.run([sys.executable, "-c", _RUN_AND_LIST, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "0 []", proc.stdout
