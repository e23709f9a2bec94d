# The default model end to end: sgl-server on SmolLM2-135M-Instruct (the GGUF that
# scripts/fetch_default_model.sh caches) answers a chat message sensibly through the official
# openai client. Skipped when the GGUF has not been fetched.
import os
from pathlib import Path

import pytest

from conftest import Server

openai = pytest.importorskip("openai")


def default_model_path():
    env = os.environ.get("SGL_SMOLLM2_GGUF")
    if env:
        return Path(env)
    cache = os.environ.get("SGL_CACHE_DIR", str(Path.home() / ".cache" / "sgl.cpp"))
    return Path(cache) / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = default_model_path()
    if not path.is_file():
        pytest.skip(f"{path} not fetched (scripts/fetch_default_model.sh)")
    srv = Server(tmp_path_factory.mktemp("smollm2"), model=path,
                 served_model_name="SmolLM2-135M-Instruct")
    yield srv
    assert srv.stop() == 0


def test_chat_answer_is_sensible(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused")
    reply = client.chat.completions.create(
        model="SmolLM2-135M-Instruct", temperature=0, max_tokens=48,
        messages=[{"role": "user",
                   "content": "What is the capital of France? Answer in one sentence."}])
    text = reply.choices[0].message.content
    assert "Paris" in text, text
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage.completion_tokens <= 48


def test_streamed_chat_equals_non_streamed(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused")
    messages = [{"role": "user", "content": "Name three colors."}]
    whole = client.chat.completions.create(model="SmolLM2-135M-Instruct", temperature=0,
                                           max_tokens=32, messages=messages)
    pieces = client.chat.completions.create(model="SmolLM2-135M-Instruct", temperature=0,
                                            max_tokens=32, messages=messages, stream=True)
    streamed = "".join(c.choices[0].delta.content or "" for c in pieces if c.choices)
    assert streamed == whole.choices[0].message.content
    assert len(streamed) > 0
