/**
 * src/lab/interrupt.ts: a lab command ended by a signal or by a crash takes the daemons it
 * started with it. Each case runs in a child node process (the hooks are process-wide), which
 * starts a `sleep` as its daemon and prints its pid.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';

const interrupt = path.join(__dirname, '..', '..', 'src', 'lab', 'interrupt.js');

/** Runs `body` in a child with `adoptChild`, `onInterrupt` and a running `daemon` in scope. */
function command(body: string): {
  child: ReturnType<typeof spawn>;
  out: () => string;
  lines: Promise<string[]>;
  exit: Promise<[number | null, string | null]>;
} {
  const script = `
    const { spawn } = require('node:child_process');
    const { adoptChild, onInterrupt } = require(${JSON.stringify(interrupt)});
    const daemon = spawn('sleep', ['1000'], { stdio: 'ignore' });
    adoptChild(daemon);
    process.stdout.write('daemon ' + daemon.pid + '\\n');
    ${body}
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let announced: (lines: string[]) => void;
  const lines = new Promise<string[]>((resolve) => (announced = resolve));
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('ready\n')) announced(out.trim().split('\n'));
  });
  const exit = new Promise<[number | null, string | null]>((resolve) => child.once('exit', (code, signal) => resolve([code, signal])));
  return { child, out: () => out, lines, exit };
}

const daemonPid = (out: string): number => Number(/^daemon (\d+)$/m.exec(out)?.[1]);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function gone(pid: number): Promise<boolean> {
  // The daemon is not our child: it is reaped by init once its parent has exited.
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
  return !alive(pid);
}

test('SIGTERM: the registered ending runs to its end, then the command exits 143 and its daemon is gone', async () => {
  const c = command(`
    onInterrupt(async () => {
      await new Promise((r) => setTimeout(r, 200));
      process.stdout.write('cleaned\\n');
    });
    setInterval(() => {}, 1000);
    process.stdout.write('ready\\n');
  `);
  await c.lines;
  const pid = daemonPid(c.out());
  assert.ok(alive(pid), 'the daemon runs before the signal');
  c.child.kill('SIGTERM');
  const [code] = await c.exit;
  assert.equal(code, 143);
  assert.match(c.out(), /^cleaned$/m, 'the ending ran before the exit');
  assert.ok(await gone(pid), 'the daemon was killed');
});

test('SIGINT exits 130; an ending removed after the command ended in order is not run', async () => {
  const c = command(`
    const forget = onInterrupt(async () => process.stdout.write('cleaned\\n'));
    forget();
    setInterval(() => {}, 1000);
    process.stdout.write('ready\\n');
  `);
  await c.lines;
  c.child.kill('SIGINT');
  const [code] = await c.exit;
  assert.equal(code, 130);
  assert.doesNotMatch(c.out(), /cleaned/);
  assert.ok(await gone(daemonPid(c.out())));
});

test('a crash (an uncaught exception) still takes the daemon with it', async () => {
  const c = command(`
    process.stdout.write('ready\\n');
    setTimeout(() => { throw new Error('boom'); }, 50);
  `);
  await c.lines;
  const [code] = await c.exit;
  assert.equal(code, 1);
  assert.ok(await gone(daemonPid(c.out())));
});
