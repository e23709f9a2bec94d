# SGLang launch command lines, as SGLang's documentation writes them (quick start, OpenAI API,
# sampling, metrics, server arguments, speculative decoding, structured output, tool parsers,
# hyper-parameter tuning), run as sgl-server command lines on the stories260K test model: each
# either serves (healthy, answers a request, and says once for each flag that has no effect here
# why) or refuses at start with exit status 2 and one line naming the flag and the missing
# feature; never "unknown flag". Also --help, --config YAML files and their errors.
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from conftest import MODEL, Server, requests, server_binary, serves_on_gpu

# {model} is the stories260K directory. `notes`: what stderr must say about flags that do
# nothing here; `refusal`: words the one-line refusal must hold.
SERVES = [
    # Quick start / OpenAI API pages.
    ("--model-path {model} --host 0.0.0.0", []),
    ("--model-path {model} --host 0.0.0.0 --port 30000 --log-level warning", []),
    # argparse's abbreviations, SGLang's size suffixes, 0.5's balance names, any-case levels.
    ("--model-path {model} --served-model-na tiny --max-total-tok 4k --load-balance-method auto "
     "--log-level INFO", []),
    # SGLang 0.5's names and flags without an effect here.
    ("--model-path {model} --disable-decode-cuda-graph --cuda-graph-backend-decode full "
     "--attn-dp-size 1 --tokenizer-backend huggingface --speculative-ngram-max-trie-depth 18 "
     "--uvicorn-access-log-exclude-prefixes /health /metrics",
     ["--tokenizer-backend has no effect", "--uvicorn-access-log-exclude-prefixes has no effect",
      "--speculative-ngram-max-trie-depth has no effect"]),
    ("--model {model}", []),
    ("--model-path {model} --stream-interval 8 --stream-output --enable-cache-report "
     "--allow-auto-truncate --completion-template star_coder", []),
    ("--model-path {model} --enable-priority-scheduling --schedule-low-priority-values-first "
     "--priority-scheduling-preemption-threshold 0 --default-priority-value 5 "
     "--retraction-policy priority --schedule-policy lof", []),
    ("--model-path {model} --disable-priority-preemption --default-priority-value 1",
     ["--disable-priority-preemption has no effect without --enable-priority-scheduling",
      "--default-priority-value has no effect without --enable-priority-scheduling"]),
    ("--model-path {model} --cuda-graph-backend-decode disabled --cuda-graph-backend-prefill "
     "disabled --disable-prefill-cuda-graph --schedule-conservativeness 0",
     ["--disable-prefill-cuda-graph has no effect"]),
    ("--model-path {model} --served-model-name my-model --api-key sk-123456", []),
    # Tool and reasoning parser pages.
    ("--model-path {model} --tool-call-parser llama3", []),
    ("--model-path {model} --tool-call-parser qwen25 --reasoning-parser qwen3", []),
    ("--model-path {model} --reasoning-parser deepseek-r1", []),
    # Server arguments page: memory, scheduling, chunked prefill.
    ("--model-path {model} --mem-fraction-static 0.7", []),
    ("--model-path {model} --chunked-prefill-size 4096", []),
    ("--model-path {model} --max-running-requests 16 --max-total-tokens 4096", []),
    ("--model-path {model} --schedule-policy lpm --schedule-conservativeness 0.3", []),
    ("--model-path {model} --disable-radix-cache --disable-overlap-schedule", []),
    ("--model-path {model} --enable-mixed-chunk --max-prefill-tokens 8192", []),
    ("--model-path {model} --context-length 256 --random-seed 42", []),
    ("--model-path {model} --tp 1 --dp 1", []),
    # Tensor parallelism on the CPU: stories260K's 8 heads / 4 KV heads over 2 and 4 ranks.
    ("--model-path {model} --tp 2", ["tensor parallelism: ranks 0 to 1 of 2 on the CPU"]),
    ("--model-path {model} --tensor-parallel-size 4", ["tensor parallelism: ranks 0 to 3 of 4"]),
    ("--model-path {model} --tp-size 1 --trust-remote-code",
     ["--trust-remote-code has no effect"]),
    ("--model-path {model} --enable-metrics", ["--enable-metrics has no effect", "/metrics"]),
    ("--model-path {model} --enable-torch-compile --torch-compile-max-bs 8",
     ["--enable-torch-compile has no effect", "--torch-compile-max-bs has no effect"]),
    ("--model-path {model} --attention-backend triton", ["sgl.cpp's own attention kernels"]),
    ("--model-path {model} --attention-backend flashinfer --sampling-backend flashinfer",
     ["sgl.cpp's own attention kernels", "--sampling-backend has no effect"]),
    # --skip-server-warmup is a server flag (the warm-up runs on CUDA only): no note.
    ("--model-path {model} --skip-server-warmup --warmups 2", ["--warmups has no effect"]),
    ("--model-path {model} --log-requests", ["request rid="]),
    # The default level is info, as SGLang's: the ready line, SGLang's status lines.
    ("--model-path {model} --decode-log-interval 1",
     ["model: LlamaForCausalLM, 0.26M parameters in f32, 5 layers, hidden 64, context 512",
      "memory: weights 0.00 GiB, activations", " tokens)",
      "(LlamaForCausalLM, context 512 tokens, KV cache", "no chat template",
      # (The /health probe before it wrote the prompt's BOS into the cache.)
      "Prefill batch. #new-seq: 1, #new-token: 4,",
      "Decode batch. #running-req: 1"]),
    ("--model-path {model} --load-format dummy", []),
    # Fields replacing config.json's: here a shorter context.
    ("--model-path {model} --json-model-override-args '{{\"max_position_embeddings\": 256}}'",
     ["(LlamaForCausalLM, context 256 tokens"]),
    ("--model-path {model} --kv-cache-dtype auto --grammar-backend none", []),
    ("--model-path {model} --kv-cache-dtype fp8_e4m3",
     ["KV cache in fp8_e4m3: K and V stored at scale 1.0"]),
    ("--model-path {model} --kv-cache-dtype fp8_e5m2", ["KV cache in fp8_e5m2"]),
    ("--model-path {model} --enable-memory-saver --enable-weights-cpu-backup", []),
    ("--model-path {model} --enable-weights-cpu-backup",
     ["--enable-weights-cpu-backup changes nothing without --enable-memory-saver"]),
    # SGLang's paged KV (16, 64 with its FA3 / FlashMLA backends): ours pages per token.
    ("--model-path {model} --page-size 64",
     ["--page-size has no effect", "the ones that end mid-page"]),
    ("--model-path {model} --speculative-algorithm NGRAM --speculative-num-draft-tokens 4 "
     "--speculative-ngram-max-match-window-size 6 --speculative-ngram-capacity 1000",
     ["--speculative-ngram-capacity has no effect"]),
    ("--model-path {model} --grammar-backend xgrammar",
     ["--grammar-backend has no effect", "own grammar engine"]),
    ("--model-path {model} --grammar-backend outlines --constrained-json-disable-any-whitespace",
     ["--constrained-json-disable-any-whitespace has no effect", "compact already"]),
    ("--model-path {model} --enable-strict-thinking",
     ["--enable-strict-thinking has no effect", "max_thinking_tokens is honoured without it"]),
    ("--model-path {model} --cuda-graph-max-bs 32 --disable-cuda-graph", []),
    ("--model-path {model} --cuda-graph-bs 1 2 4 8 12 --cuda-graph-max-bs 32",
     ["--cuda-graph-max-bs 32 is replaced by the largest --cuda-graph-bs size, 12"]),
    ("--model-path {model} --tp 2 --enable-fp32-all-reduce",
     ["--enable-fp32-all-reduce changes nothing here"]),
    ("--model-path {model} --tp 2 --disable-custom-all-reduce",
     ["--disable-custom-all-reduce changes nothing here"]),
    # Parallelism on the CPU: two replicas of two tensor-parallel ranks each.
    ("--model-path {model} --dp 2 --tp 2", []),
    # One node, in SGLang's multi-node words.
    ("--model-path {model} --nnodes 1 --node-rank 0 --dist-init-addr 127.0.0.1:50000", []),
    ("--model-path {model} --tokenizer-path {model} --dtype float32", []),
    ("--model-path {model} --nccl-port 5000 --dist-timeout 600",
     ["--nccl-port has no effect", "--dist-timeout has no effect"]),
    ("--model-path {model} --log-requests --log-requests-level 3 --log-requests-format json "
     "--log-requests-target stdout", []),
    ("--model-path {model} --cpu-offload-gb 0 --disaggregation-mode null", []),
]

