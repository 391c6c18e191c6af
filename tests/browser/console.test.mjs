// console.test.mjs - the web console in a real browser (Debian's chromium),
// against a real sluiced without --auth: the overview renders with no
// console error and no CSP violation; messages published by the CLI appear
// without a reload; a level paused and resumed by clicking, as the CLI sees
// it; a level's rate edited in the page survives a restart; a restart is
// shown, then the page goes on; dead letters requeued from the page come
// back; find by id shows explain's sentence; hostile tags and bodies show as
// text and open no dialog (dead letters, tenants, a level's waiting messages
// peeked); a page of another origin posting to the API gets
// 403 and changes nothing. Every page is saved as a screenshot under build/.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { Broker, browser, freePort, rmrf, shot, tmpdir, watch } from './lib.mjs';

let broker, ctx, page, seen, dir;
const HOSTILE_TAG = '<img src=x onerror=alert(1)>';
const HOSTILE_BODY = '<script>alert(1)</script>';

before(async () => {
  dir = tmpdir('console');
  broker = await new Broker(dir, await freePort()).start();
  ctx = await browser('console');
  page = await ctx.newPage();
  seen = await watch(page);
});

after(async () => {
  if (ctx) await ctx.close();
  if (broker) assert.equal(await broker.stop(), 0);
  rmrf(dir);
  if (ctx) rmrf(ctx.profile);
});

const readyOf = (name) => page.locator(`#levels tr[data-level="${name}"] td[data-field="ready"]`);
const pausedOf = (name) => page.locator(`#levels tr[data-level="${name}"] td[data-field="paused"]`);

test('the overview renders with no console error and no CSP violation', async () => {
  await page.goto(broker.url + '/');
  await page.locator('#levels tbody tr').nth(2).waitFor({ timeout: 30000 });
  await page.locator('#status[data-state="live"]').waitFor({ timeout: 30000 });
  await page.locator('svg.chart polyline').first().waitFor({ state: 'attached', timeout: 10000 });
  assert.deepEqual(seen.errors, []);
  assert.deepEqual(await page.evaluate(() => window.__csp), []);
  assert.equal(await page.locator('#levels tbody tr').count(), 3);
  await shot(page, 'overview');
});

// The page shows a publish at the next snapshot (one a second) pushed over
// its event stream: within 2 s on an idle machine. The test allows 6, since
// make test must pass beside other work (stress-ng --cpu 2 made it 2.4 s),
// and prints what it took.
test('200 messages published by the CLI appear without a reload within 2 s', async (t) => {
  await page.evaluate(() => { window.__same = true; });
  assert.equal(await readyOf('low').textContent(), '0');
  broker.sluice(['send', '-p', 'low', '-t', 'batch7'], { input: Array.from({ length: 200 }, (_, i) => 'job ' + i).join('\n') + '\n' });
  const t0 = Date.now();
  await page.waitForFunction(() => (document.querySelector('#levels tr[data-level="low"] td[data-field="ready"]') || {}).textContent === '200',
    null, { timeout: 6000 });
  t.diagnostic(`shown ${Date.now() - t0} ms after the publish was confirmed`);
  assert.ok(Date.now() - t0 <= 6000);
  assert.equal(await page.evaluate(() => window.__same), true); // the same page: no reload
  // a consumer drains 100 at the sink's 40/s: the charts draw it
  broker.sluice(['sink', 'set', '--max-rate', '40']);
  broker.sluice(['consume', '-p', 'low', '-n', '100']);
  await page.waitForTimeout(1500);
  await shot(page, 'overview-flowing');
  broker.sluice(['sink', 'set', '--max-rate', 'off']);
});

test('pause a level by clicking, the CLI sees it paused, then resume', async () => {
  await page.locator('#levels button[data-level="normal"]').click();
  await page.waitForFunction(() => (document.querySelector('#levels tr[data-level="normal"] td[data-field="paused"]') || {}).textContent === 'yes',
    null, { timeout: 20000 });
  assert.equal(broker.levels().find((l) => l.name === 'normal').paused, true);
  await shot(page, 'overview-paused');
  await page.locator('#levels button[data-level="normal"]').click();
  await page.waitForFunction(() => (document.querySelector('#levels tr[data-level="normal"] td[data-field="paused"]') || {}).textContent === 'no',
    null, { timeout: 20000 });
  assert.equal(broker.levels().find((l) => l.name === 'normal').paused, false);
  assert.equal(await pausedOf('normal').textContent(), 'no');
});

