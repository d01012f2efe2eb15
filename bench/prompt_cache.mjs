// Prompt-cache benchmark for `k3 serve` (issue #13; not part of CTest). Two figures:
//  1. time to first token of turn 10 of a conversation whose history is ~4,000 tokens, answered
//     from the cache (turns 1-9 ran before) vs the same request with cache_prompt false;
//     target: >= 20x faster.
//  2. a 1,000-token shared system prompt followed by 16 different ~50-token questions: the 16
//     answers on a fresh cache vs one cold system prompt + 16 cold questions alone;
//     target: <= 1.2x.
// Also checks each cached answer equals the cold one (greedy) and that the cache's memory stays
// within --cache-ram (/metrics k3_prompt_cache_bytes).
//
//   k3 mock --preset bench -o /tmp/bench.gguf
//   node bench/prompt_cache.mjs --k3 build/k3 --model /tmp/bench.gguf [--threads N] [--cache-ram 8G] [--turn-tokens 110]
//        [--part 1|2]   (one figure only; default both)
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { createInterface } from 'node:readline';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, arg, i, all) =>
  arg.startsWith('--') ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs, []));
const k3 = args.k3 ?? 'build/k3';
const model = args.model;
if (!model) throw new Error('--model MODEL.gguf is required');
const cacheRam = args['cache-ram'] ?? '8G';

const server = spawn(k3, ['serve', '-m', model, '--port', '0', '-t', args.threads ?? '0', '--ctx-size', '8192',
                          '--cache-ram', cacheRam], { stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise((resolve, reject) => {
  createInterface({ input: server.stdout }).on('line', (line) => {
    const m = line.match(/listening on http:\/\/[^:]+:(\d+)/);
    if (m) resolve(Number(m[1]));
  });
  server.on('exit', () => reject(new Error('k3 serve exited before listening')));
});

// Deterministic token ids below 1000 (every K3 vocabulary has them), so the runs are repeatable.
let seed = 12345;
const tokens = (n) => Array.from({ length: n }, () => (seed = (seed * 1103515245 + 12345) % 2147483648) % 1000);

// One HTTP exchange without a client-side time limit (fetch gives up after 300 s without
// headers, which a cold 4,000-token prompt can take on a loaded machine).
function http(method, path, body) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { 'Content-Type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => { text += chunk; });
        res.on('end', () => resolve({ status: res.statusCode, text }));
      });
    req.on('error', reject);
    req.end(body);
  });
}

// One greedy request; its wall time is the time to first token when max_tokens is 1.
async function complete(prompt, cachePrompt, maxTokens = 1) {
  const start = performance.now();
  const response = await http('POST', '/v1/completions',
    JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, cache_prompt: cachePrompt }));
  const body = JSON.parse(response.text);
  if (response.status !== 200) throw new Error(`status ${response.status}: ${response.text}`);
  return { ms: performance.now() - start, text: body.choices[0].text,
           cached: body.usage.prompt_tokens_details.cached_tokens, prompt: body.usage.prompt_tokens };
}

async function cacheBytes() {
  const metrics = (await http('GET', '/metrics')).text;
  return Number(metrics.match(/^k3_prompt_cache_bytes (\S+)$/m)[1]);
}

// 1. Ten turns: a first prompt, then per turn an answer + user message of --turn-tokens (the
// answers are stand-ins of fixed text, as a client resends the answer it received), so that
// turn 10's history is ~4,000 tokens.
const part = args.part ?? 'both';
const turnTokens = Number(args['turn-tokens'] ?? 110);
if (part !== '2') {
  let history = tokens(4000 - 9 * turnTokens);
  for (let turn = 1; turn < 10; ++turn) {
    await complete(history, true);
    history = history.concat(tokens(turnTokens));
}
const fresh = await complete(history, true);  // the first time this prompt is seen
const coldFirst = await complete(history, false);
const cachedAnswer = await complete(history, true, 8), coldAnswer = await complete(history, false, 8);
if (cachedAnswer.text !== coldAnswer.text) throw new Error('turn 10: the cached answer differs from the cold one');
console.log(`turn 10 (${history.length} prompt tokens, ${turnTokens} per turn, ${fresh.cached} cached): time to first token ` +
            `cached ${fresh.ms.toFixed(0)} ms, cold ${coldFirst.ms.toFixed(0)} ms: ${(coldFirst.ms / fresh.ms).toFixed(1)}x ` +
            `(target >= 20x)`);
}

// 2. A shared system prompt and 16 questions, on a prefix the cache has not seen.
if (part !== '1') {
  const system = tokens(1000);
  const questions = Array.from({ length: 16 }, () => tokens(50));
  let shared = 0;
  for (const q of questions) shared += (await complete(system.concat(q), true)).ms;
  let alone = (await complete(system, false)).ms;
  for (const q of questions) alone += (await complete(q, false)).ms;
  console.log(`1000-token system prompt + 16 questions: ${shared.toFixed(0)} ms; one cold system prompt + 16 cold ` +
              `questions ${alone.toFixed(0)} ms: ${(shared / alone).toFixed(2)}x (target <= 1.2x)`);
}

console.log(`prompt cache memory ${(await cacheBytes() / 2 ** 20).toFixed(1)} MiB (--cache-ram ${cacheRam})`);
server.kill('SIGTERM');
