// The sluice console: plain JavaScript over the operator API, served from
// the same origin. The operator token lives in sessionStorage (gone with
// the tab) and goes in the Authorization header; no cookie is ever set, so
// no other site can make this browser act for the operator.
'use strict';

const $ = (sel) => document.querySelector(sel);
const state = { token: sessionStorage.getItem('sluice-token') || '', cursors: [0], next: null, streams: [], key: null, quota: {} };

// api calls the operator API and returns its JSON, or throws an Error
// whose message is the problem's field and detail.
async function api(method, path, body) {
  const opt = { method, headers: { Authorization: 'Bearer ' + state.token } };
  if (body !== undefined) {
    opt.headers['Content-Type'] = 'application/json';
    opt.body = JSON.stringify(body);
  }
  const r = await fetch(path, opt);
  const data = await r.json().catch(() => ({}));
  if (!r.ok) {
    const err = new Error((data.field ? data.field + ': ' : '') + (data.detail || r.statusText));
    err.status = r.status;
    throw err;
  }
  return data;
}

function say(text) { $('#message').textContent = text; $('#error').textContent = ''; }
function fail(err) {
  if (err.status === 401) { signOut(); }
  $('#message').textContent = '';
  $('#error').textContent = err.message;
}
function el(tag, text, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}
const when = (t) => (t ? new Date(t).toLocaleString() : 'never');

function show(view) {
  for (const s of document.querySelectorAll('main > section')) s.hidden = s.id !== 'view-' + view;
  $('#nav').hidden = view === 'signin';
}

