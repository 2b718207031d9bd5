"""`make package`'s last step: compiled bytecode for every module in deployment.zip.

Lambda unpacks the zip read-only, so Python cannot cache what it compiles: without
`__pycache__` in the package, every cold start compiles every module it imports,
the libraries' too, from source. This adds each `.py` file's bytecode beside it,
compiled by this interpreter — which must be the functions' runtime: `make package`
runs this step with the same Python chalice packaged under (infra/package.py,
RUNTIME), and it refuses a template whose functions run another version, or a zip
with a compiled extension built for another — as unchecked-hash `.pyc` files: valid
whatever the timestamps in the zip, and never compared with the source (the code
of a deployed version does not change).
"""

from __future__ import annotations

import argparse
import py_compile
import re
import sys
import tempfile
import zipfile
from pathlib import Path

RUNTIME = f"python{sys.version_info.major}.{sys.version_info.minor}"


def _drop_working_tree_caches(package: Path) -> None:
    """Rewrite `package` without `__pycache__` entries: Chalice copies chalicelib's from the
    working tree, timestamp-checked, and a zip's timestamps do not match them, so Python
    would ignore them and compile anyway."""
    with zipfile.ZipFile(package) as archive:
        cached = [info for info in archive.infolist() if "__pycache__/" in info.filename]
        if not cached:
            return
        rewritten = package.with_suffix(".rewriting.zip")
        with zipfile.ZipFile(rewritten, "w", zipfile.ZIP_DEFLATED) as kept:
            for info in archive.infolist():
                if "__pycache__/" not in info.filename:
                    kept.writestr(info, archive.read(info))
    rewritten.replace(package)


def bytecode_name(source: str) -> str:
    """Where the runtime looks for `source`'s bytecode in the package: its `__pycache__`, whatever
    PYTHONPYCACHEPREFIX this build runs under (`importlib.util.cache_from_source` would follow the prefix)."""
    head, _, file = source.rpartition("/")
    cached = f"__pycache__/{file.removesuffix('.py')}.{sys.implementation.cache_tag}.pyc"
    return f"{head}/{cached}" if head else cached


def add_bytecode(package: Path) -> int:
    """Add the bytecode of every `.py` entry of `package`; return how many were added."""
    _drop_working_tree_caches(package)
    with zipfile.ZipFile(package) as archive:
        names = set(archive.namelist())
        sources = {name: archive.read(name) for name in names if name.endswith(".py")}
    added = 0
    with tempfile.TemporaryDirectory() as scratch, zipfile.ZipFile(package, "a", zipfile.ZIP_DEFLATED) as archive:
        for name, source in sorted(sources.items()):
            cached = bytecode_name(name)
            if cached in names:
                continue
            source_file, cached_file = Path(scratch, "module.py"), Path(scratch, "module.pyc")
            source_file.write_bytes(source)
            try:
                py_compile.compile(str(source_file), cfile=str(cached_file), dfile=name, doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
            except py_compile.PyCompileError:
                continue  # not this Python's syntax (a library's file for another version): never imported here
            archive.writestr(cached, cached_file.read_bytes())
            added += 1
    return added


def runtimes(template: Path) -> set[str]:
    """The `Runtime` of every function in Chalice's packaged template (sam.yaml or sam.json)."""
    return set(re.findall(r"""["']?Runtime["']?\s*:\s*["']?(python\d+\.\d+)""", template.read_text()))


def foreign_extensions(package: Path, runtime: str = RUNTIME) -> list[str]:
    """The compiled extensions in `package` built for another Python than `runtime` (abi3 loads on any)."""
    own = f"cpython-{runtime.removeprefix('python').replace('.', '')}-"
    with zipfile.ZipFile(package) as archive:
        return sorted(name for name in archive.namelist()
                      if name.endswith(".so") and ".abi3." not in name and own not in name.rsplit("/", 1)[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="chalice package's output directory")
    args = parser.parse_args(argv)
    template = next(p for p in (args.out / "sam.yaml", args.out / "sam.json") if p.exists())
    found = runtimes(template)
    if found != {RUNTIME}:
        print(f"the functions run {sorted(found)}, but this is {RUNTIME}: its bytecode would not load there",
              file=sys.stderr)
        return 1
    foreign = foreign_extensions(args.out / "deployment.zip")
    if foreign:
        print(f"built for another Python than {RUNTIME}, they would not load there: {', '.join(foreign)}", file=sys.stderr)
        return 1
    added = add_bytecode(args.out / "deployment.zip")
    print(f"bytecode for {added} modules ({RUNTIME}) added to {args.out / 'deployment.zip'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