test("a level's rate edited in the page survives a restart, which the page shows and rides out", async () => {
  await page.goto(broker.url + '/#/level/low');
  await page.locator('input[name="max_rate"]').waitFor();
  await page.waitForFunction(() => (document.querySelector('input[name="burst"]') || {}).value);
  await page.fill('input[name="max_rate"]', '50');
  await page.fill('input[name="burst"]', '5');
  await page.locator('form button[type="submit"]').click();
  await page.locator('#toast', { hasText: 'done' }).waitFor({ timeout: 20000 });
  let low = broker.levels().find((l) => l.name === 'low');
  assert.equal(low.max_rate_milli, 50000);
  assert.equal(low.burst, 5);
  await shot(page, 'level');

  assert.equal(await broker.stop(), 0);
  await page.locator('#status[data-state="down"]').waitFor({ timeout: 30000 });
  assert.match(await page.locator('#notice').textContent(), /cannot be reached/);
  await shot(page, 'broker-down');
  await broker.start();
  await page.locator('#status[data-state="live"]').waitFor({ timeout: 30000 });
  await page.locator('#notice', { hasText: 'restarted' }).waitFor({ timeout: 30000 });
  low = broker.levels().find((l) => l.name === 'low');
  assert.equal(low.max_rate_milli, 50000);
  await page.reload();
  await page.waitForFunction(() => (document.querySelector('input[name="max_rate"]') || {}).value === '50', null, { timeout: 30000 });
  assert.equal(await readyOf('low').count(), 0); // the level page, not the overview
  // the outage was this test's own: what the page's requests met while the
  // broker was down is no error of the console's (a slow start meets more)
  seen.errors = seen.errors.filter((e) => !/net::ERR_CONNECTION_REFUSED/.test(e));
});

test('dead letters requeued from the page come back to their level', async () => {
  broker.sluice(['send', '-p', 'high', '-t', 'expiring', '--ttl', '1'], { input: 'a\nb\nc\n' });
  for (let i = 0; i < 100 && broker.stats().levels[0].dead < 3; i++) await page.waitForTimeout(100);
  assert.equal(broker.stats().levels[0].dead, 3);
  await page.goto(broker.url + '/#/dead');
  await page.locator('#dead tbody tr').nth(2).waitFor({ timeout: 30000 });
  await shot(page, 'dead-letters');
  await page.getByRole('button', { name: 'Requeue all' }).click();
  await page.locator('.confirm', { hasText: '3 dead letters of high will be requeued' }).waitFor({ timeout: 20000 });
  assert.equal(broker.stats().levels[0].dead, 3); // the dry run moved nothing
  await shot(page, 'dead-letters-confirm');
  await page.locator('.confirm button', { hasText: 'Confirm' }).click();
  await page.locator('#toast', { hasText: 'requeued 3' }).waitFor({ timeout: 20000 });
  const high = broker.stats().levels[0];
  assert.equal(high.dead, 0);
  assert.equal(high.depth, 3);
});

test("find by id shows explain's sentence", async () => {
  const id = broker.sluice(['send', '-p', 'normal', 'find me']).trim();
  await page.goto(broker.url + '/#/find/' + id);
  await page.locator('#explain [data-field="why"]').waitFor({ timeout: 20000 });
  assert.match(await page.locator('#explain [data-field="why"]').textContent(), /no consumer pool with members serves level normal/);
  await shot(page, 'find');
});

