# End-to-end tests of the logit-processing request fields (presence / frequency / repetition
# penalties, logit_bias, min_tokens) and of prompt logprobs (completions echo + logprobs,
# /generate logprob_start_len, token_ids_logprob) on sgl-server with stories260K, through the official openai
# client and /generate; values are checked against the golden file and an independent
# reference loop, bad values against their 400 answers.
import json

import pytest
import requests

from conftest import golden

openai = pytest.importorskip("openai")

PROMPT = "Once upon a time"
EOS = 2
PERIOD = 426  # "."
LILY = 317  # "▁Lily"
VOCAB = 512


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def case(i=0):
    return golden()["cases"][i]


def teacher_forced(c):
    """The golden case's prompt and the first 16 greedy tokens (its `prefill` sequence)."""
    return c["prompt_ids"] + c["greedy_ids"][:16]


def generate(server, ids, **params):
    extra = params.pop("extra", {})
    body = {"input_ids": ids, "sampling_params": {"temperature": 0, **params}, **extra}
    r = server.post("/generate", body)
    assert r.status_code == 200, r.text
    return r.json()


def check_golden_row(c, row, token_logprob, top):
    """`top` maps token id -> logprob at teacher-forced position `row`; `token_logprob` is the
    logprob of the token after it."""
    ids, lps = c["prefill"]["topk_ids"][row], c["prefill"]["topk_logprobs"][row]
    assert list(top) == ids[:len(top)], row
    assert list(top.values()) == pytest.approx(lps[:len(top)], abs=1e-3), row
    target = teacher_forced(c)[row + 1]
    if target in ids:
        assert token_logprob == pytest.approx(lps[ids.index(target)], abs=1e-3), row
    else:
        assert token_logprob < lps[-1] + 1e-3, row


# ---- penalties ----

def test_frequency_and_presence_penalties_match_a_reference_loop(server, client):
    prompt = case()["prompt_ids"]
    for frequency, presence in [(1.0, 0.0), (0.0, 2.0)]:
        # Reference: greedy over the unpenalized full-vocabulary logprobs, penalized here.
        expected, counts = [], {}
        for _ in range(40):
            out = generate(server, prompt + expected, max_new_tokens=1,
                           extra={"return_logprob": True, "top_logprobs_num": VOCAB})
            row = {t[1]: t[0] for t in out["meta_info"]["output_top_logprobs"][0]}
            for token, n in counts.items():
                row[token] -= frequency * n + presence
            best = max(sorted(row), key=lambda t: row[t])  # first maximum
            expected.append(best)
            counts[best] = counts.get(best, 0) + 1
        out = generate(server, prompt, max_new_tokens=40, frequency_penalty=frequency,
                       presence_penalty=presence)
        assert out["output_ids"] == expected
        assert out["output_ids"] != case()["greedy_ids"][:40]
        # The same through the openai client (completions and chat accept both fields).
        r = client.completions.create(model="stories260K", prompt=prompt, max_tokens=40,
                                      temperature=0, frequency_penalty=frequency,
                                      presence_penalty=presence)
        assert r.choices[0].text == out["text"]
    chat = client.chat.completions.create(
        model="stories260K", max_tokens=40, temperature=0, frequency_penalty=2.0,
        presence_penalty=2.0, messages=[{"role": "user", "content": "Tell me a story."}])
    plain = client.chat.completions.create(
        model="stories260K", max_tokens=40, temperature=0,
        messages=[{"role": "user", "content": "Tell me a story."}])
    assert chat.choices[0].message.content != plain.choices[0].message.content


def test_repetition_penalty_matches_the_golden_last_logits(server, client):
    changed = 0
    for c in golden()["cases"]:
        seq = teacher_forced(c)
        for penalty in (0.5, 1.5, 2.0):
            row = list(c["prefill"]["last_logits"])
            for token in set(seq):
                row[token] = row[token] / penalty if row[token] > 0 else row[token] * penalty
            expected = max(range(VOCAB), key=lambda t: (row[t], -t))
            out = generate(server, seq, max_new_tokens=1, repetition_penalty=penalty)
            assert out["output_ids"] == [expected], (c["prompt"], penalty)
            changed += expected != c["greedy_ids"][16]
    assert changed > 0
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=40,
                                  temperature=0, extra_body={"repetition_penalty": 1.5})
    plain = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=40,
                                      temperature=0)
    assert r.choices[0].text != plain.choices[0].text


