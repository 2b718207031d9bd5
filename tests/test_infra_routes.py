"""No NAT must not mean no egress: every outbound call docs/deploy.md lists has its route in the
default templates (no NAT, no interface endpoints, no proxy)."""

import re

import boto3
import pytest

from tests.support import cfn

DEPLOY_DOC = cfn.ROOT / "docs" / "deploy.md"
# What the functions must reach (the AWS issue's list); each must have a row of its own.
REQUIRED_CALLS = ("database", "Secrets Manager", "SNS", "Lambda invoke", "EventBridge (", "EventBridge Scheduler",
                  "S3", "JWKS", "game bridge", "webhooks", "Discord and Slack")
# AWS APIs called from inside the VPC, by the boto3 service name the row's call uses.
AWS_APIS = {"Secrets Manager": "secretsmanager", "SNS": "sns", "Lambda invoke": "lambda",
            "EventBridge Scheduler": "scheduler", "EventBridge (": "events"}
APP_PARAMETERS = {"GameBridgeUrl": "https://bridge.example.org", "JwtJwksUrl": "https://id.example.org/jwks.json",
                  "JwtIssuer": "https://id.example.org", "AppDatabaseHost": "events-data.cluster-abc.eu-west-1.rds.amazonaws.com",
                  "TickName": "event-run-engine-prod-tick"}


def outbound_calls() -> list[dict]:
    text = DEPLOY_DOC.read_text()
    table = text.split("<!-- outbound-calls:start -->")[1].split("<!-- outbound-calls:end -->")[0]
    rows = [line for line in table.strip().splitlines()[2:] if line.startswith("|")]
    calls = []
    for row in rows:
        call, source, route, cost = (cell.strip() for cell in row.strip("|").split("|"))
        route_name = re.match(r"`([a-z0-9-]+)`", route)
        assert route_name, f"the route of {call!r} must start with a route name in backticks"
        calls.append({"call": call, "from": source, "route": route_name.group(1), "cost": cost})
    return calls


@pytest.fixture(scope="module")
def data():
    return cfn.render(cfn.load(cfn.DATA_TEMPLATE))


@pytest.fixture(scope="module")
def app():
    return cfn.render(cfn.packaged_app(), APP_PARAMETERS)


def resources(template):
    return template["Resources"]


def vpc_local(data, app, call):
    """Functions reach Aurora in the VPC: the database's group admits the functions' group on 3306."""
    (ingress,) = resources(data)["DatabaseSecurityGroup"]["Properties"]["SecurityGroupIngress"]
    assert (ingress["FromPort"], ingress["ToPort"]) == (3306, 3306)
    assert ingress["SourceSecurityGroupId"] == {"Ref": "FunctionSecurityGroup"}
    assert data["Outputs"]["FunctionSecurityGroupId"]["Value"] == {"Ref": "FunctionSecurityGroup"}
    assert resources(data)["DatabaseCluster"]["Properties"]["VpcSecurityGroupIds"] == [{"Ref": "DatabaseSecurityGroup"}]


def ipv6_egress(data, app, call):
    """::/0 from both private subnets to the egress-only gateway, the functions allowed to use it, and
    boto3 told to use the dual-stack name of each AWS API the call makes."""
    route = resources(data)["Ipv6EgressRoute"]["Properties"]
    assert route["DestinationIpv6CidrBlock"] == "::/0"
    assert route["EgressOnlyInternetGatewayId"] == {"Ref": "EgressOnlyGateway"}
    associated = {a["Properties"]["SubnetId"]["Ref"] for a in cfn.of_type(data, "AWS::EC2::SubnetRouteTableAssociation").values()
                  if a["Properties"]["RouteTableId"] == route["RouteTableId"]}
    assert associated == {"PrivateSubnetA", "PrivateSubnetB"}
    for subnet in associated:
        assert "Ipv6CidrBlock" in resources(data)[subnet]["Properties"]
    egress = resources(data)["FunctionSecurityGroup"]["Properties"]["SecurityGroupEgress"]
    assert any(rule.get("CidrIpv6") == "::/0" for rule in egress)
    for function in ("APIHandler", "Tick", "ChatPress", "Migrate"):
        assert resources(app)[function]["Properties"]["VpcConfig"]["Ipv6AllowedForDualStack"] is True
    service = next((name for key, name in AWS_APIS.items() if call["call"].startswith(key)), None)
    if service:
        assert data["Outputs"]["UseDualStackEndpoints"]["Value"] == "true"
        # make deploy copies the output into the app stack's parameter of that name (default "true")
        assert app["Parameters"]["UseDualStackEndpoints"]["Default"] == "true"
        for function in ("APIHandler", "Tick", "ChatPress", "Migrate"):
            assert resources(app)[function]["Properties"]["Environment"]["Variables"]["AWS_USE_DUALSTACK_ENDPOINT"] == {
                "Ref": "UseDualStackEndpoints"}
        client = boto3.session.Session(aws_access_key_id="x", aws_secret_access_key="x").client(service, region_name=cfn.REGION)
        assert client.meta.endpoint_url == f"https://{service}.{cfn.REGION}.api.aws", "boto3 must pick the dual-stack name"


def s3_gateway_endpoint(data, app, call):
    endpoint = resources(data)["S3GatewayEndpoint"]["Properties"]
    assert endpoint["VpcEndpointType"] == "Gateway"
    assert endpoint["RouteTableIds"] == [{"Ref": "PrivateRouteTable"}]


def lambda_service(data, app, call):
    """Carried by Lambda and API Gateway themselves, outside the functions' network interfaces."""
    assert "VPC" not in call["from"]


ROUTES = {"vpc-local": vpc_local, "ipv6-egress": ipv6_egress, "s3-gateway-endpoint": s3_gateway_endpoint,
          "lambda-service": lambda_service}


def test_the_topology_lists_every_call_the_functions_make_with_a_known_route_and_a_cost():
    calls = outbound_calls()
    for required in REQUIRED_CALLS:
        assert [c for c in calls if c["call"].startswith(required) or required in c["call"]], f"no row for {required}"
    for call in calls:
        assert call["route"] in ROUTES, call
        assert call["cost"], call


@pytest.mark.parametrize("call", outbound_calls(), ids=lambda c: c["call"].split(" (")[0])
@pytest.mark.packaging
def test_the_default_deployment_routes_the_call(data, app, call, monkeypatch):
    monkeypatch.setenv("AWS_USE_DUALSTACK_ENDPOINT", "true")  # what the template sets by default
    ROUTES[call["route"]](data, app, call)


def test_the_default_deployment_has_no_ipv4_way_out(data):
    routes = cfn.of_type(data, "AWS::EC2::Route").values()
    assert [r["Properties"].get("DestinationCidrBlock") for r in routes if "DestinationCidrBlock" in r["Properties"]] == []
