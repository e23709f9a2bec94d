# Issue #22's JSON Schema suite end to end: every schema of tests/grammar/data/json_schemas.jsonl
# constrains a request to sgl-server, sampled at temperature 1 (so the grammar alone must make
# the output valid), on stories260K with its sentencepiece tokenizer and on the tiny random Qwen3
# with the byte-level Qwen3 tokenizer. Every output that ends (EOS where the grammar can end)
# must parse and validate with Python's jsonschema; an output cut by max_new_tokens must be a
# prefix the grammar allowed, which the C++ suites check, so here it only counts.
import json
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import TESTDATA, Server, require

try:
    import jsonschema
except ImportError:
    jsonschema = None

SUITE = Path(__file__).resolve().parents[1] / "grammar" / "data" / "json_schemas.jsonl"


def schemas():
    return [json.loads(line) for line in SUITE.read_text().splitlines() if line.strip()]


def run_suite(server, cases, prompt, max_new_tokens):
    def one(case):
        body = {**prompt, "sampling_params": {
            "temperature": 1.0, "max_new_tokens": max_new_tokens,
            "sampling_seed": zlib.crc32(case["id"].encode()) % 100000, "json_schema": json.dumps(case["schema"])}}
        reply = server.post("/generate", body, timeout=300)
        return case, reply.status_code, reply.json()

    with ThreadPoolExecutor(32) as pool:
        results = list(pool.map(one, cases))
    complete = 0
    for case, status, out in results:
        assert status == 200, (case["id"], out)
        if out["meta_info"]["finish_reason"]["type"] != "stop":
            continue
        complete += 1
        try:
            value = json.loads(out["text"])
        except json.JSONDecodeError as e:
            pytest.fail(f"{case['id']}: not JSON ({e}): {out['text']!r}")
        try:
            validator = jsonschema.Draft202012Validator
            validator(case["schema"], format_checker=validator.FORMAT_CHECKER).validate(value)
        except jsonschema.ValidationError as e:
            pytest.fail(f"{case['id']}: {e.message}: {out['text']!r}")
    return complete


def test_suite_is_large_enough():
    assert len(schemas()) >= 300


def test_stories260k_outputs_validate(tmp_path_factory):
    require(jsonschema is not None, "the jsonschema package is not installed")
    server = Server(tmp_path_factory.mktemp("suite"))
    try:
        cases = schemas()
        # Its context is 512 tokens; sentencepiece spells much of JSON a character a token.
        complete = run_suite(server, cases, {"text": "Once upon a time"}, 500)
        print(f"stories260K: {complete}/{len(cases)} outputs complete and valid")
        # Unbounded strings and arrays may outlast the context: at least a third must end.
        assert complete >= len(cases) // 3, f"only {complete} of {len(cases)} ended"
    finally:
        assert server.stop() == 0


def test_tiny_qwen3_outputs_validate(tmp_path_factory):
    require(jsonschema is not None, "the jsonschema package is not installed")
    # The random model's 1000 rows take the Qwen3 tokenizer's first 1000 ids (bytes and common
    # merges); the server warns that the tokenizer is larger and masks the ids past the model.
    server = Server(tmp_path_factory.mktemp("suite_qwen3"), "--tokenizer-path",
                    str(TESTDATA / "tokenizers" / "qwen3"),
                    model=TESTDATA / "models" / "tiny-qwen3")
    try:
        cases = schemas()[::3]
        complete = run_suite(server, cases, {"input_ids": [1, 100, 200, 300]}, 384)
        print(f"tiny-qwen3: {complete}/{len(cases)} outputs complete and valid")
        assert complete >= len(cases) // 2, f"only {complete} of {len(cases)} ended"
    finally:
        assert server.stop() == 0
