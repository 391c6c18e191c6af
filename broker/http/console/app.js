// Sluice console: one ES module, no framework, no build step.
//
// Everything it shows comes from the JSON API (proto/HTTP.md): the overview
// pushed once a second by Server-Sent Events (or polled when a stream cannot
// be kept), the history for the charts, and the admin commands' answers.
// Every action is one of the broker's admin commands, sent as the session's
// principal with its CSRF token; the page shows only the controls the
// session's role may use (the server refuses the rest anyway). Text that
// came from a client (tags, bodies, reasons, names) goes into the page with
// textContent only, never as HTML: el() below builds every node.

const API = '/api/v1';
const S = {
  session: null, routes: [], overview: null, prevUptime: null,
  hist: null, span: '15m', source: null, pollTimer: null, live: 'connecting',
  page: null, view: null,
};

// ---- building the page ----

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
}

const SVGNS = 'http://www.w3.org/2000/svg';
function svg(tag, attrs = {}, ...kids) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) e.setAttribute(k, String(v));
  for (const kid of kids.flat()) if (kid) e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  return e;
}

const $ = (id) => document.getElementById(id);

function toast(text, kind = 'info') {
  const t = $('toast');
  t.textContent = text;
  t.dataset.kind = kind;
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, kind === 'bad' ? 8000 : 3500);
}

function notice(text, kind) {
  const n = $('notice');
  n.hidden = !text;
  n.textContent = text || '';
  if (kind) n.dataset.kind = kind; else delete n.dataset.kind;
}

function setLive(state, text) {
  S.live = state;
  const s = $('status');
  s.dataset.state = state;
  s.textContent = text;
}

// ---- numbers ----

const num = (v) => (v === null || v === undefined ? '–' : Number(v).toLocaleString('en-US'));
const rate = (v) => (v ? (v >= 100 ? v.toFixed(0) : v.toFixed(1)) : '0');
const limit = (v) => (v ? rate(v) + '/s' : 'none');
function age(ms) {
  if (!ms) return '–';
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min ' + Math.floor(s % 60) + ' s';
  if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  return Math.floor(s / 86400) + ' d ' + Math.floor((s % 86400) / 3600) + ' h';
}
const clock = (ms) => new Date(ms).toISOString().slice(11, 19);

// ---- the API ----

async function api(method, path, body) {
  const opts = { method, credentials: 'same-origin', headers: {} };
  if (method !== 'GET') {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body || {});
    if (S.session && S.session.csrf) opts.headers['X-CSRF-Token'] = S.session.csrf;
  }
  let res;
  try {
    res = await fetch(API + path, opts);
  } catch (e) {
    return { ok: false, status: 0, error: { code: 'SL_ECONNECT', message: 'the broker cannot be reached' } };
  }
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (res.status === 401 && S.session) sessionEnded();
  return { ok: res.ok, status: res.status, data, error: data && data.error };
}

// act runs an admin command and says how it went; returns its answer or null.
async function act(what, path, body) {
  const r = await api('POST', path, body);
  if (!r.ok) {
    toast(what + ': ' + (r.error ? r.error.message + ' (' + r.error.code + ')' : 'HTTP ' + r.status), 'bad');
    return null;
  }
  toast(what + ': done');
  return r.data || {};
}

const may = (what) => !!(S.session && S.session.may && S.session.may[what]);
const levelName = (l) => (S.overview && S.overview.levels[l] ? S.overview.levels[l].name : String(l));
const enc = encodeURIComponent;
const hasCommand = (name) => S.routes.some((r) => r.command === name);

function sessionEnded() {
  S.session = null;
  stopLive();
  setLive('ended', 'signed out');
  renderLogin('Your session ended (idle, expired, logged out, or the broker restarted): run `sluice web login` for a new link.');
}

// ---- live figures ----

function apply(ov) {
  if (S.prevUptime !== null && ov.uptime_ms < S.prevUptime)
    notice('The broker restarted at ' + clock(ov.time_ms) + ' UTC; the figures go on from its new start.', null);
  S.prevUptime = ov.uptime_ms;
  S.overview = ov;
  appendPoint(ov);
  if (S.view && S.view.update) S.view.update(ov);
}

function stopLive() {
  if (S.source) { S.source.close(); S.source = null; }
  clearInterval(S.pollTimer);
  S.pollTimer = null;
}

function startLive() {
  stopLive();
  if (!may('read')) return;
  if (!window.EventSource) return startPolling();
  const src = new EventSource(API + '/events');
  S.source = src;
  let opened = false;
  src.addEventListener('open', () => { opened = true; setLive('live', 'live'); });
  src.addEventListener('overview', (e) => { setLive('live', 'live'); apply(JSON.parse(e.data)); });
  src.addEventListener('error', () => {
    if (src.readyState === EventSource.CLOSED) { // refused (too many streams, or no session): poll instead
      if (S.source === src) startPolling();
      return;
    }
    setLive('down', opened ? 'broker unreachable: reconnecting…' : 'connecting…');
    if (opened) notice('The broker cannot be reached; the page reconnects by itself.', 'bad');
  });
}