// ---- routing: #/keys, #/keys/ID, #/new ----
async function route() {
  stopStreams();
  if (!state.token) { show('signin'); $('#token').focus(); return; }
  const m = location.hash.match(/^#\/keys\/(\d+)$/);
  try {
    if (m) { await showKey(Number(m[1])); }
    else if (location.hash === '#/new') { show('new'); $('#new-owner').focus(); }
    else { await showKeys(); }
  } catch (err) { fail(err); }
}

function signOut() {
  state.token = '';
  sessionStorage.removeItem('sluice-token');
  stopStreams();
  show('signin');
}

// ---- the list ----
function searchQuery(cursor) {
  const p = new URLSearchParams();
  for (const [k, v] of new FormData($('#search-form'))) if (v) p.set(k, v);
  if (cursor) p.set('cursor', cursor);
  p.set('limit', '20');
  return p.toString();
}

async function showKeys() {
  show('keys');
  const cursor = state.cursors[state.cursors.length - 1];
  const page = await api('GET', 'api-key/list?' + searchQuery(cursor));
  const body = $('#keys-table tbody');
  body.replaceChildren();
  for (const k of page.apiKeys) {
    const tr = el('tr');
    const name = el('td');
    name.append(el('a', k.name || '(unnamed #' + k.id + ')', { href: '#/keys/' + k.id }));
    tr.append(name, el('td', k.referenceId), el('td', k.start + '…'), el('td', k.enabled ? 'yes' : 'no'),
      el('td', k.remaining === null ? 'unlimited' : String(k.remaining)), el('td', when(k.expiresAt)));
    body.append(tr);
  }
  $('#keys-empty').hidden = page.apiKeys.length > 0;
  state.next = page.nextCursor;
  $('#next-page').hidden = page.nextCursor === null;
  $('#first-page').hidden = state.cursors.length === 1;
  await loadRules();
  liveOverview();
}

async function loadRules() {
  if (state.rules) return;
  state.rules = (await api('GET', 'rate-limit/rules')).rules;
  for (const r of state.rules) {
    const text = r.name + ' (' + r.max + ' per ' + (r.calendar || r.timeWindow / 1000 + ' s') + ')';
    $('#live-scope').append(el('option', 'rule ' + text, { value: r.name }));
    $('#limit-rule').append(el('option', text, { value: r.name }));
  }
}

function liveOverview() {
  const rule = $('#live-scope').value;
  stopStreams();
  stream('live' + (rule ? '?rule=' + encodeURIComponent(rule) : ''), chart($('#overview-chart'), $('#overview-rate')));
}

// ---- a key ----
async function showKey(id) {
  const k = await api('GET', 'api-key/get?id=' + id);
  show('key');
  renderKey(k);
  const events = await api('GET', 'api-key/events?id=' + id);
  const list = $('#key-events');
  list.replaceChildren();
  for (const e of events.events) list.append(el('li', e.kind + ' by ' + (e.actor || 'the application') + ', ' + when(e.at)));
  if (!events.events.length) list.append(el('li', 'no changes through this console since the server started'));
  const draw = chart($('#key-chart'), $('#key-rate'));
  let seen = -1;
  stream('live?keyId=' + id, async (s) => {
    draw(s);
    const total = s.totalAllowed + s.totalDenied;
    if (total !== seen) {
      seen = total;
      if (total > 0) renderKey(await api('GET', 'api-key/get?id=' + id));
    }
  });
}

function renderKey(k) {
  state.key = k;
  $('#key-title').textContent = k.name || 'Key #' + k.id;
  const facts = $('#key-facts');
  facts.replaceChildren();
  const fact = (name, value) => facts.append(el('dt', name), el('dd', value));
  fact('id', String(k.id));
  fact('owner', k.referenceId);
  fact('starts with', k.start + '…');
  fact('enabled', k.enabled ? 'yes' : 'no');
  fact('expires', when(k.expiresAt));
  fact('created', when(k.createdAt));
  if (k.refillInterval) fact('refill', 'to ' + k.refillAmount + ' every ' + k.refillInterval / 1000 + ' s');
  for (const [name, l] of Object.entries(k.limits)) fact('limit ' + name, l.count + ' of ' + l.max + ' per ' + l.timeWindow / 1000 + ' s');
  // The quota a key started with is not stored: the largest remaining
  // seen (or the refill amount) stands for it.
  const usage = $('#usage');
  if (k.remaining === null) {
    usage.max = 1; usage.value = 0;
    $('#usage-text').textContent = 'unlimited';
  } else {
    const quota = Math.max(state.quota[k.id] || 0, k.refillAmount || 0, k.remaining);
    state.quota[k.id] = quota;
    sessionStorage.setItem('sluice-quota', JSON.stringify(state.quota));
    usage.max = Math.max(quota, 1);
    usage.value = quota - k.remaining;
    $('#usage-text').textContent = (quota - k.remaining) + ' of ' + quota + ' used, ' + k.remaining + ' left';
  }
  usage.dataset.remaining = String(k.remaining);
  const rate = $('#rate');
  if (k.rateLimitEnabled) {
    rate.max = Math.max(k.rateLimitMax, 1);
    rate.value = Math.min(k.requestCount, k.rateLimitMax);
    $('#rate-text').textContent = k.requestCount + ' of ' + k.rateLimitMax + ' per ' + k.rateLimitTimeWindow / 1000 + ' s';
  } else {
    rate.max = 1; rate.value = 0;
    $('#rate-text').textContent = 'no rate limit';
  }
  const perms = $('#key-permissions');
  perms.replaceChildren();
  for (const [res, actions] of Object.entries(k.permissions)) perms.append(el('li', res + ': ' + actions.join(', ')));
  if (!perms.children.length) perms.append(el('li', 'none'));
  $('#toggle-enabled').textContent = k.enabled ? 'Disable' : 'Enable';
}

function showSecret(secret, id) {
  $('#secret').textContent = secret;
  $('#secret-key-link').href = '#/keys/' + id;
  $('#secret-box').hidden = false;
  state.secretFor = id;
  $('#copy-secret').focus();
}

// confirm asks in a modal dialog (Escape cancels); grace adds the
// reroll's grace choice. It resolves to the grace in ms, or null.
function confirmAction(text, grace) {
  const d = $('#confirm');
  $('#confirm-text').textContent = text;
  $('#confirm-grace-row').hidden = !grace;
  $('#confirm-grace').value = '0';
  d.returnValue = '';
  d.showModal();
  $('#confirm-cancel').focus();
  return new Promise((resolve) => d.addEventListener('close', () => {
    resolve(d.returnValue === 'ok' ? Number($('#confirm-grace').value) : null);
  }, { once: true }));
}

// ---- the live view: server-sent events read through fetch, so that the
// token goes in a header (EventSource cannot send one) ----
function stopStreams() {
  for (const c of state.streams) c.abort();
  state.streams = [];
}

async function stream(path, onSample) {
  const ctl = new AbortController();
  state.streams.push(ctl);
  try {
    const r = await fetch(path, { headers: { Authorization: 'Bearer ' + state.token }, signal: ctl.signal });
    if (!r.ok) throw new Error('live view: ' + r.status);
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const line = buf.slice(0, i).split('\n').find((l) => l.startsWith('data: '));
        buf = buf.slice(i + 2);
        if (line) await onSample(JSON.parse(line.slice(6)));
      }
    }
  } catch (err) {
    if (err.name !== 'AbortError') fail(err);
  }
}

// chart returns a function that adds a sample to canvas and redraws it:
// a bar a second, allowed up from the middle, denied down from it. The
// canvas keeps the stream's totals in data attributes.
function chart(canvas, label) {
  const samples = [];
  const n = 60;
  return (s) => {
    samples.push(s);
    if (samples.length > n) samples.shift();
    const ctx = canvas.getContext('2d');
    const w = canvas.width, h = canvas.height, mid = h / 2;
    const top = Math.max(1, ...samples.map((x) => Math.max(x.allowed, x.denied)));
    ctx.clearRect(0, 0, w, h);
    ctx.fillStyle = '#d0d7de';
    ctx.fillRect(0, mid, w, 1);
    const bw = w / n;
    samples.forEach((x, i) => {
      const a = (x.allowed / top) * (mid - 4), d = (x.denied / top) * (mid - 4);
      ctx.fillStyle = '#1a7f37';
      ctx.fillRect(i * bw + 1, mid - a, bw - 2, a);
      ctx.fillStyle = '#c0362c';
      ctx.fillRect(i * bw + 1, mid + 1, bw - 2, d);
    });
    canvas.dataset.totalAllowed = String(s.totalAllowed);
    canvas.dataset.totalDenied = String(s.totalDenied);
    canvas.dataset.samples = String(samples.length);
    label.textContent = s.allowed.toFixed(1) + ' allowed/s, ' + s.denied.toFixed(1) + ' denied/s (' + s.totalAllowed + ' and ' + s.totalDenied + ' since opened)';
  };
}