def test_logit_bias_forces_and_forbids_tokens(server, client):
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=6,
                                  temperature=0, logit_bias={str(LILY): 100}, logprobs=0)
    assert r.choices[0].text.split() == ["Lily"] * 6
    assert all(lp == pytest.approx(0, abs=1e-3) for lp in r.choices[0].logprobs.token_logprobs)
    first = case()["greedy_ids"][0]
    out = generate(server, case()["prompt_ids"], max_new_tokens=1,
                   logit_bias={str(first): -100})
    assert out["output_ids"] == [case()["steps_top5"][0]["ids"][1]]
    chat = client.chat.completions.create(
        model="stories260K", max_tokens=4, temperature=0, logit_bias={str(LILY): 100},
        messages=[{"role": "user", "content": "hi"}])
    assert chat.choices[0].message.content.split() == ["Lily"] * 4


def test_min_tokens_delays_stop_token_ids_and_eos(server, client):
    stop = {"stop_token_ids": [PERIOD]}
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=40,
                                  temperature=0, extra_body=stop)
    assert r.usage.completion_tokens == case()["greedy_ids"].index(PERIOD) + 1
    assert r.choices[0].finish_reason == "stop"
    out = generate(server, case()["prompt_ids"], max_new_tokens=40, min_new_tokens=20,
                   stop_token_ids=[PERIOD])
    assert len(out["output_ids"]) >= 20
    assert PERIOD not in out["output_ids"][:20] and EOS not in out["output_ids"][:20]
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=40,
                                  temperature=0, extra_body={**stop, "min_tokens": 20})
    assert r.usage.completion_tokens == len(out["output_ids"])
    # EOS made overwhelming: the first token without min_tokens, the sixth with 5.
    eos = {"logit_bias": {str(EOS): 100}}
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=40,
                                  temperature=0, **eos)
    assert r.usage.completion_tokens == 1 and r.choices[0].finish_reason == "stop"
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=40,
                                  temperature=0, extra_body={"min_tokens": 5}, **eos)
    assert r.usage.completion_tokens == 6 and r.choices[0].finish_reason == "stop"
    assert r.choices[0].model_extra["matched_stop"] == EOS
    chat = client.chat.completions.create(
        model="stories260K", max_tokens=40, temperature=0, extra_body={"min_tokens": 3},
        messages=[{"role": "user", "content": "hi"}], **eos)
    assert chat.usage.completion_tokens == 4 and chat.choices[0].finish_reason == "stop"


# ---- prompt logprobs ----

def test_echo_with_logprobs_scores_the_prompt(server, client):
    c = case(2)
    seq = teacher_forced(c)
    r = client.completions.create(model="stories260K", prompt=seq, max_tokens=0, echo=True,
                                  logprobs=5)
    choice = r.choices[0]
    lp = choice.logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(seq)
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    for i in range(1, len(seq)):
        ids = c["prefill"]["topk_ids"][i - 1]
        assert list(lp.top_logprobs[i].values()) == pytest.approx(
            c["prefill"]["topk_logprobs"][i - 1][:5], abs=1e-3)
        target = seq[i]
        if target in ids:
            assert lp.token_logprobs[i] == pytest.approx(
                c["prefill"]["topk_logprobs"][i - 1][ids.index(target)], abs=1e-3)
    assert lp.text_offset[0] == 0 and lp.text_offset == sorted(lp.text_offset)
    assert r.usage.completion_tokens == 0 and choice.finish_reason == "length"
    # With a completion: the prompt tokens, then the generated ones.
    r = client.completions.create(model="stories260K", prompt=seq, max_tokens=3, echo=True,
                                  logprobs=2, temperature=0)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(seq) + 3
    assert_offsets_index_the_text(r.choices[0].text, lp)
    assert lp.token_logprobs[len(seq)] == pytest.approx(
        c["prefill"]["topk_logprobs"][len(seq) - 1][0], abs=1e-3)
    # Streaming: the first chunk carries the prompt tokens; the whole matches.
    chunks = list(client.completions.create(model="stories260K", prompt=seq, max_tokens=3,
                                            echo=True, logprobs=2, temperature=0,
                                            stream=True))
    tokens = [t for ch in chunks if ch.choices and ch.choices[0].logprobs
              for t in ch.choices[0].logprobs.tokens]
    assert tokens == lp.tokens
    assert "".join(ch.choices[0].text for ch in chunks if ch.choices) == r.choices[0].text
    server.wait_idle_no_leak()


