"""Drill: the isolation battery, through the REST API and through the SDK.

Issue 11 ("Isolation battery"). A victim user with memories (public, private to
agent A, inside a sandbox), a fact, a link, a device, vaulted PII and a sandbox; an
attacker user with its own data. Every attempt to reach the victim's data fails: the
victim's ids in paths, bodies and the ``X-Dualtrack-Sandbox`` header; crafted filters
(LIKE and regex wildcards, quotes, backslash, NUL, Unicode look-alikes); the victim's
user id and ids inside search text; forged, tampered, expired and revoked tokens and
validly signed tokens for look-alike user ids; and, for the victim itself, agent B
reaching agent A's private memory and agent A's sandbox. The battery runs once per
index backend (pgvector, Weaviate): the same attacks on every read path of both. An
attempt succeeds against the victim when its response holds a victim secret it did
not send, or when the victim's rows (every table with a ``user_id``, compared after
every attempt) changed. Printed: attempts by channel and outcome. Asserted: no
success, at least 100 attempts.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sized
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import jwt
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from policies.errors import DualtrackError
from sandbox.current import ActiveSandbox, enter, leave
from sdk import BusinessState, LifecyclePolicy, MemoryClient, Settings
from service import create_app
from structured_memory.models import Base
from tests.test_service import SECRET, SERVICE, auth, token
from tests.test_weaviate import _client as weaviate_client
from unstructured_memory.index.registry import WeaviateConfig

VICTIM, ATTACKER = "buyer-victim-001", "buyer-attacker-002"
AGENT_A, AGENT_B = "refund-agent", "logistics-agent"
SESSION = "s-victim-88231"
CONTENT = "qz7w"
"""In every text the victim stores and in no request: its presence in a response is a leak."""
PRIVATE = "pv3k"
"""In agent A's private memory only: agent B must never see it."""
SANDBOXED = "sb6m"
"""In the memory agent A wrote inside its sandbox only: agent B must never see it."""
PHONE = "13912345678"
"""The victim's phone, vaulted: its clear value must never reach the attacker."""
LOOKALIKES = [
    "buyer-vіctim-001",  # Cyrillic і
    "ｂuyer-victim-001",  # fullwidth b
    "buyer-victim-００1",  # fullwidth digits
    "BUYER-VICTIM-001",
    "buyer-victim-00%",
    "buyer-victim-00_",
    "buyer-victim-.*",
    "buyer-victim-%",
    "buyer-victim-001 ",
    "buyer-victim-001\x00",
    "buyer-victim-001' OR '1'='1",
    "buyer-victim-001\\",
]
CRAFTED = ["%", "_", ".*", "'", "\\", "\x00", "' OR '1'='1", "%%", "s-victim-%", "s_victim_88231"]
SESSION_LOOKALIKES = ["ｓ-victim-88231", "ѕ-victim-88231", "S-VICTIM-88231", SESSION + "%"]

Snapshot = list[tuple[str, list[tuple[Any, ...]]]]
"""(table, the victim's rows as reprs) for every table holding ``user_id``."""


@dataclass
class Victim:
    """The victim's ids the attacker is assumed to know."""

    public: uuid.UUID
    private: uuid.UUID
    sandboxed: uuid.UUID
    fact_id: uuid.UUID
    fact_key: str
    link_id: uuid.UUID
    fingerprint: str
    box: uuid.UUID
    vault: tuple[uuid.UUID, ...]

    def secrets(self) -> list[str]:
        """Strings that must never come back to the attacker unless it sent them."""
        ids = [self.public, self.private, self.sandboxed, self.fact_id, self.link_id, self.box]
        return [CONTENT, PHONE, self.fingerprint, *(str(i) for i in (*ids, *self.vault))]

    def guarded(self, row: uuid.UUID) -> list[str]:
        """What must never come back to another agent of the victim: agent A's private
        memory, or what agent A wrote inside its sandbox (and the sandbox's id)."""
        if row == self.private:
            return [str(self.private), PRIVATE]
        return [str(self.sandboxed), str(self.box), SANDBOXED]


