"""Resource quantities read and written as apimachinery's ``resource.Quantity`` (pure)."""

from __future__ import annotations

import pytest

from anyop.testing.fake.quantities import (
    QuantityError,
    canonical_quantity,
    milli_rounded,
    quantity_value,
)

FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("100m", "100m"), ("0.5", "500m"), (0.5, "500m"), ("1.5", "1500m"), ("1000", "1k"),
        ("1000m", "1"), ("2000000", "2M"), ("1024", "1024"), ("+1", "1"), ("01", "1"),
        ("-1", "-1"), ("0", "0"), ("0.000", "0"), (1000.0, "1k"), (3, "3"),
        ("1Gi", "1Gi"), ("1.5Gi", "1536Mi"), ("0.5Gi", "512Mi"), ("1536Ki", "1536Ki"),
        ("0.1Ki", "102400m"), ("512Ki", "512Ki"), ("1e3", "1e3"), ("1E-2", "10e-3"),
        ("0.0000000001", "1n"), ("1.5e3", "1500"),
    ],
)  # fmt: skip
def test_quantities_are_written_in_canonical_form(given: object, canonical: str) -> None:
    assert canonical_quantity(given) == canonical


@pytest.mark.parametrize(
    ("given", "error"),
    [("1.5.5", FORMAT), ("abc", FORMAT), ("1Q", FORMAT), ("", FORMAT), (True, FORMAT),
     ("12e", "unable to parse quantity's suffix"), ("1ki", "unable to parse quantity's suffix")],
)  # fmt: skip
def test_what_is_not_a_quantity_is_refused_with_apimachinerys_message(
    given: object, error: str
) -> None:
    with pytest.raises(QuantityError) as caught:
        canonical_quantity(given)
    assert str(caught.value) == error


def test_values_compare_across_formats() -> None:
    assert quantity_value("1Gi") > quantity_value("1G")
    assert quantity_value("500m") == quantity_value("0.5")


def test_resource_lists_round_up_to_milli_units() -> None:
    assert milli_rounded("1n") == "1m"
    assert milli_rounded("1500u") == "2m"
    assert milli_rounded("500m") == "500m"
