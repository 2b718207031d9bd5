"""Secrets Manager reads, cached by Powertools between invocations."""

from __future__ import annotations

from aws_lambda_powertools.utilities import parameters

from .db import ConnectionParams


def database_params(secret_arn: str) -> ConnectionParams:
    return ConnectionParams.from_secret(parameters.get_secret(secret_arn, transform="json"))


def plain_secret(secret_arn: str) -> str:
    return parameters.get_secret(secret_arn)
