// Prompt-cache benchmark for `k3 serve` (issue #13; not part of CTest). Two figures:
//  1. time to first token of turn 10 of a conversation whose history is ~4,000 tokens, answered
//     from the cache (turns 1-9 ran before) vs the same request with cache_prompt false;
//     target: >= 20x faster.
//  2. a 1,000-token shared system prompt followed by 16 different ~50-token questions: the 16
//     answers on a fresh cache vs one cold system prompt + 16 cold questions alone;
//     target: <= 1.2x.
// Times are the server's own (llama-server's /completion, timings.first_token_ms: from a request's
// arrival to its first token); requests go one at a time. Also checks each cached answer equals
// the cold one (greedy) and that the cache's memory stays within --cache-ram (/metrics
// k3_prompt_cache_bytes). Part 1 computes ~8,000 prompt tokens, part 2 ~4,000.
//
//   k3 mock --preset bench -o /tmp/bench.gguf
//   node bench/prompt_cache.mjs --k3 build/k3 --model /tmp/bench.gguf [--threads N] [--cache-ram 8G] [--turn-tokens 110]
//        [--ctx-size 8192] [--part 1|2]   (one figure only; default both)
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { createInterface } from 'node:readline';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, arg, i, all) =>
  arg.startsWith('--') ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs, []));
const k3 = args.k3 ?? 'build/k3';
const model = args.model;
if (!model) throw new Error('--model MODEL.gguf is required');
const cacheRam = args['cache-ram'] ?? '8G';

console.log(`node bench/prompt_cache.mjs ${process.argv.slice(2).join(' ')}`);
const server = spawn(k3, ['serve', '-m', model, '--port', '0', '-t', args.threads ?? '0', '--ctx-size', args['ctx-size'] ?? '8192',
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

// One greedy request on llama-server's /completion, which reports the time from its arrival to
// its first token (timings.first_token_ms, the prompt's cost): a request of several tokens gives
// the first token's time too, so a cold prompt is computed once for both.
async function complete(prompt, cachePrompt, maxTokens = 1) {
  const response = await http('POST', '/completion',
    JSON.stringify({ prompt, n_predict: maxTokens, temperature: 0, ignore_eos: true, cache_prompt: cachePrompt }));
  if (response.status !== 200) throw new Error(`status ${response.status}: ${response.text}`);
  const body = JSON.parse(response.text);
  return { ms: body.timings.first_token_ms, tokens: body.tokens.join(','), cached: body.tokens_cached };
}

async function cacheBytes() {
  const metrics = (await http('GET', '/metrics')).text;
  return Number(metrics.match(/^k3_prompt_cache_bytes (\S+)$/m)[1]);
}

// The first pass after the start faults in the model's pages and its working memory: not measured.
await complete(tokens(64), false);

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
const cached = await complete(history, true, 8);  // the first time this prompt is seen
const cold = await complete(history, false, 8);
if (cached.tokens !== cold.tokens) throw new Error('turn 10: the cached answer differs from the cold one');
console.log(`turn 10 (${history.length} prompt tokens, ${turnTokens} per turn, ${cached.cached} cached): time to first token ` +
            `cached ${cached.ms.toFixed(0)} ms, cold ${cold.ms.toFixed(0)} ms: ${(cold.ms / cached.ms).toFixed(1)}x ` +
            `(target >= 20x)`);
}

// 2. A shared system prompt and 16 questions, on a prefix the cache has not seen. With no
// message boundaries (raw ids), the first answer stores checkpoints every 256 tokens, so the
// second replays from the last one before the system prompt's end; every later one resumes at
// that end rounded down to the 16-token KDA chunk.
// The two sides alternate, so that a load that changes during the run weighs on both alike.
if (part !== '1') {
  const system = tokens(1000);
  const questions = Array.from({ length: 16 }, () => tokens(50));
  let shared = 0, sharedFed = 0;
  let alone = (await complete(system, false)).ms;
  for (const q of questions) {
    const answer = await complete(system.concat(q), true);
    shared += answer.ms;
    sharedFed += system.length + q.length - answer.cached;
    alone += (await complete(q, false)).ms;
  }
  const aloneFed = system.length + questions.length * questions[0].length;
  console.log(`1000-token system prompt + 16 questions: ${shared.toFixed(0)} ms for ${sharedFed} tokens computed; ` +
              `one cold system prompt + 16 cold questions ${alone.toFixed(0)} ms for ${aloneFed} tokens: ` +
              `${(shared / alone).toFixed(2)}x (target <= 1.2x)`);
}

console.log(`prompt cache memory ${(await cacheBytes() / 2 ** 20).toFixed(1)} MiB (--cache-ram ${cacheRam})`);
server.kill('SIGTERM');
