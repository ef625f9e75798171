"""What may be logged of a body: a Secret's values never, its keys and everything else yes."""

from __future__ import annotations

from anyop.handlers.progression import in_progress_message
from anyop.logs import REDACTED, redacted

SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {
        "name": "s1",
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": '{"stringData": {"a": "hush"}}',
            "team": "blue",
        },
    },
    "data": {"password": "aHVzaA=="},
    "stringData": {"token": "hush"},
}


def test_a_secrets_values_and_last_applied_copy_are_hidden_but_its_keys_are_not() -> None:
    shown = redacted(SECRET)
    assert shown["data"] == {"password": REDACTED}
    assert shown["stringData"] == {"token": REDACTED}
    annotations = shown["metadata"]["annotations"]
    assert annotations["kubectl.kubernetes.io/last-applied-configuration"] == REDACTED
    assert annotations["team"] == "blue"
    assert SECRET["data"] == {"password": "aHVzaA=="}  # the body itself is untouched


def test_other_objects_are_shown_as_they_are() -> None:
    config_map = {**SECRET, "kind": "ConfigMap"}
    assert redacted(config_map) == config_map


def test_the_in_progress_debug_message_shows_no_secret_value() -> None:
    message = in_progress_message("create", SECRET)
    assert "hush" not in message
    assert "aHVzaA==" not in message
    assert "password" in message
