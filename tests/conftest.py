"""Shared pytest set-up: how nbval compares notebook outputs."""

# Widget views carry a random model_id on every run; what they show is tested
# in-process (tests/test_lab.py) and in a real browser instead.
NBVAL_SKIPPED_MIMETYPES = ("application/vnd.jupyter.widget-view+json", "application/javascript")


def pytest_collectstart(collector):
    if getattr(collector, "path", None) is not None and collector.path.suffix == ".ipynb":
        collector.skip_compare += NBVAL_SKIPPED_MIMETYPES
