"""The console's modules import one another without a circle (tests/test_homes.py keeps chalicelib's Python so).

A circle between ES modules loads, but one of the pair runs before the other's bindings exist, so which
function is still undefined depends on which page the person opened first.
"""

import re
from pathlib import Path

from tests.support.graphs import circles as import_circles

STATIC = Path(__file__).resolve().parent.parent / "chalicelib" / "console" / "static"

COMMENTS = re.compile(r"/\*.*?\*/|^\s*//.*?$", re.DOTALL | re.MULTILINE)  # JSDoc's import('…') types load nothing
# `import {…} from './x.js'` (over several lines too), `export … from`, a bare `import './x.js'` and `import('./x.js')`.
IMPORTS = re.compile(r"^(?:import|export)\b[^;]*?\bfrom\s*['\"]\./([^'\"]+)['\"]|^import\s*['\"]\./([^'\"]+)['\"]"
                     r"|\bimport\(\s*['\"]\./([^'\"]+)['\"]", re.MULTILINE)


def imports_of(source: str) -> set[str]:
    return {next(name for name in match.groups() if name) for match in IMPORTS.finditer(COMMENTS.sub("", source))}


def circles(folder: Path) -> list[str]:
    return [" -> ".join(trail) for trail in import_circles({p.name: imports_of(p.read_text()) for p in sorted(folder.glob("*.js"))})]


def test_no_import_circle_among_the_consoles_modules():
    assert len(list(STATIC.glob("*.js"))) > 10 and "ui.js" in imports_of((STATIC / "console.js").read_text())
    assert circles(STATIC) == []


def test_a_circle_is_found_however_the_import_is_written(tmp_path):
    (tmp_path / "a.js").write_text("// @ts-check\nimport {\n  b,\n} from './b.js';\n/** @type {import('./c.js').T} */\n")
    (tmp_path / "b.js").write_text("export { a } from './a.js';\n")
    (tmp_path / "c.js").write_text("const later = () => import('./d.js');\n")
    (tmp_path / "d.js").write_text("import './c.js';\n")
    assert circles(tmp_path) == ["a.js -> b.js -> a.js", "c.js -> d.js -> c.js"]