REFUSES = [
    # Timeouts whose milliseconds would overflow.
    ("--model-path {model} --http-read-timeout 1e12", ["--http-read-timeout must be in (0, 1e6]"]),
    ("--model-path {model} --drain-timeout 1e300", ["--drain-timeout in [0, 1e6]"]),
    # Parallelism (server arguments page, multi-node page).
    ("--model-path {model} --tp 3", ["--tp-size 3 does not divide", "num_attention_heads (8)"]),
    ("--model-path {model} --tp 0", ["--tp-size must be in [1, 64]"]),
    ("--model-path {model} --device cuda --tp 2", ["--tp-size 2 on cuda needs NCCL"]),
    # Several nodes serve (test_multi_node.py), not with several replicas.
    ("--model-path {model} --tp 4 --dp 2 --dist-init-addr sgl-dev-0:50000 --nnodes 2 "
     "--node-rank 0", ["--dp-size 2 with --nnodes 2 is not implemented"]),
    ("--model-path {model} --nnodes 2 --node-rank 2 --dist-init-addr sgl-dev-0:50000",
     ["--node-rank 2 is not in [0, --nnodes 2)"]),
    ("--model-path {model} --dist-init-addr sgl-dev-0", ["--dist-init-addr 'sgl-dev-0': no port"]),
    ("--model-path {model} --ep-size 8 --enable-ep-moe", ["give --ep-size instead"]),
    # Expert parallelism needs a MoE model (stories260K is dense) and ep dividing tp.
    ("--model-path {model} --tp 2 --ep-size 2",
     ["--ep-size 2 needs a mixture-of-experts model", "dense"]),
    ("--model-path {model} --tp 2 --ep 4", ["--ep-size 4 does not divide --tp-size 2"]),
    # Routed experts for rollout routing replay need routed experts.
    ("--model-path {model} --enable-return-routed-experts",
     ["--enable-return-routed-experts needs a Mixture-of-Experts model"]),
    ("--model-path {model} --cpu-offload-gb 4", ["--cpu-offload-gb", "offload"]),
    # Quantization.
    ("--model-path {model} --quantization fp8", ["--quantization fp8", "quantization"]),
    ("--model-path {model} --kv-cache-dtype fp4_e2m1", ["--kv-cache-dtype 'fp4_e2m1'"]),
    # Request logging's settings.
    ("--model-path {model} --log-requests --log-requests-level 4",
     ["--log-requests-level must be 0, 1, 2 or 3"]),
    ("--model-path {model} --log-requests-format yaml",
     ["--log-requests-format must be \"text\" or \"json\""]),
    ("--model-path {model} --log-requests-target /proc/no/such/dir",
     ["--log-requests-target '/proc/no/such/dir'"]),
    # The memory saver releases the served model's memory, not an EAGLE head's.
    ("--model-path {model} --enable-memory-saver --speculative-algorithm EAGLE "
     "--speculative-draft-model-path {model}",
     ["--enable-memory-saver with EAGLE speculative decoding is not implemented"]),
    ("--model-path {model} --enable-memory-saver --tp 2 --nnodes 2 --node-rank 0 "
     "--dist-init-addr 127.0.0.1:50000",
     ["--nnodes 2 with --enable-memory-saver is not implemented"]),
    ("--model-path {model} --enable-draft-weights-cpu-backup",
     ["--enable-draft-weights-cpu-backup", "EAGLE"]),
    ("--model-path {model} --torchao-config int4wo-128", ["--torchao-config"]),
    # Speculative decoding page.
    ("--model-path {model} --speculative-algorithm EAGLE --speculative-draft-model-path {model} "
     "--speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16",
     ["--speculative-num-draft-tokens must be in [2, 13]", "--speculative-eagle-topk 4"]),
    ("--model-path {model} --speculative-algorithm EAGLE --speculative-draft-model-path {model} "
     "--speculative-eagle-topk 11", ["--speculative-eagle-topk must be in [1, 10]"]),
    ("--model-path {model} --speculative-algorithm EAGLE3",
     ["--speculative-draft-model-path"]),
    ("--model-path {model} --speculative-algorithm EAGLE --speculative-draft-model-path {model} "
     "--speculative-num-steps 3 --speculative-num-draft-tokens 8",
     ["--speculative-num-draft-tokens must be --speculative-num-steps + 1 (4)"]),
    ("--model-path {model} --speculative-algorithm EAGLE --speculative-draft-model-path {model}",
     ["is not an EAGLE draft head"]),
    ("--model-path {model} --speculative-algorithm NGRAM --speculative-num-steps 3",
     ["are for --speculative-algorithm EAGLE / EAGLE3"]),
    ("--model-path {model} --speculative-algorithm STANDALONE", ["EAGLE, EAGLE3 and NGRAM are"]),
    ("--model-path {model} --speculative-algorithm NGRAM --speculative-num-draft-tokens 1",
     ["--speculative-num-draft-tokens must be in [2, 64]"]),
    ("--model-path {model} --speculative-algorithm NGRAM --speculative-draft-policy greedy",
     ["--speculative-draft-policy must be adaptive or fixed, got 'greedy'"]),
    ("--model-path {model} --speculative-draft-policy fixed",
     ["--speculative-draft-policy needs --speculative-algorithm"]),
    ("--model-path {model} --preferred-sampling-params '{{\"temprature\": 0}}'",
     ["--preferred-sampling-params: 'temprature' is not taken as a server-wide default"]),
    ("--model-path {model} --preferred-sampling-params '{{\"stop\": [\"x\"]}}'",
     ["'stop' is not taken as a server-wide default"]),
    ("--model-path {model} --json-model-override-args '[1]'",
     ["--json-model-override-args must be a JSON object"]),
    ("--model-path {model} --json-model-override-args '{{\"num_attention_heads\": 7}}'",
     ["config.json (with --json-model-override-args)", "must divide num_attention_heads (7)"]),
    # Structured output, tool and reasoning parser pages.
    ("--model-path {model} --tool-call-parser hermes2", ["--tool-call-parser 'hermes2'",
                                                         "qwen25", "gpt-oss"]),
    ("--model-path {model} --reasoning-parser r1", ["--reasoning-parser 'r1'", "deepseek-r1"]),
    ("--model-path {model} --grammar-backend xgrammer",
     ["--grammar-backend expects xgrammar, outlines, llguidance or none, got 'xgrammer'"]),
    ("--model-path {model} --constrained-json-whitespace-pattern '[ \\t'",
     ["--constrained-json-whitespace-pattern: JSON whitespace pattern"]),
    # LoRA, multimodal (--is-embedding serves: test_embeddings.py).
    ("--model-path {model} --enable-lora --lora-paths lora0=/tmp/lora", ["LoRA"]),
    ("--model-path {model} --enable-multimodal", ["multimodal"]),
    # Kernels and memory features sgl.cpp lacks.
    ("--model-path {model} --attention-backend flashmla", ["--attention-backend flashmla", "MLA"]),
    ("--model-path {model} --enable-hierarchical-cache", ["hierarchical"]),
    ("--model-path {model} --enable-hicache", ["--enable-hierarchical-cache", "hierarchical"]),
    ("--model-path {model} --attn-dp-size 2", ["--attn-dp-size 2"]),
    ("--model-path {model} --ssl-certfile c.pem", ["terminate TLS in a proxy"]),
    ("--model-path {model} --cuda-graph-backend-decode breakable", ["breakable is not implemented"]),
    ("--model-path {model} --cuda-graph-backend-prefill full", ["no prefill CUDA graphs"]),
    ("--model-path {model} --load-balance-method follow_bootstrap_room", ["disaggregation"]),
    ("--model-path {model} --attention-backend flashinfr", ["unknown --attention-backend"]),
    ("--model-path {model} --default-chat-template-kwargs '{{\"tools\": []}}'",
     ["'--default-chat-template-kwargs.tools' is set by the request itself"]),
    ("--model-path {model} --default-chat-template-kwargs '[1]'",
     ["--default-chat-template-kwargs"]),
    ("--model-path {model} --tokenizer-mode slow", ["--tokenizer-mode slow"]),
    ("--model-path {model} --revision main", ["hf download"]),
    ("--model-path {model} --stream-interval 0", ["--stream-interval must be at least 1"]),
    ("--model-path {model} --hf-chat-template-name tool_use",
     ["--hf-chat-template-name: template 'tool_use' not found", "it names no templates"]),
    ("--model-path {model} --hf-chat-template-name tool_use --chat-template t.jinja",
     ["--hf-chat-template-name", "--chat-template", "give one"]),
    ("--model-path {model} --completion-template fim_maker",
     ["--completion-template fim_maker is not a built-in template name"]),
    ("--model-path {model} --dtype half", ["float16 compute is not implemented"]),
    ("--model-path {model} --context-length 100000",
     ["--context-length 100000", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"]),
    ("--model-path {model} --load-format gguf", ["--load-format gguf", "not a GGUF file"]),
    ("--model-path {model} --cuda-graph-bs 0 4", ["--cuda-graph-bs sizes must be whole numbers"]),
    ("--model-path {model} --cuda-graph-bs 2.5", ["--cuda-graph-bs sizes must be whole numbers"]),
    # Priority scheduling's flags, checked as SGLang checks them.
    ("--model-path {model} --retraction-policy priority",
     ["--retraction-policy priority requires --enable-priority-scheduling"]),
    ("--model-path {model} --retraction-policy newest", ["--retraction-policy", "length"]),
    ("--model-path {model} --enable-priority-scheduling --schedule-policy lpm",
     ["--enable-priority-scheduling takes --schedule-policy fcfs or lof, not lpm"]),
    # A Hugging Face repo id where a local path belongs.
    ("--model-path Qwen/Qwen3-8B", ["no such file or directory", "hf download Qwen/Qwen3-8B"]),
]


def run_args(line, model=MODEL):
    return shlex.split(line.format(model=model))


def start(args, workdir, env=None):
    binary = server_binary()
    if binary is None or requests is None or not MODEL.exists():
        pytest.skip("sgl-server, the requests package or the test model is missing")
    err = open(Path(workdir) / f"err-{time.monotonic_ns()}.txt", "w+b")
    # Whatever host and port the line names, the test listens on a free loopback port.
    proc = subprocess.Popen([str(binary), *args, "--host", "127.0.0.1", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=err, env=env)
    return proc, err


def listening_url(proc, err):
    """The URL a server `start`ed prints once it listens (its first stdout line)."""
    first = proc.stdout.readline().decode()
    assert "sgl-server listening on http://" in first, stderr_of(err)
    return first.split("listening on ", 1)[1].split()[0]


def stderr_of(err):
    err.flush()
    err.seek(0)
    return err.read().decode(errors="replace")


@pytest.mark.parametrize("line,notes", SERVES, ids=[s[0].replace("{model} ", "") for s in SERVES])
def test_serves(line, notes, tmp_path):
    proc, err = start(run_args(line), tmp_path)
    try:
        url = listening_url(proc, err)
        headers = {"Authorization": "Bearer sk-123456"} if "--api-key" in line else {}
        deadline = time.monotonic() + 30
        while requests.get(url + "/health", headers=headers, timeout=10).status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        r = requests.post(url + "/generate", headers=headers, timeout=60, json={
            "text": "Once upon a time", "sampling_params": {"max_new_tokens": 4,
                                                             "temperature": 0}})
        assert r.status_code == 200, r.text
        assert r.json()["meta_info"]["completion_tokens"] == 4
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)
    log = stderr_of(err)
    for note in notes:
        assert note in log, log
    assert "unknown flag" not in log


# --preferred-sampling-params: server-wide sampling defaults, for what a request leaves unset,
# on every route; reported by /get_model_info.
def test_preferred_sampling_params(tmp_path):
    preferred = {"temperature": 0, "max_new_tokens": 3}
    proc, err = start(["--model-path", str(MODEL), "--preferred-sampling-params",
                       json.dumps(preferred)], tmp_path)
    try:
        url = listening_url(proc, err)
        r = requests.post(url + "/generate", json={"text": "Once upon a time"}, timeout=60).json()
        assert r["meta_info"]["completion_tokens"] == 3 and r["text"] == ", there was", r
        r = requests.post(url + "/v1/completions", timeout=60,
                          json={"model": "m", "prompt": "Once upon a time"}).json()
        assert r["usage"]["completion_tokens"] == 3 and r["choices"][0]["text"] == ", there was"
        r = requests.post(url + "/v1/completions", timeout=60, json={
            "model": "m", "prompt": "Once upon a time", "max_tokens": 5}).json()
        assert r["usage"]["completion_tokens"] == 5
        # A default, not the request's own limit: a prompt that leaves less room (the context is
        # 512 tokens) generates up to the context instead of a 400 about max_tokens.
        r = requests.post(url + "/generate", timeout=60, json={
            "input_ids": [300] * 510, "sampling_params": {"ignore_eos": True}})
        assert r.status_code == 200, r.text
        assert r.json()["meta_info"]["completion_tokens"] == 2, r.text
        r = requests.post(url + "/generate", timeout=60, json={
            "input_ids": [300] * 510, "sampling_params": {"max_new_tokens": 3}})
        assert r.status_code == 400 and "max_new_tokens (3)" in r.text, r.text
        info = requests.get(url + "/get_model_info", timeout=10).json()
        assert info["preferred_sampling_params"] == preferred
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)
    assert "--preferred-sampling-params): temperature 0" in stderr_of(err)


# --log-requests logs each request as it reaches the engine and as it finishes, except those
# that ask for no_logs (SGLang's), at SGLang's default level 2: inputs and outputs included.
def test_log_requests_and_no_logs(tmp_path):
    proc, err = start(run_args("--model-path {model} --log-requests --log-level warning"), tmp_path)
    try:
        url = listening_url(proc, err)
        body = {"text": "Once upon a time", "sampling_params": {"max_new_tokens": 2}}
        for extra in [{}, {"no_logs": True}, {"no_logs": True}]:
            assert requests.post(url + "/generate", json={**body, **extra},
                                 timeout=60).status_code == 200
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)
    log = stderr_of(err)  # (written whatever --log-level says, as SGLang's request logger)
    received = [l for l in log.splitlines() if "Receive: rid=" in l]
    finished = [l for l in log.splitlines() if "request rid=" in l]
    assert len(received) == 1 and len(finished) == 1, log
    obj = json.loads(received[0].split(" obj=", 1)[1])
    assert "Once upon a time" in obj["text"] and obj["sampling_params"]["max_new_tokens"] == 2
    assert obj["prompt_tokens"] == len(obj["input_ids"])
    out = json.loads(finished[0].split(" out=", 1)[1])
    assert len(out["output_ids"]) == 2 and isinstance(out["text"], str), finished[0]
    assert "completion_tokens=2" in finished[0]