@dataclass
class Battery:
    """Counts attempts by (channel, outcome) and keeps the victim's snapshot."""

    mem: MemoryClient
    baseline: Snapshot
    tally: Counter[tuple[str, str]] = field(default_factory=Counter)
    successes: list[str] = field(default_factory=list)

    def record(
        self, channel: str, name: str, outcome: str, leaked: bool, private: uuid.UUID | None
    ) -> None:
        """Count one attempt; ``private``: only that row must stay unchanged (the
        victim's own reads through another agent may touch its other rows)."""
        after = snapshot(self.mem)
        if private is None:
            changed = after != self.baseline
        else:
            changed = _row(after, private) != _row(self.baseline, private)
        self.baseline = after
        if leaked or changed:
            self.successes.append(f"{channel}: {name} ({'leak' if leaked else 'changed'})")
            outcome = "SUCCESS"
        self.tally[(channel, outcome)] += 1


def _row(snap: Snapshot, row_id: uuid.UUID) -> list[tuple[Any, ...]]:
    return [row for _, rows in snap for row in rows if row[0] == repr(row_id)]


def snapshot(mem: MemoryClient) -> Snapshot:
    """Every row of the victim in every table holding ``user_id`` (the outbox aside),
    once the uses searches recorded are written (renewal is deferred)."""
    mem._rt().ledger.renewals.flush()
    tables = [t for t in Base.metadata.sorted_tables if "user_id" in t.c]
    with mem.admin.database.transaction() as conn:
        return [
            (
                t.name,
                sorted(
                    (
                        tuple(map(repr, row))
                        for row in conn.execute(select(t).where(t.c.user_id == VICTIM))
                    ),
                ),
            )
            for t in tables
            if t.name != "fragment_outbox"
        ]


def _leaks(text: str, sent: str, secrets: list[str]) -> bool:
    return any(s in text and s not in sent for s in secrets)


def _label(status: int, text: str) -> str:
    if status >= 300:
        return str(status)
    body = json.loads(text) if text else None
    empty = body in (None, [], {}) or (
        isinstance(body, dict) and (body.get("hits") == [] or body.get("merged") == [])
    )
    return f"{status} empty" if empty else f"{status} own data"


@pytest.fixture(params=["pgvector", pytest.param("weaviate", marks=pytest.mark.weaviate)])
def backend(
    request: pytest.FixtureRequest, mem: MemoryClient, settings: Settings
) -> Iterator[MemoryClient]:
    """The session client (pgvector), or one over a fresh Weaviate collection (the same
    database, emptied after the test by ``mem``)."""
    if request.param == "pgvector":
        yield mem
        return
    server: WeaviateConfig = request.getfixturevalue("weaviate_server")
    config = server.model_copy(update={"collection": f"Test{uuid.uuid4().hex[:12]}"})
    with weaviate_client(settings, config) as wmem:
        yield wmem
        wmem.admin.index.reset()  # type: ignore[attr-defined]


@pytest.fixture
def world(backend: MemoryClient) -> tuple[MemoryClient, Victim]:
    mem = backend
    for user in (VICTIM, ATTACKER):
        mem.profiles.ensure(user)
    a = mem.for_agent(AGENT_A)
    public = a.write(
        VICTIM,
        f"订单 88231 退款 RF20260629001 已提交，电话 13912345678 {CONTENT}",
        lifecycle_policy=LifecyclePolicy.IMPLICIT,
        session_id=SESSION,
    )
    private = a.write(
        VICTIM,
        f"私密备注：客户偏好顺丰，不要中通 {CONTENT} {PRIVATE}",
        lifecycle_policy=LifecyclePolicy.IMPLICIT,
        session_id=SESSION,
        private=True,
    )
    with a.sandbox(VICTIM, SESSION) as sb:
        sandboxed = a.write(
            VICTIM,
            f"沙箱里的临时需求：想把订单 88231 换成 S20 {CONTENT} {SANDBOXED}",
            lifecycle_policy=LifecyclePolicy.IMPLICIT,
        )
        box = sb.id
    fact = a.facts.put(
        VICTIM, "快递偏好", f"顺丰 {CONTENT}", lifecycle_policy=LifecyclePolicy.EXPLICIT
    )
    link = a.links.add(VICTIM, entity_type="order", entity_id="88231", role="owner")
    device = a.devices.register(
        VICTIM, device_id="iphone-15-victim", os="iOS 18", browser="微信内置浏览器"
    )
    mem.for_agent(AGENT_B).write(
        ATTACKER, "我的订单 55555 申请退货，快递顺丰", lifecycle_policy=LifecyclePolicy.IMPLICIT
    )
    vault = tuple(ref.id for ref in mem.pii.list(VICTIM))
    assert vault, "the victim's phone is vaulted"
    mem.admin.drain_outbox()
    return (
        mem,
        Victim(
            public, private, sandboxed, fact.id, fact.key, link.id, device.fingerprint, box, vault
        ),
    )