function startPolling() {
  stopLive();
  const poll = async () => {
    const r = await api('GET', '/overview');
    if (r.ok) { setLive('polling', 'live (polling)'); apply(r.data); }
    else if (r.status === 0 || r.status >= 500) setLive('down', 'broker unreachable: retrying…');
  };
  poll();
  S.pollTimer = setInterval(poll, 2000);
}

// The charts' points: the history, then each overview appended.
async function loadHistory() {
  if (!may('read')) return;
  const r = await api('GET', '/history?span=' + S.span);
  if (r.ok) S.hist = r.data;
  if (S.view && S.view.redraw) S.view.redraw();
}

function appendPoint(ov) {
  const h = S.hist;
  if (!h || S.span !== '15m') return;
  if (h.t.length && h.t[h.t.length - 1] >= ov.time_ms) return;
  h.t.push(ov.time_ms);
  ov.levels.forEach((l, i) => {
    if (!h.levels[i]) h.levels[i] = { out_per_s: h.t.map(() => 0) , ready: h.t.map(() => 0) };
    h.levels[i].out_per_s.push(l.out_per_s || 0);
    h.levels[i].ready.push(l.ready || 0);
  });
  const out = ov.levels.reduce((a, l) => a + (l.out_per_s || 0), 0);
  h.sink_out_per_s.push(out);
  h.sink_limit_per_s.push(ov.sink.rate);
  h.sink_effective_per_s.push(ov.sink.effective_rate);
  const extra = h.t.length - 900;
  if (extra > 0) {
    h.t.splice(0, extra);
    h.levels.forEach((l) => { l.out_per_s.splice(0, extra); l.ready.splice(0, extra); });
    ['sink_out_per_s', 'sink_limit_per_s', 'sink_effective_per_s'].forEach((k) => h[k].splice(0, extra));
  }
}

// chart draws lines of values over t as SVG.
function chart(series, t, unit) {
  const W = 640, H = 180, L = 46, R = 8, T = 8, B = 20;
  const all = series.flatMap((s) => s.values);
  const max = Math.max(1, ...all.filter((v) => Number.isFinite(v))) * 1.1;
  const n = t.length;
  const x = (i) => L + (n > 1 ? (i / (n - 1)) * (W - L - R) : 0);
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const g = svg('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img' });
  g.append(svg('line', { class: 'axis', x1: L, y1: H - B, x2: W - R, y2: H - B }));
  g.append(svg('line', { class: 'axis', x1: L, y1: T, x2: L, y2: H - B }));
  g.append(svg('text', { x: L - 4, y: T + 10, 'text-anchor': 'end' }, rate(max / 1.1)));
  g.append(svg('text', { x: L - 4, y: H - B, 'text-anchor': 'end' }, '0'));
  if (n) {
    g.append(svg('text', { x: L, y: H - 4 }, clock(t[0])));
    g.append(svg('text', { x: W - R, y: H - 4, 'text-anchor': 'end' }, clock(t[n - 1]) + ' UTC'));
  }
  for (const s of series) {
    if (!s.values.length) continue;
    const pts = s.values.map((v, i) => x(i).toFixed(1) + ',' + y(Number.isFinite(v) ? v : 0).toFixed(1)).join(' ');
    g.append(svg('polyline', { class: s.cls + (s.dash ? ' dash' : ''), points: pts }));
  }
  const legend = el('div', { class: 'legend' }, series.map((s) => el('span', { class: s.cls }, s.name)), el('span', { class: 'muted' }, unit));
  return el('div', {}, g, legend);
}

function spanPicker() {
  const pick = (span) => el('button', { class: S.span === span ? '' : 'secondary', onclick: () => { S.span = span; loadHistory(); } }, span);
  return el('span', { class: 'spanpick' }, pick('15m'), ' ', pick('24h'));
}

// ---- pages ----

const PAGES = [
  ['overview', 'Overview', 'read'], ['dead', 'Dead letters', 'read'], ['tenants', 'Tenants', 'read'],
  ['pools', 'Pools', 'read'], ['find', 'Find', 'read'], ['publish', 'Publish', 'publish'],
];