# --log-requests-level 0-3 through /configure_logging: 0 metadata only, 1 and the sampling
# parameters, 2 the inputs and outputs (strings cut to 2048 characters), 3 whole. The OpenAI
# body is logged as it arrives (levels 2 and 3), a request too long for the model's context too.
def test_log_requests_levels(tmp_path):
    proc, err = start(run_args("--model-path {model}"), tmp_path)
    long_prompt = "Once upon a time " * 150  # 2550 characters, 601 tokens: over the context
    try:
        url = listening_url(proc, err)
        for level in [0, 1, 2, 3]:
            r = requests.post(url + "/configure_logging", timeout=10,
                              json={"log_requests": True, "log_requests_level": level})
            assert r.status_code == 200, r.text
            r = requests.post(url + "/generate", timeout=60, json={
                "text": "Once upon a time", "sampling_params": {"max_new_tokens": 2}})
            assert r.status_code == 200, r.text
            r = requests.post(url + "/v1/completions", timeout=60,
                              json={"model": "m", "prompt": long_prompt, "max_tokens": 2})
            assert r.status_code == 400 and "context length" in r.text, r.text
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)
    log = stderr_of(err).splitlines()
    received = [json.loads(l.split(" obj=", 1)[1]) for l in log if "Receive: rid=" in l]
    finished = [l for l in log if "request rid=" in l]
    bodies = [json.loads(l.split(" obj=", 1)[1]) for l in log if "Receive OpenAI: " in l]
    assert len(received) == 4 and len(finished) == 4 and len(bodies) == 2, log
    assert set(received[0]) == {"prompt_tokens"}
    assert set(received[1]) == {"prompt_tokens", "sampling_params"}
    assert received[1]["sampling_params"]["max_new_tokens"] == 2
    assert " out=" not in finished[0] and " out=" not in finished[1]
    for level in [2, 3]:
        assert "Once upon a time" in received[level]["text"]
        assert received[level]["prompt_tokens"] == len(received[level]["input_ids"])
        assert " out=" in finished[level]
    cut, whole = bodies[0]["prompt"], bodies[1]["prompt"]
    assert whole == long_prompt
    assert cut == long_prompt[:1024] + "..." + long_prompt[-1024:]


