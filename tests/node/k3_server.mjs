// Shared by the node tests: a `k3 serve` child on a free port, a runner for named checks, and
// an independent count of a chat prompt's tokens.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

// Starts `k3 serve -m MODEL --port 0 ARGS...`; resolves once it listens.
export async function startServer(k3, model, args) {
  const child = spawn(k3, ['serve', '-m', model, '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const m = line.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', () => reject(new Error('k3 serve exited before listening')));
  });
  return { child, exited, port, base: `http://127.0.0.1:${port}` };
}

// Runs each check in turn, then `cleanup` if given, stops the server (which must exit 0), and
// exits 0 only if all passed.
export async function runChecks(checks, server, cleanup) {
  let failed = 0;
  for (const [name, check] of Object.entries(checks)) {
    try {
      await check();
      console.log(`ok   ${name}`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name}: ${e.stack ?? e}`);
    }
  }
  if (cleanup) await cleanup();
  server.child.kill('SIGTERM');
  const { code, signal } = await server.exited;
  if (code !== 0) {
    failed++;
    console.log(`FAIL k3 serve exited with ${code ?? signal} after SIGTERM`);
  }
  process.exit(failed ? 1 : 0);
}

// The number of tokens in the prompt the K3 chat template makes of `vars` (messages, tools,
// thinking, ...), rendered by `k3 template` and tokenized by the server's /tokenize: an account
// of the prompt that does not go through the endpoint under test.
export async function templatePromptTokens(k3, template, server, headers, vars) {
  const dir = mkdtempSync(join(tmpdir(), 'k3-vars-'));
  try {
    const file = join(dir, 'vars.json');
    writeFileSync(file, JSON.stringify({ add_generation_prompt: true, ...vars }));
    const prompt = execFileSync(k3, ['template', '--template', template, '--vars', file], { encoding: 'utf8' });
    const r = await fetch(`${server.base}/tokenize`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify({ content: prompt, parse_special: true }),
    });
    return (await r.json()).tokens.length;
  } finally {
    rmSync(dir, { recursive: true });
  }
}