function renderNav() {
  const nav = $('nav');
  const cur = (location.hash.match(/^#\/(\w+)/) || [])[1] || 'overview';
  nav.replaceChildren(...PAGES.filter((p) => may(p[2])).map((p) =>
    el('a', { href: '#/' + p[0], class: cur === p[0] || (cur === 'level' && p[0] === 'overview') ? 'on' : null }, p[1])));
  $('who').textContent = S.session ? S.session.principal + ' (' + S.session.role + ')' : '';
}

function route() {
  if (!S.session) return;
  renderNav();
  const m = location.hash.match(/^#\/(\w+)(?:\/(.*))?$/);
  let page = m ? m[1] : (may('read') ? 'overview' : 'publish');
  if (!PAGES.some((p) => p[0] === page) && page !== 'level') page = 'overview';
  if (!may('read') && page !== 'publish') page = 'publish';
  const arg = m && m[2] ? decodeURIComponent(m[2]) : null;
  const view = { overview, level, dead, tenants, pools, find, publish }[page](arg);
  S.page = page;
  S.view = view;
  $('main').replaceChildren(view.node);
  if (S.overview && view.update) view.update(S.overview);
  if (view.redraw) view.redraw();
}

function pauseButton(l, paused) {
  return el('button', {
    class: 'action ' + (paused ? '' : 'secondary'), 'data-level': l.name,
    onclick: () => act((paused ? 'resume ' : 'pause ') + l.name, '/levels/' + enc(l.name) + (paused ? '/resume' : '/pause')),
  }, paused ? 'Resume' : 'Pause');
}

function overview() {
  const body = el('tbody');
  const sinkKv = el('dl', { class: 'kv' });
  const levelChart = el('div'), sinkChart = el('div');
  const rows = new Map();
  const node = el('div', {},
    el('h1', {}, 'Overview'),
    el('div', { class: 'panel' }, el('h2', {}, 'Levels'),
      el('table', { id: 'levels' },
        el('thead', {}, el('tr', {}, ['Level', 'Ready', 'In flight', 'Delayed', 'Dead', 'In/s', 'Out/s', 'Oldest', 'ETA', 'Paused', 'Last pick'].map((h) => el('th', {}, h)), may('change') ? el('th', {}, '') : null)),
        body)),
    el('div', { class: 'grid' },
      el('div', { class: 'panel' }, el('h2', {}, 'Sink'), sinkKv),
      el('div', { class: 'panel' }, el('h2', {}, 'Delivered per second, by level', spanPicker()), levelChart),
      el('div', { class: 'panel' }, el('h2', {}, "The sink's rate against its limit"), sinkChart)));
  const update = (ov) => {
    ov.levels.forEach((l) => {
      let r = rows.get(l.level);
      if (!r || r.name !== l.name) {
        const cells = Array.from({ length: 11 }, (_, i) => el('td', { class: i ? 'num' : null }));
        cells[0].append(el('a', { href: '#/level/' + enc(l.name) }, l.name));
        const actCell = may('change') ? el('td') : null;
        const tr = el('tr', { 'data-level': l.name }, cells, actCell);
        r = { name: l.name, tr, cells, actCell, paused: null };
        rows.set(l.level, r);
        body.append(tr);
      }
      const v = [null, num(l.ready), num(l.inflight), num(l.delayed), num(l.dead), rate(l.in_per_s), rate(l.out_per_s), age(l.oldest_ms),
        l.ready ? (l.eta_ms ? age(l.eta_ms) : '–') : '–', l.paused ? 'yes' : 'no', l.last_pick || '–'];
      for (let i = 1; i < v.length; i++) r.cells[i].textContent = v[i];
      r.cells[1].dataset.field = 'ready';
      r.cells[9].dataset.field = 'paused';
      r.tr.classList.toggle('paused', l.paused);
      if (r.actCell && r.paused !== l.paused) { r.actCell.replaceChildren(pauseButton(l, l.paused)); r.paused = l.paused; }
    });
    const k = ov.sink;
    const kv = [
      ['Rate (configured)', limit(k.rate)], ['In use', limit(k.effective_rate) + ' — ' + k.reason],
      ['In flight', num(k.inflight) + (k.max_inflight ? ' of ' + num(k.max_inflight) : '')],
      ['429s a second', rate(k.throttled_per_s) + ' (' + num(k.throttled) + ' in all)'],
      ['Paused', k.paused ? 'for ' + age(k.pause_remaining_ms) + ' more' : 'no'],
      ['Breaker', k.breaker + ' (' + num(k.breaker_trips) + ' trips)'],
      ['Shared sink', k.coord ? k.coord.state + ': granted ' + limit(k.coord.granted_rate) + ' + reserved ' + limit(k.coord.reserved_rate) + ', ' + k.coord.slices_held + ' of ' + k.coord.slices + ' slices' : 'not shared'],
      ['High availability', ov.ha && ov.ha.role === 'standby' ? 'standby in epoch ' + ov.ha.epoch + ', ' + num(ov.ha.records) + ' records applied' + (ov.ha.streaming ? '' : ', no primary streaming') + (ov.ha.in_sync ? ', in sync' : '') : ov.ha ? ov.ha.mode + ' in epoch ' + ov.ha.epoch + ', standby ' + num(ov.ha.lag_records) + ' records (' + age(ov.ha.lag_ms) + ') behind' + (ov.ha.diverged ? ', ' + num(ov.ha.diverged) + ' diverged' : '') : 'one node'],
      ['Broker', 'up ' + age(ov.uptime_ms) + ', ' + num(ov.broker.consumers) + ' consumers, version ' + ov.version],
    ];
    sinkKv.replaceChildren(...kv.flatMap(([a, b]) => [el('dt', {}, a), el('dd', {}, b)]));
    if (k.paused && may('change') && hasCommand('sink.resume')) // ends a pause after 429s at once, where the broker has it
      sinkKv.append(el('dt', {}, ''), el('dd', {}, el('button', { class: 'action', onclick: () => act('resume the sink', '/sink/resume') }, 'Resume the sink now')));
    redraw();
  };
  const redraw = () => {
    const h = S.hist;
    if (!h) return;
    const names = S.overview ? S.overview.levels.map((l) => l.name) : h.levels.map((_, i) => 'level ' + i);
    levelChart.replaceChildren(chart(h.levels.map((l, i) => ({ name: names[i] || 'level ' + i, cls: 's' + (i % 8), values: l.out_per_s })), h.t, 'messages/s'));
    sinkChart.replaceChildren(chart([
      { name: 'delivered', cls: 'out', values: h.sink_out_per_s },
      { name: 'in use (AIMD)', cls: 'effective', values: h.sink_effective_per_s, dash: true },
      { name: 'limit', cls: 'limit', values: h.sink_limit_per_s, dash: true }], h.t, 'units/s; 0: no limit'));
  };
  return { node, update, redraw };
}

function level(name) {
  const figs = el('dl', { class: 'kv' });
  const controls = el('div', { class: 'row' });
  const form = el('form', { class: 'row' });
  const peek = el('div');
  let filled = false;
  const fields = [['deadline_ms', 'Deadline (s)', 1000], ['aging_ms', 'Aging step (s)', 1000],
    ['max_rate', 'Max rate (/s)', null], ['min_rate', 'Min rate (/s)', null], ['burst', 'Burst', null]];
  const inputs = {};
  for (const [k, label] of fields) {
    inputs[k] = el('input', { name: k, type: 'number', min: '0', step: 'any', size: '8' });
    form.append(el('label', {}, label, inputs[k]));
  }
  if (may('change')) {
    form.append(el('button', { class: 'action', type: 'submit' }, 'Save'));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const v = (k) => Number(inputs[k].value || 0);
      const r = await act('level ' + name + ' settings', '/levels/' + enc(name) + '/set', {
        deadline_ms: Math.round(v('deadline_ms') * 1000), aging_ms: Math.round(v('aging_ms') * 1000),
        rate_milli: Math.round(v('max_rate') * 1000), min_rate_milli: Math.round(v('min_rate') * 1000),
        burst: Math.max(1, Math.round(v('burst'))),
      });
      if (r) filled = false;
    });
  } else {
    Object.values(inputs).forEach((i) => { i.disabled = true; });
  }
  const node = el('div', {}, el('h1', {}, 'Level ', name),
    el('div', { class: 'grid' },
      el('div', { class: 'panel' }, el('h2', {}, 'Figures'), figs, controls),
      el('div', { class: 'panel' }, el('h2', {}, 'Settings'), form)),
    may('bodies') ? el('div', { class: 'panel' }, el('h2', {}, 'Waiting messages'), peek) : null);
  let paused = null;
  const update = (ov) => {
    const l = ov.levels.find((x) => x.name === name);
    if (!l) { figs.replaceChildren(el('dd', {}, 'no level named ', name)); return; }
    figs.replaceChildren(...[['Ready', num(l.ready)], ['In flight', num(l.inflight)], ['Delayed', num(l.delayed)],
      ['Dead letters', num(l.dead)], ['In/s, out/s', rate(l.in_per_s) + ', ' + rate(l.out_per_s)], ['Oldest', age(l.oldest_ms)],
      ['ETA', l.ready ? age(l.eta_ms) : '–'], ['Paused', l.paused ? 'yes' : 'no'], ['Served', l.fair ? 'fair by tag (' + l.tenants + ' tags)' : 'in order (FIFO)'],
      ['Picks', Object.entries(l.picks).map(([k, n]) => k + ' ' + n).join(', ')]].flatMap(([a, b]) => [el('dt', {}, a), el('dd', {}, b)]));
    if (may('change') && paused !== l.paused) { controls.replaceChildren(pauseButton(l, l.paused)); paused = l.paused; }
    if (!filled) {
      inputs.deadline_ms.value = l.deadline_ms / 1000; inputs.aging_ms.value = l.aging_ms / 1000;
      inputs.max_rate.value = l.max_rate; inputs.min_rate.value = l.min_rate; inputs.burst.value = l.burst;
      filled = true;
    }
  };
  const peekRoute = S.routes.find((r) => r.command === 'msg.peek'); // its route, derived from the model
  if (peekRoute && may('bodies')) {
    const named = peekRoute.path.includes('{level}'); // the level in the path, or as an argument
    const path = peekRoute.path.replace(API, '').replace('{level}', enc(name));
    const show = async () => {
      const r = peekRoute.method === 'GET' ? await api('GET', path + (named ? '' : '?level=' + enc(name)))
        : await api('POST', path, named ? {} : { level: name });
      // pos is a place in the level for paging, above 2^53: no figure to show
      out.replaceChildren(r.ok ? rowsTable(r.data, ['pos']) : el('p', {}, r.error ? r.error.message : 'HTTP ' + r.status));
    };
    const out = el('div', { id: 'peek' });
    peek.append(el('p', { class: 'muted' }, 'The next messages waiting in this level, read without taking them (those out with consumers are not shown).'),
      el('button', { class: 'secondary', onclick: show }, 'Peek'), out);
  }
  return { node, update };
}

// rowsTable shows every *_rows list of an answer as a table, as text, less
// the columns named in hide.
function rowsTable(data, hide = []) {
  const lists = Object.entries(data || {}).filter(([k, v]) => Array.isArray(v) && k.endsWith('_rows'));
  if (!lists.length) return el('p', { class: 'muted' }, 'nothing');
  return el('div', {}, lists.map(([k, rows]) => {
    const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))].filter((c) => !hide.includes(c));
    return el('table', {}, el('thead', {}, el('tr', {}, cols.map((c) => el('th', { class: 'text' }, c)))),
      el('tbody', {}, rows.map((r) => el('tr', {}, cols.map((c) => el('td', { class: 'text' }, r[c] === undefined ? '' : String(r[c])))))));
  }));
}

