"""The API's throttles are what docs/deploy.md says they are. API Gateway applies a REST stage's default method
throttle (`/*`, `*`: ApiThrottleRate) to each method on its own; there is no stage-wide rate without API keys. So
the docs and the parameter give it per method, and name what bounds the stage as a whole (the API's reserved
concurrency)."""

from tests.support import cfn

DEPLOY_DOC = cfn.ROOT / "docs" / "deploy.md"


def test_the_stage_throttle_is_documented_per_method_as_api_gateway_applies_it():
    """docs/deploy.md said "the stage as a whole, ApiThrottleRate 50 requests/s … the whole stage at 50/s, whatever
    the flood's size": true of no REST API setting. Each method gets the rate; the stage is bounded by the
    API's reserved concurrency."""
    app = cfn.load(cfn.APP_TEMPLATE)
    settings = app["Resources"]["RestAPI"]["Properties"]["MethodSettings"]
    [stage_default] = [m for m in settings if (m["ResourcePath"], m["HttpMethod"]) == ("/*", "*")]
    assert stage_default["ThrottlingRateLimit"] == {"Ref": "ApiThrottleRate"}
    assert app["Resources"]["APIHandler"]["Properties"]["ReservedConcurrentExecutions"] == {"Ref": "ApiReservedConcurrency"}

    section = DEPLOY_DOC.read_text().split("## The API's throttles and access log")[1].split("\n## ")[0]
    for wrong in ("the stage as a whole, `ApiThrottleRate`", "the whole stage at 50/s", "stage-wide rate of"):
        assert wrong not in section
    assert "**each method**" in section and "What bounds the stage as a whole is `ApiReservedConcurrency`" in section
    described = " ".join(app["Parameters"]["ApiThrottleRate"]["Description"].split())
    assert "each of the stage's methods" in described and "in all" not in described
