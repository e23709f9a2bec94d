"""The JSON Schema suite checked by Python's jsonschema (Draft 2020-12, with format checks).

Runs grammar_schema_suite_test (path in $SGL_GRAMMAR_SUITE_BIN, set by ctest) with
SGL_GRAMMAR_WALKS_OUT so it writes the texts its random walks of the matcher produced, then
validates every text against its schema: the grammar alone must make them valid.
"""
import json
import os
import pathlib
import subprocess
import tempfile

import pytest

jsonschema = pytest.importorskip("jsonschema")

SUITE = pathlib.Path(__file__).parent / "data" / "json_schemas.jsonl"


def load_suite():
    with open(SUITE, encoding="utf-8") as f:
        return {row["id"]: row["schema"] for row in map(json.loads, f) if row}


def test_suite_schemas_are_valid_draft_2020_12():
    suite = load_suite()
    assert len(suite) >= 300
    for schema in suite.values():
        jsonschema.Draft202012Validator.check_schema(schema)


def test_walks_validate_with_jsonschema():
    binary = os.environ.get("SGL_GRAMMAR_SUITE_BIN")
    if not binary or not os.path.exists(binary):
        pytest.skip("SGL_GRAMMAR_SUITE_BIN not set (run through ctest)")
    suite = load_suite()
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "walks.jsonl"
        env = dict(os.environ, SGL_GRAMMAR_WALKS_OUT=str(out))
        subprocess.run([binary, "--gtest_filter=grammar_schema_suite.*Walks*"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        text = out.read_text(encoding="utf-8")
        walks = [json.loads(line) for line in text.split("\n") if line]  # not splitlines: U+2028
    assert len(walks) >= 1300
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    failures = []
    for walk in walks:
        schema = suite[walk["id"]]
        validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
        errors = list(validator.iter_errors(json.loads(walk["text"])))
        if errors:
            failures.append(f"{walk['id']}: {walk['text']!r}: {errors[0].message}")
    assert not failures, f"{len(failures)} of {len(walks)} invalid:\n" + "\n".join(failures[:20])