function levelSelect(name, withSame) {
  const s = el('select', { name });
  if (withSame) s.append(el('option', { value: '' }, 'its own level'));
  const names = S.overview ? S.overview.levels.map((l) => l.name) : (S.session && S.session.levels) || [];
  names.forEach((n) => s.append(el('option', { value: n }, n)));
  return s;
}

function confirmBox(text, onYes) {
  const box = el('div', { class: 'confirm' }, el('p', {}, text));
  box.append(el('button', { class: 'danger action', onclick: async () => { box.remove(); await onYes(); } }, 'Confirm'), ' ',
    el('button', { class: 'secondary', onclick: () => box.remove() }, 'Cancel'));
  return box;
}

function dead() {
  const lv = levelSelect('level', false), to = levelSelect('to', true);
  const fTag = el('input', { placeholder: 'tag contains', size: '14' }), fReason = el('input', { placeholder: 'reason contains', size: '14' });
  const fAge = el('input', { type: 'number', min: '0', placeholder: 'older than (s)', size: '10' });
  const out = el('div'), confirms = el('div'), bodyView = el('div');
  let rows = [];
  const load = async () => {
    rows = [];
    let after = 0;
    for (let page = 0; page < 20; page++) {
      const r = await api('GET', '/dead?level=' + enc(lv.value) + '&n=64&after=' + after);
      if (!r.ok) { out.replaceChildren(el('p', {}, r.error ? r.error.message : 'HTTP ' + r.status)); return; }
      const got = r.data.dead_rows || [];
      rows.push(...got);
      if (got.length < 64) break;
      after = got[got.length - 1].id;
    }
    show();
  };
  const show = () => {
    const now = Date.now(), older = Number(fAge.value || 0) * 1000;
    const vis = rows.filter((d) => d.tag.includes(fTag.value) && d.reason.includes(fReason.value) && now - d.died_ms >= older);
    const tbody = el('tbody', {}, vis.map((d) => el('tr', { 'data-id': d.id },
      may('change') ? el('td', {}, el('input', { type: 'checkbox', value: d.id, 'aria-label': 'select ' + d.id })) : null,
      el('td', { class: 'num' }, d.id), el('td', { class: 'text', 'data-field': 'tag' }, d.tag), el('td', { class: 'num' }, d.attempts),
      el('td', {}, age(now - d.died_ms) + ' ago'), el('td', { class: 'text', 'data-field': 'reason' }, d.reason),
      el('td', { class: 'text', 'data-field': 'preview' }, d.preview), el('td', { class: 'num' }, num(d.body_bytes)),
      may('bodies') ? el('td', {}, el('button', { class: 'secondary', onclick: () => viewBody(d.id) }, 'Body')) : null)));
    out.replaceChildren(el('p', { class: 'muted' }, vis.length + ' of ' + rows.length + ' dead letters shown'),
      el('table', { id: 'dead' }, el('thead', {}, el('tr', {}, may('change') ? el('th', {}, '') : null,
        ['Id', 'Tag', 'Attempts', 'Died', 'Reason', 'Body starts', 'Bytes'].map((h) => el('th', { class: 'text' }, h)), may('bodies') ? el('th', {}, '') : null)), tbody));
  };
  const viewBody = async (id) => {
    const r = await api('POST', '/dead/peek', { id });
    bodyView.replaceChildren(r.ok ? el('div', { class: 'panel' }, el('h2', {}, 'Dead letter ', id),
      el('p', {}, 'Tag: ', el('code', {}, r.data.tag || '(none)'), ', attempts: ', r.data.attempt, ', reason: ', r.data.msg || ''),
      el('pre', { class: 'body', id: 'body' }, r.data.body !== undefined ? r.data.body : '(not text: ' + (r.data.body_base64 || '').length + ' base64 characters)'))
      : el('p', {}, r.error ? r.error.message : 'HTTP ' + r.status));
  };
  const toLevel = () => (to.value ? { to_level: to.value } : {});
  const requeueSelected = () => {
    const ids = [...out.querySelectorAll('input[type=checkbox]:checked')].map((c) => Number(c.value));
    if (!ids.length) return toast('select dead letters first');
    confirms.replaceChildren(confirmBox(ids.length + ' dead letter' + (ids.length === 1 ? '' : 's') + ' will be requeued to ' + (to.value || 'their own level') + '.', async () => {
      let moved = 0;
      for (const id of ids) { const r = await act('requeue ' + id, '/dead/requeue', { id, ...toLevel() }); if (r) moved += r.n; }
      toast('requeued ' + moved);
      load();
    }));
  };
  const requeueAll = async () => {
    const dry = await act('count', '/dead/requeue', { level: lv.value, dry_run: true, ...toLevel() });
    if (!dry) return;
    confirms.replaceChildren(confirmBox(dry.n + ' dead letters of ' + lv.value + ' will be requeued to ' + (to.value || lv.value) + '.', async () => {
      let moved = 0;
      for (let i = 0; i < 1000; i++) { const r = await act('requeue', '/dead/requeue', { level: lv.value, ...toLevel() }); if (!r) break; moved += r.n; if (!r.after) break; }
      toast('requeued ' + moved + ' dead letters');
      load();
    }));
  };
  const purge = async () => {
    const older = Math.round(Number(fAge.value || 0) * 1000), args = { level: lv.value, ...(older ? { older_than_ms: older } : {}) };
    let n = 0, after = 0;
    for (let i = 0; i < 1000; i++) { const r = await act('count', '/dead/purge', { ...args, dry_run: true, after }); if (!r) return; n += r.n; after = r.after; if (!after) break; }
    confirms.replaceChildren(confirmBox(n + ' dead letters of ' + lv.value + (older ? ' older than ' + age(older) : '') + ' will be deleted for good.', async () => {
      let gone = 0;
      for (let i = 0; i < 1000; i++) { const r = await act('purge', '/dead/purge', args); if (!r) break; gone += r.n; if (!r.after) break; }
      toast('purged ' + gone + ' dead letters');
      load();
    }));
  };
  [fTag, fReason, fAge].forEach((i) => i.addEventListener('input', show));
  lv.addEventListener('change', load);
  const node = el('div', {}, el('h1', {}, 'Dead letters'),
    el('div', { class: 'panel' },
      el('div', { class: 'row' }, el('label', {}, 'Level', lv), el('label', {}, 'Tag', fTag), el('label', {}, 'Reason', fReason), el('label', {}, 'Age', fAge),
        el('button', { class: 'secondary', onclick: load }, 'Refresh')),
      may('change') ? el('div', { class: 'row' }, el('label', {}, 'Requeue to', to),
        el('button', { class: 'action', onclick: requeueSelected }, 'Requeue selected'),
        el('button', { class: 'action', onclick: requeueAll }, 'Requeue all'),
        el('button', { class: 'action danger', onclick: purge }, 'Purge')) : null,
      confirms, out), bodyView);
  setTimeout(load, 0);
  return { node };
}

