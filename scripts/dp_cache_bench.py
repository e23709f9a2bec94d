#!/usr/bin/env python3
"""Prefix-cache hit rate and throughput of sgl-server --dp-size N under each --load-balance-method,
on a shared-prefix workload: P long prefixes ("system prompts"), each followed by Q different
questions, sent in shuffled order by C concurrent clients (stdlib only).

  scripts/dp_cache_bench.py --server build/cpu/src/app/sgl-server \\
      --model ../shared/testdata/models/stories260K --dp-size 2
"""
import argparse
import concurrent.futures
import json
import random
import subprocess
import time
import urllib.request


def post(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as r:
        return json.loads(r.read())


def start(args, method):
    proc = subprocess.Popen([args.server, "--model-path", args.model, "--port", "0",
                             "--dp-size", str(args.dp_size), "--load-balance-method", method,
                             "--log-level", "warning", *args.extra],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if "listening on " not in line:
        proc.kill()
        raise SystemExit(f"sgl-server did not start: {line!r}")
    return proc, line.split("listening on ", 1)[1].split()[0]


def workload(args):
    rng = random.Random(args.seed)
    words = ["the", "little", "dog", "ran", "to", "a", "big", "red", "ball", "and", "Lily",
             "was", "happy", "sun", "tree", "park", "mom", "said", "play", "day"]
    prefixes = [" ".join(rng.choice(words) for _ in range(args.prefix_words))
                for _ in range(args.prefixes)]
    prompts = [f"{p}. {' '.join(rng.choice(words) for _ in range(6))}?"
               for p in prefixes for _ in range(args.questions)]
    rng.shuffle(prompts)
    return prompts


def run(args, method, prompts):
    proc, url = start(args, method)
    try:
        one = lambda p: post(url + "/generate", {"text": p, "sampling_params": {
            "temperature": 0, "max_new_tokens": args.max_new_tokens}})
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            list(pool.map(one, prompts))
        seconds = time.monotonic() - t0
        states = json.loads(urllib.request.urlopen(url + "/get_server_info").read())[
            "internal_states"]
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    cached = sum(s["cached_prompt_tokens_total"] for s in states)
    total = sum(s["prompt_tokens_total"] for s in states)
    routed = "/".join(str(s["routed_requests_total"]) for s in states)
    print(f"{method:15s} hit rate {cached / total:6.3f}  {len(prompts) / seconds:7.1f} req/s  "
          f"routed {routed}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--dp-size", type=int, default=2)
    parser.add_argument("--prefixes", type=int, default=8)
    parser.add_argument("--prefix-words", type=int, default=60)
    parser.add_argument("--questions", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default="round_robin,shortest_queue,minimum_tokens,cache_aware")
    parser.add_argument("extra", nargs="*", help="more sgl-server flags (after --)")
    args = parser.parse_args()
    prompts = workload(args)
    print(f"dp {args.dp_size}: {args.prefixes} prefixes x {args.questions} questions, "
          f"{args.concurrency} clients, {args.max_new_tokens} new tokens each")
    for method in args.methods.split(","):
        run(args, method, prompts)


if __name__ == "__main__":
    main()
