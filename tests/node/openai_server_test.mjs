// `k3 serve` spoken to by the official OpenAI client (npm `openai`, pinned in package.json):
// chat, streaming, tool declarations and tool-call history, abort, completions, errors.
// usage: node openai_server_test.mjs K3_BINARY MODEL.gguf   (exit 0: every check passed)
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { runChecks, startServer } from './k3_server.mjs';

const [k3, model] = process.argv.slice(2);
const apiKey = 'test-key';
const server = await startServer(k3, model, ['-t', '2', '--parallel', '2', '--ctx-size', '2048', '--api-key', apiKey]);
const base = server.base;
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
const user = (content) => [{ role: 'user', content }];

async function metric(name) {
  const text = await (await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${apiKey}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return Number(line.split(' ')[1]);
}

const checks = {
  async chat() {
    const r = await client.chat.completions.create({ model: 'k3', messages: user('Hello'), max_tokens: 8, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  },

  async streamEqualsWholeAnswer() {
    const args = { model: 'k3', messages: user('Tell me'), max_tokens: 12, temperature: 0,
                   chat_template_kwargs: { thinking: false } };
    const whole = await client.chat.completions.create(args);
    const stream = await client.chat.completions.create({ ...args, stream: true, stream_options: { include_usage: true } });
    let content = '', finish = null, usage = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        content += choice.delta.content ?? '';
        finish = choice.finish_reason ?? finish;
      }
    }
    assert.equal(content, whole.choices[0].message.content);
    assert.equal(finish, whole.choices[0].finish_reason);
    // The same prompt again is answered from the prompt cache: everything but the reuse is equal.
    const { prompt_tokens_details: streamCache, ...streamCounts } = usage;
    const { prompt_tokens_details: wholeCache, ...wholeCounts } = whole.usage;
    assert.deepEqual(streamCounts, wholeCounts);
    assert.ok(streamCache.cached_tokens > 0 && streamCache.cached_tokens >= wholeCache.cached_tokens &&
              streamCache.cached_tokens < usage.prompt_tokens,
              `cached ${streamCache.cached_tokens} of ${usage.prompt_tokens} after ${wholeCache.cached_tokens}`);
  },

  async toolsAndToolHistory() {
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
    const messages = [
      ...user('Weather in Paris?'),
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
    ];
    const r = await client.chat.completions.create({ model: 'k3', messages, tools, tool_choice: 'auto', max_tokens: 6 });
    assert.ok(['stop', 'length', 'tool_calls'].includes(r.choices[0].finish_reason));
    for (const call of r.choices[0].message.tool_calls ?? []) {
      assert.equal(call.type, 'function');
      JSON.parse(call.function.arguments);
    }
  },

  async abortCancelsGeneration() {
    const before = await metric('k3_generated_tokens_total');
    const controller = new AbortController();
    const stream = await client.completions.create(
      { model: 'k3', prompt: 'Once', max_tokens: 2000, stream: true, ignore_eos: true },
      { signal: controller.signal });
    let chunks = 0;
    // The client's stream ends quietly on abort (or throws an abort error) on Node 20; Node 18's
    // fetch (undici 5) still hands over what the socket had buffered, which on loopback can be
    // most of the answer, so the loop leaves by itself: leaving it cancels the body and closes
    // the connection, which is what must stop the generation.
    try {
      for await (const chunk of stream) {
        if (++chunks === 2) controller.abort();
        if (controller.signal.aborted) break;
      }
    } catch (e) {
      if (!(e.name === 'AbortError' || e instanceof OpenAI.APIUserAbortError)) throw e;
    }
    for (let i = 0; i < 100 && (await metric('k3_active_sequences')) > 0; ++i) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await metric('k3_active_sequences'), 0);
    assert.ok((await metric('k3_generated_tokens_total')) - before < 2000, 'the generation ran to its end');
  },

  async completions() {
    const r = await client.completions.create({ model: 'k3', prompt: 'Hello', max_tokens: 4, temperature: 0 });
    assert.equal(r.object, 'text_completion');
    assert.equal(typeof r.choices[0].text, 'string');
    assert.ok(r.usage.completion_tokens <= 4);
  },

  async models() {
    const list = await client.models.list();
    assert.equal(list.data[0].id, 'model.gguf');
  },

  async errors() {
    await assert.rejects(client.chat.completions.create({ model: 'k3', messages: [{ role: 'wizard', content: 'x' }] }),
      (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.code === 'invalid_value');
    await assert.rejects(client.chat.completions.create({ model: 'k3', messages: [] }),
      (e) => e instanceof OpenAI.BadRequestError);
    await assert.rejects(client.chat.completions.create({ model: 'k3', messages: user('x'), max_tokens: 1e6 }),
      (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
    const stranger = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(stranger.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
    await checks.chat();  // still serving
  },
};

await runChecks(checks, server);
