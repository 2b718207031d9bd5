"""Each concept keeps one home: these fail when code grows a second one."""

import importlib
import inspect
import pkgutil

import chalicelib

ERRORS_MODULE = "chalicelib.events.errors"


def _modules():
    yield importlib.import_module("chalicelib")
    for info in pkgutil.walk_packages(chalicelib.__path__, "chalicelib."):
        yield importlib.import_module(info.name)


def test_exception_classes_are_defined_only_in_the_errors_module():
    elsewhere = sorted(
        f"{module.__name__}.{name}"
        for module in _modules()
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == module.__name__
        and module.__name__ != ERRORS_MODULE
    )
    assert elsewhere == [], f"exception classes belong in {ERRORS_MODULE}: {elsewhere}"
