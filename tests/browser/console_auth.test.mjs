// console_auth.test.mjs - the web console of a broker with --auth, in a real
// browser: `sluice web login`'s link logs in once and leaves the address bar;
// an admin's console has its controls; a monitor's shows no control, and a
// write it makes by hand (with its own CSRF token) gets 403 and changes
// nothing; a link used twice, or no link, shows how to log in.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Broker, browser, freePort, rmrf, shot, tmpdir, watch } from './lib.mjs';

let broker, dir, ctxs = [];
const keyOf = (name) => ({ key: path.join(dir, name + '.key'), serverKey: path.join(dir, 'broker.pub') });

before(async () => {
  dir = tmpdir('auth');
  const port = await freePort();
  const probe = new Broker(dir, port);
  for (const name of ['broker', 'ops', 'watcher']) probe.sluice(['keygen', name]);
  const pub = (name) => fs.readFileSync(path.join(dir, name + '.pub'), 'utf8').match(/public = (\S{40})/)[1];
  fs.writeFileSync(path.join(dir, 'auth.txt'), `ops admin ${pub('ops')}\nwatcher monitor ${pub('watcher')}\n`);
  broker = await new Broker(dir, port, ['--curve-secret', path.join(dir, 'broker.key'), '--auth', path.join(dir, 'auth.txt')]).start();
});

after(async () => {
  for (const c of ctxs) { await c.close(); rmrf(c.profile); }
  if (broker) assert.equal(await broker.stop(), 0);
  rmrf(dir);
});

async function open(name) {
  const ctx = await browser('auth-' + name);
  ctxs.push(ctx);
  const page = await ctx.newPage();
  const seen = await watch(page);
  return { page, seen };
}

function link(name) {
  const out = broker.sluice(['web', 'login', '--ttl', '10m'], keyOf(name)).trim();
  assert.match(out, /^http:\/\/127\.0\.0\.1:\d+\/#login=[A-Za-z0-9_-]{43}$/);
  return out;
}

test("an admin's link logs in once, leaves the address bar, and shows the controls", async () => {
  const { page, seen } = await open('admin');
  const url = link('ops');
  await page.goto(url);
  await page.locator('#levels tbody tr').nth(2).waitFor({ timeout: 30000 });
  assert.equal(new URL(page.url()).hash.includes('login='), false);
  assert.match(await page.locator('#who').textContent(), /ops \(admin\)/);
  assert.ok(await page.locator('button.action').count() >= 3);
  await shot(page, 'admin-overview');
  assert.deepEqual(seen.errors, []);
  assert.deepEqual(await page.evaluate(() => window.__csp), []);

  const { page: again } = await open('reuse');
  await again.goto(url); // the same link again: used
  await again.locator('main h1', { hasText: 'Log in' }).waitFor({ timeout: 30000 });
  assert.match(await again.locator('main').textContent(), /sluice web login/);
  await shot(again, 'login-needed');
});

test("a monitor's console shows no control, and its hand-made POST gets 403", async () => {
  const { page, seen } = await open('monitor');
  await page.goto(link('watcher'));
  await page.locator('#levels tbody tr').nth(2).waitFor({ timeout: 30000 });
  assert.match(await page.locator('#who').textContent(), /watcher \(monitor\)/);
  assert.equal(await page.locator('button.action').count(), 0);
  assert.equal(await page.locator('#nav a', { hasText: 'Publish' }).count(), 0);
  await shot(page, 'monitor-overview');
  for (const p of ['dead', 'pools', 'tenants', 'level/high']) {
    await page.goto(broker.url + '/#/' + p);
    await page.waitForTimeout(600);
    assert.equal(await page.locator('button.action').count(), 0, p + ' shows a control');
  }
  await shot(page, 'monitor-level');
  const status = await page.evaluate(async () => {
    const s = await (await fetch('/api/v1/session')).json();
    const r = await fetch('/api/v1/levels/high/pause', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf }, body: '{}' });
    return r.status;
  });
  assert.equal(status, 403);
  assert.equal(broker.levels(keyOf('ops')).find((l) => l.name === 'high').paused, false);
  assert.deepEqual(seen.dialogs, []);
});
