"""docs/testing.md quotes the FakeCluster example exactly as the test suite runs it."""

import re
from pathlib import Path

ROOT = Path(__file__).parents[4]


def test_the_testing_guide_quotes_the_fake_cluster_example_as_it_runs() -> None:
    example = (ROOT / "tests/unit/testing/fake/test_docs_fake_example.py").read_text()
    markdown = (ROOT / "docs/testing.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```$", markdown, flags=re.DOTALL | re.MULTILINE)
    assert example in blocks
