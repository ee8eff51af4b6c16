/**
 * The wrapper against a live service: tests/test_typescript_client.py starts it (the real
 * app over the embedded PostgreSQL, on a free port) and passes its address and tokens.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { DualtrackClient, DualtrackError } from "../src/index.js";

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this through tests/test_typescript_client.py`);
  return value;
}

const baseUrl = env("DUALTRACK_URL");
const buyer = new DualtrackClient({ baseUrl, token: env("DUALTRACK_TOKEN") });

async function refusal(call: Promise<unknown>): Promise<DualtrackError> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof DualtrackError, `expected a DualtrackError, got ${String(error)}`);
    return error;
  }
  assert.fail("the call was expected to be refused");
}

test("write, search and build the context of the token's user", async () => {
  const profile = await buyer.ensureUser();
  assert.equal(profile.user_id, env("DUALTRACK_USER"));
  const id = await buyer.write("以后退款进度都用微信通知我，不要打电话", {
    lifecycle_policy: "explicit",
  });
  assert.match(id, /^[0-9a-f-]{36}$/);
  const found = await buyer.search("退款进度怎么通知", { limit: 3 });
  assert.ok(found.hits.some((h) => h.memory_id === id), JSON.stringify(found));
  const hit = found.hits.find((h) => h.memory_id === id);
  assert.equal(hit?.policy, "explicit");
  assert.equal(hit?.kind, "note");
  const context = await buyer.buildContext("退款进度", { max_tokens: 400 });
  assert.ok(context.text.includes("微信"), context.text);
  assert.ok(context.tokens <= 400);
});

test("ending a session stores a masked record", async () => {
  await buyer.ensureUser();
  const record = await buyer.endSession("ts-session-1", [
    { role: "user", text: "订单88231的退款到账了吗？我的手机是13812345678" },
    { role: "assistant", text: "退款已在处理中，预计3个工作日到账。" },
  ]);
  assert.equal(record.session_id, "ts-session-1");
  assert.ok(!JSON.stringify(record).includes("13812345678"), JSON.stringify(record));
});

test("refusals are typed errors with the service's codes", async () => {
  const empty = await refusal(buyer.write("", { lifecycle_policy: "explicit" }));
  assert.equal(empty.status, 422);
  assert.equal(empty.code, "invalid_input");
  const stranger = new DualtrackClient({ baseUrl, token: env("DUALTRACK_NEW_USER_TOKEN") });
  const unknown = await refusal(stranger.search("退款"));
  assert.equal(unknown.status, 404);
  assert.equal(unknown.code, "user_not_found");
  const reader = new DualtrackClient({ baseUrl, token: env("DUALTRACK_READ_ONLY_TOKEN") });
  const forbidden = await refusal(reader.write("记住我", { lifecycle_policy: "explicit" }));
  assert.equal(forbidden.status, 403);
  assert.equal(forbidden.code, "forbidden");
  const forged = new DualtrackClient({ baseUrl, token: () => "not.a.jwt" });
  const unauthorized = await refusal(forged.search("退款"));
  assert.equal(unauthorized.status, 401);
  assert.equal(unauthorized.code, "unauthorized");
});

test("the raw client reaches every route with the token", async () => {
  await buyer.ensureUser();
  const { data, response } = await buyer.api.GET("/v1/memories", { params: { query: { limit: 10 } } });
  assert.equal(response.status, 200);
  assert.ok(Array.isArray(data) && data.length > 0);
  assert.ok(data.every((m) => m.user_id === env("DUALTRACK_USER")));
});