// ---- wiring ----
function parsePermissions(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t) continue;
    const [res, actions] = t.split(':');
    out[res.trim()] = (actions || '').split(',').map((a) => a.trim()).filter(Boolean);
  }
  return out;
}

function createBody(form) {
  const f = new FormData(form);
  const body = { referenceId: f.get('referenceId') };
  for (const k of ['name', 'prefix']) if (f.get(k)) body[k] = f.get(k);
  if (f.get('remaining') !== '') body.remaining = Number(f.get('remaining'));
  if (f.get('rateLimitMax') !== '' || f.get('rateWindow') !== '') {
    body.rateLimitEnabled = true;
    body.rateLimitMax = Number(f.get('rateLimitMax'));
    body.rateLimitTimeWindow = Number(f.get('rateWindow')) * 1000;
  }
  if (f.get('permissions').trim()) body.permissions = parsePermissions(f.get('permissions'));
  return body;
}

function on(sel, event, fn) {
  $(sel).addEventListener(event, async (e) => {
    if (event === 'submit') e.preventDefault();
    try { await fn(e); } catch (err) { fail(err); }
  });
}

document.addEventListener('DOMContentLoaded', () => {
  try { state.quota = JSON.parse(sessionStorage.getItem('sluice-quota') || '{}'); } catch { state.quota = {}; }
  on('#signin-form', 'submit', async () => {
    state.token = $('#token').value;
    try {
      await api('GET', 'api-key/list?limit=1');
    } catch (err) {
      state.token = '';
      throw err.status === 401 ? new Error('That token is not the operator token.') : err;
    }
    sessionStorage.setItem('sluice-token', state.token);
    $('#token').value = '';
    say('Signed in.');
    if (location.hash === '' || location.hash === '#/keys') await route(); else location.hash = '#/keys';
  });
  on('#sign-out', 'click', async () => { signOut(); say('Signed out.'); });
  on('#search-form', 'submit', async () => { state.cursors = [0]; await showKeys(); });
  on('#next-page', 'click', async () => { state.cursors.push(state.next); await showKeys(); });
  on('#first-page', 'click', async () => { state.cursors = [0]; await showKeys(); });
  on('#live-scope', 'change', async () => liveOverview());
  on('#limit-form', 'submit', async () => {
    const p = new URLSearchParams({ rule: $('#limit-rule').value, key: $('#limit-key').value });
    const s = await api('GET', 'rate-limit/get?' + p);
    $('#limit-state').textContent = s.key + ': ' + s.remaining + ' of ' + s.max + ' left until ' + when(s.reset);
  });
  on('#limit-reset', 'click', async () => {
    if (await confirmAction('Reset the counter of ' + $('#limit-key').value + '?', false) === null) return;
    await api('POST', 'rate-limit/reset', { rule: $('#limit-rule').value, key: $('#limit-key').value });
    say('Counter reset.');
  });
  on('#create-form', 'submit', async (e) => {
    const k = await api('POST', 'api-key/create', createBody(e.target));
    if (k.remaining !== null) { state.quota[k.id] = k.remaining; }
    e.target.reset();
    say('Key created.');
    showSecret(k.key, k.id);
  });
  on('#copy-secret', 'click', async () => {
    try {
      await navigator.clipboard.writeText($('#secret').textContent);
      say('Secret copied to the clipboard.');
    } catch {
      getSelection().selectAllChildren($('#secret'));
      say('Press Ctrl+C (or ⌘C) to copy the selected secret.');
    }
  });
  on('#toggle-enabled', 'click', async () => {
    const k = await api('POST', 'api-key/update', { keyId: state.key.id, enabled: !state.key.enabled });
    say(k.enabled ? 'Key enabled.' : 'Key disabled: it no longer verifies.');
    await route();
  });
  on('#reroll', 'click', async () => {
    const grace = await confirmAction('Give this key a new secret? Clients must switch to it.', true);
    if (grace === null) return;
    const k = await api('POST', 'api-key/reroll', { keyId: state.key.id, gracePeriod: grace });
    say('Key rerolled.');
    showSecret(k.key, k.id);
    await route();
  });
  on('#revoke', 'click', async () => {
    if (await confirmAction('Revoke this key? It stops verifying at once, and cannot be restored.', false) === null) return;
    await api('POST', 'api-key/delete', { keyId: state.key.id });
    location.hash = '#/keys';
    say('Key revoked.');
  });
  addEventListener('hashchange', () => {
    if (location.hash !== '#/keys/' + state.secretFor) $('#secret-box').hidden = true;
    route();
  });
  route();
});