# A reader of --log-requests-target stdout that goes away: the lines fail, the server goes on.
def test_log_requests_to_a_closed_stdout(tmp_path):
    proc, err = start(run_args("--model-path {model} --log-requests --log-requests-target stdout"),
                      tmp_path)
    try:
        url = listening_url(proc, err)
        proc.stdout.close()
        for _ in range(2):
            r = requests.post(url + "/generate", timeout=60, json={
                "text": "Once upon a time", "sampling_params": {"max_new_tokens": 2}})
            assert r.status_code == 200, r.text
        assert proc.poll() is None, stderr_of(err)
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)


# SGLang's /configure_logging turns request logging on and off while the server runs and sets
# the log level; the request dumps it does not build are refused by name.
def test_configure_logging(tmp_path):
    proc, err = start(run_args("--model-path {model} --log-level warning"), tmp_path)
    try:
        url = listening_url(proc, err)
        body = {"text": "Once upon a time", "sampling_params": {"max_new_tokens": 2}}

        def generate():
            assert requests.post(url + "/generate", json=body, timeout=60).status_code == 200

        def configure(settings):
            return requests.post(url + "/configure_logging", json=settings, timeout=10)

        generate()  # not logged
        assert configure({"log_requests": True, "log_requests_level": 0}).status_code == 200
        generate()  # logged (whatever the log level)
        assert configure({"log_requests": False}).status_code == 200
        generate()  # not logged
        for bad, field in [({"log_level": "loud"}, "log_level"),
                           ({"log_requests": "yes"}, "log_requests"),
                           ({"log_requests_level": 4}, "log_requests_level"),
                           ({"log_requests_level": "2"}, "log_requests_level"),
                           ({"log_requests_format": "yaml"}, "log_requests_format"),
                           ({"log_requests": True, "log_requests_format": 1},
                            "log_requests_format"),
                           ({"dump_requests_folder": "/tmp/x"}, "dump_requests_folder"),
                           ({"crash_dump_folder": "/tmp/x"}, "crash_dump_folder")]:
            r = configure(bad)
            assert r.status_code == 400 and field in r.text, (bad, r.text)
        assert configure({"log_level": "ERROR", "log_requests": False}).status_code == 200
        generate()  # not logged: the refused bodies above changed nothing
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)
    assert stderr_of(err).count("request rid=") == 1, stderr_of(err)


