"""python/imgpack.pyi describes the module as built, and every public name
has a docstring: help(imgpack.Loader) is the manual."""
import ast
import os
import re

import imgpack
from conftest import SOURCE_DIR

STUBS = os.path.join(SOURCE_DIR, "python", "imgpack.pyi")


def stub_tree():
    with open(STUBS) as f:
        return ast.parse(f.read())


def public(names):
    return {n for n in names if not n.startswith("_")}


def stub_classes():
    return {node.name: node for node in stub_tree().body if isinstance(node, ast.ClassDef)}


def test_stubs_sit_beside_the_built_module():
    built = os.path.join(os.path.dirname(imgpack.__file__), "imgpack.pyi")
    with open(built) as a, open(STUBS) as b:
        assert a.read() == b.read()


def test_stubs_name_what_the_module_has():
    tree = stub_tree()
    stubbed = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            stubbed.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            stubbed.add(node.target.id)
    module = {n for n in dir(imgpack) if not n.startswith("__")} | {"__version__"}
    assert stubbed == module


def test_stub_classes_list_every_member():
    for name, node in stub_classes().items():
        cls = getattr(imgpack, name)
        members = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
        assert members <= set(dir(cls)), name
        inherited = set(dir(RuntimeError)) if issubclass(cls, BaseException) else set()
        assert public(dir(cls)) - inherited - {"mro"} <= members, name


def test_loader_keywords_match_the_stub():
    init = next(item for item in stub_classes()["Loader"].body
                if isinstance(item, ast.FunctionDef) and item.name == "__init__")
    stubbed = [a.arg for a in init.args.args[1:] + init.args.kwonlyargs]
    signature = imgpack.Loader.__init__.__doc__.splitlines()[0]
    built = re.findall(r"(\w+): ", signature.split("(", 1)[1])[1:]  # after self
    assert stubbed == built
    assert all(name in imgpack.Loader.__doc__ for name in built)


def test_every_public_member_has_a_docstring():
    for name in ("Dataset", "Split", "Loader", "Batch", "Array", "Pairs", "Error"):
        cls = getattr(imgpack, name)
        assert len(cls.__doc__ or "") > 40, name
        for member in public(vars(cls)):
            doc = getattr(cls, member).__doc__ or ""
            # pybind11 puts the signature first; a description must follow it.
            text = "\n".join(line for line in doc.splitlines() if not line.startswith(member))
            assert len(text.strip()) > 10, "%s.%s has no docstring" % (name, member)
    for function in ("cuda_device_count", "built_with_cuda"):
        assert len(getattr(imgpack, function).__doc__) > 40
    assert "torch.from_dlpack" in imgpack.__doc__