def assert_offsets_index_the_text(text, lp):
    """Each token's text_offset is where its text starts in `text` (OpenAI's meaning)."""
    assert lp.text_offset == sorted(lp.text_offset) and lp.text_offset[-1] <= len(text)
    for token, offset in zip(lp.tokens, lp.text_offset):
        if token == "<s>" or "\ufffd" in token:
            continue  # left out of the text / a byte of a character (checked below)
        # The text's first word drops its leading space.
        assert text[offset:].startswith(token if offset else token.lstrip(" ")), (token, offset)


def test_text_offsets_index_the_returned_text(server, client):
    # A BOS the text leaves out, a leading space the first word drops, and characters spread
    # over byte tokens (each listed as U+FFFD) must not shift the offsets after them.
    prompt = "Once upon a time, \u65e5\u672c"
    r = client.completions.create(model="stories260K", prompt=prompt, max_tokens=8, echo=True,
                                  logprobs=1, temperature=0)
    text, lp = r.choices[0].text, r.choices[0].logprobs
    assert text.startswith(prompt) and len(lp.tokens) > 8
    assert_offsets_index_the_text(text, lp)
    first = lp.tokens.index("\ufffd")
    at = text.index("\u65e5")
    assert lp.text_offset[first:first + 6] == [at] * 3 + [at + 1] * 3, lp.tokens
    assert lp.text_offset[first + 6] == at + 2
    # Without echo the offsets start at the completion's text; streamed, they are the same.
    plain = client.completions.create(model="stories260K", prompt=prompt, max_tokens=8,
                                      logprobs=1, temperature=0)
    assert plain.choices[0].text == text[len(prompt):]
    assert [o + len(prompt) for o in plain.choices[0].logprobs.text_offset] == lp.text_offset[-8:]
    chunks = list(client.completions.create(model="stories260K", prompt=prompt, max_tokens=8,
                                            echo=True, logprobs=1, temperature=0, stream=True))
    assert [o for ch in chunks if ch.choices and ch.choices[0].logprobs
            for o in ch.choices[0].logprobs.text_offset] == lp.text_offset


def test_echo_text_prompt_with_logprobs(server, client):
    plain = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=6,
                                      temperature=0)
    r = client.completions.create(model="stories260K", prompt=PROMPT, max_tokens=6,
                                  temperature=0, echo=True, logprobs=1, n=2)
    for choice in r.choices:
        assert choice.text == PROMPT + plain.choices[0].text
        lp = choice.logprobs
        assert len(lp.tokens) == 5 + 6  # <s> + 4 prompt tokens, 6 generated
        assert lp.token_logprobs[0] is None
        assert all(v is not None and v <= 0 for v in lp.token_logprobs[1:])