# --log-requests-format json to stdout and a directory: SGLang's events, one JSON object a line
# after a time stamp; each request's received and finished events, the OpenAI body's event; the
# file holds the same lines.
def test_log_requests_json_to_targets(tmp_path):
    logs = tmp_path / "request-logs"
    proc, err = start(run_args("--model-path {model} --log-requests --log-requests-format json "
                               f"--log-requests-target stdout {logs}"), tmp_path)
    try:
        url = listening_url(proc, err)
        g = requests.post(url + "/generate", timeout=60, json={
            "text": "Once upon a time", "sampling_params": {"max_new_tokens": 3,
                                                             "temperature": 0}})
        assert g.status_code == 200, g.text
        c = requests.post(url + "/v1/completions", timeout=60,
                          json={"model": "m", "prompt": "Hello there", "max_tokens": 2})
        assert c.status_code == 200, c.text
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)
    lines = proc.stdout.read().decode().splitlines()
    assert all(re.match(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \{", l) for l in lines), lines
    events = [json.loads(l.split("] ", 1)[1]) for l in lines]
    assert [e["event"] for e in events] == [
        "request.received", "request.finished", "request.received.openai", "request.received",
        "request.finished"], events
    received, finished = events[0], events[1]
    assert "Once upon a time" in received["obj"]["text"]
    assert received["obj"]["sampling_params"]["temperature"] == 0
    assert finished["rid"] == received["rid"]
    assert finished["out"]["output_ids"] == g.json()["output_ids"]
    assert finished["out"]["text"] == g.json()["text"]
    assert finished["out"]["meta_info"]["completion_tokens"] == 3
    assert finished["out"]["meta_info"]["finish_reason"] == {"type": "length"}
    assert events[2]["route"] == "/v1/completions"
    assert events[2]["obj"] == {"model": "m", "prompt": "Hello there", "max_tokens": 2}
    assert "Hello there" in events[3]["obj"]["text"]
    files = list(logs.iterdir())
    assert len(files) == 1 and files[0].name.endswith("_0.log"), files
    assert files[0].read_text().splitlines() == lines
    assert "request.received" not in stderr_of(err)  # stdout and the file only


@pytest.mark.parametrize("line,refusal", REFUSES,
                         ids=[r[0].replace("{model} ", "") for r in REFUSES])
def test_refuses_with_a_reason(line, refusal, tmp_path):
    proc, err = start(run_args(line), tmp_path)
    code = proc.wait(timeout=60)
    log = stderr_of(err)
    assert code != 0, log
    assert proc.stdout.read() == b"", "a refused command line must not start serving"
    lines = [l for l in log.splitlines() if l.startswith("sgl-server:")]
    assert len(lines) == 1, log
    for word in refusal:
        assert word in lines[0], log
    assert "unknown flag" not in log


def generate_greedy(args, tmp_path, prompts):
    """Serves with `args`; returns each prompt's /generate reply (greedy, with logprobs) and
    /get_server_info."""
    proc, err = start(args, tmp_path)
    try:
        url = listening_url(proc, err)
        replies = [requests.post(url + "/generate", timeout=60, json={
            "text": p, "return_logprob": True,
            "sampling_params": {"max_new_tokens": 16, "temperature": 0, "ignore_eos": True}}).json()
            for p in prompts]
        return replies, requests.get(url + "/get_server_info", timeout=30).json()
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)


# --kv-cache-dtype fp8_e4m3: reported by /get_server_info, and on the CPU (an f32 cache
# otherwise) four times the tokens in the same memory (--mem-fraction-static of the free RAM).
def test_kv_cache_dtype_fp8_holds_more_tokens(tmp_path):
    infos = {}
    for dtype in ("auto", "fp8_e4m3"):
        (tmp_path / dtype).mkdir()
        _, info = generate_greedy(run_args(f"--model-path {{model}} --kv-cache-dtype {dtype} "
                                           "--mem-fraction-static 0.0005"),
                                  tmp_path / dtype, ["Once upon a time"])
        assert info["kv_cache_dtype"] == dtype, info
        infos[dtype] = info
    if serves_on_gpu():
        pytest.skip("the GPU's budget is its total memory less what is in use")
    ratio = infos["fp8_e4m3"]["max_total_num_tokens"] / infos["auto"]["max_total_num_tokens"]
    assert 3.8 < ratio < 4.2, infos


# --grammar-backend none (SGLang's): constrained requests are refused with a 400 naming the
# field; the rest are served.
def test_grammar_backend_none_refuses_constraints(tmp_path):
    proc, err = start(run_args("--model-path {model} --grammar-backend none"), tmp_path)
    try:
        url = listening_url(proc, err)
        assert requests.get(url + "/get_server_info", timeout=30).json()["grammar_backend"] == "none"
        r = requests.post(url + "/generate", timeout=60, json={
            "text": "Once", "sampling_params": {"max_new_tokens": 4, "regex": "[ab]+"}})
        assert r.status_code == 400, r.text
        assert "--grammar-backend none" in r.text and "regex" in r.text, r.text
        r = requests.post(url + "/v1/completions", timeout=60, json={
            "model": "m", "prompt": "hi", "max_tokens": 4, "ebnf": 'root ::= "a"'})
        assert r.status_code == 400 and "--grammar-backend none" in r.text, r.text
        r = requests.post(url + "/generate", timeout=60, json={
            "text": "Once", "sampling_params": {"max_new_tokens": 4}})
        assert r.status_code == 200, r.text
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)


# --constrained-json-whitespace-pattern (SGLang's, for its outlines / llguidance backends): the
# JSON of a constrained reply has that whitespace wherever JSON allows whitespace. One space
# exactly here, so every reply (sampled at temperature 1) shows it.
def test_constrained_json_whitespace_pattern(tmp_path):
    proc, err = start(run_args("--model-path {model} --constrained-json-whitespace-pattern ' '"),
                      tmp_path)
    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0,
                                                      "maximum": 99}},
              "required": ["a"], "additionalProperties": False}
    try:
        url = listening_url(proc, err)
        info = requests.get(url + "/get_server_info", timeout=30).json()
        assert info["constrained_json_whitespace_pattern"] == " ", info
        for seed in range(4):
            r = requests.post(url + "/generate", timeout=60, json={
                "text": "Once upon a time", "sampling_params": {
                    "max_new_tokens": 40, "temperature": 1, "sampling_seed": seed,
                    "json_schema": json.dumps(schema)}})
            assert r.status_code == 200, r.text
            out = r.json()
            assert out["meta_info"]["finish_reason"]["type"] == "stop", out
            assert re.fullmatch(r'\{ "a" : \d{1,2} \}', out["text"]), out["text"]
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)


