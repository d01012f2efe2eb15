// Does a crowd of clients slow the one that is generating? (issue #15; not part of CTest.)
// Decode tokens/s of one streaming request alone, against the same request while 63 other
// clients are connected: half hold an open connection and send nothing, half have sent a
// streaming chat request (rendered and tokenized on arrival, then queued for the one slot) and
// read nothing. Their work is the I/O thread's and the text workers', never the model's, so the
// figure should not drop. The rate is the server's own (the /completion stream's timings: the
// tokens after the first over the time after the first). Runs alternate (alone, crowded, ...)
// so a drift in machine load shows in both; each figure is the median.
//
//   node bench/idle_clients.mjs --k3 build/k3 --model /work/tmp/bench.gguf [--threads 2]
//        [--tokens 64] [--runs 3] [--others 63]
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { request } from 'node:http';
import { createInterface } from 'node:readline';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, arg, i, all) =>
  arg.startsWith('--') ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs, []));
const k3 = args.k3 ?? 'build/k3';
const model = args.model;
if (!model) throw new Error('--model MODEL.gguf is required');
const tokens = Number(args.tokens ?? 64);
const runs = Number(args.runs ?? 3);
const others = Number(args.others ?? 63);

const server = spawn(k3, ['serve', '-m', model, '--port', '0', '-t', args.threads ?? '2', '--parallel', '1',
                          '--ctx-size', '1024', '--queue-size', String(others + 1), '--log-format', 'off'],
                     { stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise((resolve, reject) => {
  createInterface({ input: server.stdout }).on('line', (line) => {
    const m = line.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
    if (m) resolve(Number(m[1]));
  });
  server.on('exit', () => reject(new Error('k3 serve exited before listening')));
});

const chatBody = (maxTokens) => JSON.stringify({
  messages: [{ role: 'user', content: 'Tell me a long story about a lighthouse keeper.' }],
  max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true });

// The measured request, streamed from /completion, whose last event carries the server's own
// timings: decode tokens/s is the tokens after the first over the time after the first, as the
// scheduler saw them. onFirstToken runs when the first token arrives (the crowd comes in then).
function measured(onFirstToken) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/completion',
                          headers: { 'Content-Type': 'application/json' } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      let buffer = '', first = true;
      res.setEncoding('utf8');
      res.on('data', (text) => {
        buffer += text;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const event = JSON.parse(buffer.slice(0, end).replace(/^data: /, ''));
          buffer = buffer.slice(end + 2);
          if (first) { first = false; onFirstToken(); }
          if (!event.stop) continue;
          if (event.tokens_predicted !== tokens) reject(new Error(`${event.tokens_predicted} tokens, not ${tokens}`));
          const { first_token_ms: firstMs, total_ms: totalMs } = event.timings;
          resolve((tokens - 1) / ((totalMs - firstMs) / 1000));
        }
      });
      res.on('end', () => reject(new Error('stream ended without its last event')));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ prompt: 'Once upon a time, in a lighthouse by the sea,', n_predict: tokens,
                             temperature: 0, ignore_eos: true, stream: true, cache_prompt: false }));
  });
}

// The crowd: raw sockets, so nothing is read from the streaming ones.
function crowd(n, streaming) {
  return Promise.all(Array.from({ length: n }, () => new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      if (streaming) {
        const body = chatBody(2);  // short, should they still run after the measured request
        socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
                     `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
        socket.pause();
      }
      resolve(socket);
    });
    socket.on('error', reject);
  })));
}

// Half the crowd is connected before the measured request, the other half sends its requests
// once the measured one has its first token (so they queue behind it, not before it).
async function decodeRate(crowded) {
  const idleHalf = crowded ? await crowd(others >> 1, false) : [];
  let streamingHalf = Promise.resolve([]);
  const rate = await measured(() => { if (crowded) streamingHalf = crowd(others - (others >> 1), true); });
  [...idleHalf, ...await streamingHalf].forEach((socket) => socket.destroy());
  return rate;
}

// A drained slot queue before each run: the crowd's queued requests are cancelled with their sockets.
async function idle() {
  for (;;) {
    const metrics = await new Promise((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
        let text = '';
        res.on('data', (chunk) => { text += chunk; });
        res.on('end', () => resolve(text));
      }).on('error', reject).end();
    });
    const busy = Number(metrics.match(/^k3_active_sequences (\S+)$/m)[1]) +
                 Number(metrics.match(/^k3_queue_depth (\S+)$/m)[1]);
    if (busy === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

await measured(() => {});  // warm-up: the first pass of a fresh process is slower
const alone = [], crowded = [];
for (let r = 0; r < runs; ++r) {
  await idle();
  alone.push(await decodeRate(false));
  await idle();
  crowded.push(await decodeRate(true));
}
server.kill('SIGTERM');
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(JSON.stringify({
  others, tokens, runs,
  alone_tokens_per_s: alone.map((x) => Number(x.toFixed(2))),
  crowded_tokens_per_s: crowded.map((x) => Number(x.toFixed(2))),
  median_alone: Number(median(alone).toFixed(2)), median_crowded: Number(median(crowded).toFixed(2)),
  crowded_over_alone: Number((median(crowded) / median(alone)).toFixed(3)),
}));
