# SGLang's --enable-nan-detection on a stories260K copy whose token 5 embedding row is NaN: the
# tied LM head then gives token 5 a NaN logit at every position (no prompt holds token 5, so the
# hidden states stay finite). With the flag the NaN logits are sampled as -1e5 and a warning is
# logged: greedy decoding follows the golden ids, every logprob is finite and sampling never
# draws token 5. Without it the same rows' logprobs are NaN (null in JSON).
import json
import math
import shutil
import struct

import pytest

from conftest import MODEL, Server, golden, raise_fd_limit

NAN_TOKEN = 5
NEW = 12


def nan_model(out):
    """stories260K with embed_tokens row NAN_TOKEN set to NaN, in `out`."""
    out.mkdir()
    for f in MODEL.iterdir():
        if f.name != "model.safetensors":
            shutil.copy(f, out / f.name)
    raw = bytearray((MODEL / "model.safetensors").read_bytes())
    n = struct.unpack("<Q", raw[:8])[0]
    entry = json.loads(raw[8:8 + n])["model.embed_tokens.weight"]
    assert entry["dtype"] == "F32"
    hidden = entry["shape"][1]
    begin = 8 + n + entry["data_offsets"][0] + NAN_TOKEN * hidden * 4
    raw[begin:begin + hidden * 4] = struct.pack("<f", math.nan) * hidden
    (out / "model.safetensors").write_bytes(bytes(raw))
    return out


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    raise_fd_limit()
    model = nan_model(tmp_path_factory.mktemp("nan") / "model")
    detecting = Server(tmp_path_factory.mktemp("detect"), "--enable-nan-detection", model=model)
    plain = Server(tmp_path_factory.mktemp("plain"), model=model)
    yield detecting, plain
    for srv in (detecting, plain):
        assert srv.alive(), "the server died: " + srv.log()
        assert srv.stop() == 0, srv.log()


def generate(server, ids, **sampling):
    r = server.post("/generate", {"input_ids": ids, "return_logprob": True, "sampling_params": {
        "max_new_tokens": NEW, "ignore_eos": True, **sampling}})
    assert r.status_code == 200, r.text
    return r.json()


def test_nan_logits_are_sampled_as_minus_1e5(servers):
    detecting, plain = servers
    for case in golden()["cases"][:3]:
        assert NAN_TOKEN not in case["prompt_ids"]
        out = generate(detecting, case["prompt_ids"], temperature=0)
        assert out["output_ids"] == case["greedy_ids"][:NEW]
        logprobs = [lp for lp, _, _ in out["meta_info"]["output_token_logprobs"]]
        assert all(lp is not None and math.isfinite(lp) and lp <= 0 for lp in logprobs), logprobs
        # Without the flag the NaN reaches the log-softmax.
        unchecked = generate(plain, case["prompt_ids"], temperature=0)
        assert all(lp is None for lp, _, _ in unchecked["meta_info"]["output_token_logprobs"])
    sampled = generate(detecting, golden()["cases"][0]["prompt_ids"], temperature=1.5,
                       sampling_seed=3, max_new_tokens=64)
    assert NAN_TOKEN not in sampled["output_ids"]
    assert "Detected errors during sampling! NaN in the logits" in detecting.log()
    assert "NaN in the logits" not in plain.log()