function tenants() {
  const out = el('div');
  const load = async () => {
    const r = await api('GET', '/tags');
    if (!r.ok) return out.replaceChildren(el('p', {}, r.error ? r.error.message : 'HTTP ' + r.status));
    const rows = r.data.tag_rows || [];
    const patterns = rows.filter((t) => t.pattern !== undefined), tags = rows.filter((t) => t.tag !== undefined);
    const button = (t) => el('button', { class: 'action secondary', onclick: async () => { await act((t.paused ? 'resume ' : 'pause ') + t.tag, '/tags/' + enc(t.tag) + (t.paused ? '/resume' : '/pause')); load(); } }, t.paused ? 'Resume' : 'Pause');
    out.replaceChildren(el('div', {},
      el('h2', {}, 'Tags with the most waiting'),
      tags.length ? null : el('p', { class: 'muted' }, 'No tag waits in a level served fair by tag (sluice level set LEVEL --fair tag).'),
      el('table', { id: 'tags' }, el('thead', {}, el('tr', {}, ['Tag', 'Level', 'Waiting', 'In flight', 'Rate', 'Weight', 'Paused', 'Throttled', 'Oldest'].map((h) => el('th', { class: 'text' }, h)), may('change') ? el('th') : null)),
        el('tbody', {}, tags.map((t) => el('tr', {}, el('td', { class: 'text', 'data-field': 'tag' }, t.tag), el('td', {}, levelName(t.level)), el('td', { class: 'num' }, num(t.depth)),
          el('td', { class: 'num' }, num(t.inflight)), el('td', {}, t.rate_milli ? rate(t.rate_milli / 1000) + '/s' : '–'), el('td', { class: 'num' }, t.weight || 1),
          el('td', {}, t.paused ? 'yes' : 'no'), el('td', {}, t.throttled_ms ? age(t.throttled_ms) : '–'), el('td', {}, age(t.oldest_ms)), may('change') ? el('td', {}, button(t)) : null)))),
      el('h2', {}, 'Per-tag limits'),
      patterns.length ? el('table', {}, el('thead', {}, el('tr', {}, ['Pattern', 'Rate', 'Burst', 'In flight at most', 'Weight', 'Each tag'].map((h) => el('th', { class: 'text' }, h)))),
        el('tbody', {}, patterns.map((p) => el('tr', {}, el('td', { class: 'text' }, p.pattern), el('td', {}, p.rate_milli ? rate(p.rate_milli / 1000) + '/s' : '–'),
          el('td', { class: 'num' }, p.burst || 1), el('td', { class: 'num' }, p.max_inflight || '–'), el('td', { class: 'num' }, p.weight || 1), el('td', {}, p.each ? 'yes' : 'no')))))
        : el('p', { class: 'muted' }, 'No per-tag limits are set.')));
  };
  const pattern = el('input', { placeholder: 'tag or glob, e.g. gold-*', size: '18', required: true });
  const pRate = el('input', { type: 'number', min: '0', step: 'any', size: '7' }), pBurst = el('input', { type: 'number', min: '1', size: '5' });
  const pInfl = el('input', { type: 'number', min: '0', size: '5' }), pWeight = el('input', { type: 'number', min: '1', max: '1000', size: '5' });
  const form = el('form', { class: 'row' }, el('label', {}, 'Pattern', pattern), el('label', {}, 'Rate (/s)', pRate), el('label', {}, 'Burst', pBurst),
    el('label', {}, 'In flight', pInfl), el('label', {}, 'Weight', pWeight), el('button', { class: 'action', type: 'submit' }, 'Set'));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const row = {};
    if (pWeight.value) row.weight = Number(pWeight.value);
    if (pInfl.value) row.max_inflight = Number(pInfl.value);
    if (pBurst.value) row.burst = Number(pBurst.value);
    const body = { tag_rows: [row] };
    if (pRate.value !== '') body.window_rows = [{ count_milli: Math.round(Number(pRate.value) * 1000), period_ms: 1000, burst: Number(pBurst.value || 1) }];
    if (await act('tag ' + pattern.value, '/tags/' + enc(pattern.value) + '/set', body)) load();
  });
  const node = el('div', {}, el('h1', {}, 'Tenants'), el('div', { class: 'panel' }, out, el('button', { class: 'secondary', onclick: load }, 'Refresh')),
    may('change') ? el('div', { class: 'panel' }, el('h2', {}, 'Set a pattern\'s limits'), form) : null);
  setTimeout(load, 0);
  return { node };
}