def _none_alg(claims: dict[str, object]) -> str:
    def part(d: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


def _signed(sub: str, agent: str | None = AGENT_B) -> str:
    """A token the issuer really signed, for a ``sub`` mint would refuse."""
    now = datetime.now(UTC)
    claims: dict[str, object] = {
        "sub": sub,
        "scope": "memory:erase memory:read memory:write",
        "iat": int(now.timestamp()),
        "exp": int((now + timedelta(hours=1)).timestamp()),
        "jti": uuid.uuid4().hex,
        "aud": "dualtrack",
    }
    if agent is not None:
        claims["azp"] = agent
    return jwt.encode(claims, SECRET, algorithm="HS256")


def _bad_tokens(api: TestClient) -> dict[str, str]:
    good = jwt.decode(token(sub=VICTIM, agent=AGENT_A), options={"verify_signature": False})
    mine = token(sub=ATTACKER, agent=AGENT_B)
    head, payload, sig = mine.split(".")
    swapped = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    swapped["sub"] = VICTIM
    tampered_payload = base64.urlsafe_b64encode(json.dumps(swapped).encode()).rstrip(b"=").decode()
    revoked = token(sub=VICTIM, agent=AGENT_A)
    jti = jwt.decode(revoked, options={"verify_signature": False})["jti"]
    ops = auth(token(sub="operator-01", agent="ops-console", scopes=["ops"]))
    until = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert api.post("/v1/ops/revocations", headers=ops, json={"jti": jti, "expires_at": until})
    return {
        "forged": jwt.encode(good, "wrong-secret-0123456789abcdef012", algorithm="HS256"),
        "alg none": _none_alg(good),
        "tampered sub": f"{head}.{tampered_payload}.{sig}",
        "expired": token(sub=VICTIM, agent=AGENT_A, now=datetime.now(UTC) - timedelta(hours=2)),
        "revoked": revoked,
        "wrong audience": jwt.encode({**good, "aud": "other"}, SECRET, algorithm="HS256"),
        "no bearer": "",
    }


def test_no_attempt_reaches_the_victim(world: tuple[MemoryClient, Victim]) -> None:
    mem, v = world
    with TestClient(create_app(service=SERVICE, client=mem)) as api:
        _controls(api, mem, v)
        battery = Battery(mem, snapshot(mem))
        _rest(api, battery, v)
    _sdk(mem, battery, v)

    channels = sorted({c for c, _ in battery.tally})
    print(f"\n{'channel':26} {'outcome':16} {'attempts':>8}")
    for channel in channels:
        for (c, outcome), n in sorted(battery.tally.items()):
            if c == channel:
                print(f"{c:26} {outcome:16} {n:8}")
    total = sum(battery.tally.values())
    print(f"{'total':43} {total:8}   successes against the victim: {len(battery.successes)}")
    assert battery.successes == [], "\n".join(battery.successes)
    assert total >= 100
    before = snapshot(mem)
    assert mem.for_agent(AGENT_A).memories.delete(VICTIM, v.private)
    assert snapshot(mem) != before, "the snapshot sees a change of the victim's rows"


def _controls(api: TestClient, mem: MemoryClient, v: Victim) -> None:
    """The detectors have teeth: the same probes find the data for its owner."""
    owner = auth(token(sub=VICTIM, agent=AGENT_A))
    for mid in (v.public, v.private):
        assert _leaks(api.get(f"/v1/memories/{mid}", headers=owner).text, "", [CONTENT])
    found = api.post("/v1/search", headers=owner, json={"query": "退款 订单 88231", "limit": 100})
    assert _leaks(found.text, "", [CONTENT])
    a = mem.for_agent(AGENT_A)
    assert _leaks(repr(a.search(VICTIM, "顺丰 中通 偏好", limit=100)), "", [PRIVATE])
    assert _leaks(repr(a.build_context(VICTIM, "顺丰 中通 偏好", records=20)), "", [PRIVATE])
    boxed = {**owner, "X-Dualtrack-Sandbox": str(v.box)}
    assert _leaks(api.get(f"/v1/memories/{v.sandboxed}", headers=boxed).text, "", [CONTENT])
    assert _leaks(repr(a.sandboxes.memories(VICTIM, v.box)), "", [SANDBOXED])
    assert any(_leaks(a.pii.reveal(VICTIM, vid), "", [PHONE]) for vid in v.vault)


@dataclass
class Rest:
    """Sends one REST attempt and records its outcome."""

    api: TestClient
    battery: Battery
    v: Victim

    def attempt(
        self,
        channel: str,
        method: str,
        path: str,
        headers: dict[str, str],
        body: object = None,
        *,
        row: uuid.UUID | None = None,
    ) -> None:
        """``row``: the target is agent A's private or sandboxed memory (the victim's own
        token through another agent): only that row is guarded."""
        kw: dict[str, Any] = {"headers": headers}
        if body is not None:
            kw["json"] = body
        r = self.api.request(method, path, **kw)
        sent = " ".join(json.dumps(x, ensure_ascii=False) for x in (path, headers, body))
        secrets = self.v.secrets() if row is None else self.v.guarded(row)
        leaked = r.status_code < 300 and _leaks(r.text, sent, secrets)
        outcome = _label(r.status_code, r.text)
        self.battery.record(channel, f"{method} {path}", outcome, leaked, row)


ATTACKER_HEADERS = auth(token(sub=ATTACKER, agent=AGENT_B))


def _rest(api: TestClient, battery: Battery, v: Victim) -> None:
    rest = Rest(api, battery, v)
    _rest_ids(rest, v)
    _rest_search(rest, v)
    _rest_sandbox(rest, api, v)
    _rest_tokens(rest, api, v)
    _rest_private(rest, v)
    _rest_other_agents_sandbox(rest, v)


def _rest_ids(rest: Rest, v: Victim) -> None:
    """The victim's ids in paths and bodies, the victim's user id in bodies and queries."""
    me = ATTACKER_HEADERS
    for mid in (v.public, v.private, v.sandboxed, v.fact_id):
        for shape in (str(mid), str(mid).upper(), f"{{{mid}}}", mid.hex):
            rest.attempt("rest:path ids", "GET", f"/v1/memories/{shape}", me)
        rest.attempt("rest:path ids", "DELETE", f"/v1/memories/{mid}", me)
        for action in ("click", "reject"):
            fb = {"memory_id": str(mid), "action": action}
            rest.attempt("rest:body ids", "POST", "/v1/feedback", me, fb)
    for key in (v.fact_key, "快递%", "%", "_", ".*", "快递.*", "ｆ"):
        rest.attempt("rest:path ids", "GET", f"/v1/facts/{key}", me)
        rest.attempt("rest:path ids", "DELETE", f"/v1/facts/{key}", me)
    for fp in (v.fingerprint, v.fingerprint.upper(), v.fingerprint[:-1] + "%"):
        rest.attempt("rest:path ids", "POST", f"/v1/devices/{fp}/verify", me, {"succeeded": True})
        rest.attempt("rest:path ids", "DELETE", f"/v1/devices/{fp}", me)
    rest.attempt("rest:path ids", "POST", f"/v1/links/{v.link_id}/end", me, {})
    rest.attempt("rest:path ids", "DELETE", f"/v1/links/{v.link_id}", me)
    link = {"entity_type": "order", "entity_id": "1", "role": "owner"}
    for path, body in [
        ("/v1/memories", {"text": "x", "lifecycle_policy": "implicit"}),
        ("/v1/search", {"query": "退款"}),
        ("/v1/context", {"query": "退款"}),
        ("/v1/feedback", {"memory_id": str(v.public), "action": "click"}),
        ("/v1/devices", {"device_id": "d", "os": "o", "browser": "b"}),
        ("/v1/links", link),
    ]:
        rest.attempt("rest:body ids", "POST", path, me, {**body, "user_id": VICTIM})
    for path in ("memories", "facts", "devices", "links", "profile", "export"):
        rest.attempt("rest:body ids", "GET", f"/v1/{path}?user_id={VICTIM}", me)


def _rest_search(rest: Rest, v: Victim) -> None:
    """The victim's user id and ids inside search text; crafted filters."""
    me = ATTACKER_HEADERS
    texts = [
        VICTIM,
        f"{VICTIM} 订单 88231 退款 RF20260629001",
        f"{v.public} {v.private} {v.sandboxed}",
        f"user_id:{VICTIM} OR 1=1",
        "顺丰 中通 偏好",
        "13912345678",
    ]
    for q in texts:
        rest.attempt("rest:search text", "POST", "/v1/search", me, {"query": q, "limit": 100})
        rest.attempt("rest:search text", "POST", "/v1/context", me, {"query": q, "records": 20})
    for value in [*CRAFTED, *SESSION_LOOKALIKES, SESSION, VICTIM]:
        query = {"query": "退款 订单 88231", "limit": 100}
        rest.attempt(
            "rest:crafted filters", "POST", "/v1/search", me, {**query, "session_id": value}
        )
        rest.attempt(
            "rest:crafted filters", "POST", "/v1/search", me, {**query, "intents": [value]}
        )


def _rest_sandbox(rest: Rest, api: TestClient, v: Victim) -> None:
    """The victim's sandbox id in the header, with merge and discard."""
    me = ATTACKER_HEADERS
    for shape in (str(v.box), str(v.box).upper(), "%", ".*", str(v.box)[:-1] + "_"):
        hdr = {**me, "X-Dualtrack-Sandbox": shape}
        rest.attempt("rest:sandbox ids", "GET", "/v1/memories", hdr)
        rest.attempt("rest:sandbox ids", "POST", "/v1/search", hdr, {"query": "S20 订单 88231"})
    boxed = {**me, "X-Dualtrack-Sandbox": str(v.box)}
    rest.attempt("rest:sandbox ids", "GET", f"/v1/memories/{v.sandboxed}", boxed)
    rest.attempt("rest:sandbox ids", "DELETE", f"/v1/memories/{v.sandboxed}", boxed)
    rest.attempt("rest:sandbox ids", "POST", "/v1/context", boxed, {"query": "S20 订单 88231"})
    merge = {"memory_ids": [str(v.sandboxed), str(v.public)]}
    base = f"/v1/sessions/{SESSION}/sandbox"
    rest.attempt("rest:sandbox ids", "POST", f"{base}/merge", boxed, merge)
    rest.attempt("rest:sandbox ids", "POST", f"{base}/discard", boxed)
    rest.attempt("rest:sandbox ids", "POST", f"{base}/fork", boxed)
    rest.attempt("rest:sandbox ids", "POST", base, me)
    own = api.post(base, headers=me).json()["id"]
    rest.attempt(
        "rest:sandbox ids", "POST", f"{base}/merge", {**me, "X-Dualtrack-Sandbox": own}, merge
    )


def _rest_tokens(rest: Rest, api: TestClient, v: Victim) -> None:
    """Forged, tampered, expired, revoked tokens; signed tokens for look-alike user ids."""
    routes: list[tuple[str, str, object]] = [
        ("GET", "/v1/profile", None),
        ("GET", "/v1/memories", None),
        ("GET", f"/v1/memories/{v.public}", None),
        ("POST", "/v1/search", {"query": "退款"}),
        ("GET", "/v1/export", None),
        ("DELETE", f"/v1/memories/{v.public}", None),
        ("DELETE", "/v1/me", None),
    ]
    for name, bad in _bad_tokens(api).items():
        hdr = {"Authorization": f"Bearer {bad}" if bad else str(v.public)}
        for method, path, body in routes:
            rest.attempt(f"rest:token {name}", method, path, hdr, body)
    for sub in LOOKALIKES:
        hdr = auth(_signed(sub))
        for method, path, body in routes[:2] + routes[3:5]:
            rest.attempt("rest:look-alike sub", method, path, hdr, body)


def _rest_private(rest: Rest, v: Victim) -> None:
    """The victim's own token through agent B or no agent: agent A's private memory."""
    for agent in (AGENT_B, None):
        hdr = auth(token(sub=VICTIM, agent=agent))
        ch = f"rest:agent {'B' if agent else 'none'} private"
        rest.attempt(ch, "GET", f"/v1/memories/{v.private}", hdr, row=v.private)
        rest.attempt(ch, "GET", "/v1/memories", hdr, row=v.private)
        for q in ("顺丰 中通 偏好", PRIVATE, str(v.private)):
            body = {"query": q, "limit": 100}
            rest.attempt(ch, "POST", "/v1/search", hdr, body, row=v.private)
            body = {"query": q, "records": 20}
            rest.attempt(ch, "POST", "/v1/context", hdr, body, row=v.private)
        fb = {"memory_id": str(v.private), "action": "reject"}
        rest.attempt(ch, "POST", "/v1/feedback", hdr, fb, row=v.private)
        rest.attempt(ch, "DELETE", f"/v1/memories/{v.private}", hdr, row=v.private)


def _rest_other_agents_sandbox(rest: Rest, v: Victim) -> None:
    """The victim's own token through agent B, naming agent A's sandbox in the header."""
    hdr = {**auth(token(sub=VICTIM, agent=AGENT_B)), "X-Dualtrack-Sandbox": str(v.box)}
    ch, base = "rest:agent B sandbox", f"/v1/sessions/{SESSION}/sandbox"
    rest.attempt(ch, "GET", f"/v1/memories/{v.sandboxed}", hdr, row=v.sandboxed)
    rest.attempt(ch, "GET", "/v1/memories", hdr, row=v.sandboxed)
    for q in ("S20 订单 88231", SANDBOXED):
        body = {"query": q, "limit": 100}
        rest.attempt(ch, "POST", "/v1/search", hdr, body, row=v.sandboxed)
        rest.attempt(ch, "POST", "/v1/context", hdr, {"query": q}, row=v.sandboxed)
    merge = {"memory_ids": [str(v.sandboxed)]}
    rest.attempt(ch, "POST", f"{base}/merge", hdr, merge, row=v.sandboxed)
    rest.attempt(ch, "POST", f"{base}/discard", hdr, row=v.sandboxed)
    rest.attempt(ch, "POST", f"{base}/fork", hdr, row=v.sandboxed)


@dataclass
class Sdk:
    """Makes one SDK attempt and records its outcome."""

    battery: Battery
    v: Victim

    def attempt(
        self,
        channel: str,
        name: str,
        call: Callable[[], object],
        *,
        sent: object = "",
        row: uuid.UUID | None = None,
    ) -> None:
        """``sent``: what the call was given (the victim's ids it may echo back); ``row``:
        the one row guarded (a ``... private`` channel guards agent A's private memory)."""
        watched = self.v.private if row is None and channel.endswith("private") else row
        secrets = self.v.secrets() if watched is None else self.v.guarded(watched)
        try:
            result = call()
        except DualtrackError as exc:
            self.battery.record(channel, name, exc.code, False, watched)
            return
        empty = result is None or result is False or result == 0
        if isinstance(result, Sized) and not isinstance(result, str):
            empty = empty or len(result) == 0
        leaked = _leaks(repr(result), str(sent), secrets)
        self.battery.record(channel, name, "empty" if empty else "own data", leaked, watched)


def _sdk(mem: MemoryClient, battery: Battery, v: Victim) -> None:
    sdk, b = Sdk(battery, v), mem.for_agent(AGENT_B)
    for mid in (v.public, v.private, v.sandboxed, v.fact_id):
        for shape in (mid, str(mid), str(mid).upper()):
            sdk.attempt(
                "sdk:ids", "memories.get", partial(b.memories.get, ATTACKER, shape), sent=mid
            )
        sdk.attempt(
            "sdk:ids", "memories.delete", partial(b.memories.delete, ATTACKER, mid), sent=mid
        )
        reject = partial(b.feedback, ATTACKER, mid, action="reject")
        sdk.attempt("sdk:ids", "feedback", reject, sent=mid)
    for key in (v.fact_key, "快递%", "%", "_", ".*"):
        sdk.attempt("sdk:ids", "facts.get", partial(b.facts.get, ATTACKER, key))
        sdk.attempt("sdk:ids", "facts.delete", partial(b.facts.delete, ATTACKER, key))
    fp = v.fingerprint
    verify = partial(b.devices.verify, ATTACKER, fp, succeeded=True)
    sdk.attempt("sdk:ids", "devices.verify", verify, sent=fp)
    sdk.attempt("sdk:ids", "devices.remove", partial(b.devices.remove, ATTACKER, fp), sent=fp)
    sdk.attempt("sdk:ids", "links.end", partial(b.links.end, ATTACKER, v.link_id), sent=v.link_id)
    remove = partial(b.links.remove, ATTACKER, v.link_id)
    sdk.attempt("sdk:ids", "links.remove", remove, sent=v.link_id)
    fact_reject = partial(b.facts.feedback, ATTACKER, v.fact_id, "reject")
    sdk.attempt("sdk:ids", "facts.feedback", fact_reject, sent=v.fact_id)
    revoke = partial(b.devices.revoke_trust, ATTACKER, fp)
    sdk.attempt("sdk:ids", "devices.revoke_trust", revoke, sent=fp)
    _sdk_vault(sdk, b, v)
    _sdk_search(sdk, b, v)
    _sdk_verify(sdk, b)
    _sdk_sandbox(sdk, b, v)
    _sdk_private(sdk, b, v)
    _sdk_other_agents_sandbox(sdk, b, v)


def _sdk_vault(sdk: Sdk, b: MemoryClient, v: Victim) -> None:
    """The victim's vault ids and its phone, through the attacker's vault."""
    for vid in v.vault:
        sdk.attempt("sdk:vault", "pii.reveal", partial(b.pii.reveal, ATTACKER, vid), sent=vid)
        sdk.attempt("sdk:vault", "pii.delete", partial(b.pii.delete, ATTACKER, vid), sent=vid)
    sdk.attempt("sdk:vault", "pii.find", partial(b.pii.find, ATTACKER, "phone", PHONE), sent=PHONE)
    sdk.attempt("sdk:vault", "pii.list", partial(b.pii.list, ATTACKER))


def _sdk_verify(sdk: Sdk, b: MemoryClient) -> None:
    """Verification reads the links of the scope's user only: the verifier is never asked
    about the victim's order, and the victim's link records no check."""
    asked: list[tuple[str, str]] = []

    def verifier(entity_type: str, entity_id: str) -> BusinessState:
        asked.append((entity_type, entity_id))
        return BusinessState("已发货")

    b.register_verifier("order", verifier)
    sdk.attempt("sdk:verify", "verify_links", partial(b.verify_links, ATTACKER))
    q = "订单 88231 退款"
    verified = partial(b.search, ATTACKER, q, limit=100, verify=True)
    sdk.attempt("sdk:verify", "search verify", verified, sent=q)
    sdk.battery.successes += [f"sdk:verify: asked about {k} (leak)" for k in asked]


def _sdk_search(sdk: Sdk, b: MemoryClient, v: Victim) -> None:
    """Search text, crafted filters and look-alike user ids."""
    texts = [
        VICTIM,
        f"{VICTIM} 订单 88231 RF20260629001",
        f"{v.public} {v.sandboxed}",
        "13912345678",
    ]
    for q in texts:
        sdk.attempt("sdk:search text", "search", partial(b.search, ATTACKER, q, limit=100), sent=q)
        ctx = partial(b.build_context, ATTACKER, q, records=20)
        sdk.attempt("sdk:search text", "build_context", ctx, sent=q)
    q = "退款 订单 88231"
    for x in [*CRAFTED, *SESSION_LOOKALIKES, SESSION]:
        by_session = partial(b.search, ATTACKER, q, limit=100, session_id=x)
        sdk.attempt("sdk:crafted filters", "search session_id", by_session)
        by_intent = partial(b.search, ATTACKER, q, limit=100, intents=[x])
        sdk.attempt("sdk:crafted filters", "search intents", by_intent)
    for uid in LOOKALIKES:
        sdk.attempt("sdk:look-alike user", "memories.list", partial(b.memories.list, uid))
        sdk.attempt("sdk:look-alike user", "search", partial(b.search, uid, q))
        sdk.attempt("sdk:look-alike user", "facts.list", partial(b.facts.list, uid))
        sdk.attempt("sdk:look-alike user", "export_user", partial(b.export_user, uid))
        sdk.attempt("sdk:look-alike user", "profiles.get", partial(b.profiles.get, uid))
        sdk.attempt("sdk:look-alike user", "devices.list", partial(b.devices.list, uid))
        sdk.attempt("sdk:look-alike user", "links.list", partial(b.links.list, uid))
        sdk.attempt("sdk:look-alike user", "links.valid_now", partial(b.links.valid_now, uid))
        sdk.attempt("sdk:look-alike user", "pii.list", partial(b.pii.list, uid))


def _inside(b: MemoryClient, box: uuid.UUID, call: Callable[[], object]) -> Callable[[], object]:
    """``call`` run with ``box`` current for the attacker's client ``b`` (what the header
    does, without the service's check that the sandbox is the caller's)."""

    def run() -> object:
        tok = enter(ActiveSandbox(ATTACKER, b.agent_id, "", box))
        try:
            return call()
        finally:
            leave(tok)

    return run


def _sdk_sandbox(sdk: Sdk, b: MemoryClient, v: Victim) -> None:
    """The victim's sandbox id passed to the sandbox API and made current."""
    ch, both = "sdk:sandbox ids", f"{v.box} {v.sandboxed}"
    merge = partial(b.sandboxes.merge, ATTACKER, SESSION, v.box, [v.sandboxed])
    sdk.attempt(ch, "sandboxes.merge", merge, sent=both)
    sdk.attempt(
        ch, "sandboxes.memories", partial(b.sandboxes.memories, ATTACKER, v.box), sent=v.box
    )
    discard = partial(b.sandboxes.discard, ATTACKER, SESSION, v.box)
    sdk.attempt(ch, "sandboxes.discard", discard, sent=v.box)
    sdk.attempt(ch, "sandboxes.get", partial(b.sandboxes.get, ATTACKER, v.box), sent=v.box)
    sdk.attempt(ch, "sandboxes.history", partial(b.sandboxes.history, ATTACKER, SESSION))
    listed = _inside(b, v.box, partial(b.memories.list, ATTACKER))
    sdk.attempt(ch, "list inside", listed, sent=v.box)
    searched = _inside(b, v.box, partial(b.search, ATTACKER, "S20 订单 88231"))
    sdk.attempt(ch, "search inside", searched, sent=v.box)
    got = _inside(b, v.box, partial(b.memories.get, ATTACKER, v.sandboxed))
    sdk.attempt(ch, "get inside", got, sent=both)


def _sdk_private(sdk: Sdk, b: MemoryClient, v: Victim) -> None:
    """The victim's user through agent B: agent A's private memory."""
    ch, mid = "sdk:agent B private", v.private
    sdk.attempt(ch, "memories.get", partial(b.memories.get, VICTIM, mid), sent=mid)
    sdk.attempt(ch, "memories.list", partial(b.memories.list, VICTIM))
    for q in ("顺丰 中通 偏好", PRIVATE, str(mid)):
        sdk.attempt(ch, "search", partial(b.search, VICTIM, q, limit=100), sent=q)
        sdk.attempt(ch, "build_context", partial(b.build_context, VICTIM, q, records=20), sent=q)
    reject = partial(b.feedback, VICTIM, mid, action="reject")
    sdk.attempt(ch, "feedback", reject, sent=mid)
    sdk.attempt(ch, "memories.delete", partial(b.memories.delete, VICTIM, mid), sent=mid)


def _sdk_other_agents_sandbox(sdk: Sdk, b: MemoryClient, v: Victim) -> None:
    """The victim's user through agent B: agent A's sandbox and what was written in it."""
    ch, box, row = "sdk:agent B sandbox", v.box, v.sandboxed
    both = f"{box} {row}"
    sdk.attempt(ch, "sandboxes.get", partial(b.sandboxes.get, VICTIM, box), sent=box, row=row)
    memories = partial(b.sandboxes.memories, VICTIM, box)
    sdk.attempt(ch, "sandboxes.memories", memories, sent=box, row=row)
    history = partial(b.sandboxes.history, VICTIM, SESSION)
    sdk.attempt(ch, "sandboxes.history", history, row=row)
    sdk.attempt(ch, "memories.get", partial(b.memories.get, VICTIM, row), sent=row, row=row)
    for q in ("S20 订单 88231", SANDBOXED):
        sdk.attempt(ch, "search", partial(b.search, VICTIM, q, limit=100), sent=q, row=row)
    merge = partial(b.sandboxes.merge, VICTIM, SESSION, box, [row])
    sdk.attempt(ch, "sandboxes.merge", merge, sent=both, row=row)
    discard = partial(b.sandboxes.discard, VICTIM, SESSION, box)
    sdk.attempt(ch, "sandboxes.discard", discard, sent=box, row=row)