test('hostile tags and bodies show as text and open no dialog (dead letters, tenants, peek)', async () => {
  broker.sluice(['send', '-p', 'high', '-t', HOSTILE_TAG, '--ttl', '1', HOSTILE_BODY]);
  broker.sluice(['consume', '-p', 'normal', '-n', '1']); // the find test's message: normal is empty again
  broker.sluice(['level', 'set', 'normal', '--fair', 'tag']); // so that tag list shows its tags
  broker.sluice(['send', '-p', 'normal', '-t', HOSTILE_TAG, HOSTILE_BODY]);
  for (let i = 0; i < 100 && broker.stats().levels[0].dead < 1; i++) await page.waitForTimeout(100);
  await page.goto(broker.url + '/#/dead');
  const tag = page.locator('#dead td[data-field="tag"]', { hasText: 'onerror' });
  await tag.waitFor({ timeout: 30000 });
  assert.equal(await tag.textContent(), HOSTILE_TAG);
  assert.equal(await page.locator('#dead td[data-field="preview"]', { hasText: 'script' }).textContent(), HOSTILE_BODY);
  assert.equal(await page.locator('main img').count(), 0);
  assert.equal(await page.locator('main script').count(), 0);
  await page.locator('#dead tr', { hasText: 'onerror' }).getByRole('button', { name: 'Body' }).click();
  await page.locator('#body').waitFor();
  assert.equal(await page.locator('#body').textContent(), HOSTILE_BODY);
  await shot(page, 'dead-letter-body');
  await page.goto(broker.url + '/#/tenants');
  const t = page.locator('#tags td[data-field="tag"]', { hasText: 'onerror' });
  await t.waitFor({ timeout: 20000 });
  assert.equal(await t.textContent(), HOSTILE_TAG);
  assert.equal(await page.locator('main img').count(), 0);
  await shot(page, 'tenants');
  // the level's waiting messages, read with msg.peek through its derived route: as text too
  await page.goto(broker.url + '/#/level/normal');
  await page.getByRole('button', { name: 'Peek' }).click();
  const peeked = page.locator('#peek td', { hasText: 'script' });
  await peeked.waitFor({ timeout: 20000 });
  assert.equal(await peeked.textContent(), HOSTILE_BODY);
  assert.equal(await page.locator('#peek td', { hasText: 'onerror' }).textContent(), HOSTILE_TAG);
  assert.equal(await page.locator('main img').count(), 0);
  assert.equal(await page.locator('main script').count(), 0);
  assert.equal(broker.stats().levels[1].depth, 1); // read, not taken
  await shot(page, 'level-peek');
  await page.waitForTimeout(500);
  assert.deepEqual(seen.dialogs, []);
  assert.deepEqual(seen.errors, []);
  assert.deepEqual(await page.evaluate(() => window.__csp), []);
});

test('the other pages render: pools, publish', async () => {
  broker.sluice(['pool', 'resize', 'workers', '4']);
  await page.goto(broker.url + '/#/pools');
  await page.locator('#pools tr', { hasText: 'workers' }).waitFor({ timeout: 20000 });
  await shot(page, 'pools');
  await page.goto(broker.url + '/#/publish');
  await page.fill('textarea[name="body"]', 'from the console');
  await page.fill('input[name="tag"]', 'web');
  await page.locator('form button[type="submit"]').click();
  await page.locator('#published', { hasText: 'Stored durably as message' }).waitFor({ timeout: 20000 });
  await shot(page, 'publish');
  assert.deepEqual(seen.errors, []);
});

test('a page of another origin that posts to the API gets 403 and changes nothing', async () => {
  const target = broker.url + '/api/v1/levels/high/pause';
  const evil = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(`<!doctype html><title>elsewhere</title>
      <form id="f" method="POST" action="${target}" enctype="text/plain"><input name='{"a":"' value='"}'></form>
      <script>
      window.tries = Promise.allSettled([
        fetch(${JSON.stringify(target)}, {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'}, body: '{}'}),
        fetch(${JSON.stringify(target)}, {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'}),
      ]).then((r) => r.map((x) => x.status + (x.value ? ' ' + x.value.type + ' ' + x.value.status : '')));
      </script>`);
  });
  await new Promise((r) => evil.listen(0, '127.0.0.1', r));
  const other = await ctx.newPage();
  await other.goto('http://localhost:' + evil.address().port + '/');
  // the fetches: the answer is kept from the page (no CORS header; the preflight fails)
  const tries = await other.evaluate(() => window.tries);
  assert.deepEqual(tries.map((t) => t.split(' ')[0]), ['rejected', 'rejected'], tries.join(', '));
  // the form, the classic cross-site write: it reaches the broker, which answers 403
  const [answer] = await Promise.all([
    other.waitForResponse((r) => r.url() === target),
    other.evaluate(() => document.getElementById('f').submit()),
  ]);
  assert.equal(answer.status(), 403);
  assert.match(await answer.text(), /another site is refused/);
  assert.equal(broker.levels().find((l) => l.name === 'high').paused, false); // nothing changed
  await other.close();
  evil.closeAllConnections();
  await new Promise((r) => evil.close(r));
});