function pools() {
  const out = el('div');
  const load = async () => {
    const r = await api('GET', '/pools');
    if (!r.ok) return out.replaceChildren(el('p', {}, r.error ? r.error.message : 'HTTP ' + r.status));
    const rows = r.data.pool_rows || [];
    out.replaceChildren(rows.length ? el('table', { id: 'pools' }, el('thead', {}, el('tr', {}, ['Pool', 'Levels', 'Size', 'Members', 'In flight', 'Rate', 'Recommended', 'Paused', 'Autoscale'].map((h) => el('th', { class: 'text' }, h)), may('change') ? el('th', {}, 'Resize') : null)),
      el('tbody', {}, rows.map((p) => {
        const size = el('input', { type: 'number', min: '0', size: '5', value: p.size });
        const levels = (S.overview ? S.overview.levels : []).filter((l) => p.levels_mask & (1 << l.level)).map((l) => l.name).join(', ');
        return el('tr', {}, el('td', { class: 'text' }, p.name), el('td', { class: 'text' }, levels), el('td', { class: 'num' }, p.size || 'none'), el('td', { class: 'num' }, p.members),
          el('td', { class: 'num' }, p.inflight), el('td', {}, rate(p.rate_milli / 1000) + '/s'), el('td', { class: 'num' }, p.recommended), el('td', {}, p.paused ? 'yes' : 'no'), el('td', {}, p.autoscale ? 'on' : 'off'),
          may('change') ? el('td', {}, size, ' ', el('button', { class: 'action', onclick: async () => { if (await act('resize ' + p.name, '/pools/' + enc(p.name) + '/resize', { size: Number(size.value) })) load(); } }, 'Resize'), ' ',
            el('button', { class: 'action secondary', onclick: async () => { if (await act((p.paused ? 'resume ' : 'pause ') + p.name, '/pools/' + enc(p.name) + (p.paused ? '/resume' : '/pause'))) load(); } }, p.paused ? 'Resume' : 'Pause')) : null);
      }))) : el('p', { class: 'muted' }, 'No consumer pools: they appear when consumers join.'));
  };
  const node = el('div', {}, el('h1', {}, 'Pools'), el('div', { class: 'panel' }, out, el('button', { class: 'secondary', onclick: load }, 'Refresh')));
  setTimeout(load, 0);
  return { node };
}