def test_generate_input_token_logprobs(server):
    c = case(4)
    seq = teacher_forced(c)
    for start in (0, 7):
        out = generate(server, seq, max_new_tokens=2,
                       extra={"return_logprob": True, "logprob_start_len": start,
                              "top_logprobs_num": 4, "return_text_in_logprobs": True})
        meta = out["meta_info"]
        entries, tops = meta["input_token_logprobs"], meta["input_top_logprobs"]
        assert [e[1] for e in entries] == seq[start:]
        assert entries[0][0] is None and tops[0] is None
        assert all(isinstance(e[2], str) for e in entries)
        for k in range(1, len(entries)):
            row = start + k - 1
            check_golden_row(c, row, entries[k][0], {t[1]: t[0] for t in tops[k]})
        assert out["output_ids"] == c["greedy_ids"][16:18]
    # Default start, or the prompt's length: no prompt token listed (SGLang 0.5's).
    for extra in ({}, {"logprob_start_len": len(seq)}):
        meta = generate(server, seq, max_new_tokens=1,
                        extra={"return_logprob": True, **extra})["meta_info"]
        assert meta["input_token_logprobs"] == [] and len(meta["output_token_logprobs"]) == 1
        assert meta["output_token_logprobs_length"] == 1
        # Top-k listings only when asked for (top_logprobs_num > 0), as SGLang's.
        assert "input_top_logprobs" not in meta and "output_top_logprobs" not in meta
    # Scoring only.
    out = generate(server, seq, max_new_tokens=0,
                   extra={"return_logprob": True, "logprob_start_len": 0})
    assert out["output_ids"] == [] and len(out["meta_info"]["input_token_logprobs"]) == len(seq)
    server.wait_idle_no_leak()


def test_generate_token_ids_logprob(server):
    """token_ids_logprob: per generated position and per scored prompt position, one
    [logprob, id, text] per requested id, equal to the top-k / the token's own logprob where
    those list the same id; streamed cumulatively like the other logprob listings."""
    c = case(2)
    seq = teacher_forced(c)
    asked = [c["greedy_ids"][16], c["greedy_ids"][17], EOS, PERIOD, LILY, EOS]  # a repeat
    start = 5
    extra = {"return_logprob": True, "logprob_start_len": start, "top_logprobs_num": 10,
             "token_ids_logprob": asked, "return_text_in_logprobs": True}
    out = generate(server, seq, max_new_tokens=4, extra=extra)
    meta = out["meta_info"]
    outs, ins = meta["output_token_ids_logprobs"], meta["input_token_ids_logprobs"]
    assert out["output_ids"] == c["greedy_ids"][16:20]
    assert len(outs) == 4 and len(ins) == len(seq) - start
    matched = 0
    for k, (entries, top, own) in enumerate(zip(outs, meta["output_top_logprobs"],
                                                meta["output_token_logprobs"])):
        assert [e[1] for e in entries] == asked, k
        assert all(isinstance(e[2], str) for e in entries) and entries[2] == entries[5]
        by_id = {e[1]: e[0] for e in entries}
        for lp, tid, text in top:
            if tid in by_id:
                assert by_id[tid] == pytest.approx(lp, abs=1e-6), (k, tid)
                assert text == next(e[2] for e in entries if e[1] == tid)
                matched += 1
        if own[1] in by_id:  # on a GPU another kernel's sum: within float rounding
            assert by_id[own[1]] == pytest.approx(own[0], rel=1e-5, abs=1e-5), k
    assert matched >= 2  # the greedy tokens asked for are each step's top token
    # The prompt side: null for the first listed token (it has no logprob), as input_top_logprobs.
    assert ins[0] is None and meta["input_top_logprobs"][0] is None
    prompt_matched = 0
    for k in range(1, len(ins)):
        by_id = {e[1]: e[0] for e in ins[k]}
        assert [e[1] for e in ins[k]] == asked
        check_golden_row(c, start + k - 1, meta["input_token_logprobs"][k][0],
                         {t[1]: t[0] for t in meta["input_top_logprobs"][k]})
        for lp, tid, _ in meta["input_top_logprobs"][k]:
            if tid in by_id:
                assert by_id[tid] == pytest.approx(lp, abs=1e-6)
                prompt_matched += 1
        token_lp, token = meta["input_token_logprobs"][k][:2]
        if token in by_id:
            assert by_id[token] == pytest.approx(token_lp, abs=1e-6)
    assert prompt_matched > 0
    # Streaming: every item carries the listings so far, one per output token; the last equals
    # the non-streamed answer.
    r = server.post("/generate", {"input_ids": seq, "stream": True, **extra,
                                  "sampling_params": {"temperature": 0, "max_new_tokens": 4}},
                    stream=True)
    items = [json.loads(line[6:]) for line in r.iter_lines()
             if line.startswith(b"data: ") and line != b"data: [DONE]"]
    # (Events a slow reader has not taken yet arrive merged: one item under load.)
    assert items and len(items[-1]["output_ids"]) == 4
    for item in items:
        m = item["meta_info"]
        assert len(m["output_token_ids_logprobs"]) == len(item["output_ids"])
    # (The radix cache serves a prefix of the repeat: f32 sums in another order.)
    def same(a, b):
        return all((x is None) == (y is None) and
                   (x is None or (pytest.approx([e[0] for e in x], abs=1e-4) == [e[0] for e in y]
                                  and [e[1:] for e in x] == [e[1:] for e in y]))
                   for x, y in zip(a, b, strict=True))

    assert same(items[-1]["meta_info"]["output_token_ids_logprobs"], outs)
    assert same(items[-1]["meta_info"]["input_token_ids_logprobs"], ins)
    # Without texts the third element is null; a batch takes one list per prompt.
    batch = server.post("/generate", {"input_ids": [seq, c["prompt_ids"]], "return_logprob": True,
                                      "token_ids_logprob": [[EOS], [PERIOD, LILY]],
                                      "sampling_params": {"temperature": 0,
                                                          "max_new_tokens": 2}}).json()
    assert [[e[1:] for e in pos] for pos in batch[0]["meta_info"]["output_token_ids_logprobs"]] \
        == [[[EOS, None]]] * 2
    assert [e[1] for e in batch[1]["meta_info"]["output_token_ids_logprobs"][0]] == [PERIOD, LILY]
    # An empty list is no list (SGLang reads [] as None): no such keys.
    empty = generate(server, seq, max_new_tokens=2,
                     extra={"return_logprob": True, "token_ids_logprob": []})["meta_info"]
    assert "output_token_ids_logprobs" not in empty and "input_token_ids_logprobs" not in empty
    # Not asked: no such keys.
    plain = generate(server, seq, max_new_tokens=1, extra={"return_logprob": True})["meta_info"]
    assert "output_token_ids_logprobs" not in plain and "input_token_ids_logprobs" not in plain
    server.wait_idle_no_leak()


