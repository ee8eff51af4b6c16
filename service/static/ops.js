// The dualtrack ops dashboard: reads /v1/ops/* with an ops token and draws inline SVG.
// No library and nothing from another origin. Every number drawn or listed carries
// data-path (its place in the endpoint's JSON, the endpoint named by the enclosing
// section's data-endpoint) and data-value (the JSON value), so a test can compare the
// page with the API.
"use strict";

(() => {
  const TOKEN_KEY = "dualtrack.ops.token";
  const ENDPOINTS = ["expiry", "confidence", "activity", "outbox", "tenants", "keys", "verifiers"];
  const SVG_NS = "http://www.w3.org/2000/svg";
  const PALETTE = {
    explicit: "#4c78a8", implicit: "#f58518", sensitive: "#e45756", business: "#72b7b2",
    active: "#54a24b", pending_confirmation: "#f58518", needs_review: "#e45756",
    decays: "#b279a2", sweeps: "#e45756", renewals: "#54a24b", fragments: "#4c78a8", facts: "#72b7b2",
    ok: "#54a24b", failing: "#e45756", unchecked: "#9d9d9d",
    verified: "#54a24b", unknown: "#9d9d9d", verifier_timeout: "#f58518",
    verifier_unavailable: "#e45756", hot: "#f58518", cold: "#4c78a8", offloaded: "#9d9d9d",
  };
  const EXTRA = ["#4c78a8", "#eeca3b", "#ff9da6", "#9d755d", "#bab0ac", "#72b7b2"];

  const statusLine = () => document.getElementById("status");

  function color(name, i) {
    return PALETTE[name] || EXTRA[i % EXTRA.length];
  }

  function setState(state, message) {
    document.body.dataset.state = state;
    statusLine().textContent = message;
  }

  // -- the token: pasted in, or #token=... in the URL (then removed from the address bar)
  function takeTokenFromFragment() {
    const match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
    if (match) {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
      history.replaceState(null, "", window.location.pathname + window.location.search);
    }
  }

  // -- small DOM helpers
  function h(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function s(tag, attrs, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function mark(node, path, value) {
    node.setAttribute("data-path", path);
    node.setAttribute("data-value", JSON.stringify(value === undefined ? null : value));
    return node;
  }

  function at(data, path) {
    return path.split(".").reduce((v, key) => (v === null || v === undefined ? v : v[key]), data);
  }

  function number(v) {
    return typeof v === "number" ? v.toLocaleString("en-US") : String(v);
  }

  function age(seconds) {
    if (seconds === null || seconds === undefined) return "–";
    const s = Math.round(seconds);
    if (s < 60) return s + " s";
    if (s < 3600) return Math.round(s / 60) + " min";
    if (s < 86400) return (s / 3600).toFixed(1) + " h";
    return (s / 86400).toFixed(1) + " d";
  }

  function shortDay(day) {
    return day.slice(5); // YYYY-MM-DD -> MM-DD
  }

  function fillFields(section, data) {
    for (const node of section.querySelectorAll("[data-field]")) {
      const path = node.dataset.field;
      const value = at(data, path);
      mark(node, path, value);
      if (value === null || value === undefined) node.textContent = node.dataset.format === "age" ? "–" : "";
      else node.textContent = node.dataset.format === "age" ? age(value) : number(value);
    }
  }

  function legend(container, names) {
    container.replaceChildren();
    names.forEach((name, i) => {
      const item = h("span", { class: "key" });
      const swatch = h("i", { class: "swatch" });
      swatch.style.background = color(name, i);
      item.append(swatch, document.createTextNode(name.replaceAll("_", " ")));
      container.append(item);
    });
  }

  // -- charts: stacked vertical bars over categories; every segment carries its number
  function widthOf(container) {
    return Math.max(320, Math.round(container.clientWidth || 640));
  }

  // the y scale of the bar charts: linear, or logarithmic (log(1 + v)) when the operator
  // ticks "log scale", so a day of 1 or 2 stays visible beside a day of hundreds
  const view = { log: false };

  function yScale(max, plotH) {
    if (view.log) {
      const top = Math.log1p(max);
      const at = (v) => (Math.log1p(v) / top) * plotH;
      const ticks = [0];
      for (let t = 1; t < max; t *= 10) ticks.push(t);
      ticks.push(max);
      return { at, ticks };
    }
    return { at: (v) => (v / max) * plotH, ticks: [0, max / 2, max] };
  }

  // labels sit under each bar's middle; with lastEdge (a bucketed axis) at each bar's left
  // edge, and lastEdge at the right end. totalPaths: each bar's total is written above it
  // (when the bars are wide enough), so a bar of 1 is read, not guessed
  function bars(container, { labels, series, height = 180, every, guide, title, lastEdge, totalPaths }) {
    const W = widthOf(container), H = height, left = 40, right = 20, top = 14, bottom = 24;
    const plotW = W - left - right, plotH = H - top - bottom;
    const totals = labels.map((_, i) => series.reduce((sum, ser) => sum + (ser.values[i] || 0), 0));
    const max = Math.max(1, ...totals);
    const scale = yScale(max, plotH);
    const svg = s("svg", {
      viewBox: `0 0 ${W} ${H}`, role: "img", class: "bars" + (view.log ? " log" : ""),
      "data-plot-left": left, "data-plot-width": plotW.toFixed(2),
    });
    if (title) svg.append(s("title", {}, title + (view.log ? " (log scale)" : "")));
    for (const t of scale.ticks) {
      const y = top + plotH - scale.at(t);
      svg.append(s("line", { x1: left, x2: W - right, y1: y, y2: y, class: "grid" }));
      svg.append(s("text", { x: left - 4, y: y + 4, class: "axis", "text-anchor": "end" },
        number(Math.round(t * 10) / 10)));
    }
    const step = plotW / labels.length;
    const barW = Math.max(1, step * 0.78);
    const stride = every || Math.max(1, Math.ceil(labels.length / 8));
    const last = labels.length - 1;
    labels.forEach((label, i) => {
      const x = left + i * step + (step - barW) / 2;
      const barH = totals[i] > 0 ? Math.max(scale.at(totals[i]), 2) : 0;
      let y = top + plotH;
      series.forEach((ser, k) => {
        const v = ser.values[i] || 0;
        if (v <= 0) return;
        const segH = Math.max((v / totals[i]) * barH, 2);  // never thinner than 2 px
        y -= segH;
        const rect = s("rect", {
          x: x.toFixed(2), y: y.toFixed(2), width: barW.toFixed(2), height: segH.toFixed(2),
          fill: color(ser.name, k), class: "segment", "data-series": ser.name, "data-label": label,
        });
        rect.append(s("title", {}, `${label} · ${ser.name.replaceAll("_", " ")}: ${number(v)}`));
        svg.append(mark(rect, ser.paths[i], v));
      });
      if (totalPaths && totals[i] > 0 && step >= 10) {
        const value = s("text", { x: (x + barW / 2).toFixed(2), y: (y - 3).toFixed(2), class: "value", "text-anchor": "middle" }, number(totals[i]));
        svg.append(mark(value, totalPaths[i], totals[i]));
      }
      // every stride-th day and always the last one, dropping a stride label that would
      // crowd it (the last day used to go unlabelled, an earlier date standing nearest it)
      const spaced = i % stride === 0 && (lastEdge || last - i >= stride / 2);
      if (spaced || (!lastEdge && i === last)) {
        const lx = lastEdge ? left + i * step : left + i * step + step / 2;
        svg.append(s("text", { x: lx.toFixed(2), y: H - 6, class: "axis tick", "text-anchor": "middle" }, label));
      }
    });
    if (lastEdge) {
      svg.append(s("text", { x: left + plotW, y: H - 6, class: "axis tick", "text-anchor": "middle" }, lastEdge));
    }
    if (guide) {
      const gx = left + guide.at * plotW;
      svg.append(s("line", { x1: gx, x2: gx, y1: top - 4, y2: top + plotH, class: "guide" }));
      svg.append(s("text", { x: gx + 4, y: top + 6, class: "axis guide-label" }, guide.label));
    }
    container.append(svg);
    return svg;
  }

  // -- a horizontal bar split in parts (tenants, links), each part with its number
  function split(container, parts, pathOf) {
    const W = widthOf(container), H = 34;
    const total = parts.reduce((sum, p) => sum + p.value, 0);
    const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "split" });
    svg.append(s("rect", { x: 0, y: 4, width: W, height: H - 8, class: "track" }));
    let x = 0;
    parts.forEach((p, i) => {
      if (p.value <= 0 || total === 0) return;
      const w = (p.value / total) * W;
      const rect = s("rect", { x: x.toFixed(2), y: 4, width: w.toFixed(2), height: H - 8, fill: color(p.name, i), class: "segment", "data-series": p.name });
      rect.append(s("title", {}, `${p.name}: ${number(p.value)}`));
      svg.append(mark(rect, pathOf(p.name), p.value));
      if (w > 60) svg.append(s("text", { x: (x + 6).toFixed(2), y: H / 2 + 4, class: "inside" }, `${p.name} ${number(p.value)}`));
      x += w;
    });
    container.append(svg);
  }

  function table(container, head, rows) {
    const t = h("table");
    const tr = h("tr");
    head.forEach((name) => tr.append(h("th", {}, name.replaceAll("_", " "))));
    const thead = h("thead");
    thead.append(tr);
    t.append(thead);
    const body = h("tbody");
    for (const row of rows) {
      const r = h("tr");
      r.append(h("th", { scope: "row" }, row.label));
      for (const cell of row.cells) r.append(mark(h("td", {}, number(cell.value)), cell.path, cell.value));
      body.append(r);
    }
    t.append(body);
    container.replaceChildren(t);
  }

  // -- each policy's lifetime (policies.ttl) and how many of its memories never expire
  function lifetimes(container, d) {
    const list = h("ul", { class: "lifetimes" });
    d.policies.forEach((policy, k) => {
      const item = h("li");
      const swatch = h("i", { class: "swatch" });
      swatch.style.background = color(policy, k);
      item.append(swatch, h("b", {}, policy));
      d.ttl.forEach((rule, i) => {
        if (rule.policy !== policy) return;
        const who = rule.kinds ? rule.kinds.map((x) => x.replaceAll("_", " ")).join(", ") : "every kind";
        const whose = rule.frequent_user === true ? ", frequent users" : rule.frequent_user === false ? ", other users" : "";
        const days = mark(h("span", { class: "ttl" }, rule.days === null ? "never expires" : `${rule.days} days`), `ttl.${i}.days`, rule.days);
        const how = rule.days === null ? "" : rule.renewed_on_use ? ", renewed on use" : ", fixed";
        const part = h("span", { class: "rule" });
        part.append(document.createTextNode(`${who}${whose}: `), days, document.createTextNode(how));
        item.append(part);
      });
      const kept = h("span", { class: "kept" });
      kept.append(mark(h("span", {}, number(d.never_expiring[policy] || 0)), `never_expiring.${policy}`, d.never_expiring[policy] || 0),
        document.createTextNode(" never expiring"));
      item.append(kept);
      list.append(item);
    });
    container.replaceChildren(list);
  }

  // -- one renderer per section
  const render = {
    expiry(section, d) {
      const labels = d.days.map((x) => shortDay(x.day));
      const chart = section.querySelector("[data-chart]");
      bars(chart, {
        labels,
        title: "memories expiring per day, by policy",
        totalPaths: d.days.map((_, i) => `days.${i}.total`),
        series: d.policies.map((p) => ({
          name: p,
          values: d.days.map((x) => x.by_policy[p] || 0),
          paths: d.days.map((_, i) => `days.${i}.by_policy.${p}`),
        })),
      });
      legend(section.querySelector("[data-legend]"), d.policies);
      lifetimes(section.querySelector("[data-lifetimes]"), d);
      table(section.querySelector("[data-table]"), ["day", ...d.policies, "total"], d.days.map((x, i) => ({
        label: x.day,
        cells: [
          ...d.policies.map((p) => ({ path: `days.${i}.by_policy.${p}`, value: x.by_policy[p] || 0 })),
          { path: `days.${i}.total`, value: x.total },
        ],
      })));
    },
    confidence(section, d) {
      const chart = section.querySelector("[data-chart]");
      bars(chart, {
        labels: d.buckets.map((b) => b.lower.toFixed(1)),
        every: 1,
        lastEdge: d.buckets[d.buckets.length - 1].upper.toFixed(1),
        title: "memories by confidence bucket and status",
        totalPaths: d.buckets.map((_, i) => `buckets.${i}.total`),
        guide: { at: d.pending_below, label: `pending below ${d.pending_below}` },
        series: d.statuses.map((st) => ({
          name: st,
          values: d.buckets.map((b) => b.by_status[st] || 0),
          paths: d.buckets.map((_, i) => `buckets.${i}.by_status.${st}`),
        })),
      });
      legend(section.querySelector("[data-legend]"), d.statuses);
      const rows = d.buckets.map((b, i) => ({
        label: `${b.lower.toFixed(2)}–${b.upper.toFixed(2)}`,
        cells: [
          ...d.statuses.map((st) => ({ path: `buckets.${i}.by_status.${st}`, value: b.by_status[st] || 0 })),
          { path: `buckets.${i}.total`, value: b.total },
        ],
      }));
      rows.push({ label: "pending queue", cells: [
        { path: "pending.fragments", value: d.pending.fragments },
        { path: "pending.facts", value: d.pending.facts },
      ] });
      table(section.querySelector("[data-table]"), ["bucket", ...d.statuses, "total"], rows);
      const f = d.forecast;
      bars(section.querySelector("[data-chart=forecast]"), {
        labels: f.days.map((x) => shortDay(x.day)), height: 110, every: 1,
        title: `memories expected to fall below ${d.pending_below} per day, unused`,
        totalPaths: f.days.map((_, i) => `forecast.days.${i}.total`),
        series: ["fragments", "facts"].map((k) => ({
          name: k, values: f.days.map((x) => x[k]), paths: f.days.map((_, i) => `forecast.days.${i}.${k}`),
        })),
      });
      legend(section.querySelector("[data-legend=forecast]"), ["fragments", "facts"]);
      for (const node of section.querySelectorAll("[data-threshold]")) node.textContent = String(d.pending_below);
    },
    activity(section, d) {
      const chart = section.querySelector("[data-chart]");
      const labels = d.days.map((x) => shortDay(x.day));
      for (const name of ["decays", "sweeps", "renewals"]) {
        const row = h("div", { class: "mini" });
        const plot = h("div");
        row.append(h("span", { class: "mini-label" }, name), plot);
        chart.append(row);
        bars(plot, {
          labels, height: 90, title: `${name} per day`,
          totalPaths: d.days.map((_, i) => `days.${i}.${name}`),
          series: [{ name, values: d.days.map((x) => x[name]), paths: d.days.map((_, i) => `days.${i}.${name}`) }],
        });
      }
      table(section.querySelector("[data-table]"), ["day", "decays", "sweeps", "renewals"], d.days.map((x, i) => ({
        label: x.day,
        cells: ["decays", "sweeps", "renewals"].map((k) => ({ path: `days.${i}.${k}`, value: x[k] })),
      })));
    },
    outbox(section, d) {
      const pill = section.querySelector("[data-pill]");
      const behind = d.failing > 0 || d.oldest_age_s > 300;
      pill.textContent = !d.derived ? "not derived: nothing to deliver" : behind ? "behind" : "up to date";
      pill.className = "pill " + (behind ? "bad" : "good");
    },
    tenants(section, d) {
      const chart = section.querySelector("[data-chart]");
      if (!d.applicable) {
        chart.append(h("p", { class: "na" }, "not applicable"));
        return;
      }
      if (d.reachable === false) {
        chart.append(h("p", { class: "na bad" }, "index unreachable"));
        return;
      }
      split(chart, ["hot", "cold", "offloaded"].map((name) => ({ name, value: d[name] })), (name) => name);
    },
    keys(section, d) {
      const chart = section.querySelector("[data-chart]");
      const W = widthOf(chart), H = 46, span = Math.max(d.rotation_days, d.active_key_age_days) * 1.1;
      const x = (days) => (days / span) * W;
      const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "gauge" });
      svg.append(s("rect", { x: 0, y: 6, width: W, height: 20, class: "track" }));
      const tone = d.stale ? "bad" : d.days_left < 15 ? "warn" : "good";
      const fillBar = s("rect", { x: 0, y: 6, width: Math.max(1, x(d.active_key_age_days)).toFixed(2), height: 20, class: "fill " + tone });
      fillBar.append(s("title", {}, `active key ${d.active_key_age_days} days old`));
      svg.append(mark(fillBar, "active_key_age_days", d.active_key_age_days));
      const limit = s("line", { x1: x(d.rotation_days), x2: x(d.rotation_days), y1: 2, y2: 30, class: "limit" });
      svg.append(mark(limit, "rotation_days", d.rotation_days));
      svg.append(s("text", { x: x(d.rotation_days), y: 42, class: "axis", "text-anchor": "end" }, `rotate at ${d.rotation_days} d`));
      svg.append(s("text", { x: 4, y: 42, class: "axis" }, d.stale ? "stale: rotate now" : `${d.days_left} days left`));
      chart.append(svg);
    },
    verifiers(section, d) {
      const chart = section.querySelector("[data-chart]");
      split(chart, ["ok", "failing", "unchecked"].map((name) => ({ name, value: d.links[name] || 0 })), (name) => `links.${name}`);
      const outcomes = Object.keys(d.outcomes);
      const names = outcomes.length ? outcomes : ["verified"];
      bars(chart, {
        labels: d.days.map((x) => shortDay(x.day)), height: 120, title: "verification changes per day, by outcome",
        totalPaths: d.days.map((_, i) => `days.${i}.total`),
        series: names.map((o) => ({
          name: o,
          values: d.days.map((x) => x.by_outcome[o] || 0),
          paths: d.days.map((_, i) => `days.${i}.by_outcome.${o}`),
        })),
      });
      const l = h("div", { class: "legend" });
      chart.append(l);
      legend(l, ["ok", "failing", "unchecked", ...outcomes.filter((o) => !["ok", "failing", "unchecked"].includes(o))]);
      const rows = [
        { label: "links by latest check", cells: ["ok", "failing", "unchecked"].map((k) => ({ path: `links.${k}`, value: d.links[k] || 0 })) },
      ];
      table(section.querySelector("[data-table]"), ["", "ok", "failing", "unchecked"], rows);
      const t2 = h("div");
      section.querySelector("[data-table]").append(t2);
      table(t2, ["outcome", "changes"], outcomes.map((o) => ({ label: o, cells: [{ path: `outcomes.${o}`, value: d.outcomes[o] }] })));
    },
  };

  function clear() {
    for (const section of document.querySelectorAll("section[data-endpoint]")) {
      for (const node of section.querySelectorAll("[data-chart], [data-table], [data-legend], [data-lifetimes]")) node.replaceChildren();
      for (const node of section.querySelectorAll("[data-field]")) {
        node.textContent = "–";
        node.removeAttribute("data-path");
        node.removeAttribute("data-value");
      }
      const pill = section.querySelector("[data-pill]");
      if (pill) { pill.textContent = "–"; pill.className = "pill"; }
    }
  }

  // -- the window (30 or 90 days) of the daily reports
  const WINDOWED = new Set(["expiry", "activity", "verifiers"]);
  const windowDays = () => Number(document.getElementById("window").value);

  function urlOf(name) {
    return "/v1/ops/" + name + (WINDOWED.has(name) ? `?days=${windowDays()}` : "");
  }

  let shown = null; // the last data drawn: redrawn as is when only the scale changes

  function draw(data) {
    clear();
    for (const name of ENDPOINTS) {
      const section = document.querySelector(`section[data-endpoint="${name}"]`);
      section.dataset.url = data[name].url;
      fillFields(section, data[name].body);
      render[name](section, data[name].body);
    }
    for (const node of document.querySelectorAll("[data-window]")) node.textContent = String(data.expiry.body.horizon_days);
  }

  // quiet: an auto-refresh, which keeps the page as it is until the new numbers arrive
  async function load({ quiet = false } = {}) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const headers = token ? { Authorization: "Bearer " + token } : {};
    if (!quiet) setState("loading", "Loading…");
    const urls = ENDPOINTS.map(urlOf);
    let responses;
    try {
      responses = await Promise.all(urls.map((url) => fetch(url, { headers, cache: "no-store" })));
    } catch (err) {
      clear();
      setState("error", "The service did not answer.");
      return schedule();
    }
    const refused = responses.find((r) => r.status === 401 || r.status === 403);
    if (refused) {
      let code = "";
      try { code = (await refused.json()).error.code; } catch (err) { code = ""; }
      clear();
      const why = refused.status === 403 ? "this token lacks the ops scope."
        : token ? "this token is not valid (expired, revoked or not ours)." : "no ops token given.";
      setState("refused", `Refused (${refused.status}${code ? " " + code : ""}): ${why}`);
      return schedule();
    }
    const failed = responses.find((r) => !r.ok);
    if (failed) {
      clear();
      setState("error", `The service answered ${failed.status}.`);
      return schedule();
    }
    const data = {};
    for (let i = 0; i < ENDPOINTS.length; i++) data[ENDPOINTS[i]] = { url: urls[i], body: await responses[i].json() };
    shown = data;
    draw(data);
    document.body.dataset.loads = String(Number(document.body.dataset.loads || 0) + 1);
    setState("ready", `Loaded at ${new Date().toLocaleTimeString("en-GB")} · as of ${data.expiry.body.as_of}`);
    return schedule();
  }

  // -- auto-refresh: every chosen interval while the page shows data, unless paused
  const refresh = { timer: null, nextAt: null, paused: false };
  const every = () => Number(document.getElementById("refresh").value);

  function schedule() {
    clearTimeout(refresh.timer);
    refresh.timer = null;
    refresh.nextAt = null;
    if (!refresh.paused && every() > 0 && document.body.dataset.state === "ready") {
      refresh.nextAt = Date.now() + every() * 1000;
      refresh.timer = setTimeout(() => load({ quiet: true }), every() * 1000);
    }
    showRefresh();
  }

  function showRefresh() {
    const line = document.getElementById("refresh-state");
    const pause = document.getElementById("pause");
    const secs = every();
    const period = secs >= 60 ? `${secs / 60} min` : `${secs} s`;
    let state, text;
    if (secs === 0) [state, text] = ["off", "auto-refresh off"];
    else if (refresh.paused) [state, text] = ["paused", `auto-refresh every ${period} · paused`];
    else if (refresh.nextAt !== null) {
      const left = Math.max(0, Math.ceil((refresh.nextAt - Date.now()) / 1000));
      [state, text] = ["on", `auto-refresh every ${period} · next in ${left} s`];
    } else [state, text] = ["waiting", `auto-refresh every ${period} · once the data loads`];
    line.dataset.refresh = state;
    line.textContent = text;
    pause.textContent = refresh.paused ? "Resume" : "Pause";
    pause.setAttribute("aria-pressed", String(refresh.paused));
    pause.disabled = secs === 0;
  }

  document.addEventListener("DOMContentLoaded", () => {
    takeTokenFromFragment();
    const form = document.getElementById("token-form");
    const input = document.getElementById("token");
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (input.value.trim()) sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      input.value = "";
      load();
    });
    document.getElementById("forget").addEventListener("click", () => {
      sessionStorage.removeItem(TOKEN_KEY);
      clear();
      shown = null;
      setState("idle", "Token forgotten.");
      schedule();
    });
    document.getElementById("window").addEventListener("change", () => load());
    document.getElementById("refresh").addEventListener("change", schedule);
    document.getElementById("pause").addEventListener("click", () => {
      refresh.paused = !refresh.paused;
      schedule();
    });
    document.getElementById("log-scale").addEventListener("change", (event) => {
      view.log = event.target.checked;
      if (shown) draw(shown);
    });
    setInterval(showRefresh, 1000);
    load();
  });
})();