function find(arg) {
  const id = el('input', { name: 'id', type: 'number', min: '1', placeholder: 'message id', size: '12', value: arg || '' });
  const out = el('div');
  const go = async (e) => {
    if (e) e.preventDefault();
    if (!id.value) return;
    const r = await api('GET', '/explain?id=' + enc(id.value));
    if (!r.ok) return out.replaceChildren(el('p', {}, r.error ? r.error.message : 'HTTP ' + r.status));
    const x = r.data;
    out.replaceChildren(el('dl', { class: 'kv', id: 'explain' }, el('dt', {}, 'State'), el('dd', {}, x.state),
      el('dt', {}, 'Level'), el('dd', {}, levelName(x.level)), el('dt', {}, 'Position'), el('dd', {}, x.state === 'ready' ? num(x.position) + ' ahead of it' : '–'),
      el('dt', {}, 'Until'), el('dd', {}, x.until_ms ? age(x.until_ms) : '–'), el('dt', {}, 'Why'), el('dd', { 'data-field': 'why' }, x.msg || '–')));
  };
  const form = el('form', { class: 'row' }, el('label', {}, 'Message id', id), el('button', { type: 'submit' }, 'Find'));
  form.addEventListener('submit', go);
  if (arg) setTimeout(go, 0);
  return { node: el('div', {}, el('h1', {}, 'Find a message'), el('div', { class: 'panel' }, form, out)) };
}

