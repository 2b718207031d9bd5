"""moto's CloudFormation for the deploy test: the data stack as moto can hold it, and the calls moto saw.

What moto's CloudFormation (5.2) does with `infra/data.yaml` as it is: a resource
type it has no model for (AWS::RDS::DBCluster, DBClusterParameterGroup, DBProxy,
DBProxyTargetGroup, AWS::SecretsManager::Secret, AWS::EC2::VPCCidrBlock,
AWS::ApiGateway::Account) is skipped with a warning, and then anything that
refers to it (the Aurora instance, the subnets' `!GetAtt Vpc.Ipv6CidrBlocks`, the
outputs) fails inside moto: CreateChangeSet answers 500. So `data_stack_for_moto`
writes the template moto is given: data.yaml's own Parameters, Conditions and
Outputs, and every resource moto has a model for that refers to no resource it
lacks; what refers to a missing resource in an output becomes a string naming it
(`<stack>.DatabaseProxy.Endpoint`), so an output keeps data.yaml's conditions
(`AppDatabaseHost` still follows EnableProxy, `UseDualStackEndpoints`
EnableInterfaceEndpoints) and says it stands in for what moto cannot create.

moto's ExecuteChangeSet (all `aws cloudformation deploy` uses) applies the
resources but neither rebuilds the stack's outputs (a stack created through a
change set has none) nor keeps an update's parameters; CloudFormation does both,
and the deploy reads them back, so `change_sets_as_cloudformation_executes_them`
adds those two steps to the in-process server's backend.

CloudFormation refuses to delete a stack while another imports one of its exports, and RDS a cluster with
deletion protection (the stack is left DELETE_FAILED either way); moto does neither (it drops exports in use, and
has no cluster to protect), so `deletions_refused_as_aws_refuses_them` stands in for both in the teardown's test.

`Recording` reads moto's own request log (its recorder, `/moto-api/recorder/`):
each request as (service, operation) in the order the server took them.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from tests.support import cfn


def _names_referred(node: Any) -> set[str]:
    """The logical names a piece of template refers to (Ref, GetAtt, ${Name} in Sub), pseudo parameters included."""
    if isinstance(node, list):
        return set().union(*map(_names_referred, node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found: set[str] = set()
    for key, value in node.items():
        if key == "Ref" and isinstance(value, str):
            found.add(value)
        elif key == "Fn::GetAtt":
            found.add(value[0] if isinstance(value, list) else value.split(".", 1)[0])
        elif key == "Fn::Sub":
            text = value[0] if isinstance(value, list) else value
            found |= {name.split(".", 1)[0] for name in re.findall(r"\$\{([^}!]+)\}", text)}
            found |= _names_referred(value[1]) if isinstance(value, list) else set()
        else:
            found |= _names_referred(value)
    return found


def _stand_in(node: Any, missing: set[str]) -> Any:
    """`node` with each Ref or GetAtt of a resource moto lacks replaced by a string that names it."""
    if isinstance(node, list):
        return [_stand_in(item, missing) for item in node]
    if not isinstance(node, dict):
        return node
    if set(node) == {"Ref"} and node["Ref"] in missing:
        return {"Fn::Sub": "${AWS::StackName}." + node["Ref"]}
    if set(node) == {"Fn::GetAtt"}:
        name, attribute = node["Fn::GetAtt"] if isinstance(node["Fn::GetAtt"], list) else node["Fn::GetAtt"].split(".", 1)
        if name in missing:
            return {"Fn::Sub": f"${{AWS::StackName}}.{name}.{attribute}"}
    return {key: _stand_in(value, missing) for key, value in node.items()}


def data_stack_for_moto(out: Path) -> Path:
    """infra/data.yaml as moto's CloudFormation can create and update it (the module's docstring), written to `out`."""
    from moto.cloudformation.parsing import resource_class_from_type

    template = cfn.load(cfn.DATA_TEMPLATE)
    resources = template["Resources"]
    missing = {name for name, spec in resources.items() if resource_class_from_type(spec["Type"]) is None}
    while True:  # a resource that refers to a missing one cannot be made either
        refers = {name for name, spec in resources.items() if name not in missing
                  and (_names_referred(spec) | set(spec.get("DependsOn", []))) & missing}
        if not refers:
            break
        missing |= refers
    template["Resources"] = {name: spec for name, spec in resources.items() if name not in missing}
    template["Outputs"] = {name: _stand_in(spec, missing) for name, spec in template["Outputs"].items()}
    # YAML two spaces a level, as infra/deploy.py reads a template's Parameters
    out.write_text(yaml.safe_dump(json.loads(json.dumps(template)), sort_keys=False, indent=2))
    return out


def change_sets_as_cloudformation_executes_them(patch: pytest.MonkeyPatch) -> None:
    """After moto executes a change set, the stack has its outputs and parameters (the module's docstring)."""
    from moto.cloudformation.models import CloudFormationBackend

    execute = CloudFormationBackend.execute_change_set

    def and_outputs(self: CloudFormationBackend, change_set_name: str, stack_name: str | None = None) -> None:
        execute(self, change_set_name, stack_name)
        change_set = self.change_sets.get(change_set_name) or next(
            c for c in self.change_sets.values() if c.change_set_name == change_set_name and c.stack_name == stack_name)
        stack = self.stacks[change_set.stack_id]
        stack.parameters = change_set.parameters
        stack._parse_template()
        stack.output_map = stack._create_output_map()

    patch.setattr(CloudFormationBackend, "execute_change_set", and_outputs)


def _parameter(stack: Any, name: str) -> str | None:
    """A moto stack's parameter as CloudFormation resolves it: the value given, else the template's default."""
    declared = stack.template_dict.get("Parameters", {}).get(name)
    return stack.parameters.get(name, declared.get("Default") if declared else None)


def _imported(stack: Any) -> set[str]:
    """The export names a moto stack's template imports, `${Parameter}`s in them resolved."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "Fn::ImportValue" in node:
                name = node["Fn::ImportValue"]
                text = name["Fn::Sub"] if isinstance(name, dict) else name
                found.add(re.sub(r"\$\{(\w+)\}", lambda m: str(_parameter(stack, m.group(1))), text))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(stack.template_dict.get("Resources", {}))
    return found


def deletions_refused_as_aws_refuses_them(patch: pytest.MonkeyPatch) -> None:
    """DeleteStack leaves a stack DELETE_FAILED while another stack imports one of its exports, or while its
    DeletionProtection parameter (the data stack's cluster's) is "true" (the module's docstring)."""
    from moto.cloudformation.models import CloudFormationBackend

    delete = CloudFormationBackend.delete_stack

    def as_aws(self: CloudFormationBackend, name_or_stack_id: str) -> None:
        stack = next((s for s in self.stacks.values() if name_or_stack_id in (s.stack_id, s.name)), None)
        if stack is not None:
            importers = [other for other in self.stacks.values() if other is not stack]
            in_use = {export.name for export in stack.exports} & set().union(*map(_imported, importers))
            if in_use or _parameter(stack, "DeletionProtection") == "true":
                stack.status = "DELETE_FAILED"
                return
        delete(self, name_or_stack_id)

    patch.setattr(CloudFormationBackend, "delete_stack", as_aws)


class Recording:
    """moto's recorder, writing to `path`, started now: `calls()` are the requests it took since, in order."""

    def __init__(self, url: str, path: Path):
        from moto.moto_api import recorder

        recorder._location = str(path)  # its only setting besides MOTO_RECORDER_FILEPATH, read at import
        self.url, self.path = url, path
        self._post("reset-recording")
        self._post("start-recording")

    def _post(self, action: str) -> None:
        request = urllib.request.Request(f"{self.url}/moto-api/recorder/{action}", data=b"", method="POST")
        urllib.request.urlopen(request, timeout=10).close()  # the loopback moto server

    def stop(self) -> None:
        self._post("stop-recording")

    def requests(self) -> list[dict[str, Any]]:
        """Each request: service (from its signature), operation, and its parameters (a query-protocol body's)."""
        taken: list[dict[str, Any]] = []
        for entry in _entries(self.path.read_text()):
            headers = {k.lower(): v for k, v in entry["headers"].items()}
            scope = re.search(r"Credential=[^/]+/[^/]+/([^/]+)/([^/]+)/", headers.get("authorization", ""))
            region, service = scope.groups() if scope else ("?", "?")
            body = base64.b64decode(entry["body"]) if entry["body_encoded"] else (entry["body"] or "").encode()
            if service == "s3":  # REST: the method, the path and the sub-resource say what it is
                split = urlsplit(entry["url"])
                operation = f"{entry['method']} {split.path}" + (f"?{split.query.split('=')[0]}" if split.query else "")
                taken.append({"service": "s3", "region": region, "operation": operation, "params": {}})
                continue
            params = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
            taken.append({"service": service, "region": region, "operation": params.get("Action", "?"), "params": params})
        return taken


def _entries(text: str) -> Iterator[dict[str, Any]]:
    """The recorder's entries, one JSON object each. Read as a stream, not a line each: moto writes an entry and its
    newline in two writes, unlocked, so two requests taken at once (the CLI's parallel parts of an S3 upload) can
    leave two entries on one line and an empty one after."""
    decoder, at = json.JSONDecoder(), 0
    while (at := _SPACE.match(text, at).end()) < len(text):  # type: ignore[union-attr]  # \s* always matches
        entry, at = decoder.raw_decode(text, at)
        yield entry


_SPACE = re.compile(r"\s*")