def test_generate_token_ids_logprob_bad_values(server):
    def post(value, **extra):
        return server.post("/generate", {"input_ids": case()["prompt_ids"], "return_logprob": True,
                                         "token_ids_logprob": value, **extra,
                                         "sampling_params": {"max_new_tokens": 1}})

    for value, words in [([VOCAB], f"token id {VOCAB} is outside the vocabulary"),
                         ([5, 100000], "token id 100000 is outside the vocabulary"),
                         ([-1], "invalid token id -1"), ([1.5], "integer token ids"),
                         ("5", "must be a list"), (list(range(129)), "at most 128 token ids"),
                         ([[1], [2]], "one per prompt")]:
        r = post(value)
        assert r.status_code == 400, (value, r.text)
        message = r.json()["error"]["message"]
        assert "token_ids_logprob" in message and words in message, (value, message)
    assert post(list(range(128))).status_code == 200  # the bound itself
    # Not a sampling parameter, and not an OpenAI field (SGLang's OpenAI routes lack it).
    r = server.post("/generate", {"text": PROMPT, "sampling_params": {"token_ids_logprob": [1]}})
    assert r.status_code == 400 and "top-level /generate field" in r.text
    for route, body in (("/v1/completions", {"prompt": PROMPT, "max_tokens": 1}),
                        ("/v1/chat/completions",
                         {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})):
        r = server.post(route, {**body, "logprobs": True, "token_ids_logprob": [1, 2]})
        assert r.status_code == 400, r.text
        assert "'token_ids_logprob' is not supported: " in r.text and "/generate" in r.text
    server.wait_idle_no_leak()


# ---- bad values ----

def expect_400(call, field):
    with pytest.raises(openai.BadRequestError) as e:
        call()
    assert e.value.status_code == 400
    assert field in str(e.value), str(e.value)


