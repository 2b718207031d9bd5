"""`make package`'s stamp: the package's migrations, summed up, written into the template's `MigrateSchema`.

CloudFormation invokes a custom resource only when its properties change, so the
app stack's `MigrateSchema` carries a value that changes whenever the shipped
migrations do (their count, the newest, and a hash of every id, so one added
anywhere in the order counts): a package that brings a migration updates the
resource (the migrate function runs before the new API and tick, which depend
on it), and a package without one leaves it alone. The migrations are the ones
the code itself requires (`chalicelib.schema_version.needed`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PLACEHOLDER = "SCHEMA-OF-THIS-PACKAGE"


def stamp(template: Path) -> str:
    """Replace the placeholder in `template` (once) with the migrations' stamp; return the stamp."""
    text = template.read_text()
    if text.count(PLACEHOLDER) != 1:
        raise ValueError(f"{template} must hold {PLACEHOLDER} exactly once (MigrateSchema's Schema)")
    from chalicelib import schema_version

    schema = schema_version.stamp()
    template.write_text(text.replace(PLACEHOLDER, schema))
    return schema


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="chalice package's output directory")
    args = parser.parse_args(argv)
    template = next(p for p in (args.out / "sam.yaml", args.out / "sam.json") if p.exists())
    print(f"MigrateSchema: {stamp(template)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
