// Load test for `k3 serve` (not part of CTest): C concurrent streaming clients for S seconds.
// Every answer is greedy and checked against the same prompt's answer taken alone before the
// load, so a lost, cut or mixed-up response is counted as an error. Reports requests/s, time to
// first token, generated tokens/s and the server's memory (RSS) over time.
//
//   k3 mock -o /tmp/mock.gguf
//   node bench/serve_load.mjs --k3 build/k3 --model /tmp/mock.gguf --parallel 4 [--clients 64]
//        [--seconds 60] [--max-tokens 32] [--threads 2] [--ctx-size 512]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, arg, i, all) =>
  arg.startsWith('--') ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs, []));
const k3 = args.k3 ?? 'build/k3';
const model = args.model;
const parallel = Number(args.parallel ?? 4);
const clients = Number(args.clients ?? 64);
const seconds = Number(args.seconds ?? 60);
const maxTokens = Number(args['max-tokens'] ?? 32);
if (!model) throw new Error('--model MODEL.gguf is required');

const server = spawn(k3, ['serve', '-m', model, '--port', '0', '-t', args.threads ?? '2', '--parallel', String(parallel),
                          '--ctx-size', args['ctx-size'] ?? '512', '--queue-size', String(clients)],
                     { stdio: ['ignore', 'pipe', 'inherit'] });
const exited = new Promise((resolve) => server.on('exit', (code, signal) => resolve(code ?? signal)));
const port = await new Promise((resolve, reject) => {
  createInterface({ input: server.stdout }).on('line', (line) => {
    const m = line.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
    if (m) resolve(Number(m[1]));
  });
  server.on('exit', () => reject(new Error('k3 serve exited before listening')));
});
const url = `http://127.0.0.1:${port}/v1/completions`;
const rssKiB = () => Number(readFileSync(`/proc/${server.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);

const prompts = Array.from({ length: 8 }, (_, i) => `Request family ${i}: once upon a time`);
const body = (prompt, stream) => JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true,
                                                 stream });

// One streamed request: its text, its id (every chunk must carry the same), time to first token.
async function streamed(prompt) {
  const start = performance.now();
  const response = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                      body: body(prompt, true) });
  if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`);
  let text = '', id = null, firstToken = null, done = false, buffer = '', finish = null;
  const decoder = new TextDecoder();
  for await (const bytes of response.body) {
    buffer += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end).replace(/^data: /, '');
      buffer = buffer.slice(end + 2);
      if (event === '[DONE]') { done = true; continue; }
      const chunk = JSON.parse(event);
      if (chunk.error) throw new Error(chunk.error.message);
      id ??= chunk.id;
      if (chunk.id !== id) throw new Error(`chunk of ${chunk.id} inside ${id}`);
      const choice = chunk.choices[0];
      if (choice?.text) { firstToken ??= performance.now() - start; text += choice.text; }
      if (choice?.finish_reason) finish = choice.finish_reason;
    }
  }
  if (!done) throw new Error('stream ended without [DONE]');
  if (finish !== 'length') throw new Error(`finish_reason ${finish}`);
  return { text, firstToken };
}

const expected = [];
for (const prompt of prompts) {
  const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: body(prompt, false) });
  expected.push((await r.json()).choices[0].text);
}

const rssStart = rssKiB();
let rssMax = rssStart;
const rssSamples = [];
const sampler = setInterval(() => { const r = rssKiB(); rssMax = Math.max(rssMax, r); rssSamples.push(r); }, 1000);
const ttft = [];
let completed = 0, errors = 0;
const deadline = performance.now() + seconds * 1000;
const started = performance.now();
await Promise.all(Array.from({ length: clients }, async (_, c) => {
  for (let n = 0; performance.now() < deadline; ++n) {
    const family = (c + n) % prompts.length;
    try {
      const { text, firstToken } = await streamed(prompts[family]);
      if (text !== expected[family]) throw new Error(`client ${c}: answer differs from the lone answer`);
      ttft.push(firstToken);
      ++completed;
    } catch (e) {
      if (++errors <= 5) console.error(`error: ${e.message}`);
    }
  }
}));
const elapsed = (performance.now() - started) / 1000;
clearInterval(sampler);
const rssEnd = rssKiB();
server.kill('SIGTERM');
const exitCode = await exited;

ttft.sort((a, b) => a - b);
const pct = (p) => ttft.length ? ttft[Math.min(ttft.length - 1, Math.floor(p * ttft.length))].toFixed(1) : 'n/a';
const result = {
  parallel, clients, seconds: Number(elapsed.toFixed(1)), max_tokens: maxTokens, completed, errors,
  requests_per_s: Number((completed / elapsed).toFixed(2)),
  generated_tokens_per_s: Number((completed * maxTokens / elapsed).toFixed(1)),
  ttft_ms_p50: Number(pct(0.5)), ttft_ms_p95: Number(pct(0.95)),
  rss_mib_start: Math.round(rssStart / 1024), rss_mib_max: Math.round(rssMax / 1024),
  rss_mib_end: Math.round(rssEnd / 1024),
  rss_mib_last_half_min: Math.round(Math.min(...rssSamples.slice(rssSamples.length >> 1)) / 1024),
  server_exit: exitCode,
};
console.log(JSON.stringify(result));
process.exit(errors || exitCode !== 0 ? 1 : 0);
