"""Settings: Kopf's names and defaults, environment overrides, and errors naming the culprit."""

from __future__ import annotations

import pydantic
import pytest

from anyop import OperatorSettings
from anyop.errors import ConfigError
from anyop.settings import settings_from_environ


def test_kopfs_defaults() -> None:
    settings = OperatorSettings()
    assert settings.posting.level == 20
    assert settings.watching.server_timeout is None
    assert settings.batching.idle_timeout == 5.0  # Kopf's deprecated alias of queueing
    assert settings.networking.error_backoffs == (1, 1, 2, 3, 5, 8, 13, 21)
    assert settings.persistence.finalizer == "anyop.dev/finalizer"
    assert settings.background.cancellation_polling == 60


def test_environment_variables_override_defaults_with_types_converted() -> None:
    settings = settings_from_environ({
        "ANYOP_WATCHING__SERVER_TIMEOUT": "120",
        "ANYOP_NETWORKING__ERROR_BACKOFFS": "[1, 2, 5]",
        "ANYOP_POSTING__ENABLED": "false",
        "ANYOP_SERVER__METRICS_ENDPOINT": "http://0.0.0.0:9090/metrics",
        "UNRELATED": "x",
    })  # fmt: skip
    assert settings.watching.server_timeout == 120.0
    assert settings.networking.error_backoffs == (1, 2, 5)
    assert settings.posting.enabled is False
    assert settings.server.metrics_endpoint == "http://0.0.0.0:9090/metrics"


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("ANYOP_WATCHING__SERVER_TIMEOUT", "soon"),
        ("ANYOP_QUEUEING__WORKER_LIMIT", "0"),
        ("ANYOP_PEERING__LIFETIME", "-5"),
        ("ANYOP_NETWORKING__NO_SUCH_FIELD", "1"),
    ],
)
def test_a_bad_environment_value_is_a_config_error_naming_the_variable(name: str, raw: str) -> None:
    with pytest.raises(ConfigError, match=name):
        settings_from_environ({name: raw})


def test_a_bad_value_set_in_code_is_rejected_naming_the_field() -> None:
    settings = OperatorSettings()
    with pytest.raises(pydantic.ValidationError, match="worker_limit"):
        settings.queueing.worker_limit = 0
    with pytest.raises(pydantic.ValidationError, match="server_timeout"):
        settings.watching.server_timeout = "later"  # type: ignore[assignment]