# --cuda-graph-bs 1 3: on a GPU (SGL_TEST_SERVER_ARGS) batches of 1 replay the size-1 graph, of
# 2 and 3 the size-3 graph padded, of 4 and 5 run eagerly; greedy outputs equal an eager
# server's. Requests of five lengths shrink one batch through every case.
def test_cuda_graph_bs_serves_what_eager_steps_serve(tmp_path):
    prompts = ["Once upon a time", "The cat", "One day, a little", "Tom and", "She"]

    def outputs(name, *args):
        srv = Server(tmp_path / name, *args)
        try:
            with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
                replies = list(pool.map(lambda i: srv.post("/generate", {
                    "text": prompts[i], "sampling_params": {
                        "max_new_tokens": 8 + 4 * i, "temperature": 0, "ignore_eos": True}}),
                    range(len(prompts))))
            assert all(r.status_code == 200 for r in replies), [r.text for r in replies]
            if serves_on_gpu() and "--cuda-graph-bs" in args:
                assert "CUDA graphs" in srv.log(), srv.log()
            return [r.json()["output_ids"] for r in replies]
        finally:
            assert srv.stop() == 0, srv.log()

    (tmp_path / "graphs").mkdir()
    (tmp_path / "eager").mkdir()
    graphs = outputs("graphs", "--cuda-graph-bs", "1", "3")
    assert [len(o) for o in graphs] == [8, 12, 16, 20, 24]
    assert graphs == outputs("eager", "--disable-cuda-graph")


def test_tensor_parallel_serves_what_one_rank_serves(tmp_path):
    # --tp-size 2 on the CPU: the same tokens as one rank, logprobs within the all-reduce's
    # summation-order error (tests/runner/tensor_parallel_test.cpp measures it).
    prompts = ["Once upon a time", "The little dog", "Once upon a time, there was"]
    one, one_info = generate_greedy(run_args("--model-path {model}"), tmp_path, prompts)
    two, two_info = generate_greedy(run_args("--model-path {model} --tp-size 2"), tmp_path,
                                    prompts)
    assert (one_info["tp_size"], two_info["tp_size"]) == (1, 2)
    for a, b in zip(one, two):
        assert a["output_ids"] == b["output_ids"] and a["text"] == b["text"]
        for x, y in zip(a["meta_info"]["output_token_logprobs"],
                        b["meta_info"]["output_token_logprobs"]):
            assert abs(x[0] - y[0]) < 3e-5


def test_expert_parallel_serves_what_tensor_parallel_serves(tmp_path):
    # --tp-size 2 --ep-size 2 on the CPU: each rank holds 4 of tiny-qwen2-moe's 8 experts and the
    # tokens travel to them (all-to-all); the same tokens as plain --tp-size 2, logprobs within
    # the summation-order error. The tiny model has no tokenizer: stories260K's ids fit its vocab.
    moe = MODEL.parent / "tiny-qwen2-moe"
    prompts = ["Once upon a time", "The little dog"]
    line = "--model-path " + str(moe) + " --tokenizer-path {model} --tp-size 2"
    tp, tp_info = generate_greedy(run_args(line), tmp_path, prompts)
    ep, ep_info = generate_greedy(run_args(line + " --ep-size 2"), tmp_path, prompts)
    assert (tp_info["tp_size"], tp_info["ep_size"]) == (2, 1)
    assert (ep_info["tp_size"], ep_info["ep_size"]) == (2, 2)
    for a, b in zip(tp, ep):
        assert a["output_ids"] == b["output_ids"]
        for x, y in zip(a["meta_info"]["output_token_logprobs"],
                        b["meta_info"]["output_token_logprobs"]):
            assert abs(x[0] - y[0]) < 1e-5


def test_tokenizer_larger_than_the_vocabulary_is_warned(tmp_path):
    tokenizer = MODEL.parent.parent / "tokenizers" / "llama3_1"
    proc, err = start(run_args("--model-path {model} --tokenizer-path " + str(tokenizer)), tmp_path)
    try:
        assert "listening on" in proc.stdout.readline().decode(), stderr_of(err)
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)
    log = stderr_of(err)
    assert "has 128256 tokens but the model's vocabulary has 512" in log, log


def test_unknown_flag_is_named(tmp_path):
    proc, err = start(run_args("--model-path {model} --no-such-flag 3"), tmp_path)
    assert proc.wait(timeout=30) == 2
    assert "unknown flag '--no-such-flag'" in stderr_of(err)


def test_a_broken_chat_template_fails_before_the_model_loads(tmp_path):
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% for m in messages %}{{ m.content }}")  # no endfor
    for path, message in [(broken, "does not parse"), (tmp_path / "missing.jinja", "cannot read")]:
        proc, err = start(run_args("--model-path {model} --chat-template " + str(path)), tmp_path)
        assert proc.wait(timeout=30) == 1
        log = stderr_of(err)
        assert message in log and str(path) in log, log
        assert "of weights" not in log, log  # WeightLoader's "loaded N GB of weights" line


def test_ambiguous_abbreviations_and_missing_values(tmp_path):
    # argparse's rules: a prefix of several flags is an error; a flag is never another's value.
    proc, err = start(run_args("--model-path {model} --served-model-name --disable-radix-cache"),
                      tmp_path)
    assert proc.wait(timeout=30) == 2
    assert "--served-model-name needs a value, got the flag --disable-radix-cache" in \
        stderr_of(err)
    proc, err = start(run_args("--model-path {model} --max-"), tmp_path)
    assert proc.wait(timeout=30) == 2
    assert "ambiguous flag '--max-': it could be any of" in stderr_of(err)


