"""Finished experiments: before/after A/B runs and one-off calibrations whose figures are in
BENCHMARKS.md, docs/latency.md, docs/search.md, docs/embeddings.md and docs/reliability.md.

Kept so those figures can be rerun (``python -m bench.archive.<name>`` or
``.venv/bin/python bench/archive/<name>.py``), not maintained as part of the suite: they may need
adjusting to today's code before they run again. The suite is listed in bench/README.md."""