def test_bad_values_are_400_with_the_field(server, client):
    def completion(**kwargs):
        return lambda: client.completions.create(model="stories260K", prompt=PROMPT,
                                                 max_tokens=4, **kwargs)

    expect_400(completion(presence_penalty=2.5), "presence_penalty")
    expect_400(completion(frequency_penalty=-2.5), "frequency_penalty")
    expect_400(completion(extra_body={"repetition_penalty": 2.5}), "repetition_penalty")
    expect_400(completion(extra_body={"repetition_penalty": 0}), "repetition_penalty")
    expect_400(completion(logit_bias={"5": 101}), "logit_bias")
    expect_400(completion(logit_bias={str(VOCAB): 1}), "logit_bias")
    expect_400(completion(logit_bias={"x": 1}), "logit_bias")
    expect_400(completion(extra_body={"min_tokens": -1}), "min_tokens")
    expect_400(completion(extra_body={"min_tokens": 5}), "min_tokens")  # > max_tokens (4)
    expect_400(lambda: client.chat.completions.create(
        model="stories260K", messages=[{"role": "user", "content": "hi"}],
        logit_bias={"100000": 1}), "logit_bias")
    for params, field in [({"min_new_tokens": -1}, "min_new_tokens"),
                          ({"min_new_tokens": 9, "max_new_tokens": 8}, "min_new_tokens"),
                          ({"repetition_penalty": 3}, "repetition_penalty"),
                          ({"logit_bias": {"999": 1}}, "logit_bias")]:
        r = server.post("/generate", {"text": PROMPT, "sampling_params": params})
        assert r.status_code == 400 and field in r.json()["error"]["message"], r.text
    for extra in [{"return_logprob": True, "logprob_start_len": 5},
                  {"return_logprob": True, "logprob_start_len": -2}]:
        r = server.post("/generate", json.dumps({"input_ids": [1, 403, 407], **extra}))
        assert r.status_code == 400 and "logprob_start_len" in r.text, r.text
    server.wait_idle_no_leak()


# SGLang's chat input_ids: the prompt already rendered and tokenized stands for the template's
# rendering; the output is the same as the completions route's on those ids.
def test_chat_input_ids_replace_the_rendering(server):
    ids = case()["prompt_ids"]
    chat = server.post("/v1/chat/completions", {
        "messages": [{"role": "user", "content": "not rendered"}], "input_ids": ids,
        "max_tokens": 12, "temperature": 0})
    assert chat.status_code == 200, chat.text
    assert chat.json()["usage"]["prompt_tokens"] == len(ids)
    plain = server.post("/v1/completions", {"prompt": ids, "max_tokens": 12, "temperature": 0})
    assert chat.json()["choices"][0]["message"]["content"] == plain.json()["choices"][0]["text"]
    for bad, words in [([VOCAB], "outside the vocabulary"), ([], "non-empty list of token ids"),
                       ("text", "non-empty list of token ids")]:
        r = server.post("/v1/chat/completions", {
            "messages": [{"role": "user", "content": "x"}], "input_ids": bad})
        assert r.status_code == 400 and words in r.text, r.text


def chat_content(server, messages, max_tokens, **extra):
    r = server.post("/v1/chat/completions", {"messages": messages, "max_tokens": max_tokens,
                                             "temperature": 0, **extra})
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["message"]["content"]


def test_chat_continue_final_message_continues_the_assistants_text(server):
    # Greedy: a reply cut after a few words and sent back as the final assistant message is
    # continued into the same reply (the new turn's rendering, then the text). vLLM's spelling,
    # add_generation_prompt false beside it, renders the same prompt.
    user = [{"role": "user", "content": "Once upon a time"}]
    full = chat_content(server, user, 40)
    cut = [i for i, ch in enumerate(full) if ch == " " and i > 0][3]
    prefix = full[:cut]
    assert prefix.strip() and len(prefix) < len(full) - 20, full
    conversation = user + [{"role": "assistant", "content": prefix}]
    rest = chat_content(server, conversation, 12, continue_final_message=True)
    assert rest and full.startswith(prefix + rest), (prefix, rest, full)
    assert chat_content(server, conversation, 12, continue_final_message=True,
                        add_generation_prompt=False) == rest
    # Text parts are the same text.
    parts = user + [{"role": "assistant", "content": [{"type": "text", "text": prefix}]}]
    assert chat_content(server, parts, 12, continue_final_message=True) == rest
    # Without the flag the assistant's turn is closed and a new one follows: another reply.
    assert chat_content(server, conversation, 12) != rest