function publish() {
  const lv = levelSelect('level', false);
  const body = el('textarea', { name: 'body', placeholder: 'the message body (text)' });
  const tag = el('input', { name: 'tag', size: '14' }), key = el('input', { name: 'key', size: '14' });
  const cost = el('input', { name: 'cost', type: 'number', min: '1', size: '5' }), delay = el('input', { name: 'delay_ms', type: 'number', min: '0', size: '8' });
  const ttl = el('input', { name: 'ttl_ms', type: 'number', min: '1', size: '8' });
  const out = el('p', { id: 'published' });
  const form = el('form', {}, el('div', { class: 'row' }, el('label', {}, 'Level', lv), el('label', {}, 'Tag', tag), el('label', {}, 'Idempotency key', key),
    el('label', {}, 'Cost', cost), el('label', {}, 'Delay (ms)', delay), el('label', {}, 'Time to live (ms)', ttl)), body,
    el('div', { class: 'row' }, el('button', { type: 'submit', class: 'action' }, 'Publish')), out);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const m = { body: body.value };
    if (tag.value) m.tag = tag.value;
    if (key.value) m.key = key.value;
    for (const [k, i] of [['cost', cost], ['delay_ms', delay], ['ttl_ms', ttl]]) if (i.value) m[k] = Number(i.value);
    const r = await act('publish', '/levels/' + enc(lv.value) + '/messages', m);
    if (r) out.textContent = 'Stored durably as message ' + r.id + (r.duplicate ? ' (a duplicate of its key)' : '') + '.';
  });
  return { node: el('div', {}, el('h1', {}, 'Publish a message'), el('div', { class: 'panel' }, form)) };
}

function renderLogin(text) {
  renderNav();
  $('main').replaceChildren(el('div', { class: 'panel' }, el('h1', {}, 'Log in'),
    el('p', {}, text || 'This broker needs a session: run `sluice web login` with your key and open the link it prints.')));
}

// ---- start ----

async function start() {
  const m = location.hash.match(/^#login=([A-Za-z0-9_-]+)$/);
  if (m) {
    history.replaceState(null, '', location.pathname + '#/overview'); // the token leaves the address bar at once
    const r = await api('POST', '/login', { token: m[1] });
    if (!r.ok) renderLogin(r.error ? r.error.message : 'The login failed (HTTP ' + r.status + ').');
  }
  const s = await api('GET', '/session');
  if (!s.ok) {
    setLive(s.status === 0 ? 'down' : 'ended', s.status === 0 ? 'broker unreachable' : 'not logged in');
    if (!m) renderLogin(s.status === 0 ? 'The broker cannot be reached.' : null);
    return;
  }
  S.session = s.data;
  const rt = await api('GET', '/');
  if (rt.ok) S.routes = rt.data.routes;
  if (may('read')) {
    const ov = await api('GET', '/overview');
    if (ov.ok) apply(ov.data);
    startLive();
    loadHistory();
    setInterval(() => { if (S.span === '24h') loadHistory(); }, 60000);
  } else {
    setLive('live', 'publish only');
  }
  window.addEventListener('hashchange', route);
  route();
}

start();
