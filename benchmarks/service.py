"""The service's HTTP overhead: the same mix of profile reads, writes and searches,
through the real HTTP stack (uvicorn on loopback, httpx clients, verified tokens) and
through the SDK in-process, side by side in one run; the ratio is what HTTP costs.

    python -m benchmarks.service [--quick] [--seconds 10] [--threads 4]
"""

from __future__ import annotations

import argparse
import random
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import uvicorn

from benchmarks.common import (
    bench_client,
    elapsed_ms,
    fresh_users,
    percentile,
    print_table,
    write_result,
)
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from service import create_app
from service.settings import ServiceSettings
from service.tokens import mint

__all__ = ["main"]

SECRET = "bench-secret-0123456789abcdef0123456789"
MIX = (("profile", 0.4), ("write", 0.2), ("search", 0.4))
QUERIES = ("退款到账了吗", "订单 88231 的物流", "扫地机 不回充", "发票抬头")
TEXTS = (
    "订单 {n} 的扫地机不回充，申请退款",
    "顺丰运单号 SF{n} 显示包裹在杭州中转",
    "偏好图文说明，不看视频教程",
    "请开增值税专用发票，订单 {n}",
)

Call = Callable[[str, random.Random], None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _http_calls(base: str, tokens: dict[str, str]) -> dict[str, Call]:
    local = threading.local()

    def client() -> httpx.Client:
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=base, timeout=30)
        c: httpx.Client = local.client
        return c

    def headers(user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {tokens[user]}"}

    def profile(user: str, rng: random.Random) -> None:
        client().get("/v1/profile", headers=headers(user)).raise_for_status()

    def write(user: str, rng: random.Random) -> None:
        body = {
            "text": rng.choice(TEXTS).format(n=rng.randint(10000, 99999)),
            "lifecycle_policy": "implicit",
        }
        client().post("/v1/memories", headers=headers(user), json=body).raise_for_status()

    def search(user: str, rng: random.Random) -> None:
        body = {"query": rng.choice(QUERIES), "limit": 5}
        client().post("/v1/search", headers=headers(user), json=body).raise_for_status()

    return {"profile": profile, "write": write, "search": search}


def _sdk_calls(mem: MemoryClient) -> dict[str, Call]:
    def profile(user: str, rng: random.Random) -> None:
        mem.profiles.get(user)

    def write(user: str, rng: random.Random) -> None:
        text = rng.choice(TEXTS).format(n=rng.randint(10000, 99999))
        mem.write(user, text, lifecycle_policy=LifecyclePolicy.IMPLICIT)

    def search(user: str, rng: random.Random) -> None:
        mem.search(user, rng.choice(QUERIES), limit=5)

    return {"profile": profile, "write": write, "search": search}


def _run(
    calls: dict[str, Call], users: Sequence[str], seconds: float, threads: int
) -> dict[str, Any]:
    samples: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    lock = threading.Lock()
    end = time.perf_counter() + seconds

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        names = [n for n, _ in MIX]
        weights = [w for _, w in MIX]
        while time.perf_counter() < end:
            name = rng.choices(names, weights)[0]
            started = time.perf_counter()
            try:
                calls[name](rng.choice(users), rng)
            except Exception:  # counted, the run goes on
                with lock:
                    errors[name] += 1
                continue
            with lock:
                samples[name].append(elapsed_ms(started))

    started = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    wall = time.perf_counter() - started
    return {
        "ops_per_s": round(sum(len(v) for v in samples.values()) / wall, 1),
        "routes": {
            name: {
                "n": len(v),
                "p50_ms": round(percentile(v, 50), 2),
                "p95_ms": round(percentile(v, 95), 2),
                "p99_ms": round(percentile(v, 99), 2),
                "errors": errors[name],
            }
            for name, v in sorted(samples.items())
        },
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the mix over HTTP and in-process, print the table, write JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.service")
    parser.add_argument("--quick", action="store_true", help="3 s per side")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args(argv)
    seconds = 3.0 if args.quick else args.seconds
    mem = bench_client("service")
    users = [f"svc-buyer-{i:02d}" for i in range(20)]
    fresh_users(mem, users)
    service = ServiceSettings(jwt_secret=SECRET, rate_per_s=1e6, rate_burst=1_000_000)  # type: ignore[arg-type]
    tokens = {
        u: mint(service, sub=u, agent="bench", scopes=["memory:read", "memory:write"])
        for u in users
    }
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(service=service, client=mem),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        agent = mem.for_agent("bench")
        results = {
            "sdk": _run(_sdk_calls(agent), users, seconds, args.threads),
            "http": _run(
                _http_calls(f"http://127.0.0.1:{port}", tokens), users, seconds, args.threads
            ),
        }
    finally:
        server.should_exit = True
        thread.join(10)
        mem.close()
    rows = []
    for name, _ in MIX:
        http, sdk = results["http"]["routes"].get(name, {}), results["sdk"]["routes"].get(name, {})
        rows.append(
            [
                name,
                http.get("p50_ms", float("nan")),
                http.get("p95_ms", float("nan")),
                http.get("p99_ms", float("nan")),
                sdk.get("p50_ms", float("nan")),
                sdk.get("p95_ms", float("nan")),
                sdk.get("p99_ms", float("nan")),
                round(http.get("p50_ms", float("nan")) / sdk.get("p50_ms", float("nan")), 2),
            ]
        )
    print_table(
        f"HTTP vs in-process, {args.threads} threads, {seconds:.0f} s each "
        f"(ops/s: HTTP {results['http']['ops_per_s']}, SDK {results['sdk']['ops_per_s']})",
        ["route", "HTTP p50", "p95", "p99", "SDK p50", "p95", "p99", "HTTP/SDK p50"],
        rows,
    )
    payload = {"seconds": seconds, "threads": args.threads, **results}
    write_result("service-quick" if args.quick else "service", payload)
    return payload


if __name__ == "__main__":
    main()