@pytest.mark.parametrize("messages, extra, words", [
    ([{"role": "user", "content": "hi"}], {}, "needs the last message to be the assistant's"),
    ([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": None, "tool_calls": [
          {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}],
     {}, "'messages[1].tool_calls' cannot be continued"),
    ([{"role": "user", "content": "hi"},
      {"role": "assistant", "content": "x", "reasoning_content": "thought"}],
     {}, "'messages[1].reasoning_content' cannot be continued"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}],
     {"input_ids": [1, 2]}, "cannot be combined with input_ids"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}],
     {"continue_final_message": "yes"}, "continue_final_message"),
])
def test_chat_continue_final_message_refuses_what_it_cannot_continue(server, messages, extra,
                                                                     words):
    body = {"messages": messages, "max_tokens": 2, "continue_final_message": True, **extra}
    r = server.post("/v1/chat/completions", body)
    assert r.status_code == 400 and words in r.text, r.text


def test_generate_meta_info_keys(server):
    # SGLang's meta_info keys, in its order; logprob listings only with return_logprob (its
    # top_logprobs_num and token_ids_logprob alone return nothing, as SGLang's).
    ids = case(1)["prompt_ids"]
    meta = generate(server, ids, max_new_tokens=2,
                    extra={"top_logprobs_num": 3, "token_ids_logprob": [5]})["meta_info"]
    assert list(meta) == ["id", "finish_reason", "prompt_tokens", "weight_version",
                          "num_retractions", "reasoning_tokens", "completion_tokens",
                          "cached_tokens", "e2e_latency"]
    assert meta["weight_version"] == "default" and meta["num_retractions"] == 0
    assert meta["reasoning_tokens"] == 0 and meta["completion_tokens"] == 2
    with_logprobs = generate(server, ids, max_new_tokens=2,
                             extra={"return_logprob": True, "top_logprobs_num": 3})["meta_info"]
    assert [k for k in with_logprobs if "logprob" in k] == [
        "input_token_logprobs", "output_token_logprobs", "output_token_logprobs_length",
        "input_top_logprobs", "output_top_logprobs"]
    assert [len(t) for t in with_logprobs["output_top_logprobs"]] == [3, 3]


def test_generate_max_new_tokens_null_is_unbounded(server):
    # SGLang's None: no limit but the context (not the default 128), over a min_new_tokens past
    # the default too; without max_new_tokens, min_new_tokens past 128 is refused.
    ids = case(1)["prompt_ids"]
    out = generate(server, ids, max_new_tokens=None, ignore_eos=True, min_new_tokens=200)
    assert out["meta_info"]["completion_tokens"] > 128
    assert out["meta_info"]["finish_reason"]["type"] == "length"
    r = server.post("/generate", {"input_ids": ids, "sampling_params": {"min_new_tokens": 200}})
    assert r.status_code == 400 and "min_new_tokens" in r.text, r.text
    default = generate(server, ids, ignore_eos=True)
    assert default["meta_info"]["completion_tokens"] == 128


def test_generate_takes_put(server):
    # SGLang's /generate and /encode take PUT as POST.
    ids = case(1)["prompt_ids"]
    body = {"input_ids": ids, "sampling_params": {"temperature": 0, "max_new_tokens": 3}}
    put = requests.put(server.url + "/generate", json=body, timeout=60)
    assert put.status_code == 200, put.text
    assert put.json()["output_ids"] == server.post("/generate", body).json()["output_ids"]
    server.wait_idle_no_leak()
