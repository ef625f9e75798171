"""docs/testing.md quotes its example exactly as the test suite runs it."""

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", markdown, flags=re.DOTALL | re.MULTILINE)


def test_the_testing_guide_quotes_the_respx_example_as_it_runs() -> None:
    example = (ROOT / "tests/unit/test_docs_respx_example.py").read_text()
    assert example in python_blocks((ROOT / "docs/testing.md").read_text())
