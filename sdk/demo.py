"""``make demo``: the design's story, on the embedded default, with no keys.

Day 1, the refund agent: 查订单 88231 的物流；扫地机不回充了要退款；退款多久到账.
The session ends: an interaction record, the profile update and the business
links of the ids said. Overnight the refund's system of record moves
RF20260629001 to 已到账. Day 2, another agent in a new session: "昨天那个退款到账了吗",
then "再帮我推荐一个扫地机呗，要比之前那个好的": each prompt carries the long-term
memory block, with the refund's verified state, order 88231 and the S10 Pro,
without the user repeating them. Then "忘了刚才说的，重新来": a sandbox fork.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from rich.console import Console
from rich.panel import Panel

from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from values.context import MemoryContext
from values.sessions import Turn
from values.verification import BusinessState

__all__ = ["USER", "run"]

USER = "buyer-zhangwei-001"
SYSTEM_PROMPT = "你是某电商平台的售后与导购客服，回答简洁，先核实再承诺。"


class RefundSystem:
    """A stand-in for the refunds system of record (the demo's only simulated part)."""

    def __init__(self) -> None:
        self.states = {"RF20260629001": "退款处理中"}

    def __call__(self, entity_type: str, entity_id: str) -> BusinessState | None:
        state = self.states.get(entity_id)
        return None if state is None else BusinessState(state, None, datetime.now(UTC))


def _messages(console: Console, ctx: MemoryContext, user_text: str) -> list[dict[str, str]]:
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        ctx.message(),
        {"role": "user", "content": user_text},
    ]
    console.print(
        Panel(
            json.dumps(messages, ensure_ascii=False, indent=2),
            title=f"messages ({ctx.tokens} tokens of memory, {ctx.omitted} items left out)",
        )
    )
    return messages


def run(console: Console) -> dict[str, MemoryContext]:
    """Replay the story; returns the contexts the day-2 agent received."""
    refunds = RefundSystem()
    day1 = datetime.now(UTC) - timedelta(days=1)
    contexts: dict[str, MemoryContext] = {}
    with MemoryClient.from_env(agent_id="refund-agent") as mem:
        mem.forget_user(USER)
        mem.profiles.ensure(USER)
        console.rule("[bold]Day 1 · refund-agent · session-0629")
        transcript = [
            Turn("user", "查一下订单 88231 的物流", day1),
            Turn(
                "assistant", "订单 88231 的比特 S10 Pro 扫地机已签收。", day1 + timedelta(minutes=1)
            ),
            Turn("user", "扫地机不回充了，要退款", day1 + timedelta(minutes=2)),
            Turn(
                "assistant",
                "已为您提交退款，退款编号 RF20260629001，原路退回。",
                day1 + timedelta(minutes=3),
            ),
            Turn("user", "退款多久到账？以后有事微信通知我", day1 + timedelta(minutes=4)),
            Turn("assistant", "预计 1-3 个工作日到账。", day1 + timedelta(minutes=5)),
        ]
        for turn in transcript:
            console.print(f"[dim]{turn.role}:[/dim] {turn.text}")
        record = mem.end_session(USER, "session-0629", transcript)
        console.print(f"会话结束 → 交互记录: {record.summary.summary_text}")
        links = [f"{link.entity_type} {link.entity_id}" for link in mem.links.valid_now(USER)]
        console.print(f"业务关联: {', '.join(links)}")

    console.rule("[bold]Overnight · the refunds system of record")
    refunds.states["RF20260629001"] = "已到账"
    console.print("RF20260629001: 退款处理中 → 已到账 (outside any conversation)")

    with MemoryClient.from_env(agent_id="shopping-agent") as mem:
        mem.register_verifier("refund", refunds)
        console.rule("[bold]Day 2 · shopping-agent · session-0630")
        with mem.sandbox(USER, "session-0630") as sb:
            for key, question in [
                ("refund", "昨天那个退款到账了吗"),
                ("recommend", "再帮我推荐一个扫地机呗，要比之前那个好的"),
            ]:
                contexts[key] = mem.build_context(USER, question, max_tokens=600)
                _messages(console, contexts[key], question)
            mem.write(
                USER,
                "想看 3000 元以上、带自动集尘的扫地机",
                lifecycle_policy=LifecyclePolicy.IMPLICIT,
            )
            console.print("[dim]user:[/dim] 忘了刚才说的，重新来")
            sb.fork()
            contexts["fresh"] = mem.build_context(USER, "扫地机", max_tokens=600)
            console.print(
                "fork: 上一个沙箱已归档（可审计，不再检索）；新沙箱从长期记忆重新开始 → "
                f"3000 元需求在上下文中: {'3000' in contexts['fresh'].text}"
            )
            sb.discard()
        mem.forget_user(USER)
    return contexts