# --default-chat-template-kwargs fills what a request's chat_template_kwargs leaves unset (on the
# chat, Responses and Messages routes); --stream-response-default-include-usage ends streams
# with a usage chunk unasked. Both SGLang's.
def test_default_chat_template_kwargs_and_stream_usage(tmp_path):
    template = tmp_path / "greeting.jinja"
    template.write_text("{{ greeting | default('') }}{% for m in messages %}{{ m['content'] }}"
                        "{% endfor %}")
    proc, err = start(["--model-path", str(MODEL), "--chat-template", str(template),
                       "--default-chat-template-kwargs",
                       json.dumps({"greeting": "Once upon a time there was a dog. "}),
                       "--stream-response-default-include-usage"], tmp_path)
    try:
        url = listening_url(proc, err)

        def prompt_tokens(route, body):
            r = requests.post(url + route, timeout=60, json=body)
            assert r.status_code == 200, r.text
            usage = r.json()["usage"]
            if "prompt_tokens" in usage:
                return usage["prompt_tokens"]
            # Responses' input_tokens; Messages' leaves out the cached ones.
            return usage["input_tokens"] + usage.get("cache_read_input_tokens", 0)

        hi = [{"role": "user", "content": "Hi"}]
        chat = {"messages": hi, "max_tokens": 1}
        bare = prompt_tokens("/v1/chat/completions",
                             dict(chat, chat_template_kwargs={"greeting": ""}))
        greeted = prompt_tokens("/v1/chat/completions", chat)
        assert greeted > bare + 5
        assert prompt_tokens("/v1/responses", {"input": "Hi", "max_output_tokens": 1}) == greeted
        assert prompt_tokens("/v1/messages", {"messages": hi, "max_tokens": 1}) == greeted
        info = requests.get(url + "/get_model_info", timeout=10).json()
        assert info["default_chat_template_kwargs"] == {"greeting": "Once upon a time there was "
                                                                    "a dog. "}
        for route, body in [("/v1/chat/completions", chat),
                            ("/v1/completions", {"prompt": "Hi", "max_tokens": 2})]:
            r = requests.post(url + route, json=dict(body, stream=True), stream=True, timeout=60)
            chunks = [json.loads(line[6:]) for line in r.iter_lines()
                      if line.startswith(b"data: {")]
            assert chunks[-1]["usage"]["completion_tokens"] >= 1, (route, chunks[-1])
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)


def test_help_lists_every_flag_with_meaning_and_exits_0():
    binary = server_binary()
    if binary is None:
        pytest.skip("sgl-server is missing")
    out = subprocess.run([str(binary), "--help"], capture_output=True, timeout=30, text=True)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for flag in ["--model-path, --model PATH", "--tp-size, --tp, --tensor-parallel-size N",
                 "--ep-size, --ep, --expert-parallel-size N",
                 "--config FILE", "--log-requests", "--mem-fraction-static X",
                 "--trust-remote-code", "--speculative-algorithm EAGLE|EAGLE3|NGRAM"]:
        assert flag in text, flag
    words = " ".join(text.split())  # the meanings are wrapped
    assert "[default: 30000]" in words
    assert "Refused unless 1: sgl.cpp's GPU ranks are consecutive GPUs" in words
    assert "No effect: sgl.cpp never executes code from model files" in words
    # Every line fits 100 columns.
    assert max(len(line) for line in text.splitlines()) <= 100


def test_config_file_as_in_sglang_docs(tmp_path):
    # The docs' example, with the parallel size this machine can serve; the command line
    # overrides the file (--max-running-requests).
    config = tmp_path / "config.yaml"
    config.write_text(f"""model-path: {MODEL}
host: 0.0.0.0
port: 30000
tensor-parallel-size: 1
enable-metrics: true
log-requests: true
max_running_requests: 4
disable-radix-cache: true
preferred-sampling-params: {{max_new_tokens: 3}}
""")
    proc, err = start(["--config", str(config), "--max-running-requests", "8"], tmp_path)
    try:
        url = listening_url(proc, err)
        info = requests.get(url + "/get_server_info", timeout=10).json()
        assert info["max_running_requests"] == 8
        assert info["disable_radix_cache"] is True
        r = requests.post(url + "/generate", timeout=60, json={
            "text": "Once", "sampling_params": {"max_new_tokens": 2}})
        assert r.status_code == 200
        # A mapping is its flag's JSON (SGLang's json.dumps of the YAML value).
        r = requests.post(url + "/generate", timeout=60, json={
            "text": "Once", "sampling_params": {"ignore_eos": True}})
        assert r.json()["meta_info"]["completion_tokens"] == 3, r.text
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
    log = stderr_of(err)
    assert "--enable-metrics has no effect" in log and "request rid=" in log, log


