// lib.mjs - what the console's browser tests share: real sluiced processes
// in fresh temporary directories (readiness on a pipe, never a sleep; stopped
// by their pid), the sluice CLI, Debian's chromium through playwright-core
// (no browser is ever downloaded), and screenshots under build/.
//
// Programs come from $SLUICE_BIN (default bin), as for the C tests.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
export const BIN = path.resolve(ROOT, process.env.SLUICE_BIN || 'bin');
export const SHOTS = path.resolve(ROOT, process.env.SLUICE_SHOTS || 'build/browser-shots');
export const CHROMIUM = process.env.SLUICE_CHROMIUM || '/usr/bin/chromium';

const live = new Set(); // processes to stop if a test fails half-way
process.on('exit', () => { for (const c of live) try { c.kill('SIGKILL'); } catch (e) { /* gone */ } });

export function tmpdir(name) {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-browser-' + name + '-'));
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// Broker: sluiced on dir's data, ipc://dir/s.sock and --http 127.0.0.1:port.
export class Broker {
  constructor(dir, port, extra = []) {
    this.dir = dir;
    this.port = port;
    this.extra = extra;
    this.endpoint = 'ipc://' + path.join(dir, 's.sock');
    this.url = 'http://127.0.0.1:' + port;
    this.log = path.join(dir, 'sluiced.log');
  }

  async start(timeoutMs = 20000) {
    const out = fs.openSync(this.log, 'a');
    const args = ['-d', path.join(this.dir, 'data'), '-l', this.endpoint, '--http', '127.0.0.1:' + this.port,
      '--ready-fd', '3', ...this.extra];
    const child = spawn(path.join(BIN, 'sluiced'), args, { stdio: ['ignore', out, out, 'pipe'] });
    fs.closeSync(out);
    this.child = child;
    live.add(child);
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('sluiced not ready in time:\n' + fs.readFileSync(this.log, 'utf8'))), timeoutMs);
      let got = '';
      child.stdio[3].on('data', (d) => { got += d; if (got.includes('READY')) { clearTimeout(timer); resolve(); } });
      child.on('exit', (code) => { clearTimeout(timer); reject(new Error('sluiced exited ' + code + ':\n' + fs.readFileSync(this.log, 'utf8'))); });
    });
    child.removeAllListeners('exit');
    return this;
  }

  async stop(timeoutMs = 20000) {
    const child = this.child;
    if (!child || child.exitCode !== null) return child ? child.exitCode : 0;
    const done = new Promise((resolve) => child.on('exit', (code, sig) => resolve(sig ? 128 : code)));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const code = await done;
    clearTimeout(timer);
    live.delete(child);
    this.child = null;
    return code;
  }

  // sluice runs the CLI against this broker; returns its stdout (throws on a failure).
  sluice(args, { input, key, serverKey } = {}) {
    const keys = key ? ['--client-key', key, '--server-key', serverKey] : [];
    const r = spawnSync(path.join(BIN, 'sluice'), ['-b', this.endpoint, ...keys, ...args],
      { input, encoding: 'utf8', timeout: 30000, cwd: this.dir });
    if (r.status !== 0) throw new Error('sluice ' + args.join(' ') + ' exited ' + r.status + ': ' + r.stderr);
    return r.stdout;
  }

  levels(opts) {
    return JSON.parse(this.sluice(['level', 'list', '--json'], opts)).levels;
  }

  stats(opts) {
    return JSON.parse(this.sluice(['stats', '--json'], opts));
  }
}

// browser launches chromium with a fresh profile; the caller closes it.
export async function browser(name) {
  const profile = tmpdir('profile-' + name);
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    viewport: { width: 1300, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  ctx.profile = profile;
  return ctx;
}

// watch records a page's console errors, page errors, CSP violations and dialogs.
export async function watch(page) {
  const seen = { errors: [], dialogs: [] };
  page.setDefaultTimeout(30000); // a busy machine: every wait but the ones the tests bound themselves
  page.on('console', (m) => { if (m.type() === 'error') seen.errors.push(m.text()); });
  page.on('pageerror', (e) => seen.errors.push('uncaught: ' + e.message));
  page.on('response', async (r) => { if (r.status() >= 400) seen.errors.push('(' + r.request().method() + ' ' + r.url() + ' answered ' + r.status() + ': ' + (await r.text().catch(() => '')) + ')'); });
  page.on('dialog', (d) => { seen.dialogs.push(d.type() + ': ' + d.message()); d.dismiss().catch(() => {}); });
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
  });
  return seen;
}

export async function shot(page, name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, name + '.png'), fullPage: true });
}

export function rmrf(dir) {
  fs.rmSync(dir, { recursive: true, force: true });
}
