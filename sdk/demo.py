"""``make demo``: a returning customer of a Chinese shop, recognised by the structured track.

Runs on the embedded default: no servers, no API keys.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlalchemy import text

from policies.errors import ConcurrentModificationError, UserNotFound
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from structured_memory.cross_user import find_user_ids_by_pii
from unstructured_memory.summariser import Turn

__all__ = ["run"]

USER = "buyer-zhangwei-001"


def run(console: Console) -> None:
    """Walk through profile, optimistic locking, devices, links, facts and the PII vault."""
    with MemoryClient.from_env(agent_id="refund-agent") as mem:
        mem.forget_user(USER)
        console.rule("[bold]dualtrack demo: 结构化记忆 (structured track)")

        profile = mem.profiles.ensure(USER)
        console.print(
            f"新用户 {USER}: timezone={profile.timezone} language={profile.language} "
            f"notifications={profile.notification_preference} version={profile.version}"
        )
        profile = mem.profiles.update(
            USER,
            expected_version=profile.version,
            notification_preference={"wechat": True, "email": False},
            attributes={"会员等级": "PLUS", "偏好": "文字说明，不看视频"},
        )
        console.print(
            f"用户说「以后微信通知我」→ version {profile.version}: "
            f"{profile.notification_preference}"
        )
        try:
            mem.profiles.update(USER, expected_version=1, profile_summary="stale write")
        except ConcurrentModificationError as exc:
            console.print(
                "[yellow]另一个坐席用旧版本写入被拒绝[/yellow]: "
                + escape(f"[{exc.code}] {exc.message}")
            )
        result = mem.profiles.update_with_retry(
            USER,
            lambda p: {
                "attributes": {**p.attributes, "咨询次数": p.attributes.get("咨询次数", 0) + 1}
            },
        )
        console.print(
            f"重试助手: attempts={result.attempts} attributes={result.profile.attributes}"
        )

        device = mem.devices.register(
            USER, device_id="IMEI-86-0000-1111", os="HarmonyOS 4", browser="微信内置浏览器"
        )
        console.print(f"设备 {device.fingerprint[:12]}… trusted={device.is_trusted}")
        for _ in range(2):
            device = mem.devices.verify(USER, device.fingerprint, succeeded=True)
        console.print(f"两次短信验证后 trusted={device.is_trusted}")

        now = datetime.now(UTC)
        mem.links.add(USER, entity_type="order", entity_id="88231", role="owner")
        mem.links.add(USER, entity_type="refund", entity_id="RF20260629001", role="owner")
        mem.links.add(
            USER,
            entity_type="contract",
            entity_id="HT-2025-017",
            role="approver",
            effective_from=now - timedelta(days=400),
            effective_to=now - timedelta(days=35),
        )
        table = Table("entity", "id", "role", "until")
        for link in mem.links.valid_now(USER):
            table.add_row(
                link.entity_type, link.entity_id, link.role, str(link.effective_to or "∞")
            )
        console.print("当前有效的业务关联 (expired contract left out):")
        console.print(table)

        mem.facts.put(
            USER, "售后偏好", "优先退款而不是换货", lifecycle_policy=LifecyclePolicy.EXPLICIT
        )
        mem.facts.put(
            USER, "内容偏好", "文字", lifecycle_policy=LifecyclePolicy.IMPLICIT, confidence=0.6
        )
        for fact in mem.facts.list(USER):
            console.print(
                f"fact {fact.key}={fact.value} policy={fact.policy} expires={fact.expires_at}"
            )

        ref = mem.pii.store(USER, "phone", "138 1234 5678")
        with mem.database.transaction() as conn:
            raw = conn.execute(
                text("SELECT key_id, encode(ciphertext, 'hex') AS c FROM pii_vault WHERE id = :i"),
                {"i": ref.id},
            ).one()
        console.print(f"手机号已加密 (key {raw.key_id}): {raw.c[:32]}…")
        found = find_user_ids_by_pii(mem.database, mem.cipher, "phone", "+86 13812345678")
        console.print(f"按手机号盲索引找回用户 (不解密全表): {found}")
        console.print(f"解密 (vault only): {mem.pii.reveal(USER, ref.id)[:3]}********")

        _unstructured(console, mem)

    with MemoryClient.from_env(agent_id="shopping-agent") as shopping:
        console.print("另一个智能体 (shopping-agent) 在新会话里认出用户:")
        table = Table("score", "intent", "memory")
        for hit in shopping.search(USER, "我的退款到账了吗", limit=3):
            table.add_row(f"{hit.score:.2f}", hit.intent, hit.text)
        console.print(table)

    with MemoryClient.from_env(agent_id="refund-agent") as mem:
        h = mem.health()
        console.print(f"health ok={h.ok} schema={h.schema_revision} key={h.active_key_id}")
        mem.forget_user(USER)
        try:
            mem.profiles.get(USER)
        except UserNotFound as exc:
            console.print(f"forget_user: 画像、设备、关联、事实、记忆和密文一并删除 ({exc.code})")


def _unstructured(console: Console, mem: MemoryClient) -> None:
    """A session summarised at its end, and implicit notes written during it."""
    console.rule("[bold]非结构化记忆 (unstructured track)")
    t = datetime(2026, 6, 29, 10, 0, tzinfo=UTC)
    record = mem.end_session(
        USER,
        "session-0629",
        [
            Turn("user", "订单 88231 的比特 S10 Pro 扫地机无法回充，我要退款", t),
            Turn("assistant", "抱歉！请问实付金额是多少？", t + timedelta(minutes=1)),
            Turn("user", "1999 元。有问题打我电话 13812345678", t + timedelta(minutes=2)),
            Turn(
                "assistant",
                "已提交退款，退款编号 RF20260629001，预计 1-3 个工作日到账",
                t + timedelta(minutes=3),
            ),
        ],
    )
    console.print(f"会话结束 → 交互记录 (规则 + NER, 无 LLM): {record.summary.summary_text}")
    mem.write(
        USER,
        "连续三次跳过视频教程，偏好图文说明",
        lifecycle_policy=LifecyclePolicy.IMPLICIT,
        session_id="session-0629",
    )
    mem.write(USER, "下周出差，暂时不报销", lifecycle_policy=LifecyclePolicy.IMPLICIT)
