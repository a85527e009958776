// mrtr inspect: the page. Every string a server chose is put in the page with
// textContent (never as markup), links are never made from it, and the
// Content-Security-Policy forbids inline script: what a server sends stays text.
"use strict";

const TOKEN = new URLSearchParams(location.hash.slice(1)).get("token") || "";
const KINDS = ["tools", "prompts", "resources", "templates"];
const state = { version: -1, data: null, tab: "tools", selected: null, shown: new Map(), opened: new Set() };

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "cls") node.className = value;
    else if (key === "on") for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn);
    else if (["type", "name", "value", "placeholder", "min", "max", "step", "rows", "title"].includes(key)
             || key.startsWith("data-") || key.startsWith("aria-")) node.setAttribute(key, String(value));
    else if (key === "checked" || key === "disabled" || key === "multiple") node[key] = Boolean(value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function compact(value) {
  if (value === undefined) return "";
  const text = JSON.stringify(value);
  return text.length > 400 ? text.slice(0, 400) + "…" : text;
}

function ms(value) {
  return value === null || value === undefined ? "–" : `${value} ms`;
}

async function api(method, path, body) {
  const init = { method, headers: { "X-Inspect-Token": TOKEN } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  return { ok: response.ok, status: response.status, data };
}

// -- the lists and the call forms -------------------------------------------------

function itemsOf(kind) {
  return ((state.data && state.data.lists) || {})[kind] || [];
}

function itemLabel(kind, item) {
  if (kind === "resources") return item.uri;
  if (kind === "templates") return item.uriTemplate;
  return item.name;
}

function renderLists() {
  const tabs = document.getElementById("tabs");
  tabs.replaceChildren(...KINDS.map((kind) => el("button", {
    type: "button", cls: kind === state.tab ? "tab active" : "tab", "data-tab": kind,
    text: `${kind} (${itemsOf(kind).length})`,
    on: { click: () => { state.tab = kind; renderLists(); } },
  })));
  const list = document.getElementById("items");
  list.replaceChildren(...itemsOf(state.tab).map((item, index) => el("li", {},
    el("button", {
      type: "button", cls: "item", "data-item": itemLabel(state.tab, item),
      on: { click: () => { state.selected = { kind: state.tab, index }; renderForm(); } },
    }, el("strong", { text: itemLabel(state.tab, item) }),
       el("span", { cls: "muted", text: " " + (item.title || "") })),
    el("div", { cls: "desc", text: item.description || "" }),
  )));
}

function fieldKind(prop) {
  if (Array.isArray(prop.enum) || (Array.isArray(prop.oneOf) && prop.oneOf.every((o) => o && "const" in o))) return "enum";
  if (prop.type === "array" && prop.items && (Array.isArray(prop.items.enum) || Array.isArray(prop.items.oneOf))) return "multi";
  if (["boolean", "integer", "number", "string"].includes(prop.type)) return prop.type;
  return prop.type ? "json" : "string";
}

function choicesOf(prop) {
  if (Array.isArray(prop.enum)) {
    const names = Array.isArray(prop.enumNames) && prop.enumNames.length === prop.enum.length ? prop.enumNames : null;
    return prop.enum.map((v, i) => ({ value: v, label: String(names ? names[i] : v) }));
  }
  const options = prop.oneOf || prop.anyOf || [];
  return options.map((o) => ({ value: o.const, label: String(o.title || o.const) }));
}

// A field per schema property; read() gives [present, value] or throws a message.
function schemaField(name, prop, required) {
  const kind = fieldKind(prop);
  const label = el("label", { cls: "field" },
    el("span", { cls: "fname", text: (prop.title || name) + (required ? " *" : "") }),
    prop.description ? el("span", { cls: "muted", text: " " + prop.description }) : null);
  let input;
  let read;
  if (kind === "enum") {
    const options = choicesOf(prop);
    input = el("select", { name }, el("option", { value: "", text: "—" }),
      options.map((o, i) => el("option", { value: String(i), text: o.label })));
    if ("default" in prop) input.value = String(options.findIndex((o) => o.value === prop.default));
    read = () => input.value === "" ? [false] : [true, options[Number(input.value)].value];
  } else if (kind === "multi") {
    const options = choicesOf(prop.items);
    const boxes = options.map((o) => el("input", { type: "checkbox", name: `${name}:${o.label}` }));
    input = el("span", {}, options.map((o, i) => el("label", { cls: "check" }, boxes[i], o.label)));
    read = () => [true, options.filter((o, i) => boxes[i].checked).map((o) => o.value)];
  } else if (kind === "boolean") {
    input = el("input", { type: "checkbox", name, checked: prop.default === true });
    read = () => [true, input.checked];
  } else if (kind === "integer" || kind === "number") {
    input = el("input", { type: "number", name, step: kind === "integer" ? "1" : "any",
                          value: "default" in prop ? prop.default : undefined });
    read = () => {
      if (input.value === "") return [false];
      const n = Number(input.value);
      if (!Number.isFinite(n) || (kind === "integer" && !Number.isInteger(n))) throw `${name}: not ${kind === "integer" ? "an integer" : "a number"}`;
      return [true, n];
    };
  } else if (kind === "json") {
    input = el("textarea", { name, rows: 3, placeholder: `JSON ${prop.type}` });
    read = () => {
      if (input.value.trim() === "") return [false];
      try { return [true, JSON.parse(input.value)]; } catch (e) { throw `${name}: not JSON`; }
    };
  } else {
    const types = { email: "email", date: "date", uri: "url", "date-time": "text" };
    input = el("input", { type: types[prop.format] || "text", name,
                          value: typeof prop.default === "string" ? prop.default : undefined });
    read = () => input.value === "" ? [false] : [true, input.value];
  }
  label.append(input);
  return { node: label, read: () => {
    const got = read();
    if (!got[0] && required) throw `${name}: required`;
    return got;
  } };
}

function schemaForm(schema) {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const fields = Object.entries(props).map(([name, prop]) => [name, schemaField(name, prop || {}, required.has(name))]);
  return {
    node: el("div", { cls: "fields" }, fields.map(([, f]) => f.node)),
    read: () => {
      const out = {};
      for (const [name, f] of fields) {
        const got = f.read();
        if (got[0]) out[name] = got[1];
      }
      return out;
    },
  };
}

function renderForm() {
  const box = document.getElementById("form");
  const chosen = state.selected;
  if (!chosen) { box.replaceChildren(); return; }
  const item = itemsOf(chosen.kind)[chosen.index];
  if (!item) { box.replaceChildren(); return; }
  const problems = el("div", { cls: "problems" });
  let form;
  let send;
  if (chosen.kind === "tools") {
    form = schemaForm(item.inputSchema || {});
    const asTask = el("input", { type: "checkbox", name: "as-task" });
    form.node.append(el("label", { cls: "check" }, asTask, "run as a task (the tasks extension: the server may answer with a task, followed to its result)"));
    send = () => ({ kind: "tool", name: item.name, arguments: form.read(), task: asTask.checked });
  } else if (chosen.kind === "prompts") {
    const schema = { type: "object", properties: {}, required: [] };
    for (const arg of item.arguments || []) {
      schema.properties[arg.name] = { type: "string", description: arg.description };
      if (arg.required) schema.required.push(arg.name);
    }
    form = schemaForm(schema);
    send = () => ({ kind: "prompt", name: item.name, arguments: form.read() });
  } else if (chosen.kind === "resources") {
    form = { node: el("div"), read: () => ({}) };
    send = () => ({ kind: "resource", name: item.uri });
  } else {
    const names = [...String(item.uriTemplate).matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const schema = { type: "object", properties: {}, required: names };
    for (const n of names) schema.properties[n] = { type: "string" };
    form = schemaForm(schema);
    send = () => {
      const values = form.read();
      const uri = String(item.uriTemplate).replace(/\{([^}]+)\}/g, (_, n) => encodeURIComponent(values[n] || ""));
      return { kind: "resource", name: uri };
    };
  }
  const go = async () => {
    problems.textContent = "";
    let body;
    try { body = send(); } catch (message) { problems.textContent = String(message); return; }
    const reply = await api("POST", "/api/call", body);
    if (!reply.ok) problems.textContent = reply.data.error || `refused (${reply.status})`;
  };
  box.replaceChildren(el("div", { cls: "card" },
    el("h2", { text: itemLabel(chosen.kind, item) }),
    el("p", { cls: "desc", text: item.description || "" }),
    form.node,
    el("button", { type: "button", cls: "primary", "data-action": "run", text: chosen.kind === "tools" ? "Call" : chosen.kind === "prompts" ? "Get" : "Read", on: { click: go } }),
    problems));
}

// -- questions the server asked ---------------------------------------------------

function safeUrl(text) {
  try {
    const url = new URL(text);
    return url.protocol === "https:" || url.protocol === "http:" ? url : null;
  } catch (e) {
    return null;
  }
}

function questionCard(q, post) {
  const problems = el("div", { cls: "problems" });
  const where = q.round === null ? "back-channel" : `round ${q.round}`;
  const deliver = post || ((body) => api("POST", "/api/answer", { question: q.id, ...body }));
  const send = async (body) => {
    problems.textContent = "";
    const reply = await deliver(body);
    if (!reply.ok) problems.textContent = (reply.data.problems || [reply.data.error || "refused"]).join("; ");
  };
  const refuse = [
    el("button", { type: "button", "data-action": "decline", text: "Decline", on: { click: () => send({ action: "decline" }) } }),
    el("button", { type: "button", "data-action": "cancel", text: "Cancel", on: { click: () => send({ action: "cancel" }) } }),
  ];
  const head = el("div", { cls: "qhead" },
    el("strong", { text: q.key }),
    el("span", { cls: "muted", text: q.paused ? ` ${q.method} · paused call · ${where}`
      : q.call == null ? ` ${q.method} · ${where} · not tied to a call (several in flight: a 2025-11-25 server request does not say which)`
      : ` ${q.method} · call #${q.call} · ${where}` }));
  const params = q.params || {};
  let body;
  if (q.method === "sampling/createMessage") {
    const messages = (params.messages || []).map((m) => el("div", { cls: "msg" },
      el("span", { cls: "muted", text: `${m.role}: ` }),
      el("span", { text: m.content && m.content.type === "text" ? m.content.text : compact(m.content) })));
    const reply = el("textarea", { name: "reply", rows: 3, placeholder: "the reply to send" });
    const model = el("input", { type: "text", name: "model", value: "mrtr-inspect" });
    body = [params.systemPrompt ? el("div", { cls: "muted", text: `system: ${params.systemPrompt}` }) : null,
      messages, el("label", { cls: "field" }, "reply", reply), el("label", { cls: "field" }, "model", model),
      el("button", { type: "button", cls: "primary", "data-action": "accept", text: "Send reply",
                     on: { click: () => send({ action: "accept", text: reply.value, model: model.value }) } })];
  } else if (params.mode === "url") {
    const url = safeUrl(params.url);
    const consent = el("input", { type: "checkbox", name: "consent" });
    const open = el("button", { type: "button", "data-action": "open", text: "Open the page", disabled: true,
      on: { click: () => { if (url && consent.checked) window.open(url.href, "_blank", "noopener,noreferrer"); } } });
    consent.addEventListener("change", () => { open.disabled = !(consent.checked && url); });
    body = [el("p", { text: params.message || "" }),
      el("div", { cls: "url" }, el("span", { cls: "muted", text: "the server asks you to visit " }),
        el("strong", { cls: "host", text: url ? url.host : "(not an http(s) address: it will not be opened)" })),
      el("code", { cls: "urltext", text: params.url || "" }),
      el("label", { cls: "check" }, consent, "I trust this site and want to open it"),
      open,
      el("button", { type: "button", cls: "primary", "data-action": "accept", text: "Done: I finished on that page",
                     on: { click: () => send({ action: "accept" }) } })];
  } else {
    const form = schemaForm(params.requestedSchema || {});
    body = [el("p", { cls: "message", text: params.message || "" }), form.node,
      el("button", { type: "button", cls: "primary", "data-action": "accept", text: "Accept",
        on: { click: () => {
          let content;
          try { content = form.read(); } catch (message) { problems.textContent = String(message); return; }
          send({ action: "accept", content });
        } } })];
  }
  return el("div", { cls: "card question", "data-question": q.id, "data-key": q.key }, head, body, refuse, problems);
}

function renderQuestions() {
  const box = document.getElementById("questions");
  const questions = state.data.questions;
  const ids = new Set(questions.map((q) => q.id));
  for (const [id, node] of state.shown) if (!ids.has(id)) { node.remove(); state.shown.delete(id); }
  for (const q of questions) {
    if (state.shown.has(q.id)) continue;
    const node = questionCard(q);
    state.shown.set(q.id, node);
    box.append(node);
  }
}

// -- the timeline -----------------------------------------------------------------

function gantt(call, scale, origin) {
  const bar = el("div", { cls: "gantt" });
  const offset = el("span", { cls: "seg gap" });
  offset.style.width = `${(call.started - origin) * scale}px`;
  bar.append(offset);
  for (const r of call.rounds) {
    for (const [part, value] of [["human", r.ms.human], ["backoff", r.ms.backoff], ["server", r.ms.server]]) {
      if (!value) continue;
      const seg = el("span", { cls: `seg ${part}`, text: "" });
      seg.title = `round ${r.round} ${part} ${value} ms`;
      seg.style.width = `${Math.max(2, value * scale)}px`;
      bar.append(seg);
    }
  }
  return bar;
}

function roundBox(r) {
  const asked = Object.entries(r.asked || {});
  return el("div", { cls: `round ${r.outcome}`, "data-round": r.round },
    el("div", { cls: "rhead" }, el("strong", { text: `round ${r.round}` }),
      el("span", { cls: "muted", text: r.outcome === "running" && r.ms.server === null ? " being answered" : ` ${r.outcome}` })),
    Object.keys(r.answers || {}).length
      ? el("div", { cls: "answers" }, el("span", { cls: "muted", text: "sent " }),
          Object.entries(r.answers).map(([k, v]) => el("div", { cls: "kv" }, el("code", { text: k }), " ", compact(v))))
      : el("div", { cls: "muted", text: r.round === 1 ? "the first request" : "state only (no answers)" }),
    asked.length
      ? el("div", { cls: "asked" }, el("span", { cls: "muted", text: "asked " }),
          asked.map(([k, q]) => el("div", { cls: "kv" }, el("code", { text: k }), " ", r.kinds[r.keys.indexOf(k)] || (q && q.method) || "",
            (r.askedAgain || []).includes(k) ? el("span", { cls: "again", text: " asked again" }) : null)))
      : null,
    el("div", { cls: "times" },
      `server ${ms(r.ms.server)} · human ${ms(r.ms.human)} · backoff ${ms(r.ms.backoff)}`,
      r.stateBytes !== null ? ` · state ${r.stateBytes} B` : ""));
}

function exportButtons(call) {
  const run = async (format) => {
    const reply = await api("GET", `/api/export?call=${call.id}&format=${format}`);
    const box = document.getElementById("export");
    if (!reply.ok) { box.textContent = reply.data.error || "export failed"; return; }
    const blob = new Blob([reply.data.text], { type: format === "json" ? "application/json" : "text/x-python" });
    const link = el("a", { text: `Download ${reply.data.filename}` });
    link.href = URL.createObjectURL(blob);
    link.download = reply.data.filename;
    box.replaceChildren(el("h2", { text: `Export of call #${call.id}` }), link,
      el("pre", { cls: "exported", "data-format": format, text: reply.data.text }));
  };
  return [el("button", { type: "button", "data-action": "export-json", text: "Transcript", on: { click: () => run("json") } }),
          el("button", { type: "button", "data-action": "export-pytest", text: "pytest", on: { click: () => run("pytest") } })];
}

function resultSummary(result) {
  const blocks = [...(result.content || []), ...(result.messages || []).map((m) => m && m.content)];
  const texts = blocks.filter((c) => c && c.type === "text").map((c) => c.text)
    .concat((result.contents || []).filter((c) => c && typeof c.text === "string").map((c) => c.text));
  const head = texts.length ? texts.join(" ") : compact(result);
  return `${result.isError ? "error result" : "result"}: ${head.length > 160 ? head.slice(0, 160) + "…" : head}`;
}

function resultBox(call) {
  const box = el("details", { cls: "resultbox" }, el("summary", { text: resultSummary(call.result) }),
    el("pre", { cls: "result", text: JSON.stringify(call.result, null, 2) }));
  box.open = state.opened.has(call.id);
  box.addEventListener("toggle", () => { if (box.open) state.opened.add(call.id); else state.opened.delete(call.id); });
  return box;
}

function renderTimeline() {
  const calls = state.data.calls;
  const origin = calls.length ? Math.min(...calls.map((c) => c.started)) : 0;
  let span = 1;
  for (const c of calls) {
    const spent = c.rounds.reduce((t, r) => t + (r.ms.server || 0) + (r.ms.human || 0) + (r.ms.backoff || 0), 0);
    span = Math.max(span, c.started - origin + spent + 1);
  }
  const scale = Math.min(1, 800 / span);
  const rows = calls.slice().reverse().map((call) => el("div", { cls: `call ${call.status}`, "data-call": call.id },
    el("div", { cls: "chead" },
      el("strong", { text: `#${call.id} ${call.method} ` }), el("code", { text: call.name }),
      call.resumed ? el("span", { cls: "muted", text: ` resumed from the store (${call.resumed})` }) : null,
      el("span", { cls: "muted", text: ` ${compact(call.arguments)} ` }),
      el("span", { cls: `badge ${call.status}`, text: call.status }),
      call.status === "running"
        ? el("button", { type: "button", "data-action": "cancel-call", text: "Cancel call",
                         on: { click: () => api("POST", "/api/cancel", { call: call.id }) } })
        : exportButtons(call)),
    gantt(call, scale, origin),
    el("div", { cls: "rounds" }, call.rounds.map(roundBox),
      call.backchannel.map((b) => el("div", { cls: "round backchannel" },
        el("strong", { text: "back-channel " }), el("code", { text: b.method }),
        el("div", { cls: "kv", text: b.answer == null ? "waiting for an answer" : `answered ${compact(b.answer)}` })))),
    call.task && call.task.length ? el("div", { cls: "tasklane", "data-lane": "task" }, el("span", { cls: "muted", text: "task " }),
      call.task.map((t) => el("span", { cls: `chip ${t.status}`, title: t.message || "",
        text: `${t.status}${t.asking.length ? ` asks ${t.asking.join(", ")}` : ""} · ${t.polls} polls` }))) : null,
    call.progress.length ? el("div", { cls: "muted", text: `progress: ${call.progress.map((p) => `${p.progress}/${p.total ?? "?"}`).join(", ")}` }) : null,
    call.result ? resultBox(call) : null,
    call.error ? el("pre", { cls: "error", text: `${call.error.type}: ${call.error.message}` +
      (call.error.code !== undefined ? ` (code ${call.error.code})` : "") }) : null,
    call.error && call.error.explanation
      ? el("div", { cls: "explain" }, el("strong", { text: "why the server refused the state: " }),
          el("span", { cls: "reason", text: call.error.explanation }),
          el("span", { cls: "muted", text: call.error.explainedBy === "keys"
            ? " (decoded here with the server's keys; the wire answer stays -32602)"
            : " (told by the server in this process; the wire answer stays -32602)" }))
      : null));
  const legend = el("div", { cls: "legend muted" }, "time: ",
    el("span", { cls: "key server", text: "server" }), el("span", { cls: "key human", text: "human wait" }),
    el("span", { cls: "key backoff", text: "backoff" }));
  document.getElementById("timeline").replaceChildren(...(rows.length ? [legend] : []), ...rows);
}

function renderNotes() {
  const notes = state.data.notes.slice(-100).reverse();
  document.getElementById("notes").replaceChildren(...notes.map((n) => el("div", { cls: "note" },
    el("span", { cls: "muted", text: `${n.at} ms ` }), el("code", { text: n.method }), " ", compact(n.params))));
}

// -- paused calls in a store ----------------------------------------------------------

function renderPaused() {
  const box = document.getElementById("paused");
  const rows = state.data.paused;
  const seen = JSON.stringify(rows);
  if (seen === state.pausedSeen) return;
  state.pausedSeen = seen;
  if (rows === null || rows === undefined) { box.replaceChildren(); return; }
  const cards = rows.map((p) => {
    const problems = el("div", { cls: "problems" });
    const questions = p.missing.map((key) => {
      const asked = p.questions[key] || {};
      const q = { id: `${p.id}/${key}`, key, method: asked.method, params: asked.params || {}, round: p.round, paused: true };
      return questionCard(q, (body) => api("POST", "/api/paused/answer", { id: p.id, key, ...body }));
    });
    const resume = async () => {
      problems.textContent = "";
      const reply = await api("POST", "/api/paused/resume", { id: p.id });
      if (!reply.ok) problems.textContent = (reply.data.problems || [reply.data.error || "refused"]).join("; ");
    };
    return el("div", { cls: `card pausedcall ${p.status}`, "data-paused": p.id },
      el("div", { cls: "qhead" }, el("strong", { text: `${p.method} ` }), el("code", { text: p.name }),
        el("span", { cls: "muted", text: ` ${compact(p.arguments)} · round ${p.round} · ` }),
        el("span", { cls: `badge ${p.status}`, text: p.status }),
        el("span", { cls: "muted", text: ` · id ${p.id}` })),
      Object.keys(p.answered).length
        ? el("div", { cls: "answers" }, el("span", { cls: "muted", text: "answered " }),
            Object.entries(p.answered).map(([k, v]) => el("div", { cls: "kv" }, el("code", { text: k }), " ", compact(v))))
        : null,
      questions,
      el("button", { type: "button", cls: "primary", "data-action": "resume", text: "Resume (sends the retry once)",
                     on: { click: resume } }),
      problems);
  });
  box.replaceChildren(el("h2", {}, "Paused calls ", el("span", { cls: "muted", text: "(in the store: answer, then resume once)" })),
    el("button", { type: "button", text: "List again", on: { click: () => api("POST", "/api/paused/refresh") } }),
    ...(cards.length ? cards : [el("p", { cls: "muted", text: "no paused call in the store" })]));
}

function render() {
  const data = state.data;
  const info = data.server.serverInfo || {};
  document.getElementById("server").textContent =
    `${info.name || data.server.label || ""} ${info.version || ""} · ${data.server.protocolVersion || ""}`;
  if (data.listsVersion !== state.listsShown) {
    state.listsShown = data.listsVersion;
    renderLists();
  }
  if (state.selected && !itemsOf(state.selected.kind)[state.selected.index]) state.selected = null;
  renderQuestions();
  renderPaused();
  renderTimeline();
  renderNotes();
}

async function poll() {
  const status = document.getElementById("status");
  let firstListing = true;
  for (;;) {
    try {
      const known = state.data ? state.data.listsVersion : -1;
      const reply = await api("GET", `/api/state?since=${state.version}&lists=${known}`);
      if (!reply.ok) { status.textContent = `refused: ${reply.data.error || reply.status}`; return; }
      status.textContent = "live";
      if (reply.data.version !== state.version || firstListing) {
        state.version = reply.data.version;
        if (reply.data.lists === null && state.data) reply.data.lists = state.data.lists;
        state.data = reply.data;
        render();
        if (firstListing) { firstListing = false; renderForm(); }
      }
    } catch (e) {
      status.textContent = "disconnected; retrying";
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

document.getElementById("refresh").addEventListener("click", () => api("POST", "/api/refresh"));
poll();