@pytest.mark.parametrize("body,refusal", [
    ("model-path: {model}\ntensor-parallel-size: 0\n", "--tp-size must be in [1, 64]"),
    ("model-path: {model}\nno-such-flag: 1\n", "'no-such-flag' is not a flag"),
    ("model-path: {model}\nenable-metrics: maybe\n", "'enable-metrics' is a switch: true or false"),
    ("model-path: {model}\ntensor-parallel-size: [1, 2]\n",
     "'tensor-parallel-size' needs a single value (it takes one, not a list)"),
    ("model-path: {model}\nconfig: other.yaml\n", "cannot name another"),
    ("model-path: [unclosed\n", "not valid YAML"),
    ("- a list\n", "expected a mapping"),
])
def test_config_file_errors(body, refusal, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(body.format(model=MODEL))
    proc, err = start(["--config", str(config)], tmp_path)
    assert proc.wait(timeout=30) == 2
    assert refusal in stderr_of(err)


def test_missing_config_file(tmp_path):
    proc, err = start(["--config", str(tmp_path / "absent.yaml")], tmp_path)
    assert proc.wait(timeout=30) == 2
    assert "no such file" in stderr_of(err)


def test_longer_context_with_sglang_environment_variable(tmp_path):
    for no in ("0", "false", "no"):  # as SGLang reads it: 1 / true / yes / y in any case
        proc, err = start(run_args("--model-path {model} --context-length 1024"), tmp_path,
                          env=dict(os.environ, SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=no))
        assert proc.wait(timeout=30) != 0, no
    env = dict(os.environ, SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN="True")
    proc, err = start(run_args("--model-path {model} --context-length 1024"), tmp_path, env=env)
    try:
        url = listening_url(proc, err)
        assert requests.get(url + "/get_model_info", timeout=10).json()["context_length"] == 1024
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_metric_buckets_and_extra_labels(tmp_path):
    # SGLang's --bucket-* and --extra-metric-labels; bad values stop the start.
    for bad, words in ((["--bucket-inter-token-latency", "1", "0.5"], "increasing"),
                       (["--bucket-e2e-request-latency", "x"], "expects numbers"),
                       (["--extra-metric-labels", '{"le": "x"}'], "a label the server sets"),
                       (["--extra-metric-labels", '{"a-b": "x"}'], "Prometheus label name"),
                       (["--prompt-tokens-buckets", "tse", "1000", "1", "8"], "base > 1"),
                       (["--generation-tokens-buckets", "linear", "5"], "the rule must be")):
        proc, err = start(["--model-path", str(MODEL), *bad], tmp_path)
        assert proc.wait(timeout=30) != 0, bad
        assert words in stderr_of(err), (bad, stderr_of(err))
    proc, err = start(["--model-path", str(MODEL), "--served-model-name", "m",
                       "--bucket-time-to-first-token", "0.5", "1", "2.5",
                       "--prompt-tokens-buckets", "custom", "2", "100",
                       "--generation-tokens-buckets", "tse", "4", "2", "2",
                       "--extra-metric-labels", '{"cluster": "a"}'], tmp_path)
    try:
        url = listening_url(proc, err)
        requests.post(url + "/generate", json={"text": "hi", "sampling_params": {
            "max_new_tokens": 2}}, timeout=30)
        text = requests.get(url + "/metrics", timeout=10).text
        buckets = [line for line in text.splitlines()
                   if line.startswith("sglang:time_to_first_token_seconds_bucket")]
        assert [b.split("le=")[1].split("}")[0] for b in buckets] == [
            '"0.5"', '"1.0"', '"2.5"', '"+Inf"'], buckets
        assert all('{model_name="m",cluster="a",' in b for b in buckets), buckets
        assert 'sglang:num_running_reqs{model_name="m",cluster="a"}' in text
        # SGLang's default buckets elsewhere.
        assert 'sglang:e2e_request_latency_seconds_bucket{model_name="m",cluster="a",le="2400.0"}' in text
        # The token histograms with the rules' bounds: a prompt of more than 2 tokens, 2
        # generated (tse 4 2 2: 2, 4, 6).
        def bucket(name, le):
            prefix = f'{name}_bucket{{model_name="m",cluster="a",le="{le}"}} '
            return [float(l[len(prefix):]) for l in text.splitlines() if l.startswith(prefix)]
        assert bucket("sglang:prompt_tokens_histogram", "2.0") == [0.0], text
        assert bucket("sglang:prompt_tokens_histogram", "100.0") == [1.0], text
        assert bucket("sglang:uncached_prompt_tokens_histogram", "+Inf") == [1.0], text
        assert bucket("sglang:generation_tokens_histogram", "2.0") == [1.0], text
        assert bucket("sglang:generation_tokens_histogram", "6.0") == [1.0], text
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_health_probes_the_engine_unless_switched_off(tmp_path):
    # SGLang's SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION (default on): /health runs a one-token
    # probe through the engine, as /health_generate; off, it answers without one. /ping never
    # probes. Its values as SGLang's EnvBool reads them; others stop the start.
    proc, err = start(run_args("--model-path {model}"), tmp_path,
                      env=dict(os.environ, SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION="maybe"))
    assert proc.wait(timeout=30) != 0
    assert "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION must be a boolean" in stderr_of(err)
    for value, probes in ((None, True), ("false", False)):
        env = dict(os.environ)
        if value is not None:
            env["SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION"] = value
        proc, err = start(run_args("--model-path {model}"), tmp_path, env=env)
        try:
            url = listening_url(proc, err)

            def prompts():
                info = requests.get(url + "/get_server_info", timeout=10).json()
                return info["internal_states"][0]["prompt_tokens_total"]

            before = prompts()
            assert requests.get(url + "/ping", timeout=10).status_code == 200
            assert prompts() == before
            assert requests.get(url + "/health", timeout=30).status_code == 200
            assert (prompts() > before) == probes, value
        finally:
            proc.terminate()
            assert proc.wait(timeout=30) == 0


# /health_generate on a busy server (SGLang's): healthy once the engine makes progress after the
# probe starts, also when the queue is full and its own request is refused (a full queue answered
# 503 "at capacity" before: a saturated server looked dead to its probes).
def test_health_generate_on_a_full_queue(tmp_path):
    # One running and 20 queued requests of 500 tokens each: a few seconds of work on the CPU.
    proc, err = start(["--model-path", str(MODEL), "--max-running-requests", "1",
                       "--max-queued-requests", "20"], tmp_path)
    try:
        url = listening_url(proc, err)
        body = {"input_ids": [300] * 8, "sampling_params": {"max_new_tokens": 500,
                                                            "ignore_eos": True}}
        with concurrent.futures.ThreadPoolExecutor(21) as pool:
            replies = [pool.submit(requests.post, url + "/generate", json=body, timeout=120)
                       for _ in range(21)]

            def load():
                s = requests.get(url + "/get_server_info", timeout=10).json()
                return s["internal_states"][0]

            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                state = load()
                if state["num_running_reqs"] + state["num_waiting_reqs"] == 21:
                    break
            assert state["num_running_reqs"] + state["num_waiting_reqs"] == 21, state
            # The probe's own request is refused (the queue is full); the engine's steps answer.
            probe = requests.get(url + "/health_generate", timeout=60)
            assert probe.status_code == 200, probe.text
            assert load()["num_waiting_reqs"] > 0  # while the queue still held work
            assert all(r.result().status_code == 200 for r in replies)
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)


# SGLang's /slow_down stalls every engine step (forward_sleep_time seconds before it runs);
# /health_generate waits SGLANG_HEALTH_CHECK_TIMEOUT seconds (here 1) for progress, then answers
# 503 and marks the server unhealthy: /ping and /ready answer 503 (SGLang's is_healthy()) until
# a probe finds the engine moving again.
def test_a_stalled_engine_fails_its_probes_until_it_moves(tmp_path):
    proc, err = start(run_args("--model-path {model}"), tmp_path,
                      env=dict(os.environ, SGLANG_HEALTH_CHECK_TIMEOUT="soon"))
    assert proc.wait(timeout=30) != 0
    assert "SGLANG_HEALTH_CHECK_TIMEOUT must be a number of seconds" in stderr_of(err)
    proc, err = start(run_args("--model-path {model}"), tmp_path,
                      env=dict(os.environ, SGLANG_HEALTH_CHECK_TIMEOUT="1"))
    try:
        url = listening_url(proc, err)

        def status(path):
            return requests.get(url + path, timeout=30).status_code

        assert status("/ping") == 200 and status("/ready") == 200
        for bad in ({}, {"forward_sleep_time": "x"}, {"forward_sleep_time": 1e9}):
            r = requests.post(url + "/slow_down", json=bad, timeout=10)
            assert r.status_code == 400 and "forward_sleep_time" in r.text, (bad, r.text)
        r = requests.post(url + "/slow_down", json={"forward_sleep_time": 4}, timeout=10)
        assert r.status_code == 200 and r.json() is None, r.text
        probe = requests.get(url + "/health_generate", timeout=30)
        assert probe.status_code == 503 and "no progress in 1 s" in probe.text, probe.text
        assert status("/ping") == 503 and status("/ready") == 503
        assert requests.get(url + "/health", timeout=30).status_code == 503  # probes as well
        assert status("/ping") == 503
        r = requests.post(url + "/slow_down", json={"forward_sleep_time": None}, timeout=10)
        assert r.status_code == 200, r.text
        # The step asleep when the sleep was lifted still ends its sleep; then probes pass.
        deadline = time.monotonic() + 20
        while status("/health_generate") != 200:
            assert time.monotonic() < deadline, "the engine never answered a probe again"
        assert status("/ping") == 200 and status("/ready") == 200
        completion = requests.post(url + "/generate", timeout=30, json={
            "input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 2}})
        assert completion.status_code == 200, completion.text
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0, stderr_of(err)
